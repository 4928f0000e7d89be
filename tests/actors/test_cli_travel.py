"""The time-travel commands as a user trial met them: on a live store, across forks and
imports, with the commands they print for the user to run next.

Each session here is built event by event (``_log``), so the tests know its seqs.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cli_support import amber

from actors import Runtime, ScriptedModel, calls
from actors._cli._chat import chat_model, chat_tools
from actors._cli._hints import command_line
from runtime import (
    BranchImported,
    Category,
    Event,
    MessageAdded,
    MetadataUpdated,
    SessionState,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
    TurnStatus,
    apply,
    new_message,
)
from runtime.store import SQLiteStore

T0 = datetime(2026, 5, 27, 12, 0, tzinfo=UTC)


def _log(session: str, turns: int, *, after: SessionState | None = None) -> list[Event]:
    """``turns`` questions, each claimed and processed by a turn (3 events a turn)."""
    state = after if after is not None else SessionState.empty(session)
    out: list[Event] = []

    def emit(make: Any) -> None:
        nonlocal state
        event = make(session_id=session, seq=state.seq + 1, at=T0 + timedelta(seconds=state.seq))
        state = apply(state, event)
        out.append(event)

    for _ in range(turns):
        n = state.seq
        at = T0 + timedelta(seconds=n)
        message = new_message(
            Category.USER_QUESTION, id=f"u{n}", session_id=session, created_at=at,
            sender="Chii", content=f"question {n}",
        )  # fmt: skip
        emit(lambda message=message, **kw: MessageAdded(message=message, **kw))
        emit(lambda n=n, **kw: TurnStarted(turn_id=f"t{n}", **kw))
        emit(lambda n=n, **kw: TurnEnded(turn_id=f"t{n}", outcome=TurnOutcome.PROCESSED, **kw))
    return out


def _store(folder: Path, session: str = "s", turns: int = 10) -> Path:
    db = folder / "travel.db"
    with SQLiteStore(db) as store:
        store.append(_log(session, turns))
    return db


def _write_one(db: Path, session: str) -> None:
    """Another writer (its own connection) appends one event to ``session``."""
    with SQLiteStore(db) as other:
        head = other.load_state(session)
        first = next(iter(head))
        event = MetadataUpdated(
            session_id=session,
            seq=head.seq + 1,
            at=T0 + timedelta(hours=1, seconds=head.seq),
            message_id=first.id,
            metadata={"touched": head.seq},
        )
        other.append([event])


class TestReplayVerifyLive:
    @pytest.mark.parametrize("before", ["load_state", "verify"])
    def test_events_written_meanwhile_are_no_divergence(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str
    ) -> None:
        """A runtime appending while --verify reads (before the head, before the replay)
        makes no false divergence: the summary and the head are each compared with the
        replay at their own seq."""
        db = _store(tmp_path)
        original = getattr(SQLiteStore, before)
        written: list[bool] = []

        def live(self: SQLiteStore, session_id: str) -> Any:
            if not written:
                written.append(True)
                _write_one(db, session_id)
            return original(self, session_id)

        monkeypatch.setattr(SQLiteStore, before, live)
        result = amber("replay", "s", "--verify", "--db", db, "--json")
        assert written
        assert result.exit_code == 0, result.output
        checks = json.loads(result.output)["sessions"][0]["checks"]
        assert [(c["name"], c["ok"]) for c in checks] == [
            ("snapshot", True),
            ("head", True),
            ("summary", True),
        ]

    def test_a_summary_that_disagrees_still_fails(self, tmp_path: Path) -> None:
        """A summary row whose seq the log does not reach is still a divergence."""
        db = _store(tmp_path)
        import sqlite3

        conn = sqlite3.connect(db)
        with conn:
            conn.execute("UPDATE sessions SET messages = messages + 1 WHERE session_id = 's'")
        conn.close()
        result = amber("replay", "s", "--verify", "--db", db)
        assert result.exit_code == 1, result.output
        assert "✗ summary" in result.output


class TestImportAs:
    def _fork_export(self, tmp_path: Path) -> Path:
        """An export of ``f``, a fork of ``s`` at seq 6 that then adds messages itself."""
        db = _store(tmp_path)
        assert amber("fork", "s", "--at", "6", "--as", "f", "--db", db).exit_code == 0
        with SQLiteStore(db) as store:
            store.append(_log("f", 1, after=store.load_state("f")))
        file = tmp_path / "f.json"
        assert amber("export", "f", "-o", file, "--db", db).exit_code == 0
        return file

    def test_a_fork_keeps_its_provenance(self, tmp_path: Path) -> None:
        """`import --as NEW` of a fork keeps its source (session and seq) and the
        provenance of the messages it inherited; only its own messages move to NEW."""
        file = self._fork_export(tmp_path)
        target = tmp_path / "other.db"
        result = amber("import", file, "--as", "g", "--db", target, "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.output) == {
            "session_id": "g",
            "seq": 4,
            "messages": 3,
            "source_session_id": "s",
            "source_seq": 6,
        }
        with SQLiteStore(target) as store:
            events = store.events("g")
            head = store.load_state("g")
        first = events[0]
        assert isinstance(first, BranchImported)
        assert (first.source_session_id, first.source_seq) == ("s", 6)
        assert {m.id: (m.session_id, m.event_seq) for m in head} == {
            "u0": ("s", 1),
            "u3": ("s", 4),
            "u1": ("g", 2),
        }
        shown = amber("show", "g", "--message", "u3", "--db", target)
        assert "inherited with the fork: seq 4 of session s" in shown.output

    def test_the_text_names_the_source(self, tmp_path: Path) -> None:
        """The line printed says which session and seq the imported fork started from."""
        file = self._fork_export(tmp_path)
        target = tmp_path / "other.db"
        result = amber("import", file, "--as", "g", "--db", target)
        assert result.exit_code == 0, result.output
        assert result.output == (
            f"Imported g (4 events, 3 messages) into {target}; a fork of s at seq 6.\n"
        )


@pytest.fixture(scope="module")
def awaiting(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store whose session ``a`` waits for approval of a shell command (the chat's
    scripted model and its shell tool), and ``f``, a fork of it at its head."""
    db = tmp_path_factory.mktemp("approval") / "approval.db"
    with Runtime(model=chat_model(shell=True), store=db, tools=chat_tools(shell=True)) as rt:
        rt.send("a", "$ echo resumed-and-ran", sender="you")
        state = rt.wait_idle("a", timeout=60)
    assert state.active_turn is not None
    assert state.active_turn.awaiting_approval
    assert amber("fork", "a", "--at", "-1", "--as", "f", "--db", db).exit_code == 0
    return db


class TestResumeAwaitingApproval:
    def _copy(self, awaiting: Path, tmp_path: Path) -> Path:
        db = tmp_path / "copy.db"
        shutil.copyfile(awaiting, db)
        return db

    def test_a_denial_is_asked_for_and_the_turn_ends(self, awaiting: Path, tmp_path: Path) -> None:
        """`amber resume` of a fork whose head awaits approval asks for it; denied, the
        model is told and the turn ends."""
        db = self._copy(awaiting, tmp_path)
        result = amber("resume", "f", "--shell", "--db", db, input="n\n")
        assert result.exit_code == 0, result.output
        assert "waits for approval of 1 tool call" in result.output
        assert "approve run_shell_command(command='echo resumed-and-ran')? [y/N]" in result.output
        with SQLiteStore(db) as store:
            head = store.load_state("f")
        assert head.active_turn_id is None
        assert head.turn_list()[-1].status is TurnStatus.PROCESSED
        assert "resumed-and-ran" not in head.messages[-1].content

    def test_an_approval_runs_the_tool(self, awaiting: Path, tmp_path: Path) -> None:
        """Approved, the call runs and the model answers with its output."""
        db = self._copy(awaiting, tmp_path)
        result = amber("resume", "f", "--shell", "--db", db, input="y\n")
        assert result.exit_code == 0, result.output
        with SQLiteStore(db) as store:
            head = store.load_state("f")
        assert head.active_turn_id is None
        assert head.messages[-1].content == "Done: `resumed-and-ran`"

    def test_calls_are_asked_for_in_the_order_made(self, tmp_path: Path) -> None:
        """Several calls that wait are asked for in the order the model made them (they came
        in the hash order of their ids)."""
        db = tmp_path / "many.db"
        commands = [f"echo c{i}" for i in range(10)]
        model = ScriptedModel([calls([("run_shell_command", {"command": c}) for c in commands])])
        with Runtime(model=model, store=db, tools=chat_tools(shell=True)) as rt:
            rt.send("a", "run them", sender="you")
            rt.wait_idle("a", timeout=60)
        result = amber("resume", "a", "--shell", "--db", db, input="n\n" * len(commands))
        assert result.exit_code == 0, result.output
        asked = re.findall(r"approve run_shell_command\(command='(echo c\d)'\)", result.output)
        assert asked == commands

    def test_the_fork_says_to_resume_it(self, awaiting: Path, tmp_path: Path) -> None:
        """A fork of a turn that waits for approval points at `amber resume`, not at
        `amber recover` (which would give its input back)."""
        db = self._copy(awaiting, tmp_path)
        result = amber("fork", "a", "--at", "-1", "--as", "g", "--db", db)
        assert result.exit_code == 0, result.output
        assert "waited for approval of 1 tool call(s)" in result.output
        assert "amber resume g" in result.output
        assert "amber recover" not in result.output

    def test_without_the_tool_it_says_which_option(self, awaiting: Path, tmp_path: Path) -> None:
        """Without --shell the runtime would not have the tool the call waits for: usage
        error naming it and the option, before anything runs."""
        db = self._copy(awaiting, tmp_path)
        result = amber("resume", "f", "--db", db)
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(
            "amber: Session 'f' waits for approval of a call to run_shell_command, a tool this "
            "resume has only with --shell:"
        )
        with SQLiteStore(awaiting) as before, SQLiteStore(db) as after:
            assert after.events("f") == before.events("f")

    def test_no_answer_says_what_to_do(self, awaiting: Path, tmp_path: Path) -> None:
        """No one to answer (stdin at its end): exit 1, the call still waits, and the
        message says how to answer it."""
        db = self._copy(awaiting, tmp_path)
        result = amber("resume", "f", "--shell", "--db", db, input="")
        assert result.exit_code == 1, result.output
        assert "still waits for approval of run_shell_command" in result.stderr
        assert "amber resume f --shell --db" in result.stderr
        with SQLiteStore(db) as store:
            assert store.load_state("f").active_turn_id is not None


def _hint(output: str, after: str) -> list[str]:
    """The words of the command printed after ``after`` (up to the line's end), as a shell
    would split them, without the leading ``amber``."""
    line = next(line for line in output.splitlines() if after in line)
    rest = line.split(after, 1)[1]
    words = shlex.split(rest[rest.index("amber ") :])
    assert words[0] == "amber"
    return words[1:]


class TestCommandLine:
    @pytest.mark.parametrize(
        ("args", "options", "expected"),
        [
            (("show", "demo"), ("--db", "amber.db"), "amber show demo --db amber.db"),
            (("show", "-f"), ("--db", "a.db"), "amber show --db a.db -- -f"),
            (
                ("show", "it's"),
                ("--db", "my store.db"),
                "amber show 'it'\\''s' --db 'my store.db'",
            ),
            (("show", 'say "hi"'), ("--db", "a.db"), "amber show 'say '\\\"'hi'\\\" --db a.db"),
            (("diff", "demo", -2, -1), (), "amber diff -- demo -2 -1"),
            (("recover",), ("--older-than", 0), "amber recover --older-than 0"),
            (("timeline", "s"), ("--from", -10), "amber timeline s --from -10"),
        ],
    )
    def test_quoted_and_dashes_after_double_dash(
        self, args: tuple[Any, ...], options: tuple[Any, ...], expected: str
    ) -> None:
        """Every word is shell-quoted; arguments that start with '-' come after '--'."""
        assert command_line(*args, options=options) == expected


ODD = "-odd id"
"""A session id that starts with '-' and holds a space."""


class TestPrintedCommandsRun:
    def test_fork_look_at_it(self, tmp_path: Path) -> None:
        """`amber fork --as '-odd id'` prints a `show` that runs as printed."""
        db = tmp_path / "a store.db"
        db = _store(tmp_path).rename(db)
        result = amber("fork", "s", "--at", "3", "--as", ODD, "--db", db)
        assert result.exit_code == 0, result.output
        words = _hint(result.output, "Look at it: ")
        assert words == ["show", "--db", str(db), "--", ODD]
        shown = amber(*words)
        assert shown.exit_code == 0, shown.output

    def test_diff_more_events(self, tmp_path: Path) -> None:
        """`amber diff` of more than 20 events prints a `timeline` of the rest that runs,
        with the store it read."""
        db = _store(tmp_path, session=ODD)
        result = amber("diff", "--db", db, "--", ODD, "0", "30")
        assert result.exit_code == 0, result.output
        words = _hint(result.output, "more: ")
        assert words == ["timeline", "--from", "21", "--to", "30", "--db", str(db), "--", ODD]
        listed = amber(*words)
        assert listed.exit_code == 0, listed.output
        assert len(listed.output.splitlines()) == 1 + 10

    def test_no_such_session_lists_them(self, tmp_path: Path) -> None:
        """The hint of a session not found names the store quoted."""
        db = _store(tmp_path).rename(tmp_path / "my store.db")
        result = amber("show", "zzz", "--db", db)
        assert result.exit_code == 3
        words = _hint(result.stderr, "list them with: ")
        assert words == ["sessions", "--db", str(db)]
        assert amber(*words).exit_code == 0

    def test_resume_idle(self, tmp_path: Path) -> None:
        """`amber resume` of a session whose id starts with '-' ends with a `timeline`
        that runs."""
        db = tmp_path / "r.db"
        with SQLiteStore(db) as store:
            message = new_message(
                Category.USER_QUESTION, id="q", session_id=ODD, created_at=T0,
                sender="Chii", content="hello",
            )  # fmt: skip
            store.append([MessageAdded(session_id=ODD, seq=1, at=T0, message=message)])
        result = amber("resume", "--db", db, "--", ODD)
        assert result.exit_code == 0, result.output
        words = _hint(result.output, "is idle at seq ")
        assert words[-2:] == ["--", ODD]
        assert amber(*words).exit_code == 0


@pytest.fixture(scope="module")
def long_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3,600 events appended 300 at a time: snapshots every 300, checkpoints kept at 300,
    1,500 and 2,700."""
    db = tmp_path_factory.mktemp("long") / "long.db"
    log = _log("s", 1_200)
    with SQLiteStore(db) as store:
        for start in range(0, len(log), 300):
            store.append(log[start : start + 300])
    return db


class TestDiffFarApart:
    def test_only_the_two_states_and_the_printed_events(
        self, long_db: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """`amber diff s 5 2800` applies the events up to A's printed ones and from B's
        nearest stored state, not the 2,800 between them; it prints what the whole
        timeline says."""
        from actors._cli._diff import diff_data
        from runtime import diff
        from runtime.store import _travel

        with SQLiteStore(long_db) as store:
            whole = store.load_timeline("s")
        applied: list[int] = []
        original = _travel._applied

        def counted(session_id: str, state: SessionState, event: Event) -> SessionState:
            applied.append(event.seq)
            return original(session_id, state, event)

        monkeypatch.setattr(_travel, "_applied", counted)
        result = amber("diff", "s", "5", "2800", "--db", long_db, "--json")
        assert result.exit_code == 0, result.output
        expected = diff_data(diff(whole.at(5), whole.at(2800)))
        assert json.loads(result.output) == json.loads(
            json.dumps({"session_id": "s", "other_session_id": None, **expected}, default=str)
        )
        assert len(applied) <= 25 + 100
        applied.clear()
        text = amber("diff", "s", "5", "2800", "--db", long_db)
        assert text.exit_code == 0, text.output
        assert "2795 event(s) in between:" in text.output
        assert "… 2775 more: amber timeline s --from 26 --to 2800" in text.output
        assert len(applied) <= 25 + 100

    def test_backwards(self, long_db: Path) -> None:
        """B before A: the reverse diff, no events listed."""
        result = amber("diff", "s", "2800", "5", "--db", long_db)
        assert result.exit_code == 0, result.output
        assert "s seq 2800 → seq 5" in result.output
        assert "event(s) in between" not in result.output


class TestImportNotAnExport:
    @pytest.mark.parametrize(
        ("text", "what"),
        [
            ('{"a": 1}', "its format is None, not 'amber.session'"),
            ('{"format": "other", "events": []}', "its format is 'other', not 'amber.session'"),
            ("[1, 2]", "it holds an array, not a JSON object"),
            ('"text"', "it holds a string, not a JSON object"),
            ('{"format": "amber.session", "events": "no"}', "it has no list of events"),
        ],
    )
    def test_names_amber_export(self, tmp_path: Path, text: str, what: str) -> None:
        """JSON that is not an export exits 4, says why, and names `amber export` as the
        way to make one; nothing is stored."""
        file = tmp_path / "notes.json"
        file.write_text(text)
        db = tmp_path / "new.db"
        result = amber("import", file, "--db", db)
        assert result.exit_code == 4
        assert result.stderr == (
            f"amber: '{file}' is not an Amber export: {what}. Make one with 'amber export "
            "SESSION -o FILE --db STORE' (the store that holds the session), then import that "
            "file.\n"
        )

    def test_standard_input(self, tmp_path: Path) -> None:
        """From stdin the message says so."""
        result = amber("import", "-", "--db", tmp_path / "new.db", input="[]")
        assert result.exit_code == 4
        assert result.stderr.startswith(
            "amber: standard input is not an Amber export: it holds an array"
        )
