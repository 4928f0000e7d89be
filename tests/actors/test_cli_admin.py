"""The ``amber`` commands that check or write: fork, replay --verify, export, import, recover.

Each test that writes works on its own copy of a store made by a real run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import time
import zlib
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from cli_support import Recorded, amber, recorded

from actors import Runtime, ScriptedModel
from actors._cli import ExitCode
from actors._cli._admin import FORK_TRIES
from actors._ids import utc_now
from runtime import Event, SessionState, Status, TurnStatus, hang
from runtime.store import SQLiteStore
from runtime.store._summaries import SUMMARY_COLUMNS, summary_row_digest

__all__ = ["recorded"]


class TestFork:
    def test_fork_mid_turn(self, recorded: Recorded, tmp_path: Path) -> None:
        """A fork before the interrupt keeps the active turn and says how to recover it."""
        db = recorded.copy(tmp_path)
        seq = recorded.demo.input_seq
        result = amber("fork", "demo", "--at", seq, "--db", db)
        assert result.exit_code == 0
        new = f"demo-fork-{seq}"
        assert result.output.startswith(
            f"Forked demo at seq {seq} into {new} (14 messages, 3 turns)."
        )
        assert "turn_5be1ef79_000032 is still active in the fork" in result.output
        with SQLiteStore(db) as store:
            head = store.load_state(new)
            assert head.active_turn_id == "turn_5be1ef79_000032"
            assert store.load_state("demo").seq == recorded.demo.events  # the source is as it was

    def test_one_of_a_thing_is_singular(self, recorded: Recorded, tmp_path: Path) -> None:
        """Counts of one read "1 message", "1 turn", "1 event" (they read "1 messages",
        "1 turns", "1 events"): fork, its timeline line and header, export, replay."""
        db = recorded.copy(tmp_path)
        forked = amber("fork", "demo", "--at", 2, "--as", "one", "--db", db)
        assert forked.output.startswith("Forked demo at seq 2 into one (1 message, 1 turn).")
        timeline = amber("timeline", "one", "--db", db).output.splitlines()
        assert timeline[0].startswith("one: 1 event, ")
        assert timeline[1].endswith("forked from demo at seq 2: 1 message, 1 turn")
        exported = amber("export", "one", "-o", tmp_path / "one.json", "--db", db)
        assert exported.output == f"Exported one (1 event) to {tmp_path / 'one.json'}.\n"
        replayed = amber("replay", "one", "--db", db).output
        assert replayed.startswith("Replayed one: 1 event in ")
        imported = amber("import", tmp_path / "one.json", "--as", "two", "--db", db)
        assert imported.output.startswith("Imported two (1 event, 1 message) into ")

    def test_a_fork_from_between_snapshots_equals_the_timelines(
        self, recorded: Recorded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """``amber fork`` reads only the state at --at, from the nearest snapshot: the fork
        holds what a fork of the whole timeline holds, at every seq."""
        with SQLiteStore(recorded.db) as source:
            events = source.events("demo")
            timeline = source.load_timeline("demo")
        db = str(tmp_path / "snapshots.db")
        with SQLiteStore(db, snapshot_every=5) as store:
            for event in events:
                store.append([event])  # a snapshot every 5 events

        def whole(*args: object, **kwargs: object) -> None:
            raise AssertionError("amber fork loaded the whole timeline")

        monkeypatch.setattr(SQLiteStore, "load_timeline", whole)
        for at in (0, 3, 17, 20, len(events) - 1, len(events)):
            result = amber("fork", "demo", "--at", at, "--as", f"f{at}", "--db", db)
            assert result.exit_code == 0, result.output
            expected = timeline.fork(at, f"f{at}", at=events[0].at).head
            with SQLiteStore(db) as store:
                head = store.load_state(f"f{at}")
            assert list(head.messages) == list(expected.messages)
            assert head.turn_list() == expected.turn_list()
            assert head.model_calls() == expected.model_calls()

    def test_diff_against_the_source(self, recorded: Recorded, tmp_path: Path) -> None:
        """A fork equals its source at the fork's seq; later, the diff shows what the source did."""
        db = recorded.copy(tmp_path)
        seq = recorded.demo.input_seq
        amber("fork", "demo", "--at", seq, "--as", "f", "--db", db)
        same = amber("diff", "demo", seq, "1", "--other", "f", "--db", db)
        assert same.exit_code == 0
        assert f"From demo seq {seq} to f seq 1:" in same.output  # names the other session
        assert "no change to messages, turns or model calls" in same.output
        later = amber("diff", "demo", "--other", "f", "--json", "--db", db, "--", "-1", "-1")
        data = json.loads(later.output)
        assert data["other_session_id"] == "f"
        assert [m["id"] for m in data["removed"]] == [
            "msg_5be1ef79_000045"
        ]  # the reply the fork lacks
        assert data["model_calls"] == []

    def test_inherited_messages_show_the_seq_that_added_them_here(
        self, recorded: Recorded, tmp_path: Path
    ) -> None:
        """A fork's message table shows seq 1 (its branch_imported) for the messages it
        inherited, not the source's seq; one message in full names where it came from."""
        db = recorded.copy(tmp_path)
        seq = recorded.demo.input_seq
        amber("fork", "demo", "--at", seq, "--as", "f", "--db", db)
        with SQLiteStore(db) as store:
            source = store.load_state("demo").messages
        last = source[13]  # the fork's 14 messages are the source's first 14
        assert last.event_seq is not None
        assert last.event_seq > 1
        lines = amber("show", "f", "--db", db).output.splitlines()
        rows = [cells for cells in map(str.split, lines) if cells[1:2] and "msg_" in cells[1]]
        assert len(rows) == 14
        assert {row[0] for row in rows} == {"1"}
        detail = amber("show", "f", "--message", last.id, "--db", db).output
        assert f"1 (inherited with the fork: seq {last.event_seq} of session demo)" in detail

    def test_ids_are_free_and_explicit_ids_conflict(
        self, recorded: Recorded, tmp_path: Path
    ) -> None:
        """A second fork at the same seq gets -2; --as an existing id exits 5."""
        db = recorded.copy(tmp_path)
        amber("fork", "demo", "--at", "5", "--db", db)
        second = amber("fork", "demo", "--at", "5", "--json", "--db", db)
        assert json.loads(second.output)["session_id"] == "demo-fork-5-2"
        taken = amber("fork", "demo", "--at", "5", "--as", "broken", "--db", db)
        assert taken.exit_code == ExitCode.CONFLICT
        assert taken.stderr == (
            f"amber: The store '{db}' already has a session 'broken'; pass another --as, or leave "
            "--as out to get a free id.\n"
        )

    def test_a_name_taken_between_the_check_and_the_write(
        self, recorded: Recorded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Another writer creates the fork's id after fork checked it was free: --as NAME
        exits 5 as for a taken id (not SeqConflict, exit 1); the default id moves on to
        the next free -N; a store that takes every id tried gives up after a bounded
        number of tries, with exit 5 and what to do."""
        db = recorded.copy(tmp_path)
        real = SQLiteStore.append
        taken: list[str] = []
        limit = 1  # how many ids the other writer takes

        def racing(self: SQLiteStore, events: Iterable[Event]) -> dict[str, SessionState]:
            batch = list(events)
            target = batch[0].session_id
            if target not in taken and len(taken) < limit:
                taken.append(target)
                real(self, batch)  # the other writer's fork, stored first under that id
            return real(self, batch)

        monkeypatch.setattr(SQLiteStore, "append", racing)
        named = amber("fork", "demo", "--at", "5", "--as", "racef", "--db", db)
        assert named.exit_code == ExitCode.CONFLICT, named.output
        assert named.stderr == (
            f"amber: The store '{db}' already has a session 'racef'; pass another --as, or leave "
            "--as out to get a free id.\n"
        )
        taken.clear()
        limit = 2
        default = amber("fork", "demo", "--at", "5", "--json", "--db", db)
        assert default.exit_code == 0, default.output
        assert json.loads(default.output)["session_id"] == "demo-fork-5-3"
        assert taken == ["demo-fork-5", "demo-fork-5-2"]
        taken.clear()
        limit = 1_000
        endless = amber("fork", "demo", "--at", "6", "--db", db)
        assert endless.exit_code == ExitCode.CONFLICT, endless.output
        assert len(taken) == FORK_TRIES
        assert endless.stderr == (
            f"amber: Another writer took each of the {FORK_TRIES} free ids tried for the fork "
            f"(demo-fork-6 to demo-fork-6-{FORK_TRIES}) as it was stored; run amber fork "
            "again, or pass --as NEW.\n"
        )

    def test_json_and_head(self, recorded: Recorded, tmp_path: Path) -> None:
        """--at head forks the latest state; --json describes the new session."""
        db = recorded.copy(tmp_path)
        result = amber("fork", "demo", "--at", "head", "--as", "retry", "--json", "--db", db)
        assert json.loads(result.output) == {
            "session_id": "retry",
            "source_session_id": "demo",
            "source_seq": recorded.demo.events,
            "seq": 1,
            "messages": len(recorded.demo.state),
            "turns": 4,
            "active_turn_id": None,
        }
        shown = amber("timeline", "retry", "--db", db)
        assert (
            f"forked from demo at seq {recorded.demo.events}: 15 messages, 4 turns" in shown.output
        )

    def test_seq_out_of_range(self, recorded: Recorded, tmp_path: Path) -> None:
        """Forking a seq the session does not hold exits 3 and stores nothing."""
        db = recorded.copy(tmp_path)
        result = amber("fork", "demo", "--at", "1000", "--db", db)
        assert result.exit_code == ExitCode.NOT_FOUND
        with SQLiteStore(db) as store:
            assert len(store.list_sessions()) == 2


def _tamper(db: Path, sql: str, *params: object) -> None:
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(sql, params)


class TestReplay:
    def test_verify_ok(self, recorded: Recorded) -> None:
        """An intact session passes every check; exit 0."""
        result = amber("replay", "demo", "--verify", "--db", recorded.db)
        assert result.exit_code == 0
        assert f"Replayed demo: {recorded.demo.events} events in" in result.output
        assert "✓ snapshot: no snapshot yet" in result.output
        assert "✓ head: snapshot + tail equals the replay" in result.output
        assert "✓ summary: the session row matches the replayed head" in result.output
        assert "Verified: 1 session(s)." in result.output

    def test_verify_with_a_snapshot(self, recorded: Recorded, tmp_path: Path) -> None:
        """A snapshot is compared with the replay at its seq."""
        db = recorded.copy(tmp_path)
        with SQLiteStore(db) as store:
            store.snapshot("demo")
        result = amber("replay", "demo", "--verify", "--db", db)
        assert result.exit_code == 0
        assert f"✓ snapshot: the snapshot at seq {recorded.demo.events} equals" in result.output

    def test_replay_without_verify(self, recorded: Recorded) -> None:
        """Plain replay rebuilds and reports; --all takes every session."""
        result = amber("replay", "--all", "--json", "--db", recorded.db)
        data = json.loads(result.output)
        assert data["ok"] is True
        assert {s["session_id"] for s in data["sessions"]} == {"demo", "broken"}
        assert all(s["checks"] == [] for s in data["sessions"])

    def test_session_or_all(self, recorded: Recorded) -> None:
        """Neither a session nor --all, or both, is a usage error saying which it was (with
        no arguments it said '(not both)')."""
        result = amber("replay", "--db", recorded.db)
        assert result.exit_code == ExitCode.USAGE
        assert result.stderr.splitlines()[-1] == (
            "Error: Pass the SESSION to replay (its id, as 'amber sessions' lists it), or --all "
            "for every session of the store."
        )
        both = amber("replay", "demo", "--all", "--db", recorded.db)
        assert both.exit_code == ExitCode.USAGE
        assert both.stderr.splitlines()[-1] == (
            "Error: Pass a SESSION or --all, not both: --all replays every session, demo too."
        )

    @pytest.mark.parametrize("sealed", [True, False], ids=["digest-updated", "edited"])
    def test_divergent_snapshot_exits_1(
        self, recorded: Recorded, tmp_path: Path, sealed: bool
    ) -> None:
        """A snapshot that differs from the replay fails the check, names the seq, exits 1.

        Whether its digest was updated with it (a snapshot written wrong) or not
        (a snapshot edited afterwards), the log is sound, so it is a failed check.
        """
        db = recorded.copy(tmp_path)
        with SQLiteStore(db) as store:
            store.snapshot("demo")
        with contextlib.closing(sqlite3.connect(db)) as conn, conn:
            (body,) = conn.execute(
                "SELECT body FROM snapshot_chunks WHERE session_id = 'demo' AND part = 'messages'"
            ).fetchone()
            # One reply now reads differently in the snapshot than in the log.
            text = zlib.decompress(body)
            tampered = zlib.compress(text.replace(b"one line is enough", b"one word is enough"))
            assert zlib.decompress(tampered) != text
            conn.execute(
                "UPDATE snapshot_chunks SET body = ?, digest = ? "
                "WHERE session_id = 'demo' AND part = 'messages'",
                (tampered, hashlib.sha256(tampered).hexdigest() if sealed else "x"),
            )
        result = amber("replay", "demo", "--verify", "--db", db)
        if not sealed:
            assert result.exit_code == ExitCode.FAILED
            assert (
                "✗ snapshot: Session 'demo' snapshot at seq 47 is corrupt: messages chunk 0 does "
                "not match its digest" in result.output
            )
            return
        assert result.exit_code == ExitCode.FAILED
        assert "✗ snapshot: Replaying session 'demo' does not reproduce the recorded state" in (
            result.output
        )
        assert "Diverged: 1 of 1 session(s)." in result.output
        data = json.loads(amber("replay", "demo", "--verify", "--json", "--db", db).output)
        assert data["ok"] is False

    @pytest.mark.parametrize("sealed", [True, False], ids=["digest-updated", "edited"])
    def test_divergent_summary_exits_1(
        self, recorded: Recorded, tmp_path: Path, sealed: bool
    ) -> None:
        """A session row that disagrees with the log (or fails its digest) fails the check."""
        db = recorded.copy(tmp_path)
        _tamper(db, "UPDATE sessions SET messages = 99 WHERE session_id = 'demo'")
        if sealed:
            with contextlib.closing(sqlite3.connect(db)) as conn, conn:
                row = conn.execute(
                    f"SELECT {SUMMARY_COLUMNS} FROM sessions WHERE session_id = 'demo'"
                ).fetchone()
                conn.execute(
                    "UPDATE sessions SET row_digest = ? WHERE session_id = 'demo'",
                    (summary_row_digest(row),),
                )
        result = amber("replay", "--all", "--verify", "--db", db)
        assert result.exit_code == ExitCode.FAILED
        if sealed:
            assert "✗ summary: the session row says" in result.output
        else:
            assert (
                "✗ summary: Session 'demo' seq 47: its summary row does not match its digest"
                in (result.output)
            )
        assert "Diverged: 1 of 2 session(s)." in result.output

    def test_corrupt_event_row_exits_4(self, recorded: Recorded, tmp_path: Path) -> None:
        """An event row that is not JSON is a bad store, named by session and seq."""
        db = recorded.copy(tmp_path)
        with contextlib.closing(sqlite3.connect(db)) as conn, conn:
            conn.execute("DROP TRIGGER events_no_update")  # a program that bypasses Amber
            conn.execute("UPDATE events SET body = 'garbage' WHERE session_id = 'demo' AND seq = 3")
        result = amber("replay", "demo", "--verify", "--db", db)
        assert result.exit_code == ExitCode.BAD_STORE
        assert result.stderr.startswith("amber: CorruptRow: ")
        assert "'demo'" in result.stderr
        assert "seq 3" in result.stderr
        assert result.stderr.count("\n") == 1


class TestExportImport:
    def test_dash_is_standard_output(
        self, recorded: Recorded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """`-o -` writes to stdout (it made a file named '-')."""
        monkeypatch.chdir(tmp_path)
        result = amber("export", "demo", "-o", "-", "--db", recorded.db)
        assert result.exit_code == 0
        assert json.loads(result.output)["seq"] == recorded.demo.events
        assert not (tmp_path / "-").exists()

    def test_round_trip_into_a_new_store(self, recorded: Recorded, tmp_path: Path) -> None:
        """export then import into a new file gives the same log, event for event."""
        exported = amber("export", "demo", "--db", recorded.db)
        assert exported.exit_code == 0
        data = json.loads(exported.output)
        assert data["format"] == "amber.session"
        assert data["seq"] == recorded.demo.events
        file = tmp_path / "demo.json"
        file.write_text(exported.output)
        target = tmp_path / "other.db"
        result = amber("import", file, "--db", target)
        assert result.exit_code == 0
        assert (
            result.output
            == f"Imported demo ({recorded.demo.events} events, 15 messages) into {target}.\n"
        )
        with SQLiteStore(target) as store, SQLiteStore(recorded.db) as source:
            assert store.events("demo") == source.events("demo")

    def test_output_file_and_force(self, recorded: Recorded, tmp_path: Path) -> None:
        """-o writes a file; an existing file needs --force."""
        file = tmp_path / "out.json"
        assert amber("export", "broken", "-o", file, "--db", recorded.db).exit_code == 0
        assert orjson.loads(file.read_bytes())["session_id"] == "broken"
        again = amber("export", "broken", "-o", file, "--db", recorded.db)
        assert again.exit_code == ExitCode.CONFLICT
        assert "exists already; pass --force" in again.stderr
        assert amber("export", "broken", "-o", file, "--force", "--db", recorded.db).exit_code == 0

    def test_unwritable_output_is_one_line(self, recorded: Recorded, tmp_path: Path) -> None:
        """A missing folder is a one-line error saying how to make it, exit 3, not a
        traceback (``TestTrialErrors`` in test_cli.py pins the message)."""
        result = amber(
            "export", "demo", "-o", tmp_path / "no" / "such" / "dir.json", "--db", recorded.db
        )
        assert result.exit_code == ExitCode.NOT_FOUND
        assert result.stderr.startswith("amber: Cannot create the --output file ")
        assert result.stderr.count("\n") == 1

    def test_import_conflict_then_as(self, recorded: Recorded, tmp_path: Path) -> None:
        """Importing a session the store has exits 5; --as stores it under a new id."""
        db = recorded.copy(tmp_path)
        file = tmp_path / "demo.json"
        amber("export", "demo", "-o", file, "--db", db)
        clash = amber("import", file, "--db", db)
        assert clash.exit_code == ExitCode.CONFLICT
        assert "pass --as NEW to import it under another id" in clash.stderr
        renamed = amber("import", file, "--as", "copy", "--json", "--db", db)
        assert json.loads(renamed.output) == {
            "session_id": "copy",
            "seq": recorded.demo.events,
            "messages": 15,
        }
        with SQLiteStore(db) as store:
            copy = store.load_state("copy")
            assert all(m.session_id == "copy" for m in copy.messages)
            assert copy.status_counts() == store.load_state("demo").status_counts()

    def test_import_as_moves_a_failed_turns_crash_notice(
        self, recorded: Recorded, tmp_path: Path
    ) -> None:
        """`broken`'s failed turn carries its crash notice in its turn_ended: --as moves that
        message too (else the import fails: the notice belongs to another session)."""
        text = amber("export", "broken", "--db", recorded.db).output
        ended = [e for e in json.loads(text)["events"] if e["kind"] == "turn_ended"]
        assert any(e.get("notice") for e in ended)
        assert all("notice" in e for e in ended if e["outcome"] != "processed")
        result = amber("import", "-", "--as", "copy", "--db", tmp_path / "new.db", input=text)
        assert result.exit_code == 0, result.output
        with SQLiteStore(tmp_path / "new.db") as store:
            copy = store.load_state("copy")
            with SQLiteStore(recorded.db) as source:
                original = source.load_state("broken")
        assert [m.session_id for m in copy.messages] == ["copy"] * len(original.messages)
        assert [m.id for m in copy.messages] == [m.id for m in original.messages]

    def test_import_from_stdin(self, recorded: Recorded, tmp_path: Path) -> None:
        """FILE may be - for stdin."""
        text = amber("export", "broken", "--db", recorded.db).output
        result = amber("import", "-", "--db", tmp_path / "new.db", input=text)
        assert result.exit_code == 0
        assert result.output.startswith("Imported broken")

    def test_bad_files(self, tmp_path: Path) -> None:
        """A missing file exits 3; not JSON or not an export exits 4; nothing is stored."""
        db = tmp_path / "store.db"
        missing = amber("import", tmp_path / "nope.json", "--db", db)
        assert missing.exit_code == ExitCode.NOT_FOUND
        assert "No file" in missing.stderr
        garbage = tmp_path / "garbage.json"
        garbage.write_text("{not json")
        bad = amber("import", garbage, "--db", db)
        assert bad.exit_code == ExitCode.BAD_STORE
        assert "is not an Amber export: it is not JSON" in bad.stderr
        other = tmp_path / "other.json"
        other.write_text('{"format": "something else"}')
        wrong = amber("import", other, "--db", db)
        assert wrong.exit_code == ExitCode.BAD_STORE
        assert wrong.stderr.startswith(
            f"amber: '{other}' is not an Amber export: its format is 'something else', not "
            "'amber.session'. Make one with 'amber export SESSION -o FILE --db STORE'"
        )

    def test_an_export_without_a_session_id(self, recorded: Recorded, tmp_path: Path) -> None:
        """An export whose session_id is null or missing imports with --as NEW (its events
        move to NEW); without --as it is a usage error, exit 2, that says to pass --as, and
        no store file is left behind."""
        data = json.loads(amber("export", "broken", "--db", recorded.db).output)
        for name, header in (("null", {**data, "session_id": None}), ("missing", {})):
            if not header:
                header = {k: v for k, v in data.items() if k != "session_id"}
            file = tmp_path / f"{name}.json"
            file.write_text(json.dumps(header))
            db = tmp_path / f"{name}.db"
            plain = amber("import", file, "--db", db)
            assert plain.exit_code == ExitCode.USAGE, plain.output
            assert plain.stderr == (
                f"amber: '{file}' names no session (its \"session_id\" is "
                f"{'null' if name == 'null' else 'missing'}); pass --as NEW to import it as "
                "session NEW.\n"
            )
            assert not db.exists()
            moved = amber("import", file, "--as", "copy", "--db", db)
            assert moved.exit_code == 0, moved.output
            with SQLiteStore(db) as store, SQLiteStore(recorded.db) as source:
                copy = store.load_state("copy")
                assert [m.id for m in copy.messages] == [
                    m.id for m in source.load_state("broken").messages
                ]
                assert {m.session_id for m in copy.messages} == {"copy"}

    @pytest.mark.parametrize(
        ("edit", "problem"),
        [
            (lambda d: d["events"][0].update(seq="x"), "event [0] (seq 1) does not decode: "),
            (lambda d: d["events"].insert(1, d["events"].pop(2)), "event [1] should be session"),
            (lambda d: d.update(seq="3"), "seq is '3' but the export holds"),
            (lambda d: d["events"].__setitem__(0, 5), "expected an object with a 'kind', got 5"),
            (lambda d: d.update(events=d["events"][:1] + d["events"][2:]), "seq 2 "),
        ],
        ids=["type", "order", "seq", "event", "gap"],
    )
    def test_an_edited_export_is_damaged(
        self, recorded: Recorded, tmp_path: Path, edit: Any, problem: str
    ) -> None:
        """An export edited by hand (a wrong type, events out of order, an event left out)
        exits 4 with one line naming the file and what is wrong in it, and the store file
        the import would have made is not left behind."""
        data = json.loads(amber("export", "demo", "--db", recorded.db).output)
        edit(data)
        if len(data["events"]) < recorded.demo.events:  # renumbered: only the gap is wrong
            for seq, event in enumerate(data["events"], 1):
                event["seq"] = seq
            data["seq"] = len(data["events"])
        file = tmp_path / "edited.json"
        file.write_text(json.dumps(data))
        db = tmp_path / "new.db"
        result = amber("import", file, "--db", db)
        assert result.exit_code == ExitCode.BAD_STORE, result.output
        assert result.stderr.startswith(f"amber: '{file}' is not a valid Amber export: ")
        assert problem in result.stderr
        assert "Traceback" not in result.output
        assert "export_session()" not in result.stderr
        assert result.stderr.count("\n") == 1
        assert not db.exists()
        assert list(tmp_path.glob("new.db*")) == []

    def test_a_failed_import_leaves_an_existing_store(
        self, recorded: Recorded, tmp_path: Path
    ) -> None:
        """A failed import into a store that was there keeps that store as it was."""
        db = recorded.copy(tmp_path)
        before = db.read_bytes()
        file = tmp_path / "bad.json"
        data = json.loads(amber("export", "demo", "--db", recorded.db).output)
        data["events"][3]["at"] = 12
        file.write_text(json.dumps(data))
        result = amber("import", file, "--as", "other", "--db", db)
        assert result.exit_code == ExitCode.BAD_STORE
        assert db.exists()
        assert db.read_bytes() == before


class TestRecover:
    @pytest.fixture
    def orphan(self, recorded: Recorded, tmp_path: Path) -> Path:
        """A store with a fork taken mid-turn: its active turn has no runner."""
        db = recorded.copy(tmp_path)
        amber("fork", "demo", "--at", recorded.demo.input_seq, "--as", "orphan", "--db", db)
        return db

    def test_young_turns_are_left_alone(self, orphan: Path) -> None:
        """By default a turn active for less than 300 s may still be running."""
        result = amber("recover", "--db", orphan)
        assert result.exit_code == 0
        assert "No orphaned turns: none idle for more than 300 s." in result.output
        assert (
            "Left alone (active less than 300 s ago, maybe still running): orphan" in result.output
        )

    def test_a_turn_written_after_recover_started(
        self, orphan: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With --older-than 0 only a session written to after recover read the clock is
        left alone: said so, not 'active less than 0 s ago'."""
        import actors._cli._recover

        earlier = utc_now() - timedelta(hours=1)  # the session looks written after "now"
        monkeypatch.setattr(actors._cli._recover, "utc_now", lambda: earlier)
        result = amber("recover", "--older-than", "0", "--db", orphan)
        assert result.exit_code == 0, result.output
        assert "less than 0 s" not in result.output
        assert (
            "Left alone (written to after recover started, maybe still running): orphan"
            in result.output
        )

    def test_dry_run_then_recover(self, orphan: Path) -> None:
        """--dry-run lists without writing (the seq the recovery then takes, after the
        marking of the call that may have run); then the inputs go back to pending_agent."""
        dry = amber("recover", "--older-than", "0", "--dry-run", "--db", orphan)
        assert (
            "Would recover orphan: turn_5be1ef79_000032 (seq 3); its inputs would be pending again."
            in (dry.output)
        )
        with SQLiteStore(orphan) as store:
            assert store.load_state("orphan").active_turn_id == "turn_5be1ef79_000032"
        done = amber("recover", "--older-than", "0", "--json", "--db", orphan)
        assert json.loads(done.output) == {
            "dry_run": False,
            "recovered": [{"session_id": "orphan", "turn_id": "turn_5be1ef79_000032", "seq": 3}],
            "left_alone": [],
            "waiting_for_approval": [],
        }
        with SQLiteStore(orphan) as store:
            state = store.load_state("orphan")
            assert state.active_turn is None
            assert state.message("msg_5be1ef79_000031").status is Status.PENDING_AGENT
            assert state.turn("turn_5be1ef79_000032").status is TurnStatus.RECOVERED  # type: ignore[union-attr]
            # seq 2 marked the tool call the dead runner had started: it may have run.
            assert "(write_report) had started; it may have run" in str(
                state.turn("turn_5be1ef79_000032").reason  # type: ignore[union-attr]
            )
        shown = amber("timeline", "orphan", "--kind", "orphan_recovered", "--db", orphan)
        assert "↺ turn_5be1ef79_000032 recovered" in shown.output

    def test_a_live_runtime_s_turn_is_left_alone(self, orphan: Path) -> None:
        """While a runtime runs the store (it holds the runner lock), its active turn is
        running, not orphaned: recover leaves it alone, saying why, and still recovers the
        turn of a runner that is gone."""
        with Runtime(model=ScriptedModel([hang()]), store=orphan) as rt:
            rt.send("live", "hello", sender="u")
            deadline = time.monotonic() + 60  # a hang guard
            while rt.state("live").active_turn is None:
                assert time.monotonic() < deadline, "the live turn did not start"
                time.sleep(0.02)
            dry = amber("recover", "--older-than", "0", "--dry-run", "--db", orphan)
            assert "Would recover orphan:" in dry.output
            assert "live" not in dry.output.split("Left alone", 1)[0]
            done = amber("recover", "--older-than", "0", "--json", "--db", orphan)
            data = json.loads(done.output)
            assert data["recovered"] == [
                {"session_id": "orphan", "turn_id": "turn_5be1ef79_000032", "seq": 3}
            ]
            (running,) = data["running"]
            assert running["session_id"] == "live"
            assert f"pid {os.getpid()}, {rt.runner}" in running["by"]
            text = amber("recover", "--older-than", "0", "--db", orphan)
            assert "No orphaned turns" in text.output
            assert (
                "Left alone, running in the runtime that runs this store (pid "
                f"{os.getpid()}, {rt.runner}, since" in " ".join(text.output.split())
            )
            assert rt.state("live").active_turn is not None
            with SQLiteStore(orphan) as store:
                assert store.load_state("live").active_turn is not None
        with SQLiteStore(orphan) as store:
            assert store.load_state("orphan").active_turn is None

    def test_negative_age_is_a_usage_error(self, orphan: Path) -> None:
        """--older-than must not be negative."""
        assert amber("recover", "--older-than", "-1", "--db", orphan).exit_code == ExitCode.USAGE
