"""Damage is loud: the store findings of the fuzzing run (issue 15), the hash chain, check
and rebuild.

Every test damages a store the way the fuzzer did (or a disk, or another
program, would) and pins that reads name the session and the seq, that
``check()`` lists it, and that ``rebuild()`` mends what is derived.
"""

from __future__ import annotations

import contextlib
import pathlib
import sqlite3
import zlib
from collections.abc import Iterator

import orjson
import pytest

import runtime.store._batch as batch_module
from runtime import InvalidArgument, InvalidEvent, ReplayMismatch, replay, to_json
from runtime.store import (
    SCHEMA_VERSION,
    CorruptRow,
    MemoryStore,
    NotAStore,
    SchemaVersionError,
    SQLiteStore,
)
from runtime.store._chain import digest, genesis, link
from runtime.store._compact import encode_body
from runtime.store._schema import MIGRATIONS, recreate_guards, run_step
from runtime.store._summaries import SUMMARY_COLUMNS, summary_row_digest

from .conftest import OpenStore
from .scenario import conversation


@contextlib.contextmanager
def raw(path: pathlib.Path, *, guards: bool = True) -> Iterator[sqlite3.Connection]:
    """A plain connection with the log's guards dropped, as another program would use it.

    The guards are put back afterwards unless ``guards`` is False.
    """
    db = sqlite3.connect(path, isolation_level=None)
    try:
        for name in ("events_no_update", "events_no_delete", "events_gapless"):
            db.execute(f"DROP TRIGGER IF EXISTS {name}")
        yield db
        if guards:
            recreate_guards(db)
    finally:
        db.close()


@pytest.fixture
def stored(open_store: OpenStore, db_path: pathlib.Path) -> pathlib.Path:
    """Session 's' (24 events, snapshot at seq 20) and 'x' (4 events)."""
    store = open_store(snapshot_every=10)
    events = conversation("s", 24)
    store.append(events[:20])
    store.append(events[20:])
    store.append(conversation("x", 4))
    store.close()
    return db_path


def edit_body(path: pathlib.Path, session_id: str, seq: int, old: bytes, new: bytes) -> None:
    """Change an event's JSON text in place, keeping it valid JSON (and a valid event)."""
    with raw(path) as db:
        (body,) = db.execute(
            "SELECT body FROM events WHERE session_id = ? AND seq = ?", (session_id, seq)
        ).fetchone()
        assert old.decode() in body
        db.execute(
            "UPDATE events SET body = ? WHERE session_id = ? AND seq = ?",
            (body.replace(old.decode(), new.decode()), session_id, seq),
        )


class TestMissingSummary:
    """Finding 6: deleting a summary row made the session vanish without an error."""

    def test_every_read_names_it(self, stored: pathlib.Path, open_store: OpenStore) -> None:
        with raw(stored) as db:
            db.execute("DELETE FROM sessions WHERE session_id = 's'")
        store = open_store()
        message = (
            r"^Session 's' has events up to seq 24 but no summary row, so listings would not "
            r"show it\. Its events are intact: rebuild the summary with 'amber recover "
            r"--rebuild' \(store\.rebuild\(\)\)\.$"
        )
        with pytest.raises(CorruptRow, match=message) as caught:
            store.list_sessions()
        assert (caught.value.session_id, caught.value.seq) == ("s", 24)
        with pytest.raises(CorruptRow, match=message):
            store.session("s")
        with pytest.raises(CorruptRow, match=message):
            store.load_state("s")
        with pytest.raises(CorruptRow, match=message):
            _ = "s" in store
        assert store.session("x").seq == 4  # the other session reads as before

    def test_check_lists_it_and_rebuild_mends_it(
        self, stored: pathlib.Path, open_store: OpenStore
    ) -> None:
        with raw(stored) as db:
            db.execute("DELETE FROM sessions WHERE session_id = 's'")
        store = open_store(snapshot_every=10)
        report = store.check()
        assert not report.ok
        assert report.rebuildable
        assert [(p.session_id, p.seq, p.derived) for p in report.problems] == [("s", 24, True)]
        assert "summary row is missing" in report.problems[0].what
        rebuilt = store.rebuild()
        assert rebuilt.rebuilt == ("s", "x")
        assert not rebuilt.skipped
        assert store.check().ok
        assert [info.session_id for info in store.list_sessions()] == ["s", "x"]
        assert store.load_state("s") == replay(conversation("s", 24)).head


class TestEditedEvents:
    """Finding 6: edited event bodies that still decode were accepted (rows had no checksum)."""

    def test_an_edit_that_decodes_is_named(
        self, stored: pathlib.Path, open_store: OpenStore
    ) -> None:
        edit_body(stored, "s", 22, b"1779886222", b"1779886259")  # still valid, another time
        store = open_store()
        with pytest.raises(
            CorruptRow,
            match=r"^Session 's' event seq 22 fails its checksum: the row was changed after it "
            r"was written, or a row before it was \(the chain of hashes breaks at seq 22\)\.",
        ) as caught:
            store.load_state("s")
        assert (caught.value.session_id, caught.value.seq) == ("s", 22)
        for read in (store.load_timeline, store.events, store.export_session, store.verify):
            with pytest.raises(CorruptRow, match=r"seq 22 fails its checksum"):
                read("s")

    def test_an_edit_behind_the_snapshot(self, stored: pathlib.Path, open_store: OpenStore) -> None:
        """An edit before the snapshot: full reads and check() name it; the head still loads."""
        edit_body(stored, "s", 3, b"1779886203", b"1779886259")
        store = open_store()
        assert store.load_state("s").seq == 24  # from the snapshot: the edit is behind it
        with pytest.raises(CorruptRow, match=r"^Session 's' event seq 3 fails its checksum"):
            store.load_timeline("s")
        report = store.check()
        assert [(p.session_id, p.seq, p.derived) for p in report.problems] == [("s", 3, False)]
        assert not report.rebuildable

    def test_a_rehashed_edit_breaks_the_next_link(
        self, stored: pathlib.Path, open_store: OpenStore
    ) -> None:
        """Software that fixes the edited row's own hash is caught by the row after it."""
        edit_body(stored, "s", 22, b"1779886222", b"1779886259")
        with raw(stored) as db:
            (previous,) = db.execute(
                "SELECT hash FROM events WHERE session_id = 's' AND seq = 21"
            ).fetchone()
            (body,) = db.execute(
                "SELECT CAST(body AS BLOB) FROM events WHERE session_id = 's' AND seq = 22"
            ).fetchone()
            db.execute(
                "UPDATE events SET hash = ? WHERE session_id = 's' AND seq = 22",
                (link(previous, body),),
            )
        with pytest.raises(CorruptRow, match=r"^Session 's' event seq 23 fails its checksum"):
            open_store().load_state("s")

    def test_swapped_rows(self, stored: pathlib.Path, open_store: OpenStore) -> None:
        """Two rows swapped, hashes and all, are named."""
        with raw(stored) as db:
            rows = db.execute(
                "SELECT seq, kind, body, hash FROM events WHERE session_id = 's' AND seq IN (21, 22)"
            ).fetchall()
            for (seq, _, _, _), (_, kind, body, hashed) in zip(rows, reversed(rows), strict=True):
                db.execute(
                    "UPDATE events SET kind = ?, body = ?, hash = ? "
                    "WHERE session_id = 's' AND seq = ?",
                    (kind, body, hashed, seq),
                )
        with pytest.raises(CorruptRow, match=r"^Session 's' event seq 21 "):
            open_store().load_state("s")

    def test_a_dropped_last_row(self, stored: pathlib.Path, open_store: OpenStore) -> None:
        """The last row deleted: the summary disagrees with the log, named, and the error
        says the event was lost (not to rebuild, which would leave it alone)."""
        with raw(stored) as db:
            db.execute("DELETE FROM events WHERE session_id = 's' AND seq = 24")
        with pytest.raises(
            CorruptRow,
            match=r"^Session 's' seq 24: its summary row says the log ends at seq 24, but it "
            r"ends at seq 23: events 24 to 24 were lost\. Restore the file from a backup",
        ):
            open_store().load_state("s")

    def test_a_row_without_a_hash(self, stored: pathlib.Path, open_store: OpenStore) -> None:
        with raw(stored) as db:
            db.execute("UPDATE events SET hash = NULL WHERE session_id = 's' AND seq = 23")
        with pytest.raises(
            CorruptRow, match=r"^Session 's' event seq 23 has no valid checksum \(got None\)"
        ):
            open_store().load_state("s")

    def test_bad_utf8_in_a_body(self, stored: pathlib.Path, open_store: OpenStore) -> None:
        """A body that is not UTF-8 is CorruptRow naming the seq, not 'Cannot write …'."""
        with raw(stored) as db:
            db.execute(
                "UPDATE events SET body = CAST(X'7B22FF22' AS TEXT) WHERE session_id = 's' "
                "AND seq = 23"
            )
        with pytest.raises(CorruptRow, match=r"^Session 's' event seq 23 is corrupt: "):
            open_store().load_timeline("s")


class TestSnapshots:
    """Finding 6: a snapshot that disagreed with the log was returned without an error."""

    def test_an_edited_chunk_is_named_and_rebuilt(
        self, stored: pathlib.Path, open_store: OpenStore
    ) -> None:
        with raw(stored) as db:
            (chunk,) = db.execute(
                "SELECT body FROM snapshot_chunks WHERE session_id = 's' AND part = 'messages' "
                "AND chunk = 0"
            ).fetchone()
            db.execute(
                "UPDATE snapshot_chunks SET body = ? WHERE session_id = 's' AND part = 'messages' "
                "AND chunk = 0",
                (zlib.compress(zlib.decompress(chunk).replace(b'"m3"', b'"mZZ"')),),
            )
        store = open_store(snapshot_every=10)
        with pytest.raises(
            CorruptRow,
            match=r"^Session 's' snapshot at seq 20 is corrupt: messages chunk 0 does not match "
            r"its digest: it was changed after it was written\.",
        ) as caught:
            store.load_state("s")
        assert (caught.value.session_id, caught.value.seq) == ("s", 20)
        with pytest.raises(ReplayMismatch, match=r"snapshot at seq 20 is corrupt"):
            store.verify("s")
        report = store.check()
        assert [(p.session_id, p.seq, p.derived) for p in report.problems] == [("s", 20, True)]
        store.rebuild("s")
        assert store.check().ok
        assert store.load_state("s") == replay(conversation("s", 24)).head

    def test_a_snapshot_of_another_log(self, stored: pathlib.Path, open_store: OpenStore) -> None:
        """A sealed snapshot whose chain hash is not the log's is named (built from another log)."""
        with raw(stored) as db:
            (record,) = db.execute("SELECT record FROM snapshots WHERE session_id = 's'").fetchone()
            data = orjson.loads(record)
            data["chain"] = genesis("other")
            text = orjson.dumps(data)
            db.execute(
                "UPDATE snapshots SET record = ?, digest = ? WHERE session_id = 's'",
                (text.decode(), digest(text)),
            )
        with pytest.raises(
            CorruptRow,
            match=r"^Session 's' snapshot at seq 20 is corrupt: it was built from another log "
            r"than the one stored",
        ):
            open_store().load_state("s")

    def test_the_hash_of_the_event_the_snapshot_was_built_at(
        self, stored: pathlib.Path, open_store: OpenStore
    ) -> None:
        """The snapshot is sound but the hash stored with its event was edited: the event
        row is named (it once named the snapshot, "built from another log", whose advice,
        a rebuild, mends nothing: the rebuild leaves a damaged log alone)."""
        with raw(stored) as db:
            db.execute(
                "UPDATE events SET hash = ? WHERE session_id = 's' AND seq = 20", ("0" * 64,)
            )
        store = open_store(snapshot_every=10)
        with pytest.raises(
            CorruptRow, match=r"^Session 's' event seq 20 fails its checksum: "
        ) as caught:
            store.load_state("s")
        assert (caught.value.session_id, caught.value.seq) == ("s", 20)
        assert store.load_state("x").seq == 4

    def test_a_sealed_snapshot_that_differs(
        self, stored: pathlib.Path, open_store: OpenStore
    ) -> None:
        """A snapshot written wrong (digest and chain fine) loads, but check() names it."""
        with raw(stored) as db:
            (chunk,) = db.execute(
                "SELECT body FROM snapshot_chunks WHERE session_id = 's' AND part = 'messages'"
            ).fetchone()
            text = zlib.decompress(chunk)
            changed = zlib.compress(text.replace(b"All five tests pass.", b"All four tests pass."))
            assert zlib.decompress(changed) != text
            db.execute(
                "UPDATE snapshot_chunks SET body = ?, digest = ? "
                "WHERE session_id = 's' AND part = 'messages'",
                (changed, digest(changed)),
            )
        store = open_store(snapshot_every=10)
        report = store.check()
        assert [(p.session_id, p.seq, p.derived) for p in report.problems] == [("s", 20, True)]
        assert "snapshot differs from the replayed state at seq 20" in report.problems[0].what
        store.rebuild()
        assert store.check().ok


class TestDamagedSummaries:
    """Finding 7: a summary timestamp without an offset made list_sessions raise TypeError."""

    @pytest.mark.parametrize("column", ["created_at", "updated_at", "turn_started_at"])
    def test_naive_timestamp(
        self, stored: pathlib.Path, open_store: OpenStore, column: str
    ) -> None:
        with raw(stored) as db:
            db.execute(f"UPDATE sessions SET {column} = '2026-05-27T12:50:00'")
        with pytest.raises(CorruptRow, match=r"summary row"):
            open_store().list_sessions()

    def test_summary_of_a_session_without_events(
        self, stored: pathlib.Path, open_store: OpenStore
    ) -> None:
        with raw(stored) as db:
            db.execute(
                f"INSERT INTO sessions ({SUMMARY_COLUMNS}, row_digest) SELECT 'ghost', seq, created_at, updated_at, messages, "
                "counts, active_turn_id, turn_started_at, cost, waits, NULL FROM sessions "
                "WHERE session_id = 'x'"
            )
            row = db.execute(
                f"SELECT {SUMMARY_COLUMNS} FROM sessions WHERE session_id = 'ghost'"
            ).fetchone()
            db.execute(
                "UPDATE sessions SET row_digest = ? WHERE session_id = 'ghost'",
                (summary_row_digest(row),),
            )
        store = open_store()
        with pytest.raises(CorruptRow, match=r"^Session 'ghost' seq 4: its summary row lists a "):
            store.list_sessions()
        problems = store.check().problems
        assert [(p.session_id, p.derived) for p in problems] == [("ghost", True)]
        assert store.rebuild().removed == ("ghost",)
        assert store.check().ok

    def test_sound_sessions_lists_the_others(
        self, stored: pathlib.Path, open_store: OpenStore
    ) -> None:
        """``sound_sessions`` (a runtime's resume) gives the sound sessions and the damaged
        ones' errors, where ``list_sessions`` raises the first; a log without a summary row
        is named too."""
        with raw(stored) as db:
            db.execute("UPDATE sessions SET messages = messages + 1 WHERE session_id = 's'")
            db.execute("DELETE FROM sessions WHERE session_id = 'x'")
            db.execute("DELETE FROM snapshots WHERE session_id = 'x'")
        store = open_store()
        store.append(conversation("y", 2))
        with pytest.raises(CorruptRow):
            store.list_sessions()
        listed, damaged = store.sound_sessions()
        assert [info.session_id for info in listed] == ["y"]
        assert sorted((e.session_id, e.seq) for e in damaged) == [("s", 24), ("x", 4)]


class TestForeignFiles:
    """Findings 6 and 7: bad UTF-8 in the schema raised non-Amber errors."""

    def test_bad_utf8_table_name(self, tmp_path: pathlib.Path) -> None:
        path = tmp_path / "app.db"
        with contextlib.closing(sqlite3.connect(path)) as db:
            db.execute('CREATE TABLE "caf\xe9" (x)')
            db.execute("PRAGMA writable_schema = ON")
            db.execute(
                "UPDATE sqlite_master SET name = CAST(X'636166FF' AS TEXT), "
                "tbl_name = CAST(X'636166FF' AS TEXT)"
            )
            db.commit()
        with pytest.raises(
            NotAStore, match=r"cannot be read as an SQLite database .*it is damaged"
        ):
            SQLiteStore(path)

    def test_bad_utf8_schema_version(self, open_store: OpenStore, db_path: pathlib.Path) -> None:
        open_store().close()
        with raw(db_path) as db:
            db.execute(
                "UPDATE amber_meta SET value = CAST(X'32FF' AS TEXT) WHERE key = 'schema_version'"
            )
        with pytest.raises(SchemaVersionError, match=r"unknown schema version \('2\\udcff'"):
            open_store()

    @pytest.mark.parametrize("table", ["events", "sessions", "snapshots"])
    def test_a_dropped_table(self, stored: pathlib.Path, open_store: OpenStore, table: str) -> None:
        """A store one of whose tables another program dropped is CorruptRow saying so and
        to restore the file from a backup (it was a StoreError quoting SQLite)."""
        with raw(stored, guards=False) as db:
            db.execute(f"DROP TABLE {table}")
        store = open_store()
        with pytest.raises(CorruptRow) as caught:
            store.load_state("s")
        role = {
            "events": "every session's event log",
            "sessions": "the sessions' summary rows",
            "snapshots": "the sessions' latest snapshots",
        }[table]
        every = ("amber_meta", "chunk_versions", "events", "sessions", "snapshot_chunks")
        tables = ", ".join(sorted({*every, "snapshot_history", "snapshots"} - {table}))
        assert str(caught.value) == (
            f"{str(stored)!r} is damaged: SQLite reports no such table: {table}. An Amber "
            f"store has the table {table!r} ({role}), but this file's tables are {tables}: "
            "other software dropped or changed it. Restore the file from a backup, or import "
            "exports of its sessions made before the damage into a new store ('amber import "
            "FILE --db NEW.db' for each)."
        )


class TestSessionIds:
    """Finding 7: odd session ids gave misleading errors ('' TypeError, NUL SeqConflict)."""

    @pytest.mark.parametrize("bad", ["", "\x00s", "s\ud800", "a\nb", 7])
    def test_reads_refuse_them(self, open_store: OpenStore, bad: object) -> None:
        store = open_store()
        with pytest.raises(InvalidArgument, match=r"session_id"):
            store.load_state(bad)  # type: ignore[arg-type]
        assert bad not in store

    @pytest.mark.parametrize("bad", ["\x00s", "s\ud800"])
    def test_memory_store_too(self, bad: str) -> None:
        with pytest.raises(InvalidArgument, match=r"session_id"):
            MemoryStore().load_state(bad)


class TestLimits:
    def test_an_event_too_large_is_refused(
        self, open_store: OpenStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An event over MAX_EVENT_BYTES is InvalidEvent and nothing of the batch is stored."""
        monkeypatch.setattr(batch_module, "MAX_EVENT_BYTES", 50)
        store = open_store()
        events = conversation("s", 3)
        with pytest.raises(InvalidEvent, match=r"bytes of JSON, more than a store keeps \(50\)"):
            store.append(events)
        assert "s" not in store


class TestChain:
    def test_heads_are_the_same_in_every_store(self, open_store: OpenStore) -> None:
        """The chain is over the stored (compact) bodies: both stores give the same heads."""
        events = conversation("s", 30)
        sqlite, memory = open_store(snapshot_every=7), MemoryStore(snapshot_every=7)
        for store in (sqlite, memory):
            store.append(events[:13])
            store.append(events[13:])
        expected = genesis("s")
        for event in events:
            expected = link(expected, encode_body(event))
        assert sqlite.check().heads["s"] == memory.check().heads["s"] == expected

    def test_a_sound_store_checks_ok(self, stored: pathlib.Path, open_store: OpenStore) -> None:
        report = open_store().check()
        assert report.ok
        assert (report.sessions, report.events) == (2, 28)

    def test_a_dropped_guard_is_reported_and_restored(
        self, stored: pathlib.Path, open_store: OpenStore
    ) -> None:
        with raw(stored, guards=False):
            pass  # dropping the guards is all it does
        store = open_store()
        report = store.check()
        assert {p.what.split()[2] for p in report.problems} == {
            "events_no_update",
            "events_no_delete",
            "events_gapless",
        }
        store.rebuild()
        assert store.check().ok


class TestMigration:
    def test_a_version_1_store_gets_its_chain(self, tmp_path: pathlib.Path) -> None:
        """A store an older Amber wrote is migrated: hashes over its rows, snapshots dropped."""
        path = tmp_path / "old.db"
        events = conversation("s", 12)
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("BEGIN")
            db.execute("PRAGMA application_id = 1097687666")
            for step in MIGRATIONS[1]:
                run_step(db, step)
            db.execute("INSERT INTO amber_meta VALUES ('schema_version', '1')")
            for event in events:
                # An older encoding: metadata keys in another order than the codec's now.
                body = orjson.loads(to_json(event))
                db.execute(
                    "INSERT INTO events VALUES (?, ?, ?, ?)",
                    (event.session_id, event.seq, event.kind, orjson.dumps(body).decode()),
                )
            head = replay(events).head
            db.execute(
                "INSERT INTO sessions VALUES ('s', 12, ?, ?, ?, '{}', NULL, NULL)",
                (events[0].at.isoformat(), head.updated_at.isoformat(), len(head)),  # type: ignore[union-attr]
            )
            db.execute("INSERT INTO snapshots VALUES ('s', 12, '{\"format\": 2}')")
            db.execute("COMMIT")
        with SQLiteStore(path) as store:
            assert store.load_timeline("s").head == head
            report = store.check()
            # The summary's counts were written empty above: the check sees it, rebuild mends it.
            assert [p.derived for p in report.problems] == [True]
            store.rebuild()
            assert store.check().ok
        with contextlib.closing(sqlite3.connect(path)) as db:
            assert db.execute("SELECT count(*) FROM events WHERE hash IS NULL").fetchone() == (0,)
            assert db.execute(
                "SELECT value FROM amber_meta WHERE key = 'schema_version'"
            ).fetchone() == (str(SCHEMA_VERSION),)
