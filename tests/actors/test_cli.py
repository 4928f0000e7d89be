"""The ``amber`` CLI's read-only commands, its exit codes and its errors.

Every test runs the command through click's test runner against a store
written by a real run (``amber demo`` plus a session whose model failed).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import pytest
from cli_support import Recorded, amber, recorded

from actors._cli import ExitCode, main
from runtime import EVENT_TYPES, ModelCallStarted
from runtime.store import SQLiteStore

__all__ = ["recorded"]


WRITE_REPORT_MAY_HAVE_RUN = (
    "[Interrupted: the call to write_report was still running when its turn was cut off, and "
    "its result was lost; it may have run, in part or in full. Check before calling it again.]"
)
"""What the model reads for the demo's write_report call, which the interrupt cut."""


class TestMain:
    def test_events_lists_every_kind(self, capsys: pytest.CaptureFixture[str]) -> None:
        """`amber events` prints one line per event kind; main() returns the exit code."""
        assert main(["events"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert [line.split()[0] for line in lines] == list(EVENT_TYPES)

    def test_events_are_aligned_plain_sentences(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Every description starts in one column, two spaces after the longest kind, and
        reads as text: no reST markup (``x``) taken over from a docstring."""
        assert main(["events"]) == 0
        lines = capsys.readouterr().out.splitlines()
        column = max(len(kind) for kind in EVENT_TYPES) + 2
        for line, kind in zip(lines, EVENT_TYPES, strict=True):
            assert line[:column] == kind.ljust(column)
            assert line[column] != " "
            assert line.endswith(".")
            assert "`" not in line

    def test_unknown_command_is_a_usage_error(self, capsys: pytest.CaptureFixture[str]) -> None:
        """An unknown command exits 2 and names itself."""
        assert main(["nope"]) == ExitCode.USAGE
        assert "No such command 'nope'" in capsys.readouterr().err

    def test_help_lists_commands_in_order(self) -> None:
        """The demo comes first, then chat and the time-travel commands."""
        result = amber("--help")
        assert result.exit_code == 0
        listed = [
            line.split()[0]
            for line in result.output.split("Commands:")[1].splitlines()
            if line.strip()
        ]
        assert listed[:8] == [
            "demo",
            "chat",
            "resume",
            "sessions",
            "timeline",
            "show",
            "diff",
            "inspect",
        ]
        assert "Exit codes: 0 ok, 1 a check failed" in result.output

    def test_exit_codes_are_the_documented_ones(self) -> None:
        """Scripts rely on these numbers: they never change."""
        assert {code.name: code.value for code in ExitCode} == {
            "OK": 0,
            "FAILED": 1,
            "USAGE": 2,
            "NOT_FOUND": 3,
            "BAD_STORE": 4,
            "CONFLICT": 5,
            "INTERRUPTED": 130,
        }


class TestStoreErrors:
    @pytest.mark.parametrize(
        "args",
        [
            ["sessions"],
            ["timeline", "demo"],
            ["show", "demo"],
            ["diff", "demo", "1", "2"],
            ["fork", "demo", "--at", "1"],
            ["replay", "demo", "--verify"],
            ["export", "demo"],
            ["recover"],
            ["inspect", "demo"],
        ],
    )
    def test_a_missing_file_is_not_found_and_not_created(
        self, tmp_path: Path, args: list[str]
    ) -> None:
        """Read commands never make a new store out of a mistyped path."""
        db = tmp_path / "typo.db"
        result = amber(*args, "--db", db)
        assert result.exit_code == ExitCode.NOT_FOUND
        assert result.stderr == (
            f"amber: No Amber store at '{db}': the file does not exist. Pass --db PATH (or set "
            "AMBER_DB) to point at a store; 'amber demo' makes one.\n"
        )
        assert not db.exists()

    @pytest.mark.parametrize(
        ("db", "hint"),
        [
            ("postgress://localhost/test", "did you mean 'postgresql://localhost/test'?"),
            ("postgresql:/localhost/test", "did you mean 'postgresql://localhost/test'?"),
            ("sqlite:///data/amber.db", "for a SQLite file pass its path ('data/amber.db')"),
            ("mysql://root@localhost/x", "pass a SQLite file's path or a postgresql:// URL."),
        ],
    )
    def test_a_mistyped_url_is_a_usage_error(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, db: str, hint: str
    ) -> None:
        """A URL that is not PostgreSQL's was read as a file path ("no file"; chat made an
        empty SQLite store under that name): it exits 2 naming the scheme, and writes
        nothing."""
        monkeypatch.chdir(tmp_path)
        for args in (["sessions"], ["demo"]):
            result = amber(*args, "--db", db)
            assert result.exit_code == ExitCode.USAGE, result.output
            assert f"looks like a URL with the scheme '{db.split(':')[0]}'" in result.stderr
            assert hint in result.stderr
        assert list(tmp_path.iterdir()) == []

    def test_a_text_file_is_not_a_store(self, tmp_path: Path) -> None:
        """A file that is not SQLite exits 4 and is left as it was."""
        path = tmp_path / "notes.txt"
        path.write_text("hello\n")
        result = amber("sessions", "--db", path)
        assert result.exit_code == ExitCode.BAD_STORE
        assert result.stderr.startswith(f"amber: NotAStore: '{path}' is not an Amber store")
        assert result.stderr.count("\n") == 1
        assert path.read_text() == "hello\n"

    def test_another_sqlite_database_is_not_a_store(self, tmp_path: Path) -> None:
        """Another application's SQLite database exits 4, naming its tables."""
        path = tmp_path / "app.db"
        with contextlib.closing(sqlite3.connect(path)) as db, db:
            db.execute("CREATE TABLE users (name TEXT)")
        result = amber("timeline", "demo", "--db", path)
        assert result.exit_code == ExitCode.BAD_STORE
        assert "is an SQLite database but not an Amber store" in result.stderr
        assert "tables: users" in result.stderr

    def test_an_empty_file_is_not_a_store(self, tmp_path: Path) -> None:
        """An empty file is refused, not turned into a store."""
        path = tmp_path / "empty.db"
        path.touch()
        result = amber("sessions", "--db", path)
        assert result.exit_code == ExitCode.BAD_STORE
        assert result.stderr == (
            f"amber: '{path}' is an empty file, not an Amber store. Pass --db PATH to point at a "
            "store.\n"
        )
        assert path.stat().st_size == 0

    @pytest.mark.parametrize("bad", ["", " ", "a\nb", "x" * 257])
    @pytest.mark.parametrize(
        "argv",
        [["fork", "demo", "--at", "5", "--as"], ["demo", "--session"], ["chat", "--session"]],
        ids=["fork", "demo", "chat"],
    )
    def test_a_session_id_no_session_can_have_is_a_usage_error(
        self, recorded: Recorded, tmp_path: Path, argv: list[str], bad: str
    ) -> None:
        """An id no session can have (empty, blank, a control character, too long) exits 2 naming
        the option and what is wrong, before anything is stored (``fork --as ''`` exited 1
        with an event's internal error, ``demo --session ''`` 1 as a config error)."""
        db = recorded.copy(tmp_path)
        before = db.read_bytes()
        result = amber(*argv, bad, "--db", db, input="")
        assert result.exit_code == ExitCode.USAGE
        assert f"Invalid value for '{argv[-1]}': Session id" in result.stderr
        assert "cannot be used" in result.stderr
        assert db.read_bytes() == before

    def test_sessions_piped_prints_a_session_a_line(self, recorded: Recorded) -> None:
        """Piped, ``amber sessions`` prints each session on one whole line however narrow the
        columns (a user's ``amber sessions | cat`` split rows over 3 to 6 lines and cut cells to
        "proc…"), so grep finds whole rows."""
        from click.testing import CliRunner

        from actors._cli import cli

        runner = CliRunner(env={"COLUMNS": "40", "AMBER_DB": None})
        result = runner.invoke(cli, ["sessions", "--db", str(recorded.db)])
        assert result.exit_code == 0
        lines = result.output.splitlines()
        assert lines[0].split() == [
            "session", "events", "messages", "active", "turn", "last", "active", "cost", "statuses"
        ]  # fmt: skip
        (demo,) = [line for line in lines if line.startswith("demo ")]
        assert "…" not in result.output
        assert "3 processed · 2 interrupted · 10 delivered" in demo
        assert lines[-1].endswith("session(s) in " + str(recorded.db))

    def test_amber_db_environment_variable(self, recorded: Recorded, tmp_path: Path) -> None:
        """$AMBER_DB is the default store."""
        from click.testing import CliRunner

        from actors._cli import cli

        result = CliRunner(env={"AMBER_DB": str(recorded.db)}).invoke(cli, ["sessions", "--json"])
        assert result.exit_code == 0
        assert {s["session_id"] for s in json.loads(result.output)} == {"demo", "broken"}


class TestSessionAndSeqErrors:
    @pytest.mark.parametrize(
        "argv",
        [["timeline", "dmeo"], ["show", "dmeo"], ["diff", "dmeo", "1"], ["export", "dmeo"],
         ["fork", "dmeo", "--at", "1"], ["inspect", "dmeo"], ["replay", "dmeo"],
         ["resume", "dmeo"]],
        ids=lambda argv: argv[0],
    )  # fmt: skip
    def test_unknown_session_suggests_a_close_one(
        self, recorded: Recorded, argv: list[str]
    ) -> None:
        """A typo exits 3 and suggests the session it probably meant, in every command that
        names a session (amber resume said only that there was no such session)."""
        result = amber(*argv, "--db", recorded.db)
        assert result.exit_code == ExitCode.NOT_FOUND
        assert (
            result.stderr == f"amber: No session 'dmeo' in '{recorded.db}'; did you mean 'demo'?\n"
        )

    def test_unknown_session_without_a_close_one(self, recorded: Recorded) -> None:
        """With nothing close, the error points at `amber sessions`."""
        result = amber("show", "zzz", "--db", recorded.db)
        assert result.exit_code == ExitCode.NOT_FOUND
        assert "it holds 2 session(s); list them with: amber sessions --db" in result.stderr

    @pytest.mark.parametrize("seq", ["99", "-100", "48", "-49"])
    def test_seq_out_of_range(self, recorded: Recorded, seq: str) -> None:
        """A seq the session does not hold exits 3 and says which seqs it holds, positive
        and negative (just past the lowest negative one, it named only -1)."""
        last = recorded.demo.events
        result = amber("show", "demo", "--at", seq, "--db", recorded.db)
        assert result.exit_code == ExitCode.NOT_FOUND
        assert result.stderr == (
            f"amber: Session 'demo' has no seq {seq}: it holds seq 0 (before the first event) to "
            f"{last}. Pass --at between 0 and {last}, or between {-last - 1} and -1 to count "
            f"back from the head (-1 is the head, {-last - 1} seq 0).\n"
        )

    def test_seq_that_is_not_a_number_is_a_usage_error(self, recorded: Recorded) -> None:
        """`--at foo` exits 2 and says what a seq is."""
        result = amber("show", "demo", "--at", "foo", "--db", recorded.db)
        assert result.exit_code == ExitCode.USAGE
        assert "'foo' is not a seq: pass a number (0 is the empty state" in result.stderr

    @pytest.mark.parametrize("seq", ["-0", "-00", " -0"])
    def test_minus_zero_is_not_the_empty_state(self, recorded: Recorded, seq: str) -> None:
        """`--at -0` read as 0 showed the empty state where the head was meant: exit 2."""
        result = amber("show", "demo", "--at", seq, "--db", recorded.db)
        assert result.exit_code == ExitCode.USAGE
        assert "is not a seq: 0 is the empty state before the first event and -1 the head" in (
            result.stderr
        )

    def test_timeline_from_after_to_is_a_usage_error(self, recorded: Recorded) -> None:
        """`timeline --from 10 --to 5` printed "(no event matches)" and exited 0."""
        result = amber("timeline", "demo", "--from", "10", "--to", "5", "--db", recorded.db)
        assert result.exit_code == ExitCode.USAGE
        assert "--to 5 is seq 5, before --from 10 (seq 10): no event lies between" in (
            result.stderr
        )
        for before_any in (["--to", "0"], ["--from", "0", "--to", "0"]):
            empty = amber("timeline", "demo", *before_any, "--db", recorded.db)
            assert empty.exit_code == ExitCode.USAGE
            # User trial: the advice named --from, though --to is the problem.
            assert empty.stderr == (
                "amber: --to 0 is seq 0, the empty state before the first event: no event lies "
                "up to it. Pass --to between 1 and 47 (session 'demo' holds seq 1 to 47), or a "
                "negative number to count back from the head.\n"
            )
        same = amber("timeline", "demo", "--from", "5", "--to", "5", "--db", recorded.db)
        assert same.exit_code == ExitCode.OK
        assert "(no event matches)" not in same.output

    def test_message_not_there_yet(self, recorded: Recorded) -> None:
        """`show --message` before the message exists says when it is added."""
        reply_id = recorded.demo.state.messages[-1].id
        added = recorded.demo.state.messages[-1].event_seq
        result = amber("show", "demo", "--at", "3", "--message", reply_id, "--db", recorded.db)
        assert result.exit_code == ExitCode.NOT_FOUND
        assert result.stderr == (
            f"amber: Session 'demo' has no message '{reply_id}' at seq 3; it is added at seq "
            f"{added}; pass --at {added} or later.\n"
        )


class TestSessions:
    def test_table(self, recorded: Recorded) -> None:
        """One row per session with events, messages, statuses and last activity."""
        result = amber("sessions", "--db", recorded.db)
        assert result.exit_code == 0
        rows = {line.split()[0]: line for line in result.output.splitlines()[1:3]}
        assert set(rows) == {"demo", "broken"}
        assert f"demo     {recorded.demo.events}" in rows["demo"]
        assert "10 delivered" in rows["demo"]
        assert "2 interrupted" in rows["demo"]
        assert "1 error" in rows["broken"]
        assert "2 session(s) in" in result.output

    def test_json(self, recorded: Recorded) -> None:
        """--json gives every field of the summary."""
        result = amber("sessions", "--db", recorded.db, "--json")
        data = {s["session_id"]: s for s in json.loads(result.output)}
        demo = data["demo"]
        assert demo["seq"] == recorded.demo.events
        assert demo["messages"] == len(recorded.demo.state)
        assert demo["counts"] == {"processed": 3, "interrupted": 2, "delivered": 10}
        assert demo["active_turn_id"] is None
        assert demo["updated_at"].endswith("+00:00")

    def test_json_counts_are_in_status_order(self, recorded: Recorded) -> None:
        """--json's counts come in the lifecycle's order whatever the process's hash seed
        (they came in a hash map's order: the same store printed differently each run)."""
        import os
        import subprocess
        import sys

        from runtime import STATUS_ORDER

        code = "from actors._cli import main; raise SystemExit(main(['sessions', '--json', '--db', "
        code += f"{str(recorded.db)!r}]))"
        orders = set()
        for seed in range(6):
            env = {**os.environ, "PYTHONHASHSEED": str(seed)}
            done = subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
            )
            counts = {s["session_id"]: s["counts"] for s in json.loads(done.stdout)}["demo"]
            orders.add(tuple(counts))
        ordered = tuple(str(s) for s in STATUS_ORDER if str(s) in counts)
        assert orders == {ordered}

    def test_empty_store(self, tmp_path: Path) -> None:
        """A store without sessions says how to make one."""
        from runtime.store import SQLiteStore

        SQLiteStore(tmp_path / "new.db").close()
        result = amber("sessions", "--db", tmp_path / "new.db")
        assert result.exit_code == 0
        assert "No sessions in" in result.output
        assert "'amber demo'" in result.output

    @pytest.mark.parametrize("name", ["[bold]new.db", "a [i].db", "[red]x.db"])
    def test_a_path_is_printed_as_it_is(self, tmp_path: Path, name: str) -> None:
        """A store path that looks like rich markup is printed as typed (was: "[bold]" taken
        for a style and dropped, so the path printed was not the store's)."""
        from runtime.store import SQLiteStore

        SQLiteStore(tmp_path / name).close()
        result = amber("sessions", "--db", tmp_path / name)
        assert result.exit_code == 0
        assert f"No sessions in {tmp_path / name};" in result.output


class TestTimeline:
    def test_one_line_per_event(self, recorded: Recorded) -> None:
        """seq, time, kind and what changed, for every event."""
        result = amber("timeline", "demo", "--db", recorded.db)
        assert result.exit_code == 0
        lines = result.output.splitlines()
        assert lines[0].startswith(f"demo: {recorded.demo.events} events, ")
        events = lines[1:]
        assert len(events) == recorded.demo.events
        assert events[0].split()[:3] == ["1", events[0].split()[1], "message_added"]
        assert "+ msg_5be1ef79_000001 user question from Chii: What is 2**100?" in events[0]
        assert "turn_5be1ef79_000002 starts, claims msg_5be1ef79_000001" in events[1]
        interrupt = events[recorded.demo.interrupt_seq - 1]
        assert "turn_ended" in interrupt
        assert (
            "turn_5be1ef79_000032 ends interrupted (interrupted by msg_5be1ef79_000039; tool call"
            in interrupt
        )
        # The write_report call was running: the interrupt's batch marks it first.
        marked = events[recorded.demo.interrupt_seq - 2]
        assert "msg_5be1ef79_000036 metadata: may_have_run=true" in marked
        assert "1 unanswered call(s) interrupted" in interrupt

    def test_filters(self, recorded: Recorded) -> None:
        """--kind, --from/--to (negative from the head) and --message narrow the list."""
        ended = amber("timeline", "demo", "--kind", "turn_ended", "--db", recorded.db)
        assert len(ended.output.splitlines()) == 1 + 4
        last = amber("timeline", "demo", "--from", "-3", "--db", recorded.db)
        seqs = [int(line.split()[0]) for line in last.output.splitlines()[1:]]
        assert seqs == [recorded.demo.events - 2, recorded.demo.events - 1, recorded.demo.events]
        window = amber("timeline", "demo", "--from", "2", "--to", "3", "--db", recorded.db)
        assert [line.split()[0] for line in window.output.splitlines()[1:]] == ["2", "3"]
        call = amber("timeline", "demo", "--message", "msg_5be1ef79_000036", "--db", recorded.db)
        kinds = [line.split()[2] for line in call.output.splitlines()[1:]]
        # shown, marked as a call that may have run, interrupted
        assert kinds == ["message_added", "status_changed", "metadata_updated", "turn_ended"]

    def test_model_call_events(self, recorded: Recorded) -> None:
        """Model calls read as numbered calls: started, then completed with cost and outcome."""
        started = amber("timeline", "demo", "--kind", "model_call_started", "--db", recorded.db)
        finished = amber("timeline", "demo", "--kind", "model_call_finished", "--db", recorded.db)
        assert len(started.output.splitlines()) == len(finished.output.splitlines()) == 1 + 6
        first = finished.output.splitlines()[1]
        assert "◆ model call #1 run_5be1ef79_000003 completed in " in first
        assert "out tokens → run_shell_command" in first
        failed = amber("timeline", "broken", "--kind", "model_call_finished", "--db", recorded.db)
        assert "failed" in failed.output
        assert "the provider is down" in failed.output

    def test_no_match(self, recorded: Recorded) -> None:
        """Filters that match nothing say so and still exit 0."""
        result = amber("timeline", "demo", "--kind", "rolled_back", "--db", recorded.db)
        assert result.exit_code == 0
        assert "(no event matches)" in result.output

    def test_unknown_message_is_not_found(self, recorded: Recorded) -> None:
        """--message with an id the session never had exits 3 and says how to find one,
        instead of printing no event at all."""
        for extra in ([], ["--json"]):
            result = amber("timeline", "demo", "--message", "msg_nope", *extra, "--db", recorded.db)
            assert result.exit_code == ExitCode.NOT_FOUND
            assert result.stdout == ""
            assert result.stderr == (
                "amber: Session 'demo' has no message 'msg_nope'. Pass --message with the id "
                f"of one of its messages; 'amber show demo --db {recorded.db}' lists them.\n"
            )

    def test_message_with_no_event_in_range(self, recorded: Recorded) -> None:
        """A message the session has, filtered out by --from/--to, is no match (exit 0)."""
        result = amber(
            "timeline", "demo", "--message", "msg_5be1ef79_000036", "--to", "3", "--db", recorded.db
        )
        assert result.exit_code == 0
        assert "(no event matches)" in result.output

    def test_unknown_kind_is_a_usage_error(self, recorded: Recorded) -> None:
        """--kind takes only the core's event kinds."""
        result = amber("timeline", "demo", "--kind", "nope", "--db", recorded.db)
        assert result.exit_code == ExitCode.USAGE

    def test_json(self, recorded: Recorded) -> None:
        """--json has the summary line and the whole event."""
        result = amber("timeline", "demo", "--to", "2", "--json", "--db", recorded.db)
        data = json.loads(result.output)
        assert [e["seq"] for e in data] == [1, 2]
        assert data[1]["kind"] == "turn_started"
        assert data[1]["summary"] == "▶ turn_5be1ef79_000002 starts, claims msg_5be1ef79_000001"
        assert data[0]["event"]["message"]["content"] == "What is 2**100? Compute it, don't guess."


class TestShow:
    def test_state_before_the_interrupt(self, recorded: Recorded) -> None:
        """The header, the event, every message with its status, the active turn."""
        seq = recorded.demo.input_seq
        result = amber("show", "demo", "--at", seq, "--db", recorded.db)
        assert result.exit_code == 0
        out = result.output
        assert out.startswith(f"demo at seq {seq} of {recorded.demo.events} · ")
        assert "Active turn: turn_5be1ef79_000032 (since seq" in out
        assert "Event: + msg_5be1ef79_000039 user question from Chii: Actually, stop" in out
        rows = {line.split()[1]: line for line in out.splitlines() if " msg_5be1ef79_" in line[:30]}
        assert "processing" in rows["msg_5be1ef79_000031"]
        assert "pending_agent" in rows["msg_5be1ef79_000039"]
        assert "write_report" in rows["msg_5be1ef79_000036"]
        assert "delivered" in rows["msg_5be1ef79_000036"]
        assert "turn_5be1ef79_000032 active" in out

    def test_head_by_default_and_seq_zero(self, recorded: Recorded) -> None:
        """No --at is the head; --at 0 is the empty state."""
        head = amber("show", "demo", "--db", recorded.db)
        assert f"at seq {recorded.demo.events} of {recorded.demo.events}" in head.output
        assert "Active turn: none" in head.output
        empty = amber("show", "demo", "--at", "0", "--db", recorded.db)
        assert empty.exit_code == 0
        assert "at seq 0 of" in empty.output
        assert "0 messages" in empty.output

    def test_a_failed_turn(self, recorded: Recorded) -> None:
        """A model failure shows as an error input and a crash notice."""
        result = amber("show", "broken", "--db", recorded.db)
        assert "error" in result.output
        assert "crash notice" in result.output
        assert "the provider is down" in amber("timeline", "broken", "--db", recorded.db).output

    def test_one_model_call_is_singular(self, recorded: Recorded) -> None:
        """The header counts one model call as "1 model call" (it read "1 model calls")."""
        with SQLiteStore(recorded.db) as store:
            first = next(e for e in store.events("demo") if isinstance(e, ModelCallStarted))
        out = amber("show", "demo", "--at", first.seq, "--db", recorded.db).output
        assert " · 1 model call, cost unknown\n" in out
        head = amber("show", "demo", "--db", recorded.db).output
        assert " · 6 model calls, cost unknown\n" in head

    def test_model_calls(self, recorded: Recorded) -> None:
        """The audit rows are listed: one per model call, in order, with status and cost."""
        out = amber("show", "demo", "--db", recorded.db).output
        calls = out.split("Model calls:\n", 1)[1].splitlines()
        # The seqs come from the log: the demo's parallel tool calls (turn 2) may finish
        # in either order, which moves the later seqs of that turn by one.
        with SQLiteStore(recorded.db) as store:
            started = [e for e in store.events("demo") if isinstance(e, ModelCallStarted)]
        assert len(started) == 6
        assert [line.split()[:3] for line in calls] == [
            [f"#{n}", event.operation_id, "completed"] for n, event in enumerate(started, start=1)
        ]
        assert all(line.split()[1].startswith("run_5be1ef79_") for line in calls)
        assert "tool_use" in calls[0]
        broken = amber("show", "broken", "--db", recorded.db).output
        assert "failed" in broken.split("Model calls:\n", 1)[1]
        assert "the provider is down" in broken.split("Model calls:\n", 1)[1]

    @pytest.mark.parametrize("view", ["openai", "anthropic", "gemini"])
    def test_provider_views_as_they_were(self, recorded: Recorded, view: str) -> None:
        """The provider request at the interrupt synthesizes the cut tool call's result."""
        seq = recorded.demo.interrupt_seq
        result = amber("show", "demo", "--at", seq, "--view", view, "--json", "--db", recorded.db)
        assert result.exit_code == 0
        text = result.output
        json.loads(text)
        assert WRITE_REPORT_MAY_HAVE_RUN in text

    def test_provider_view_text(self, recorded: Recorded) -> None:
        """Without --json the request is printed as JSON under the header."""
        result = amber("show", "demo", "--at", "2", "--view", "openai", "--db", recorded.db)
        assert "openai request view (no system prompt):" in result.output
        body = result.output.split("(no system prompt):\n", 1)[1]
        assert json.loads(body) == [
            {"role": "user", "content": "What is 2**100? Compute it, don't guess."}
        ]

    def test_history_and_clean_views(self, recorded: Recorded) -> None:
        """history is phased session_history; clean is the model's view."""
        history = amber("show", "demo", "--view", "history", "--db", recorded.db)
        assert "session_history: 15 messages, phased" in history.output
        clean = amber(
            "show", "demo", "--at", recorded.demo.interrupt_seq, "--view", "clean",
            "--db", recorded.db,
        )  # fmt: skip
        assert "clean_history:" in clean.output
        assert "(made by the view)" in clean.output  # the synthesized interrupted result

    def test_message_in_full(self, recorded: Recorded) -> None:
        """--message prints every field and the whole content."""
        # Found by content: its seq depends on which parallel tool call finished first.
        (failed,) = [
            m.id
            for m in recorded.demo.state.messages
            if m.tool_call_id and "weather service unreachable" in m.content
        ]
        result = amber("show", "demo", "--message", failed, "--db", recorded.db)
        out = result.output
        assert "tool result" in out
        assert "exception" in out
        assert "ConnectionError: weather service unreachable for 'Tokyo'" in out
        data = json.loads(
            amber("show", "demo", "--message", failed, "--json", "--db", recorded.db).output
        )
        assert data["is_error"] is True
        assert data["error_type"] == "exception"

    def test_json_state(self, recorded: Recorded) -> None:
        """--json gives the event and the state as the codec writes them."""
        result = amber("show", "demo", "--at", "2", "--json", "--db", recorded.db)
        data = json.loads(result.output)
        assert data["event"]["kind"] == "turn_started"
        assert data["state"]["seq"] == 2
        assert [m["status"] for m in data["state"]["messages"]] == ["processing"]


class TestDiff:
    def test_what_the_interrupt_changed(self, recorded: Recorded) -> None:
        """Status changes of the input and the cut call, the turn, and the event between."""
        seq = recorded.demo.interrupt_seq
        result = amber("diff", "demo", seq - 1, seq, "--db", recorded.db)
        assert result.exit_code == 0
        out = result.output
        assert "~ msg_5be1ef79_000031 status: processing → interrupted" in out
        assert "~ msg_5be1ef79_000036 status: delivered → interrupted" in out
        assert "▶ turn_5be1ef79_000032 turn: active → interrupted" in out
        assert "1 event(s) in between:" in out

    def test_negative_seqs_after_double_dash(self, recorded: Recorded) -> None:
        """`amber diff demo -- -2 -1` compares the last two states."""
        result = amber("diff", "demo", "--db", recorded.db, "--", "-2", "-1")
        assert result.exit_code == 0
        last = recorded.demo.events
        assert f"demo seq {last - 1} → seq {last}" in result.output
        assert "pending → delivered" in result.output

    def test_long_ranges_list_the_first_events(self, recorded: Recorded) -> None:
        """Past 20 events in between, the diff says how to list the rest."""
        result = amber("diff", "demo", "0", "--db", recorded.db)
        assert f"{recorded.demo.events} event(s) in between:" in result.output
        assert "more: amber timeline demo --from 21 --to" in result.output

    def test_json(self, recorded: Recorded) -> None:
        """--json lists added messages, changes and turns."""
        seq = recorded.demo.interrupt_seq
        result = amber("diff", "demo", seq - 1, seq, "--json", "--db", recorded.db)
        data = json.loads(result.output)
        assert data["before_seq"] == seq - 1
        assert data["after_seq"] == seq
        assert {(c["message_id"], c["after"]) for c in data["changed"]} == {
            ("msg_5be1ef79_000031", "interrupted"),
            ("msg_5be1ef79_000036", "interrupted"),
        }
        assert data["turns"] == [
            {"turn_id": "turn_5be1ef79_000032", "before": "active", "after": "interrupted"}
        ]

    def test_b_out_of_range(self, recorded: Recorded) -> None:
        """Each seq is checked; B names itself."""
        result = amber("diff", "demo", "1", "500", "--db", recorded.db)
        assert result.exit_code == ExitCode.NOT_FOUND
        assert "Pass B between 0 and" in result.stderr


class TestInspectCommand:
    def test_needs_a_terminal(self, recorded: Recorded) -> None:
        """Without a terminal, inspect says what to use instead (exit 2)."""
        result = amber("inspect", "demo", "--db", recorded.db)
        assert result.exit_code == ExitCode.USAGE
        assert "amber inspect needs a terminal" in result.stderr

    def test_checks_the_session_first(self, recorded: Recorded) -> None:
        """A missing session is reported before any terminal check."""
        result = amber("inspect", "nope", "--db", recorded.db)
        assert result.exit_code == ExitCode.NOT_FOUND


class TestTrialErrors:
    """User trial: errors that gave no fix, advised the wrong option, or let a wrong
    argument pass."""

    def test_export_into_a_missing_directory(self, recorded: Recorded, tmp_path: Path) -> None:
        """It printed 'amber: FileNotFoundError: [Errno 2] …' with exit 1."""
        target = tmp_path / "no dir" / "x.json"
        result = amber("export", "demo", "-o", target, "--db", recorded.db)
        assert result.exit_code == ExitCode.NOT_FOUND
        assert result.stderr == (
            f"amber: Cannot create the --output file '{target}': the directory "
            f"'{target.parent}' does not exist. Create it first (\"mkdir -p '{target.parent}'\"), "
            "or pass a path in an existing directory.\n"
        )

    def test_export_that_cannot_be_written(self, recorded: Recorded) -> None:
        result = amber("export", "demo", "-o", "/dev/full", "--force", "--db", recorded.db)
        assert result.exit_code == ExitCode.FAILED
        assert result.stderr == (
            "amber: Cannot write the --output file '/dev/full': No space left on device. Pass "
            "--output a file you may write, or leave it out to print the export.\n"
        )

    @pytest.mark.parametrize("command", ["import", "demo"])
    def test_a_store_in_a_missing_directory(
        self, recorded: Recorded, tmp_path: Path, command: str
    ) -> None:
        """`import --db /missing/x.db` printed "StoreError: … unable to open database file"."""
        export = tmp_path / "demo.json"
        assert amber("export", "demo", "-o", export, "--db", recorded.db).exit_code == 0
        db = tmp_path / "missing" / "x.db"
        args = [export] if command == "import" else []
        result = amber(command, *args, "--db", db)
        assert result.exit_code == ExitCode.NOT_FOUND
        assert result.stderr == (
            f"amber: Cannot create a store at '{db}': the directory '{db.parent}' does not "
            f"exist. Create it first ('mkdir -p {db.parent}'), or pass a path in an existing "
            "directory.\n"
        )
        assert not db.parent.exists()

    @pytest.mark.parametrize(
        "extra",
        [
            ["--at", "5"],
            ["--at", "head"],
            ["--view", "openai"],
            ["--view", "state"],
            ["--message", "msg_5be1ef79_000001"],
        ],
        ids=["at", "at-head", "view", "view-state", "message"],
    )
    def test_call_with_other_options(self, recorded: Recorded, extra: list[str]) -> None:
        """--call N ignored --at, --view and --message silently: now a usage error."""
        result = amber("show", "demo", "--call", "1", *extra, "--db", recorded.db)
        assert result.exit_code == ExitCode.USAGE, result.output
        option = extra[0]
        assert result.stderr.startswith(
            f"amber: --call N prints the request model call N sent and takes no {option} (got "
            f"{option} with --call): "
        )

    @pytest.mark.parametrize("seq", ["1_0", "+10", "\uff11\uff10", "0x1", "1.0", "- 1"])
    def test_seq_is_digits_only(self, recorded: Recorded, seq: str) -> None:
        """`--at 1_0` was read as seq 10 (Python's int() takes underscores, a sign,
        other scripts' digits)."""
        result = amber("show", "demo", "--at", seq, "--db", recorded.db)
        assert result.exit_code == ExitCode.USAGE
        assert f"{seq!r} is not a seq: pass a number" in result.stderr
        if seq in ("1_0", "+10", "\uff11\uff10"):
            assert "A seq is ASCII digits only: did you mean 10?" in result.stderr
        assert result.stdout == ""


class TestDirectionControls:
    """User trial: Unicode direction overrides (U+202E …) in stored text reached the
    terminal raw in timeline, show and show --full, while control characters were
    spelled out."""

    def test_spelled_out_everywhere(self, tmp_path: Path) -> None:
        from actors import Runtime, ScriptedModel, Settings, reply

        db = tmp_path / "bidi.db"
        model = ScriptedModel([reply("done \u202e evil \u2066x\u2069")], fallback=reply("ok"))
        settings = Settings(passivate_after=None)
        with Runtime(model=model, store=db, settings=settings) as rt:
            rt.send("s1", "go \u200fleft\u200e", sender="Chii\u202d")
            rt.wait_idle("s1", timeout=60)
        bidi = {chr(c) for c in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F))} | {
            chr(c) for c in range(0x2066, 0x206A)
        }
        with SQLiteStore(db) as store:
            last = store.load_state("s1").messages[-1].id
        runs = [["timeline"], ["show"], ["show", "--full"], ["show", "--view", "openai"]]
        runs += [["show", "--message", last], ["show", "--view", "clean"], ["show", "--json"]]
        for args in runs:
            result = amber(*args[:1], "s1", *args[1:], "--db", db)
            assert result.exit_code == 0, result.output
            if args[-1] == "--json":  # data, not the terminal: the text as stored
                assert "\u202e" in json.loads(result.stdout)["state"]["messages"][-1]["content"]
                continue
            assert not bidi & set(result.stdout), (args, result.stdout)
            assert "done \\u202e evil \\u2066x\\u2069" in result.stdout

    def test_json_on_a_terminal(self) -> None:
        """A provider view or a call's body on a terminal is rich's JSON, which wrote
        direction controls raw: the same JSON value, with them escaped."""
        import io

        from rich.console import Console
        from rich.text import Text

        from actors._cli._views import json_view

        out = io.StringIO()
        Console(file=out, force_terminal=True, width=80).print(json_view({"a": "x\u202ey\x9b"}))
        assert "\u202e" not in out.getvalue()
        assert "\x9b" not in out.getvalue()
        assert '"x\\u202ey\\u009b"' in Text.from_ansi(out.getvalue()).plain


def _demo_id(recorded: Recorded, text: str) -> str:
    """The id of the demo's message whose content or tool call holds ``text``."""
    (found,) = [
        m.id
        for m in recorded.demo.state.messages
        if text in m.content or (m.tool_call is not None and text == m.tool_call.name)
    ]
    return found


class TestShowMessageView:
    """`show --message ID --view openai` ignored --view: it printed the message's fields,
    not what the provider's request holds of it."""

    def test_provider_json_is_the_entries_built_from_it(self, recorded: Recorded) -> None:
        question = _demo_id(recorded, "What is 2**100?")
        result = amber(
            "show", "demo", "--message", question, "--view", "openai", "--json",
            "--db", recorded.db,
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout) == [
            {"role": "user", "content": "What is 2**100? Compute it, don't guess."}
        ]
        anthropic = amber(
            "show", "demo", "--message", question, "--view", "anthropic", "--json",
            "--db", recorded.db,
        )  # fmt: skip
        assert json.loads(anthropic.stdout) == {
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What is 2**100? Compute it, don't guess."}
                    ],
                }
            ]
        }

    @pytest.mark.parametrize("view", ["openai", "openai-responses", "anthropic", "gemini"])
    def test_an_interrupted_call_brings_its_synthesized_result(
        self, recorded: Recorded, view: str
    ) -> None:
        """The result the view made up for a call cut short is built from that call."""
        call = _demo_id(recorded, "write_report")
        result = amber(
            "show", "demo", "--message", call, "--view", view, "--json", "--db", recorded.db
        )
        assert result.exit_code == 0, result.output
        text = result.stdout
        json.loads(text)
        assert "write_report" in text
        assert WRITE_REPORT_MAY_HAVE_RUN in text
        assert "Write me a long report" not in text  # only what this message made

    def test_text_names_the_message_view_and_call(self, recorded: Recorded) -> None:
        question = _demo_id(recorded, "What is 2**100?")
        result = amber(
            "show", "demo", "--at", "2", "--message", question, "--view", "gemini",
            "--db", recorded.db,
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        out = result.stdout
        assert "No model call was sent the view of seq 2" in out  # the scripted model's
        header = (
            f"gemini request view of message {question} at seq 2 (no system prompt; spelled "
            "alone, not merged with its neighbours):"
        )
        assert header in out
        body = out.split(header + "\n", 1)[1]
        assert json.loads(body) == {
            "contents": [
                {"role": "user", "parts": [{"text": "What is 2**100? Compute it, don't guess."}]}
            ]
        }

    def test_clean_view_of_one_message(self, recorded: Recorded) -> None:
        call = _demo_id(recorded, "write_report")
        result = amber("show", "demo", "--message", call, "--view", "clean", "--db", recorded.db)
        assert result.exit_code == 0, result.output
        assert f"clean_history of message {call} at seq" in result.stdout
        thought = _demo_id(recorded, "the report tool will take a while")
        assert f"The view message holding it is also made from {thought} " in result.stdout
        assert "write_report" in result.stdout
        assert "(made by the view)" in result.stdout
        data = json.loads(
            amber(
                "show", "demo", "--message", call, "--view", "clean", "--json",
                "--db", recorded.db,
            ).stdout
        )  # fmt: skip
        assert [m["role"] for m in data["messages"]] == ["assistant", "tool"]

    def test_history_is_refused(self, recorded: Recorded) -> None:
        """The history view holds the stored messages as they are: nothing to project."""
        question = _demo_id(recorded, "What is 2**100?")
        result = amber(
            "show", "demo", "--message", question, "--view", "history", "--db", recorded.db
        )
        assert result.exit_code == ExitCode.USAGE, result.output
        assert result.stderr.startswith("amber: --message ID takes no --view history")

    def test_a_message_the_view_leaves_out(self, tmp_path: Path) -> None:
        """A notification is for people: the model's view has nothing of it, and says so."""
        from datetime import UTC, datetime

        from runtime import Category, MessageAdded, new_message

        at = datetime(2026, 5, 27, 12, 0, tzinfo=UTC)
        db = tmp_path / "n.db"
        question = new_message(
            Category.USER_QUESTION, id="q", session_id="s", created_at=at, sender="Chii",
            content="hello",
        )  # fmt: skip
        note = new_message(
            Category.NOTIFICATION, id="n", session_id="s", created_at=at, content="fyi"
        )
        with SQLiteStore(db) as store:
            store.append(
                [
                    MessageAdded(session_id="s", seq=1, at=at, message=question),
                    MessageAdded(session_id="s", seq=2, at=at, message=note),
                ]
            )
        result = amber("show", "s", "--message", "n", "--view", "openai", "--db", db)
        assert result.exit_code == 0, result.output
        assert (
            "Message 'n' (a notification, pending) is not in the model's view at seq 2: "
            "clean_history leaves it out" in result.stdout
        )
        data = amber("show", "s", "--message", "n", "--view", "anthropic", "--json", "--db", db)
        assert json.loads(data.stdout) == {"messages": []}


def test_show_unknown_message_names_the_command_that_lists_them(tmp_path: Path) -> None:
    """The hint was "'amber show' without --message lists the messages": no session, no
    store (pasted, it read ./amber.db), no seq."""
    import shlex
    from datetime import UTC, datetime

    from actors._cli._hints import command_line
    from runtime import Category, MessageAdded, new_message

    db = tmp_path / "my store.db"
    at = datetime(2026, 5, 27, 12, 0, tzinfo=UTC)
    with SQLiteStore(db) as store:
        for seq in (1, 2):
            message = new_message(
                Category.USER_QUESTION, id=f"q{seq}", session_id="-s", created_at=at,
                sender="Chii", content="hello",
            )  # fmt: skip
            store.append([MessageAdded(session_id="-s", seq=seq, at=at, message=message)])
    for extra, options in (((), ("--db", db)), (("--at", "1"), ("--at", 1, "--db", db))):
        result = amber("show", "--message", "nope", *extra, "--db", db, "--", "-s")
        assert result.exit_code == ExitCode.NOT_FOUND, result.output
        hint = command_line("show", "-s", options=options)
        # the hint quotes the path in single quotes, so it is set in double ones
        assert result.stderr.endswith(f'"{hint}" lists the messages.\n'), result.stderr
        assert amber(*shlex.split(hint)[1:]).exit_code == 0
