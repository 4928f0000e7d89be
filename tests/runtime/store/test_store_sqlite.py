"""``SQLiteStore`` on its own: durability settings, what the database enforces, reopening,
several writers on one file, corrupt rows and files that are not stores."""

from __future__ import annotations

import hashlib
import pathlib
import re
import sqlite3
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest

from runtime import InvalidArgument, StatusChanged, to_json
from runtime.store import CorruptRow, NotAStore, SeqConflict, SQLiteStore, StoreError
from runtime.store._chain import digest as row_digest
from runtime.store._chain import genesis, link
from runtime.store._pg_names import url_problem
from runtime.store._summaries import SUMMARY_COLUMNS, summary_row_digest

from .conftest import passed_over
from .scenario import continue_session, conversation

OpenStore = Callable[..., SQLiteStore]


_RAW: list[sqlite3.Connection] = []


@pytest.fixture(autouse=True)
def _close_raw_connections() -> Iterator[None]:
    """Close the plain connections a test opened (Python 3.13 warns about unclosed ones)."""
    yield
    while _RAW:
        _RAW.pop().close()


def raw(path: pathlib.Path) -> sqlite3.Connection:
    """A plain connection to the store file, for looking and tampering (closed after the test)."""
    db = sqlite3.connect(path, isolation_level=None)
    _RAW.append(db)
    return db


def tamper(
    path: pathlib.Path, *statements: tuple[str, tuple[object, ...]], reseal: bool = True
) -> None:
    """Change rows behind the store's back (the append-only triggers dropped first).

    With ``reseal`` the checksums are made to agree with the changed rows again
    (as software that knows the chain would), so the checks behind them are
    tested; without it the checksums catch the change first.
    """
    db = raw(path)
    db.execute("DROP TRIGGER IF EXISTS events_no_update")
    db.execute("DROP TRIGGER IF EXISTS events_no_delete")
    db.execute("DROP TRIGGER IF EXISTS events_gapless")
    for sql, params in statements:
        db.execute(sql, params)
    if reseal:
        reseal_checksums(db)
    db.close()


def reseal_checksums(db: sqlite3.Connection) -> None:
    """Recompute every event hash and snapshot digest from the rows as they are."""
    heads: dict[tuple[str, int], str] = {}
    for (session_id,) in db.execute("SELECT DISTINCT session_id FROM events").fetchall():
        head = genesis(session_id)
        rows = db.execute(
            "SELECT seq, CAST(body AS BLOB) FROM events WHERE session_id = ? ORDER BY seq",
            (session_id,),
        ).fetchall()
        for seq, text in rows:
            head = link(head, text)
            heads[session_id, seq] = head
            db.execute(
                "UPDATE events SET hash = ? WHERE session_id = ? AND seq = ?",
                (head, session_id, seq),
            )
    for session_id, seq, record in db.execute(
        "SELECT session_id, seq, CAST(record AS BLOB) FROM snapshots"
    ).fetchall():
        try:
            data = orjson.loads(record)
            data["chain"] = heads.get((session_id, seq), "")
            record = orjson.dumps(data)
        except (orjson.JSONDecodeError, TypeError):
            pass  # a record the test broke on purpose stays broken
        db.execute(
            "UPDATE snapshots SET record = ?, digest = ? WHERE session_id = ?",
            (record.decode(errors="surrogateescape"), row_digest(record), session_id),
        )
    for row in db.execute(f"SELECT {SUMMARY_COLUMNS} FROM sessions").fetchall():
        db.execute(
            "UPDATE sessions SET row_digest = ? WHERE session_id = ?",
            (summary_row_digest(row), row[0]),
        )
    for session_id, part, chunk, text in db.execute(
        "SELECT session_id, part, chunk, CAST(body AS BLOB) FROM snapshot_chunks"
    ).fetchall():
        db.execute(
            "UPDATE snapshot_chunks SET digest = ? WHERE session_id = ? AND part = ? AND chunk = ?",
            (row_digest(text), session_id, part, chunk),
        )


def body(path: pathlib.Path, seq: int) -> str:
    return raw(path).execute("SELECT body FROM events WHERE seq = ?", (seq,)).fetchone()[0]


def chunk_data(text: str | bytes) -> Any:
    """A snapshot chunk's JSON, as stored (zlib-compressed) or plain (an older store's)."""
    return orjson.loads(zlib.decompress(text) if isinstance(text, bytes) else text)


class TestDurability:
    def test_wal_and_full_sync(self, open_store: OpenStore, db_path: pathlib.Path) -> None:
        """The file is in WAL mode and the store's connection commits with synchronous=FULL."""
        store = open_store()
        assert raw(db_path).execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert store._conn().execute("PRAGMA synchronous").fetchone() == (2,)  # FULL

    def test_one_batch_is_one_transaction(self, open_store: OpenStore) -> None:
        """A batch of 50 events (with a snapshot) is written in one transaction: one commit."""
        store = open_store(snapshot_every=20)
        store.append(conversation("s", 1))
        events = continue_session(store.load_state("s"), 50)[0]
        statements: list[str] = []
        store._conn().set_trace_callback(statements.append)
        store.append(events)
        assert statements[0] == "BEGIN IMMEDIATE"
        assert statements[-1] == "COMMIT"
        assert [s for s in statements if s in {"BEGIN", "BEGIN IMMEDIATE", "COMMIT"}] == [
            "BEGIN IMMEDIATE",
            "COMMIT",
        ]
        assert any(s.startswith("INSERT INTO snapshots") for s in statements)

    def test_reopen_reads_what_was_written(self, open_store: OpenStore) -> None:
        """Closing and opening the file again gives back every event and the same states."""
        store = open_store(snapshot_every=7)
        events = conversation("s", 40)
        store.append(events[:20])
        store.append(events[20:])
        infos = store.list_sessions()
        head = store.load_state("s")
        store.close()
        again = open_store(snapshot_every=7)
        assert again.events("s") == events
        assert again.load_state("s") == head
        assert again.list_sessions() == infos


class TestDatabaseEnforcement:
    def test_gap_refused_by_the_database(
        self, open_store: OpenStore, db_path: pathlib.Path
    ) -> None:
        """Even bypassing the store, SQLite refuses an event whose seq is not last + 1."""
        store = open_store()
        events = conversation("s", 3)
        store.append(events[:1])
        db = raw(db_path)
        with pytest.raises(
            sqlite3.IntegrityError,
            match=r"^amber: an event's seq must be its session's last seq plus one$",
        ):
            db.execute(
                "INSERT INTO events VALUES (?, ?, ?, ?, ?)",
                ("s", 3, events[2].kind, to_json(events[2]).decode(), "0" * 64),
            )
        with pytest.raises(sqlite3.IntegrityError):
            db.execute(
                "INSERT INTO events VALUES (?, ?, ?, ?, ?)",
                ("s", 1, events[0].kind, to_json(events[0]).decode(), "0" * 64),
            )
        with pytest.raises(
            sqlite3.IntegrityError, match=r"^amber: an event needs its chained hash$"
        ):
            db.execute(
                "INSERT INTO events (session_id, seq, kind, body) VALUES (?, ?, ?, ?)",
                ("s", 2, events[1].kind, to_json(events[1]).decode()),
            )

    def test_events_are_append_only(self, open_store: OpenStore, db_path: pathlib.Path) -> None:
        """SQLite refuses to change or delete a stored event."""
        open_store().append(conversation("s", 2))
        db = raw(db_path)
        with pytest.raises(sqlite3.IntegrityError, match=r"^amber: events are append-only$"):
            db.execute("UPDATE events SET body = '{}' WHERE seq = 1")
        with pytest.raises(sqlite3.IntegrityError, match=r"^amber: events are append-only$"):
            db.execute("DELETE FROM events")


class TestSeveralWriters:
    def test_a_stale_writer_gets_a_conflict(self, open_store: OpenStore) -> None:
        """Two stores on one file: the head cache is checked against the file before writing."""
        a, b = open_store(), open_store()
        events = conversation("s", 5)
        a.append(events[:3])
        b.append(continue_session(b.load_state("s"), 1)[0])  # seq 4, behind a's back
        with pytest.raises(
            SeqConflict,
            match=r"^Cannot append \w+ seq 4 to session 's': the store already holds seq 4 \(the head is at seq 4\); another writer got there first: load the session again and rebuild the event\. Nothing in this batch was stored\.$",
        ):
            a.append([events[3]])
        assert a.load_state("s") == b.load_state("s")
        a.append(continue_session(a.load_state("s"), 1)[0])
        assert b.load_state("s").seq == 5

    def test_a_store_another_process_is_writing_opens_at_once(
        self, db_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Opening a store (to read it: amber show, web, timeline) takes no write lock: while
        another connection holds one, it opens writable and reads at once (it waited the
        10 s busy timeout and failed, 'database is locked'). A store that cannot be written
        still opens read-only then."""
        with SQLiteStore(db_path) as store:
            store.append(conversation("s", 3))
        writer = raw(db_path)
        writer.execute("BEGIN IMMEDIATE")  # a runtime's long write
        with SQLiteStore(db_path) as store:
            assert not store.read_only
            assert [info.session_id for info in store.list_sessions()] == ["s"]
        ReadOnlyFile(monkeypatch, folder=False)
        with SQLiteStore(db_path) as store:
            assert store.read_only
            assert store.load_state("s").seq == 3
        writer.execute("ROLLBACK")


class TestOptions:
    @pytest.mark.parametrize("option", ["snapshot_every", "chunk_size", "cache_size"])
    @pytest.mark.parametrize("value", [0, -1, True, "5"])
    def test_positive_ints(self, db_path: pathlib.Path, option: str, value: object) -> None:
        """Tuning options must be positive ints."""
        kind = {int: "an 'int'", bool: "a 'bool'", str: "a 'str'"}[type(value)]
        with pytest.raises(
            ValueError,
            match=rf"^{option} must be a positive int \(got {value!r} that is {kind}\)\.$",
        ):
            SQLiteStore(db_path, **{option: value})  # type: ignore[arg-type]

    @pytest.mark.parametrize("url", ["postgress://h/db", "postgresql:/h/db", "sqlite:///a.db"])
    def test_a_url_is_not_a_path(
        self, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, url: str
    ) -> None:
        """A mistyped URL made a SQLite file under that name: refused, nothing made."""
        monkeypatch.chdir(tmp_path)
        with pytest.raises(InvalidArgument, match=r"^SQLiteStore\(path\): '.*' looks like a URL "):
            SQLiteStore(url)
        assert list(tmp_path.rglob("*")) == []
        assert url_problem("C:/amber.db") is None  # a drive letter: a path
        assert url_problem("data:2026/amber.db") is None  # no ':/' after the scheme

    def test_an_in_memory_database_is_refused_saying_what_to_use(
        self, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """``":memory:"`` cannot be a SQLiteStore (write-ahead logging needs a file): it is
        refused naming MemoryStore, not with a journal-mode error about a file system, and
        no file is made."""
        monkeypatch.chdir(tmp_path)
        with pytest.raises(
            InvalidArgument,
            match=r"^SQLiteStore\(path\): ':memory:' is an in-memory SQLite database, which a "
            r"SQLiteStore cannot use \(its write-ahead log needs a file\); for a store in "
            r"memory use MemoryStore\(\) \(Runtime\(store=':memory:'\)\), or pass a file's "
            r"path\.$",
        ):
            SQLiteStore(":memory:")
        with pytest.raises(InvalidArgument, match=r"^SQLiteStore\(path\): ':memory:' is an "):
            SQLiteStore(pathlib.Path(":memory:"))  # as a path too
        assert list(tmp_path.rglob("*")) == []

    def test_small_cache(self, open_store: OpenStore) -> None:
        """With a cache of one head, sessions are reloaded from the file as needed."""
        store = open_store(cache_size=1, snapshot_every=3)
        a, b = conversation("a", 10), conversation("b", 10)
        for i in range(0, 10, 2):
            store.append(a[i : i + 2] + b[i : i + 2])
        assert store.events("a") == a
        assert store.load_state("b").seq == 10
        assert store.load_state("a").seq == 10

    def test_repr(self, open_store: OpenStore) -> None:
        """The repr names the file and whether it is open."""
        store = open_store()
        assert repr(store).endswith("amber.db' open>")
        store.close()
        assert repr(store).endswith("amber.db' closed>")


@pytest.fixture
def stored(open_store: OpenStore, db_path: pathlib.Path) -> pathlib.Path:
    """A file holding session 's' (12 events, snapshotted at seq 10) and 'x' (4 events)."""
    store = open_store(snapshot_every=10)
    events = conversation("s", 12)
    store.append(events[:10])
    store.append(events[10:])
    store.append(conversation("x", 4))
    store.close()
    return db_path


class TestCorruptEvents:
    def test_bad_json(self, stored: pathlib.Path, open_store: OpenStore) -> None:
        """An event body that is not JSON is CorruptRow naming the session and seq."""
        tamper(
            stored,
            ("UPDATE events SET body = '{\"kind\": ' WHERE session_id = 's' AND seq = 11", ()),
        )
        store = open_store()
        with pytest.raises(
            CorruptRow,
            match=r"^Session 's' event seq 11 is corrupt: Cannot decode Event: not valid JSON \(.*\)\. The log cannot be trusted past seq 10; restore the file from a backup\.$",
        ):
            store.load_state("s")
        with pytest.raises(CorruptRow, match=r"^Session 's' event seq 11 is corrupt"):
            store.events("s")
        with pytest.raises(CorruptRow, match=r"^Session 's' event seq 11 is corrupt"):
            store.export_session("s")
        assert store.load_state("x").seq == 4  # other sessions are unaffected

    def test_unknown_kind(self, stored: pathlib.Path, open_store: OpenStore) -> None:
        """An event of an unknown kind is CorruptRow, never skipped."""
        data = orjson.loads(body(stored, 2)) | {"kind": "bogus"}
        tamper(
            stored,
            (
                "UPDATE events SET body = ? WHERE session_id = 's' AND seq = 2",
                (orjson.dumps(data).decode(),),
            ),
        )
        with pytest.raises(
            CorruptRow,
            match=r"^Session 's' event seq 2 is corrupt: Cannot decode Event from JSON: unknown event kind 'bogus'; expected one of .* @ \$\. The log cannot be trusted past seq 1; restore the file from a backup\.$",
        ):
            open_store().load_timeline("s")

    def test_seq_gap(self, stored: pathlib.Path, open_store: OpenStore) -> None:
        """A missing event is CorruptRow naming the missing seq."""
        tamper(stored, ("DELETE FROM events WHERE session_id = 's' AND seq = 11", ()))
        with pytest.raises(
            CorruptRow,
            match=r"^Session 's' event seq 11 is missing: the next stored event has seq 12\. The log has a gap and cannot be replayed past seq 10; restore the file from a backup\.$",
        ):
            open_store().load_state("s")
        with pytest.raises(CorruptRow, match=r"^Session 's' event seq 11 is missing"):
            open_store().events("s", after=3)

    def test_seq_gap_in_time_travel(self, stored: pathlib.Path, open_store: OpenStore) -> None:
        """Reading up to the missing seq says it is missing and what follows it: before
        the fix it said "the log ends at seq 10, before seq 11" of a log that goes on."""
        tamper(stored, ("DELETE FROM events WHERE session_id = 's' AND seq = 11", ()))
        message = (
            r"^Session 's' event seq 11 is missing: the next stored event has seq 12\. The log "
            r"has a gap and cannot be replayed past seq 10; restore the file from a backup\.$"
        )
        store = open_store()
        with pytest.raises(CorruptRow, match=message):
            store.load_span("s", 11, 11)
        with pytest.raises(CorruptRow, match=message):
            list(store.walk("s", 11, 11))
        with pytest.raises(CorruptRow, match=message):
            store.event("s", 11)
        with pytest.raises(CorruptRow, match=message):
            store.events_between("s", 10, 11)

    def test_body_of_another_session(self, stored: pathlib.Path, open_store: OpenStore) -> None:
        """A full (first-format) body naming another session than its row is CorruptRow.

        A compact body names no session or seq: its row's are the event's."""
        foreign = to_json(conversation("x", 3)[2]).decode()
        tamper(
            stored,
            (
                "UPDATE events SET body = ?, kind = ? WHERE session_id = 's' AND seq = 3",
                (foreign, orjson.loads(foreign)["kind"]),
            ),
        )
        with pytest.raises(
            CorruptRow,
            match=r"^Session 's' event seq 3 is foreign: its body is an event of session 'x' seq 3\. The log cannot be trusted past seq 2; restore the file from a backup\.$",
        ):
            open_store().events("s")

    def test_body_of_another_seq(self, stored: pathlib.Path, open_store: OpenStore) -> None:
        """A full (first-format) body with another seq (or kind) than its row is CorruptRow."""
        foreign = to_json(conversation("s", 4)[3]).decode()
        tamper(
            stored,
            ("UPDATE events SET body = ? WHERE session_id = 's' AND seq = 3", (foreign,)),
        )
        with pytest.raises(
            CorruptRow,
            match=r"^Session 's' event seq 3 is foreign: its row says 'message_added' but its body is a 'message_added' event of session 's' seq 4\. The log cannot be trusted past seq 2; restore the file from a backup\.$|^Session 's' event seq 3 is foreign: its body is an event of session 's' seq 4\. The log cannot be trusted past seq 2; restore the file from a backup\.$",
        ):
            open_store().load_timeline("s")

    def test_kind_column_disagrees(self, stored: pathlib.Path, open_store: OpenStore) -> None:
        """A row whose kind column disagrees with its body is CorruptRow."""
        tamper(
            stored,
            ("UPDATE events SET kind = 'rolled_back' WHERE session_id = 's' AND seq = 2", ()),
        )
        with pytest.raises(  # a compact body is read as the row's kind, and does not decode
            CorruptRow,
            match=r"^Session 's' event seq 2 is corrupt: Cannot decode Event from JSON: required field missing @ \$\.to_seq; unknown field\(s\) \['turn_id'\] @ \$\. The log cannot be trusted past seq 1; restore the file from a backup\.$",
        ):
            open_store().events("s")
        full = to_json(conversation("s", 2)[1]).decode()  # as an older Amber wrote it
        tamper(stored, ("UPDATE events SET body = ? WHERE session_id = 's' AND seq = 2", (full,)))
        with pytest.raises(
            CorruptRow,
            match=r"^Session 's' event seq 2 is foreign: its row says 'rolled_back' but its body is a 'turn_started' event of session 's' seq 2\. The log cannot be trusted past seq 1; restore the file from a backup\.$",
        ):
            open_store().events("s")

    def test_event_that_does_not_apply(self, stored: pathlib.Path, open_store: OpenStore) -> None:
        """A stored event that decodes but does not apply is CorruptRow."""
        bogus = StatusChanged(
            session_id="s",
            seq=11,
            at=conversation("s", 1)[0].at,
            message_id="nope",
            expected="pending",
            status="delivered",
        )
        tamper(
            stored,
            (
                "UPDATE events SET body = ?, kind = ? WHERE session_id = 's' AND seq = 11",
                (to_json(bogus).decode(), bogus.kind),
            ),
        )
        with pytest.raises(
            CorruptRow,
            match=r"^Session 's' event seq 11 does not apply to the state before it: StatusChanged seq 11 names message 'nope', which session 's' does not have\. The log is damaged or was written by other software: it cannot be trusted past seq 10; restore the file from a backup\.$",
        ):
            open_store().load_state("s")

    @pytest.mark.parametrize("reseal", [True, False], ids=["digest-updated", "edited"])
    def test_summary_ahead_of_log(
        self, stored: pathlib.Path, open_store: OpenStore, reseal: bool
    ) -> None:
        """A summary row that claims more events than the log holds is CorruptRow: an
        intact one (its digest holds) means events were lost, as check() says."""
        tamper(stored, ("UPDATE sessions SET seq = 13 WHERE session_id = 's'", ()), reseal=reseal)
        fix = (
            r"events 13 to 13 were lost\. Restore the file from a backup \(rebuilding would make "
            r"the shorter log look sound\)\.$"
            if reseal
            else r"Rebuild the summary with 'amber recover --rebuild' if the log is the one you "
            r"expect\.$"
        )
        with pytest.raises(
            CorruptRow,
            match=r"^Session 's' seq 13: its summary row says the log ends at seq 13, but it "
            r"ends at seq 12[.:] " + fix,
        ):
            open_store().load_state("s")

    def test_log_cut_short(self, stored: pathlib.Path, open_store: OpenStore) -> None:
        """Events deleted under an intact summary row: the error says they were lost (a
        rebuild would make the shorter log look sound, and rebuild() leaves it alone)."""
        tamper(stored, ("DELETE FROM events WHERE session_id = 's' AND seq > 10", ()))
        lost = (
            r"^Session 's' seq 11: its summary row says the log ends at seq 12, but it ends at "
            r"seq 10: events 11 to 12 were lost\. Restore the file from a backup \(rebuilding "
            r"would make the shorter log look sound\)\.$"
        )
        store = open_store()
        with pytest.raises(CorruptRow, match=lost):
            store.load_state("s")
        with pytest.raises(CorruptRow, match=lost):
            store.list_sessions()

    def test_summary_that_does_not_decode(
        self, stored: pathlib.Path, open_store: OpenStore
    ) -> None:
        """A damaged summary row is CorruptRow naming the session and seq."""
        tamper(stored, ("UPDATE sessions SET counts = 'oops' WHERE session_id = 'x'", ()))
        with pytest.raises(
            CorruptRow,
            match=r"^Session 'x' seq 4: its summary row does not decode \(.*\)\. Rebuild the summary with 'amber recover --rebuild'\.$",
        ):
            open_store().list_sessions()


class TestCorruptSnapshots:
    REBUILD = r"\. Snapshots are rebuilt from the event log by 'amber recover --rebuild' \(store\.rebuild\(\)\)\.$"

    def test_record_not_json(self, stored: pathlib.Path, open_store: OpenStore) -> None:
        """A snapshot record that is not JSON is CorruptRow; rebuilding the snapshot mends it."""
        tamper(stored, ("UPDATE snapshots SET record = 'nope' WHERE session_id = 's'", ()))
        store = open_store()
        with pytest.raises(
            CorruptRow,
            match=r"^Session 's' snapshot at seq 10 is corrupt: the record is not JSON \(.*\)"
            + self.REBUILD,
        ):
            store.load_state("s")
        assert store.load_timeline("s").last_seq == 12  # the log itself is fine
        assert store.snapshot("s", rebuild=True) == 12
        assert store.verify("s").head == store.load_state("s")

    def test_missing_chunk(self, stored: pathlib.Path, open_store: OpenStore) -> None:
        """A chunk the record lists but the file lacks is CorruptRow."""
        tamper(
            stored, ("DELETE FROM snapshot_chunks WHERE session_id = 's' AND part = 'turns'", ())
        )
        with pytest.raises(
            CorruptRow,
            match=r"^Session 's' snapshot at seq 10 is corrupt: turns chunk 0 is missing"
            + self.REBUILD,
        ):
            open_store().load_state("s")

    def test_bad_item(self, stored: pathlib.Path, open_store: OpenStore) -> None:
        """A message in a chunk that does not decode is CorruptRow naming chunk, item and field."""
        (chunk,) = (
            raw(stored)
            .execute(
                "SELECT body FROM snapshot_chunks WHERE session_id = 's' AND part = 'messages' AND chunk = 0"
            )
            .fetchone()
        )
        items = chunk_data(chunk)
        items["rows"][1][items["fields"].index("status")] = "bogus"
        tamper(
            stored,
            (
                "UPDATE snapshot_chunks SET body = ? WHERE session_id = 's' AND part = 'messages' AND chunk = 0",
                (orjson.dumps(items).decode(),),
            ),
        )
        with pytest.raises(
            CorruptRow,
            match=r"^Session 's' snapshot at seq 10 is corrupt: messages chunk 0 item 1: Cannot decode Message from JSON: 'bogus' is not a Status \(expected one of .*\) @ \$\.status"
            + self.REBUILD,
        ):
            open_store().load_state("s")

    def test_bad_chunk_shape(self, stored: pathlib.Path, open_store: OpenStore) -> None:
        """A chunk that is not fields-and-rows, or a row of the wrong length, is CorruptRow."""
        where = "WHERE session_id = 's' AND part = 'messages' AND chunk = 0"
        (chunk,) = raw(stored).execute(f"SELECT body FROM snapshot_chunks {where}").fetchone()
        items = chunk_data(chunk)
        tamper(
            stored,
            (
                f"UPDATE snapshot_chunks SET body = ? {where}",
                (orjson.dumps(items["rows"]).decode(),),
            ),
        )
        with pytest.raises(
            CorruptRow,
            match=r"^Session 's' snapshot at seq 10 is corrupt: messages chunk 0 must be an object with fields and rows"
            + self.REBUILD,
        ):
            open_store().load_state("s")
        items["rows"][2] = items["rows"][2][:-1]
        tamper(
            stored,
            (f"UPDATE snapshot_chunks SET body = ? {where}", (orjson.dumps(items).decode(),)),
        )
        with pytest.raises(
            CorruptRow,
            match=r"^Session 's' snapshot at seq 10 is corrupt: messages chunk 0 item 2: Cannot decode Message from JSON: expected a row of 21 values \(id, session_id, .*, active\), got \[.*"
            + self.REBUILD,
        ):
            open_store().load_state("s")

    @pytest.mark.parametrize("lazy", [False, True])
    def test_bad_fields(self, stored: pathlib.Path, open_store: OpenStore, lazy: bool) -> None:
        """A chunk whose field names are not a list of str is CorruptRow naming them, read
        eagerly or lazily; a list of str that is not this Amber's is read by name."""
        where = "WHERE session_id = 's' AND part = 'messages' AND chunk = 0"
        (chunk,) = raw(stored).execute(f"SELECT body FROM snapshot_chunks {where}").fetchone()
        items = chunk_data(chunk)
        expected = open_store().load_span("s", 10, 10).head
        fields = items["fields"]
        for bad, shown in [
            ("id", "'id'"),
            ([*fields[:-1], 7], r"\['id', 'session_id', 'role', .*"),
        ]:
            tamper(
                stored,
                (
                    f"UPDATE snapshot_chunks SET body = ? {where}",
                    (orjson.dumps({**items, "fields": bad}).decode(),),
                ),
            )
            damage = passed_over(lambda: open_store().load_span("s", 10, 10, lazy=lazy))
            assert re.match(
                r"^Session 's' snapshot at seq 10 is corrupt: messages chunk 0 must name "
                rf"its fields, got {shown}" + self.REBUILD,
                str(damage),
            ), damage
        order = sorted(range(len(fields)), key=fields.__getitem__)  # the same fields, reordered
        reordered = {
            "fields": [fields[i] for i in order],
            "rows": [[row[i] for i in order] for row in items["rows"]],
        }
        tamper(
            stored,
            (f"UPDATE snapshot_chunks SET body = ? {where}", (orjson.dumps(reordered).decode(),)),
        )
        assert open_store().load_span("s", 10, 10, lazy=lazy).head == expected

    def test_inconsistent_state(self, stored: pathlib.Path, open_store: OpenStore) -> None:
        """A snapshot whose parts disagree is CorruptRow listing the problems."""
        (record,) = (
            raw(stored).execute("SELECT record FROM snapshots WHERE session_id = 's'").fetchone()
        )
        data = orjson.loads(record)
        data["counts"][0] += 1
        tamper(
            stored,
            (
                "UPDATE snapshots SET record = ? WHERE session_id = 's'",
                (orjson.dumps(data).decode(),),
            ),
        )
        with pytest.raises(
            CorruptRow,
            match=r"^Session 's' snapshot at seq 10 is corrupt: counts \[.*\] do not match the messages \[.*\]"
            + self.REBUILD,
        ):
            open_store().load_state("s")

    def test_wrong_version(self, stored: pathlib.Path, open_store: OpenStore) -> None:
        """A chunk whose version is not the one the record expects is CorruptRow."""
        tamper(
            stored,
            (
                "UPDATE snapshot_chunks SET seq = 3 WHERE session_id = 's' AND part = 'messages' AND chunk = 0",
                (),
            ),
        )
        with pytest.raises(
            CorruptRow,
            match=r"^Session 's' snapshot at seq 10 is corrupt: messages chunk 0 has version 3, the record expects 10"
            + self.REBUILD,
        ):
            open_store().load_state("s")

    def test_snapshot_ahead_of_log(self, stored: pathlib.Path, open_store: OpenStore) -> None:
        """A snapshot newer than the log is CorruptRow."""
        tamper(stored, ("UPDATE sessions SET seq = 9 WHERE session_id = 's'", ()))
        with pytest.raises(
            CorruptRow,
            match=r"^Session 's' seq 9: its summary row says the log ends at seq 9, but it ends at seq 12\. ",
        ):
            open_store().load_state("s")


def digest(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class TestNotAStore:
    def test_text_file(self, tmp_path: pathlib.Path) -> None:
        """A file that is not SQLite is NotAStore, and is left alone."""
        path = tmp_path / "notes.txt"
        path.write_text("hello world, these are my notes\n")
        with pytest.raises(
            NotAStore,
            match=r"^'.*notes\.txt' is not an Amber store: it is not an SQLite database \(it starts with b'hello world, the'\)\. Pass the path of an Amber store, or a new path to create one\.$",
        ):
            SQLiteStore(path)
        assert path.read_text() == "hello world, these are my notes\n"

    def test_other_sqlite_database(self, tmp_path: pathlib.Path) -> None:
        """Another application's SQLite database is NotAStore and is not written to."""
        path = tmp_path / "app.db"
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE users (name TEXT)")
        db.execute("CREATE TABLE orders (id INTEGER)")
        db.commit()
        db.close()
        before = digest(path)
        with pytest.raises(
            NotAStore,
            match=r"^'.*app\.db' is an SQLite database but not an Amber store \(application id 0x0, tables: orders, users\)\. Pass the path of an Amber store, or a new path to create one; Amber does not write into other databases\.$",
        ):
            SQLiteStore(path)
        assert digest(path) == before
        assert not (tmp_path / "app.db-wal").exists()

    def test_damaged_sqlite_file(self, tmp_path: pathlib.Path) -> None:
        """A file with an SQLite header and garbage after it is NotAStore."""
        path = tmp_path / "broken.db"
        path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
        with pytest.raises(
            NotAStore,
            match=r"^'.*broken\.db' cannot be read as an SQLite database \(.*\); it is not an Amber store, or it is damaged\.$",
        ):
            SQLiteStore(path)

    def test_directory(self, tmp_path: pathlib.Path) -> None:
        """A directory is NotAStore."""
        with pytest.raises(
            NotAStore, match=r"^'.*' is a directory; pass the path of a store file\.$"
        ):
            SQLiteStore(tmp_path)

    def test_missing_directory(self, tmp_path: pathlib.Path) -> None:
        """A path in a directory that does not exist is a StoreError saying so."""
        with pytest.raises(
            StoreError, match=r"^Cannot open '.*nowhere/amber\.db': unable to open database file\.$"
        ):
            SQLiteStore(tmp_path / "nowhere" / "amber.db")

    def test_empty_file_becomes_a_store(self, tmp_path: pathlib.Path) -> None:
        """An empty file (an SQLite database with nothing in it) becomes a new store."""
        path = tmp_path / "empty.db"
        path.touch()
        with SQLiteStore(path) as store:
            store.append(conversation("s", 1))
        with SQLiteStore(path) as store:
            assert store.load_state("s").seq == 1


class ReadOnlyFile:
    """``sqlite3.connect`` as SQLite opens a store it cannot write (deterministic as root,
    whom file modes do not stop): ``folder=False`` is a file that cannot be written in a
    folder that can (SQLite falls back to reading it); ``folder=True`` a read-only folder
    (or file system) too, where the -shm file cannot be made: only an immutable open reads
    it (``unable to open database file`` otherwise)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, folder: bool) -> None:
        self.folder = folder
        self._connect = sqlite3.connect
        monkeypatch.setattr(sqlite3, "connect", self)

    def __call__(self, database: Any, *args: Any, **kwargs: Any) -> Any:
        if self.folder and "immutable=1" not in str(database):
            return _Unopenable()  # SQLite fails at the first statement, as here
        if not kwargs.get("uri"):
            database = f"{pathlib.Path(database).resolve().as_uri()}?mode=ro"
            kwargs["uri"] = True
        return self._connect(database, *args, **kwargs)


class _Unopenable:
    """A connection to a WAL store whose -shm file cannot be made."""

    text_factory: Any = None

    def execute(self, *args: Any) -> Any:
        raise sqlite3.OperationalError("unable to open database file")

    def close(self) -> None:
        pass


class TestAStoreThatCannotBeWritten:
    @pytest.mark.parametrize("folder", [False, True], ids=["file", "folder"])
    def test_it_is_read_and_a_write_says_why_it_cannot(
        self,
        open_store: OpenStore,
        db_path: pathlib.Path,
        monkeypatch: pytest.MonkeyPatch,
        folder: bool,
    ) -> None:
        """A sound store whose file or folder cannot be written (permissions, an immutable
        file, a read-only file system) opens read-only: every read works (it was once
        NotAStore, "not an Amber store, or damaged"); a write raises StoreError saying the
        store cannot be written, and why, and stores nothing."""
        events = conversation("s", 11)
        with SQLiteStore(db_path) as store:
            store.append(events)
            before = store.load_state("s")
        ReadOnlyFile(monkeypatch, folder=folder)
        store = open_store()
        assert store.read_only
        assert store.load_state("s") == before
        assert [info.session_id for info in store.list_sessions()] == ["s"]
        assert store.check().problems == ()
        more, _ = continue_session(before, 1)
        with pytest.raises(StoreError, match=r"cannot be written") as raised:
            store.append(more)
        assert "read-only" in str(raised.value)
        assert store.load_state("s") == before

    def test_one_that_needs_migrating_says_it_cannot_be(
        self, db_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A store of an older schema that cannot be written: migrating it would write it,
        so opening it says that (not NotAStore)."""
        with SQLiteStore(db_path) as store:
            store.append(conversation("s", 3))
        db = raw(db_path)
        db.execute("UPDATE amber_meta SET value = '2' WHERE key = 'schema_version'")
        ReadOnlyFile(monkeypatch, folder=False)
        with pytest.raises(StoreError, match=r"schema version 2.*cannot be written") as raised:
            SQLiteStore(db_path)
        assert not isinstance(raised.value, NotAStore)

    def test_a_file_that_cannot_be_opened_at_all_is_not_called_damaged(
        self, db_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """When even a read-only open fails (a -wal file that cannot be read in a read-only
        folder), the error says the file cannot be opened, not that it is not a store."""
        with SQLiteStore(db_path) as store:
            store.append(conversation("s", 3))
        (db_path.parent / f"{db_path.name}-wal").write_bytes(b"x" * 100)
        ReadOnlyFile(monkeypatch, folder=True)
        with pytest.raises(StoreError, match=r"cannot be written") as raised:
            SQLiteStore(db_path)
        assert not isinstance(raised.value, NotAStore)
