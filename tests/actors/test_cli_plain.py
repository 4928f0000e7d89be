"""``PlainConsole`` prints a ``Text`` on a stdout that is not a terminal as rich's console does."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
from cli_support import Recorded, recorded
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table
from rich.text import Text

from actors._cli._app import stdout_console
from actors._cli._plain import PlainConsole, plain_width

__all__ = ["recorded"]

# Characters rich treats specially (newlines, spaces of several kinds, wide and combining
# characters, control codes it strips) among plain ones.
_CHARS = st.sampled_from(list("ab Z\n\n  \u00a0\u3000\u2003\x1c\x85\t\x07\r界😀é\u0301-…"))
_TEXTS = st.lists(
    st.tuples(st.text(_CHARS, max_size=30), st.sampled_from(["", "bold", "dim", "red on blue"])),
    max_size=6,
)
_COLUMNS = st.one_of(st.none(), st.sampled_from(["0", "1", "5", "12", "80", "x", "-3", " 40"]))


def _text(pieces: list[tuple[str, str]], no_wrap: bool, overflow: str | None) -> Text:
    text = Text.assemble(*pieces)
    text.no_wrap = no_wrap
    text.overflow = overflow  # type: ignore[assignment]
    return text


def _rich_output(renderables: list[Text | None]) -> str:
    out = io.StringIO()
    console = Console(highlight=False, soft_wrap=True, file=out)  # as stdout_console()
    for renderable in renderables:
        if renderable is None:
            console.print()
        else:
            console.print(renderable)
    return out.getvalue()


def _plain_output(renderables: list[Text | None], monkeypatch: pytest.MonkeyPatch) -> str:
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    console = PlainConsole(stdout_console)
    for renderable in renderables:
        console.print(renderable)
    monkeypatch.undo()
    return out.getvalue()


class TestPlainConsole:
    @settings(max_examples=300)
    @given(
        texts=st.lists(
            st.one_of(
                st.none(),
                st.builds(
                    _text,
                    _TEXTS,
                    st.booleans(),
                    st.sampled_from([None, "ellipsis", "fold", "crop", "ignore"]),
                ),
            ),
            max_size=4,
        ),
        columns=_COLUMNS,
    )
    def test_prints_what_rich_prints(self, texts: list[Text | None], columns: str | None) -> None:
        """Texts of any characters and styles, blank lines, at any $COLUMNS: the same
        characters as rich's console on a file that is not a terminal."""
        with pytest.MonkeyPatch.context() as env:
            if columns is None:
                env.delenv("COLUMNS", raising=False)
            else:
                env.setenv("COLUMNS", columns)
            env.delenv("FORCE_COLOR", raising=False)
            env.delenv("TTY_COMPATIBLE", raising=False)
            expected = _rich_output(texts)
            with pytest.MonkeyPatch.context() as patch:
                assert _plain_output(texts, patch) == expected

    @pytest.mark.parametrize("columns", [None, "0", "7", "200", "abc", ""])
    def test_width_is_the_rich_consoles(
        self, columns: str | None, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """plain_width is the width of rich's console for a file that is not a terminal."""
        if columns is None:
            monkeypatch.delenv("COLUMNS", raising=False)
        else:
            monkeypatch.setenv("COLUMNS", columns)
        monkeypatch.delenv("LINES", raising=False)
        assert plain_width() == Console(file=io.StringIO()).width
        assert PlainConsole(stdout_console).width == plain_width()

    def test_width_in_a_fresh_process_without_a_terminal(self) -> None:
        """With no terminal on stdin, stdout or stderr and no $COLUMNS: 80, as rich says."""
        code = (
            "from rich.console import Console\n"
            "from actors._cli._plain import plain_width\n"
            "print(plain_width(), Console().width)\n"
        )
        env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
        result = subprocess.run(
            [sys.executable, "-c", code],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            check=True,
        )
        assert result.stdout.split() == ["80", "80"]

    def test_other_renderables_go_through_rich(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A boxed table (or a text with a tab) is printed by a rich console, made when
        needed (a table without a box is written plain: ``TestPipedTables``)."""
        monkeypatch.setenv("COLUMNS", "40")
        table = Table("a", "b")
        table.add_row("1", "two")
        tabbed = Text("a\tb")
        expected = _rich_output([Text("x")]) + _capture_rich([table, tabbed])
        out = io.StringIO()
        monkeypatch.setattr(sys, "stdout", out)
        console = PlainConsole(stdout_console)
        console.print(Text("x"))
        console.print(table)
        console.print(tabbed)
        assert out.getvalue() == expected


def _capture_rich(renderables: list[object]) -> str:
    out = io.StringIO()
    console = Console(highlight=False, soft_wrap=True, file=out)
    for renderable in renderables:
        console.print(renderable)
    return out.getvalue()


class TestPipedTables:
    """User trial: a table printed to a pipe (``amber show --full | less``, ``> file``) was
    laid out in 80 columns by rich: contents cut into pieces over several lines, every line
    padded with spaces. Piped, a table is its rows' own width: each cell's text whole, on
    the lines it has itself, and no trailing spaces."""

    @staticmethod
    def _run(*args: object) -> str:
        from click.testing import CliRunner

        from actors._cli import cli

        runner = CliRunner(env={"COLUMNS": "40", "AMBER_DB": None})
        result = runner.invoke(cli, [str(a) for a in args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.stdout

    @pytest.mark.parametrize(
        "args",
        [
            ["show", "demo", "--full"],
            ["show", "demo", "--view", "clean"],
            ["show", "demo", "--message", "msg_5be1ef79_000001"],
            ["sessions"],
        ],
        ids=["full", "clean", "message", "sessions"],
    )
    def test_not_wrapped_nor_padded(self, recorded: Recorded, args: list[str]) -> None:
        output = self._run(*args, "--db", recorded.db)
        lines = output.splitlines()
        assert all(line == line.rstrip() for line in lines), output
        if args[0] == "sessions":
            assert any(line.startswith("demo ") and "10 delivered" in line for line in lines)
            return
        question = "What is 2**100? Compute it, don't guess."
        assert any(line.endswith(question) for line in lines), output

    def test_columns_line_up(self, recorded: Recorded) -> None:
        """Each column starts where its header does; right-justified seqs end with it, and
        a cell's further lines start in its own column."""
        lines = self._run("show", "demo", "--full", "--db", recorded.db).splitlines()
        header = next(i for i, line in enumerate(lines) if line.lstrip().startswith("seq "))
        head = lines[header]
        content_at = head.index("content")
        assert head.startswith("seq  id ")
        rows = lines[header + 1 :]
        first = rows[0]
        assert first[: len("seq")].strip() == "1"
        assert first[content_at:] == "Chii: What is 2**100? Compute it, don't guess."
        call = next(i for i, line in enumerate(rows) if "msg_5be1ef79_000006" in line)
        assert rows[call][content_at:] == "Calling tool `run_shell_command` with arguments:"
        assert rows[call + 1] == " " * content_at + "```json"


class TestPipedShowLines:
    """User trial: piped with no terminal anywhere and no $COLUMNS, ``amber show`` cut
    its one-line texts at 80 columns, even with --full: model-call lines lost their tokens
    and stop reason (``amber show demo --full | grep tool_use`` found 0 of 3)."""

    @staticmethod
    def _show(db: object, *args: str, columns: str | None = None) -> list[str]:
        code = "import sys; from actors._cli import main; sys.exit(main())"
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "AMBER_DB")}
        if columns is not None:
            env["COLUMNS"] = columns
        result = subprocess.run(
            [sys.executable, "-c", code, "show", "demo", *args, "--db", str(db)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=120,
            env={**env, "PYTHONIOENCODING": "utf-8"},
            check=True,
        )
        return result.stdout.splitlines()

    @staticmethod
    def _calls(lines: list[str]) -> list[str]:
        return [line for line in lines if line.startswith("#") and " run_" in line]

    @pytest.mark.parametrize("columns", [None, "40"])
    def test_full_never_cuts(self, recorded: Recorded, columns: str | None) -> None:
        calls = self._calls(self._show(recorded.db, "--full", columns=columns))
        assert sum(line.endswith("  tool_use") for line in calls) == 3
        assert all(" tokens" in line and "…" not in line for line in calls)

    def test_whole_lines_without_columns(self, recorded: Recorded) -> None:
        """Without --full, piped lines are whole too (docs/cli.md: grep finds whole lines)."""
        lines = self._show(recorded.db)
        assert sum(line.endswith("  tool_use") for line in self._calls(lines)) == 3
        assert not any(line.endswith("…") for line in lines)

    def test_an_explicit_columns_is_honoured(self, recorded: Recorded) -> None:
        """$COLUMNS set: one-line texts are cut to it (with …), as before."""
        lines = self._show(recorded.db, columns="40")
        calls = self._calls(lines)
        assert calls
        assert all(len(line) <= 40 for line in calls)
        assert all(line.endswith("…") for line in calls)
