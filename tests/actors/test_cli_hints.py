"""The commands Amber prints inside a sentence paste as they read, whatever the store's path.

A hint set in quotes in a sentence ("rebuild it with 'amber recover --rebuild --db
amber.db'") wrapped its command in single quotes also when the command quoted a word
(a path with a space) in single quotes itself: ``'amber recover --rebuild --db 'my
store.db''``, which no shell pastes. Each hint here is taken from what Amber says for a
store at a plain path, at one with a space, a single quote, a double quote and at one
starting with ``-``; the command in its quotes is split as a shell splits it (``shlex``
and ``/bin/sh`` agree) and, where cheap, run.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from cli_support import Recorded, amber, recorded
from hypothesis import given
from hypothesis import strategies as st

from actors._cli import ExitCode
from actors._cli._hints import quoted, shell_line
from runtime import CorruptRow, SessionState
from runtime.store import SQLiteStore

__all__ = ["recorded"]

NAMES = {
    "plain": "amber.db",
    "space": "my store.db",
    "single-quote": "it's.db",
    "double-quote": 'say "hi".db',
    "dash": "-odd.db",
}
"""Store paths (relative to the test's folder), by test id."""

_OPENING = re.compile(r"""(['"])(?=(?:amber|mkdir) |AMBER_PG_SCHEMA=)""")
"""A quote that opens a command set in a sentence."""


def commands(text: str) -> list[list[str]]:
    """The words of every command set in quotes in ``text``, as a shell splits them
    (``shlex`` and ``/bin/sh`` agree)."""
    found = []
    for line in command_lines(text):
        words = shlex.split(line)
        assert _sh_split(line) == words, line
        found.append(words)
    return found


def command_lines(text: str) -> list[str]:
    """Every command set in quotes in ``text``, as printed: a command in single quotes
    ends at the next one, a command in double quotes at the next double quote that no
    backslash escapes."""
    found = []
    at = 0
    while (opening := _OPENING.search(text, at)) is not None:
        start = opening.end()
        if opening.group(1) == "'":
            end = text.find("'", start)
        else:
            closing = re.compile(r'(?<!\\)"').search(text, start)
            end = -1 if closing is None else closing.start()
        assert end != -1, f"the quotes opened at {start} never close: {text!r}"
        found.append(text[start:end])
        at = end + 1
    return found


def _sh_split(line: str) -> list[str]:
    """The words ``/bin/sh`` reads in ``line`` (pasted after ``set --``)."""
    script = f"set -- {line}\nprintf '%s\\0' \"$@\""
    out = subprocess.run(["sh", "-c", script], capture_output=True, check=True).stdout
    return out.decode().split("\0")[:-1]


@contextlib.contextmanager
def _raw(db: Path) -> Iterator[sqlite3.Connection]:
    """Another program's connection, the log's guard against updates dropped."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("DROP TRIGGER events_no_update")
        yield conn
    finally:
        conn.close()


@pytest.fixture(params=list(NAMES.values()), ids=list(NAMES))
def name(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An odd store path, relative to the test's folder (the current directory)."""
    monkeypatch.chdir(tmp_path)
    return str(request.param)


def _store(recorded: Recorded, name: str, damage: str | None = None) -> str:
    """A copy of the recorded store at ``name``; ``damage`` is SQL run on it."""
    db = recorded.copy(Path.cwd()).rename(name)
    if damage is not None:
        with _raw(db) as conn:
            conn.execute(damage)
    return name


def intended(command: str, session: str, *options: object) -> list[str]:
    """The words a hint about ``session`` means: ``amber COMMAND SESSION OPTIONS``, or the
    session after ``--`` when it starts with ``-`` (else click reads it as an option)."""
    words = ["amber", *command.split()]
    if session.startswith("-"):
        return [*words, *map(str, options), "--", session]
    return [*words, session, *map(str, options)]


EDITED_SUMMARY = "UPDATE sessions SET messages = 99 WHERE session_id = 'broken'"
EDITED_EVENT = (
    "UPDATE events SET body = replace(body, 'Chii', 'Chie') WHERE session_id = 'demo' AND seq = 1"
)


class TestTheStoresHints:
    """The rebuild the store's own errors suggest, named with ``--db`` (``name_store``)."""

    def test_show(self, recorded: Recorded, name: str) -> None:
        """A damaged summary's error says how to rebuild it; that command mends it."""
        db = _store(recorded, name, EDITED_SUMMARY)
        result = amber("show", "broken", "--db", db)
        assert result.exit_code == ExitCode.BAD_STORE, result.output
        rebuild = ["amber", "recover", "--rebuild", "--db", db]
        assert commands(result.stderr) == [rebuild]
        assert amber(*rebuild[1:]).exit_code == 0
        assert amber("show", "broken", "--db", db).exit_code == 0

    def test_recover_and_replay(self, recorded: Recorded, name: str) -> None:
        """'amber recover' leaves the damaged session alone and 'amber replay' marks it, both
        with the rebuild that mends it."""
        db = _store(recorded, name, EDITED_SUMMARY)
        rebuild = ["amber", "recover", "--rebuild", "--db", db]
        recovered = amber("recover", "--db", db)
        assert recovered.exit_code == ExitCode.FAILED, recovered.output
        assert rebuild in commands(recovered.stdout)
        replayed = amber("replay", "--all", "--verify", "--db", db)
        assert rebuild in commands(replayed.stdout)


class TestCheckHints:
    """The ``amber check`` a damaged event log's message points to."""

    def test_replay(self, recorded: Recorded, name: str) -> None:
        """A log that does not replay: the check that lists the damage reads this store."""
        db = _store(recorded, name, EDITED_EVENT)
        result = amber("replay", "--all", "--db", db)
        assert result.exit_code == ExitCode.BAD_STORE, result.output
        check = ["amber", "check", "--db", db]
        assert check in commands(result.stdout)
        checked = amber(*check[1:])
        assert checked.exit_code == ExitCode.FAILED, checked.output  # it read this store
        assert "1 in the event log" in checked.stdout

    def test_web_error_page(self, name: str) -> None:
        """The viewer's message for a damaged row (the page shows it as text)."""
        from actors._web._params import damaged

        summary = CorruptRow(
            "Session 'broken' seq 5: its summary row does not match its digest. Rebuild the "
            "summary with 'amber recover --rebuild'.",
            session_id="broken",
            seq=5,
        )
        assert commands(str(damaged(summary, name))) == [
            ["amber", "recover", "--rebuild", "--db", name],
            ["amber", "check", "--db", name],
        ]


class TestMigrateHints:
    """What 'amber migrate' says to run when the source is damaged or a copy is wrong."""

    def test_a_damaged_source(self, recorded: Recorded, name: str) -> None:
        """The mend and the check for a damaged source; the mend runs, then migrate does."""
        db = _store(recorded, name, "DELETE FROM sessions WHERE session_id = 'demo'")
        result = amber("migrate", "--from", db, "--to", "new.db")
        assert result.exit_code == ExitCode.BAD_STORE, result.output
        rebuild = ["amber", "recover", "--rebuild", "--db", db]
        assert commands(result.stderr) == [rebuild, ["amber", "check", "--db", db]]
        assert amber(*rebuild[1:]).exit_code == 0
        assert amber("migrate", "--from", db, "--to", "new.db").exit_code == 0

    def test_copies_that_do_not_match(
        self, recorded: Recorded, name: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A copy that does not end at the source's chain head: check the target."""
        target = name
        SQLiteStore(target).close()  # an empty store: migrate copies into it
        real = SQLiteStore.check
        calls = []

        def check(self: SQLiteStore, *args: Any, **kwargs: Any) -> Any:
            report = real(self, *args, **kwargs)
            calls.append(report)
            return report if len(calls) == 1 else SimpleNamespace(heads={})

        monkeypatch.setattr(SQLiteStore, "check", check)
        result = amber("migrate", "--from", recorded.db, "--to", target)
        assert result.exit_code == ExitCode.FAILED, result.output
        assert commands(result.stderr) == [["amber", "check", "--db", target]]


class TestTravelHints:
    """The 'amber show' that lists a session's messages, for a message it has not."""

    @pytest.fixture
    def forked(self, recorded: Recorded, name: str) -> tuple[str, str]:
        """The store at ``name`` with session ``demo`` forked to an id as odd as the path."""
        db = _store(recorded, name)
        assert amber("fork", "demo", "--at", 3, "--as", name, "--db", db).exit_code == 0
        return db, name

    def test_timeline_of_a_message_it_has_not(self, forked: tuple[str, str]) -> None:
        """'amber timeline --message' of a message the session has not: the show that lists
        its messages, of an odd session id in an odd store."""
        db, session = forked
        result = amber("timeline", "--message", "nope", "--db", db, "--", session)
        assert result.exit_code == ExitCode.NOT_FOUND, result.output
        [show] = commands(result.stderr)
        assert show == intended("show", session, "--db", db)
        assert amber(*show[1:]).exit_code == 0

    def test_show_a_message_it_has_not(self, forked: tuple[str, str]) -> None:
        """'amber show --message' of a message the state has not: the show of that state."""
        db, session = forked
        result = amber("show", "--at", 0, "--message", "nope", "--db", db, "--", session)
        assert result.exit_code == ExitCode.NOT_FOUND, result.output
        [show] = commands(result.stderr)
        assert show == intended("show", session, "--at", 0, "--db", db)
        assert amber(*show[1:]).exit_code == 0


class TestOtherHints:
    """Hints built outside a command's output: resume's, the missing folder's, and the
    rebuild a runtime's caller is told."""

    def test_resume_with_no_answer(self, name: str) -> None:
        """``amber resume`` with standard input at its end names the resume to run again,
        for an odd session id as for an odd store."""
        from actors._cli._chat import _unanswered

        told = _unanswered(SessionState.empty(name), name, True, name)
        assert commands(told) == [intended("resume", name, "--shell", "--db", name)]

    def test_a_missing_folder(self, name: str) -> None:
        """The ``mkdir`` for a store in a folder that is not there, run in a shell, makes
        that folder."""
        folder = name + ".d"
        result = amber("demo", "--db", f"{folder}/a.db")
        assert result.exit_code == ExitCode.NOT_FOUND, result.output
        [make] = command_lines(result.stderr)
        dashes = ["--"] if folder.startswith("-") else []
        assert shlex.split(make) == ["mkdir", "-p", *dashes, folder]
        subprocess.run(["sh", "-c", make], check=True)
        assert Path(folder).is_dir()

    def test_a_runtime_told_to_rebuild(self, name: str) -> None:
        """A runtime's caller is told the rebuild with the store's absolute path."""
        from actors._damage import load_error

        for text in (
            "Session 's' snapshot at seq 4 is corrupt: messages chunk 0 does not match its "
            "digest. Snapshots are rebuilt from the event log by 'amber recover --rebuild' "
            "(store.rebuild()).",
            "Session 's' seq 5: its summary row does not match its digest. Rebuild the "
            "summary with 'amber recover --rebuild'.",
        ):
            damaged = CorruptRow(text, session_id="s", seq=4)
            with SQLiteStore(name) as store:
                told = str(load_error(damaged, store))
            rebuild = ["amber", "recover", "--rebuild", "--db", str(Path(name).absolute())]
            assert commands(told) == [rebuild]
        assert amber(*rebuild[1:]).exit_code == 0

    def test_shared_postgres_schema(self, name: str) -> None:
        """A shared PostgreSQL store's rebuild sets the schema (as odd as the path)."""
        from actors._damage import load_error

        damaged = CorruptRow(
            "Session 's' seq 5: its summary row does not match its digest. Rebuild the "
            "summary with 'amber recover --rebuild'.",
            session_id="s",
            seq=5,
        )
        store = SimpleNamespace(schema=name, shared=True)
        told = str(load_error(damaged, store))  # type: ignore[arg-type]
        assert commands(told) == [
            [f"AMBER_PG_SCHEMA={name}", "amber", "recover", "--rebuild", "--db", "URL"]
        ]


class TestQuoted:
    """``shell_line`` and ``quoted`` for any words: the command found between the quotes is
    the one written, and splits into the words."""

    @given(st.lists(st.text(st.characters(exclude_characters="\0")), min_size=1))
    def test_any_words(self, words: list[str]) -> None:
        line = shell_line(["amber", *words])
        assert shlex.split(line) == ["amber", *words]
        assert command_lines(f"Run {quoted(line)}, then look.") == [line]

    @pytest.mark.parametrize("name", list(NAMES.values()), ids=list(NAMES))
    def test_a_plain_command_keeps_single_quotes(self, name: str) -> None:
        """Only a command that holds a quote is set in double quotes."""
        line = shell_line(["amber", "check", "--db", name])
        assert quoted(line) == (f"'{line}'" if "'" not in line else f'"{line}"')
        assert (quoted(line)[0] == "'") == (name in {"amber.db", "-odd.db"})
