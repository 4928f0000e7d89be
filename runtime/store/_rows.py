"""Reading and writing the SQLite store's rows, every row checked on the way in.

Functions over an open connection, called inside a transaction by
``SQLiteStore``: the events of a session (decoded strictly, checked against
their row, the seq before and the hash chain), their replay, the snapshot,
the summary rows (checked against the log's last seq). Every problem is a
``CorruptRow`` naming the session and the seq.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson
from immutables import Map

from .._codec import from_json
from .._errors import CorruptRow, DecodeError, EventRejected, SeqConflict, StoreError
from .._events import Event
from .._message import Status
from .._reducer import apply
from .._state import SessionState
from .._storable import session_id_problem, text_problem
from .._timeline import Timeline
from ._chain import ChainCheck, digest, genesis
from ._protocol import SessionInfo
from ._snapshot import Refs, SnapshotPlan, decode_snapshot

__all__ = [
    "Transaction",
    "chain_at",
    "delete_snapshot",
    "last_seq",
    "missing_summary",
    "read_events",
    "read_snapshot",
    "read_summaries",
    "replay_rows",
    "session_row",
    "sessions_without_summary",
    "write_snapshot",
    "write_summary",
]

_STATUSES = {status.value: status for status in Status}


def _timestamp(value: object) -> datetime | None:
    """A stored ISO 8601 time with a UTC offset, or None if it is not one."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.utcoffset() is not None else None


def last_seq(db: sqlite3.Connection, session_id: str) -> int | None:
    """The seq of the session's last stored event, or None if it has none."""
    row = db.execute("SELECT max(seq) FROM events WHERE session_id = ?", (session_id,)).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def missing_summary(session_id: str, seq: int) -> CorruptRow:
    """The error for a session whose events are stored but whose summary row is not."""
    return CorruptRow(
        f"Session {session_id!r} has events up to seq {seq} but no summary row, so listings "
        "would not show it. Its events are intact: rebuild the summary with 'amber recover "
        "--rebuild' (store.rebuild()).",
        session_id=session_id,
        seq=seq,
    )


def session_row(db: sqlite3.Connection, session_id: str) -> tuple[int, datetime] | None:
    """The session's last seq and creation time from its summary row, or None.

    Raises:
        CorruptRow: the summary row is damaged, or missing while the session has events.
    """
    row = db.execute(
        "SELECT seq, created_at FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    if row is None:
        last = last_seq(db, session_id)
        if last is not None:
            raise missing_summary(session_id, last)
        return None
    seq, created_at = row
    if type(seq) is not int or seq < 1:
        raise CorruptRow(
            f"Session {session_id!r}: its summary row has seq {seq!r}, which is not a seq. "
            "Rebuild the summary with 'amber recover --rebuild'.",
            session_id=session_id,
        )
    last = last_seq(db, session_id)
    if last != seq:
        raise CorruptRow(
            f"Session {session_id!r} seq {seq}: its summary row says the log ends at seq {seq}, "
            f"but it ends at seq {last}. Rebuild the summary with 'amber recover --rebuild' if "
            "the log is the one you expect.",
            session_id=session_id,
            seq=seq if last is None else min(seq, last + 1),
        )
    parsed = _timestamp(created_at)
    if parsed is None:
        raise CorruptRow(
            f"Session {session_id!r} seq {seq}: its summary row has created_at "
            f"{_shown(created_at)}, which is not a timestamp with a UTC offset. Rebuild the "
            "summary with 'amber recover --rebuild'.",
            session_id=session_id,
            seq=seq,
        )
    return seq, parsed


def chain_at(db: sqlite3.Connection, session_id: str, seq: int) -> str:
    """The chain's hash at ``seq`` (the genesis for seq 0), as stored with that event."""
    if seq == 0:
        return genesis(session_id)
    row = db.execute(
        "SELECT hash FROM events WHERE session_id = ? AND seq = ?", (session_id, seq)
    ).fetchone()
    if row is None:
        raise CorruptRow(
            f"Session {session_id!r} event seq {seq} is missing; the log has a gap. Restore the "
            "file from a backup.",
            session_id=session_id,
            seq=seq,
        )
    stored: object = row[0]
    if not isinstance(stored, str) or len(stored) != 64:
        raise CorruptRow(
            f"Session {session_id!r} event seq {seq} has no valid checksum (got "
            f"{_shown(stored)}); the row was written by other software or damaged. Restore the "
            "file from a backup.",
            session_id=session_id,
            seq=seq,
        )
    return stored


def read_events(db: sqlite3.Connection, chain: ChainCheck, after: int) -> Iterator[Event]:
    """Decoded events after seq ``after``, each checked against its row, the seq before and
    the hash chain (``chain`` holds the hash at ``after``)."""
    session_id = chain.session_id
    rows = db.execute(
        "SELECT seq, kind, CAST(body AS BLOB), hash FROM events "
        "WHERE session_id = ? AND seq > ? ORDER BY seq",
        (session_id, after),
    )
    expected = after + 1
    for seq, kind, body, stored in rows:
        where = f"Session {session_id!r} event seq {seq}"
        if seq != expected:
            raise CorruptRow(
                f"Session {session_id!r} event seq {expected} is missing: the next stored "
                f"event has seq {_shown(seq)}. The log has a gap and cannot be replayed past seq "
                f"{expected - 1}; restore the file from a backup.",
                session_id=session_id,
                seq=expected,
            )
        if not isinstance(body, bytes):
            raise CorruptRow(
                f"{where} is corrupt: its body is {type(body).__name__}, not JSON text.",
                session_id=session_id,
                seq=seq,
            )
        try:
            event = from_json(body, Event)
        except DecodeError as exc:
            raise CorruptRow(f"{where} is corrupt: {exc}", session_id=session_id, seq=seq) from None
        if event.session_id != session_id or event.seq != seq or event.kind != kind:
            raise CorruptRow(
                f"{where} is foreign: its row says {_shown(kind)} but its body is a "
                f"{event.kind!r} event of session {event.session_id!r} seq {event.seq}."
                if event.kind != kind
                else f"{where} is foreign: its body is an event of session "
                f"{event.session_id!r} seq {event.seq}.",
                session_id=session_id,
                seq=seq,
            )
        chain.row(seq, stored, body, event)
        yield event
        expected += 1


def replay_rows(
    db: sqlite3.Connection, base: SessionState, *, upto: int, chain: str | None = None
) -> tuple[Timeline, str]:
    """The timeline from ``base`` over the stored events after it, which must end at ``upto``,
    and the chain's head hash.

    ``chain`` is the hash at ``base.seq`` (a snapshot's); by default the one stored
    with that event (the genesis for the empty state).
    """
    session_id = base.session_id
    check = ChainCheck(
        session_id, chain if chain is not None else chain_at(db, session_id, base.seq)
    )
    events: list[Event] = []
    states: list[SessionState] = []
    state = base
    for event in read_events(db, check, base.seq):
        try:
            state = apply(state, event)
        except EventRejected as exc:
            raise CorruptRow(
                f"Session {session_id!r} event seq {event.seq} does not apply to the "
                f"state before it: {exc} The log is damaged or was written by other software.",
                session_id=session_id,
                seq=event.seq,
            ) from None
        events.append(event)
        states.append(state)
    timeline = Timeline._assemble(base, events, states)
    if timeline.last_seq != upto:
        raise CorruptRow(
            f"Session {session_id!r} seq {upto}: its summary row says the log ends at seq "
            f"{upto}, but it ends at seq {timeline.last_seq}. Rebuild the summary with 'amber "
            "recover --rebuild' if the log is the one you expect.",
            session_id=session_id,
            seq=min(upto, timeline.last_seq + 1),
        )
    return timeline, check.head


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:79] + "…"


def read_snapshot(
    db: sqlite3.Connection, session_id: str, chunk_size: int
) -> tuple[SessionState, Refs | None, str | None]:
    """The session's snapshot state (empty if none), its chunk versions and its chain hash.

    The versions are None when the snapshot was written with another chunk
    size: the next snapshot then rewrites every chunk. The snapshot's record
    and chunks must match their digests, and the record's chain hash the hash
    stored with the event at its seq.

    Raises:
        CorruptRow: naming the session, the snapshot's seq and what is wrong.
    """
    row = db.execute(
        "SELECT seq, CAST(record AS BLOB), digest FROM snapshots WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    if row is None:
        return SessionState.empty(session_id), None, None
    seq, record, record_digest = row
    if type(seq) is not int or seq < 1:
        raise CorruptRow(
            f"Session {session_id!r} snapshot has seq {_shown(seq)}, which is not a seq. "
            "Snapshots can be rebuilt from the event log: 'amber recover --rebuild'.",
            session_id=session_id,
        )
    chunks = {
        (part, number): (version, body, chunk_digest)
        for part, number, version, body, chunk_digest in db.execute(
            "SELECT part, chunk, seq, CAST(body AS BLOB), digest FROM snapshot_chunks "
            "WHERE session_id = ?",
            (session_id,),
        )
    }
    last = last_seq(db, session_id)
    event_hash = None
    if last is not None and seq <= last:
        event_hash = chain_at(db, session_id, seq)
    state, refs, written_with, chain = decode_snapshot(
        session_id,
        seq,
        record,
        lambda part, number: chunks.get((part, number)),
        digest=record_digest,
        event_hash=event_hash,
    )
    return state, (refs if written_with == chunk_size else None), chain


def write_snapshot(db: sqlite3.Connection, plan: SnapshotPlan, session_id: str) -> None:
    """Write the chunks and the record a plan lists, dropping chunks past its end."""
    db.executemany(
        "INSERT OR REPLACE INTO snapshot_chunks (session_id, part, chunk, seq, body, digest) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        [
            (session_id, part, number, plan.seq, body, digest(body.encode()))
            for part, number, body in plan.chunks
        ],
    )
    for part, versions in plan.refs.items():
        db.execute(
            "DELETE FROM snapshot_chunks WHERE session_id = ? AND part = ? AND chunk >= ?",
            (session_id, part, len(versions)),
        )
    db.execute(
        "INSERT OR REPLACE INTO snapshots (session_id, seq, record, digest) VALUES (?, ?, ?, ?)",
        (session_id, plan.seq, plan.record, digest(plan.record.encode())),
    )


def delete_snapshot(db: sqlite3.Connection, session_id: str) -> None:
    """Drop the session's snapshot (its record and chunks)."""
    db.execute("DELETE FROM snapshot_chunks WHERE session_id = ?", (session_id,))
    db.execute("DELETE FROM snapshots WHERE session_id = ?", (session_id,))


def write_summary(db: sqlite3.Connection, head: SessionState, created_at: datetime) -> None:
    """Insert or update the session's summary row from its head."""
    assert head.updated_at is not None
    turn = head.active_turn
    counts = {str(status): n for status, n in head.status_counts().items()}
    db.execute(
        "INSERT INTO sessions (session_id, seq, created_at, updated_at, messages, counts, "
        "active_turn_id, turn_started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (session_id) DO UPDATE SET seq = excluded.seq, "
        "created_at = excluded.created_at, "
        "updated_at = excluded.updated_at, messages = excluded.messages, "
        "counts = excluded.counts, active_turn_id = excluded.active_turn_id, "
        "turn_started_at = excluded.turn_started_at",
        (
            head.session_id,
            head.seq,
            created_at.isoformat(),
            head.updated_at.isoformat(),
            len(head.messages),
            orjson.dumps(counts).decode(),
            None if turn is None else turn.id,
            None if turn is None else turn.started_at.isoformat(),
        ),
    )


def read_summaries(
    db: sqlite3.Connection, where: str, params: tuple[Any, ...]
) -> list[SessionInfo]:
    """Summaries of the sessions ``where`` selects (an SQL clause over ``s``).

    Raises:
        CorruptRow: a summary row does not decode, or says the log ends at
            another seq than it does.
    """
    rows = db.execute(
        "SELECT s.session_id, s.seq, s.created_at, s.updated_at, s.messages, s.counts, "
        "s.active_turn_id, s.turn_started_at, coalesce(p.seq, 0), "
        "(SELECT max(e.seq) FROM events AS e WHERE e.session_id = s.session_id) "
        f"FROM sessions AS s LEFT JOIN snapshots AS p ON p.session_id = s.session_id {where}",
        params,
    )
    return [_summary(row) for row in rows]


def sessions_without_summary(db: sqlite3.Connection) -> list[tuple[str, int]]:
    """Sessions whose events are stored but whose summary row is not: ``(id, last seq)``.

    Walks the distinct session ids of ``events`` through its primary key (one
    index seek per session, not a scan of every event).
    """
    rows = db.execute(
        "WITH RECURSIVE ids(id) AS ("
        " SELECT min(session_id) FROM events"
        " UNION ALL"
        " SELECT (SELECT min(session_id) FROM events WHERE session_id > ids.id)"
        " FROM ids WHERE ids.id IS NOT NULL)"
        " SELECT ids.id, (SELECT max(seq) FROM events WHERE session_id = ids.id) FROM ids"
        " WHERE ids.id IS NOT NULL"
        " AND NOT EXISTS (SELECT 1 FROM sessions WHERE session_id = ids.id)"
    )
    return [(session_id, seq) for session_id, seq in rows]


def _summary(row: tuple[Any, ...]) -> SessionInfo:
    (session_id, seq, created, updated, messages, counts, turn_id, started, snapshot_seq,
     last) = row  # fmt: skip
    where = f"Session {_shown(session_id)} seq {seq}: its summary row"
    fix = "Rebuild the summary with 'amber recover --rebuild'."
    problem = session_id_problem(session_id)
    if problem is not None:
        raise CorruptRow(
            f"A summary row has the session id {_shown(session_id)}, which is not one ({problem}). "
            "The row was damaged or written by other software.",
        )
    if last is None:
        raise CorruptRow(
            f"{where} lists a session that has no events. {fix}", session_id=session_id
        )
    if seq != last:
        raise CorruptRow(
            f"{where} says the log ends at seq {_shown(seq)}, but it ends at seq {last}. {fix}",
            session_id=session_id,
            seq=last,
        )
    created_at, updated_at = _timestamp(created), _timestamp(updated)
    turn_started_at = None if started is None else _timestamp(started)
    try:
        if (
            created_at is None
            or updated_at is None
            or (started is not None and turn_started_at is None)
        ):
            raise ValueError("a time is not an ISO 8601 timestamp with a UTC offset")
        raw_counts = orjson.loads(counts)
        if type(raw_counts) is not dict or any(
            type(value) is not int or value < 0 for value in raw_counts.values()
        ):
            raise ValueError("its counts are not a map of status to count")
        if type(messages) is not int or messages < 0:
            raise ValueError(f"its message count is {messages!r}")
        if turn_id is not None and (type(turn_id) is not str or text_problem(turn_id)):
            raise ValueError(f"its active turn id is {turn_id!r}")
        return SessionInfo(
            session_id=session_id,
            seq=seq,
            created_at=created_at,
            updated_at=updated_at,
            messages=messages,
            counts=Map({_STATUSES[key]: value for key, value in raw_counts.items()}),
            active_turn_id=turn_id,
            active_turn_started_at=turn_started_at,
            snapshot_seq=snapshot_seq,
        )
    except (TypeError, ValueError, KeyError, AttributeError, orjson.JSONDecodeError) as exc:
        raise CorruptRow(
            f"{where} does not decode ({_shown(str(exc))}). {fix}",
            session_id=session_id,
            seq=seq,
        ) from None


class Transaction:
    """``with``: BEGIN … COMMIT, or ROLLBACK on any error (SQLite errors become StoreErrors)."""

    def __init__(self, db: sqlite3.Connection, begin: str, path: Path) -> None:
        self._db, self._begin, self._path = db, begin, path
        self._write = begin != "BEGIN"

    def __enter__(self) -> None:
        try:
            self._db.execute(self._begin)
        except sqlite3.Error as exc:
            raise StoreError(f"Cannot start a transaction on {str(self._path)!r}: {exc}.") from exc

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None:
            try:
                self._db.execute("COMMIT")
                return
            except sqlite3.Error as error:
                exc = error
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")
        path = str(self._path)
        if isinstance(exc, sqlite3.IntegrityError) and self._write:
            raise SeqConflict(
                f"{path!r} refused the write ({exc}); another writer changed the "
                "session. Nothing in this batch was stored; load the session again and retry."
            ) from exc
        if isinstance(exc, sqlite3.DatabaseError) and _damaged(exc):
            raise CorruptRow(
                f"{path!r} is damaged at the SQLite level ({exc}). 'amber check' runs SQLite's "
                "integrity check; restore the file from a backup."
            ) from exc
        if isinstance(exc, sqlite3.Error):
            if self._write:
                raise StoreError(
                    f"Cannot write {path!r}: {exc}. Nothing in this batch was stored."
                ) from exc
            raise StoreError(f"Cannot read {path!r}: {exc}.") from exc


def _damaged(exc: sqlite3.DatabaseError) -> bool:
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text or "corrupt" in text
