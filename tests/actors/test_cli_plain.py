"""``PlainConsole`` prints a ``Text`` on a stdout that is not a terminal as rich's console does."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table
from rich.text import Text

from actors._cli._app import stdout_console
from actors._cli._plain import PlainConsole, plain_width

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
        """A table (or a text with a tab) is printed by a rich console, made when needed."""
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
