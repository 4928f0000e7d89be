"""Reading and writing the SQLite store's rows, every row checked on the way in.

Functions over an open connection, called inside a transaction by
``SQLiteStore``: the events of a session (decoded strictly, checked against
their row and the seq before), their replay, the snapshot, the summary rows.
Every problem is a ``CorruptRow`` naming the session and the seq.
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
from .._timeline import Timeline
from ._protocol import SessionInfo
from ._snapshot import Refs, SnapshotPlan, decode_snapshot

__all__ = [
    "Transaction",
    "read_events",
    "read_snapshot",
    "read_summaries",
    "replay_rows",
    "session_row",
    "write_snapshot",
    "write_summary",
]

_STATUSES = {status.value: status for status in Status}


def session_row(db: sqlite3.Connection, session_id: str) -> tuple[int, datetime] | None:
    """The session's last seq and creation time from its summary row, or None."""
    row = db.execute(
        "SELECT seq, created_at FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    if row is None:
        return None
    seq, created_at = row
    try:
        return seq, datetime.fromisoformat(created_at)
    except (TypeError, ValueError):
        raise CorruptRow(
            f"Session {session_id!r} seq {seq}: its summary row has created_at "
            f"{created_at!r}, which is not a timestamp."
        ) from None


def read_events(db: sqlite3.Connection, session_id: str, after: int) -> Iterator[Event]:
    """Decoded events after seq ``after``, each checked against its row and the seq before."""
    rows = db.execute(
        "SELECT seq, kind, body FROM events WHERE session_id = ? AND seq > ? ORDER BY seq",
        (session_id, after),
    )
    expected = after + 1
    for seq, kind, body in rows:
        where = f"Session {session_id!r} event seq {seq}"
        if seq != expected:
            raise CorruptRow(
                f"Session {session_id!r} event seq {expected} is missing: the next stored "
                f"event has seq {seq}. The log has a gap and cannot be replayed past seq "
                f"{expected - 1}; restore the file from a backup."
            )
        if not isinstance(body, str):
            raise CorruptRow(
                f"{where} is corrupt: its body is {type(body).__name__}, not JSON text."
            )
        try:
            event = from_json(body, Event)
        except DecodeError as exc:
            raise CorruptRow(f"{where} is corrupt: {exc}") from None
        if event.session_id != session_id or event.seq != seq or event.kind != kind:
            raise CorruptRow(
                f"{where} is foreign: its row says {kind!r} but its body is a {event.kind!r} "
                f"event of session {event.session_id!r} seq {event.seq}."
                if event.kind != kind
                else f"{where} is foreign: its body is an event of session "
                f"{event.session_id!r} seq {event.seq}."
            )
        yield event
        expected += 1


def replay_rows(db: sqlite3.Connection, base: SessionState, *, upto: int) -> Timeline:
    """The timeline from ``base`` over the stored events after it, which must end at ``upto``."""
    events: list[Event] = []
    states: list[SessionState] = []
    state = base
    for event in read_events(db, base.session_id, base.seq):
        try:
            state = apply(state, event)
        except EventRejected as exc:
            raise CorruptRow(
                f"Session {base.session_id!r} event seq {event.seq} does not apply to the "
                f"state before it: {exc} The log is damaged or was written by other software."
            ) from None
        events.append(event)
        states.append(state)
    timeline = Timeline._assemble(base, events, states)
    if timeline.last_seq != upto:
        raise CorruptRow(
            f"Session {base.session_id!r} seq {upto}: its summary row says the log ends at seq "
            f"{upto}, but it ends at seq {timeline.last_seq}."
        )
    return timeline


def read_snapshot(
    db: sqlite3.Connection, session_id: str, chunk_size: int
) -> tuple[SessionState, Refs | None]:
    """The session's snapshot state (empty if none) and its chunk versions.

    The versions are None when the snapshot was written with another chunk
    size: the next snapshot then rewrites every chunk.
    """
    row = db.execute(
        "SELECT seq, record FROM snapshots WHERE session_id = ?", (session_id,)
    ).fetchone()
    if row is None:
        return SessionState.empty(session_id), None
    seq, record = row
    chunks = {
        (part, number): (version, body)
        for part, number, version, body in db.execute(
            "SELECT part, chunk, seq, body FROM snapshot_chunks WHERE session_id = ?",
            (session_id,),
        )
    }
    state, refs, written_with = decode_snapshot(
        session_id, seq, record, lambda part, number: chunks.get((part, number))
    )
    return state, (refs if written_with == chunk_size else None)


def write_snapshot(db: sqlite3.Connection, plan: SnapshotPlan, session_id: str) -> None:
    """Write the chunks and the record a plan lists, dropping chunks past its end."""
    db.executemany(
        "INSERT OR REPLACE INTO snapshot_chunks (session_id, part, chunk, seq, body) "
        "VALUES (?, ?, ?, ?, ?)",
        [(session_id, part, number, plan.seq, body) for part, number, body in plan.chunks],
    )
    for part, versions in plan.refs.items():
        db.execute(
            "DELETE FROM snapshot_chunks WHERE session_id = ? AND part = ? AND chunk >= ?",
            (session_id, part, len(versions)),
        )
    db.execute(
        "INSERT OR REPLACE INTO snapshots (session_id, seq, record) VALUES (?, ?, ?)",
        (session_id, plan.seq, plan.record),
    )


def write_summary(db: sqlite3.Connection, head: SessionState, created_at: datetime) -> None:
    """Insert or update the session's summary row from its head."""
    assert head.updated_at is not None
    turn = head.active_turn
    counts = {str(status): n for status, n in head.status_counts().items()}
    db.execute(
        "INSERT INTO sessions (session_id, seq, created_at, updated_at, messages, counts, "
        "active_turn_id, turn_started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (session_id) DO UPDATE SET seq = excluded.seq, "
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
    """Summaries of the sessions ``where`` selects (an SQL clause over ``s``)."""
    rows = db.execute(
        "SELECT s.session_id, s.seq, s.created_at, s.updated_at, s.messages, s.counts, "
        "s.active_turn_id, s.turn_started_at, coalesce(p.seq, 0) FROM sessions AS s "
        f"LEFT JOIN snapshots AS p ON p.session_id = s.session_id {where}",
        params,
    )
    return [_summary(row) for row in rows]


def _summary(row: tuple[Any, ...]) -> SessionInfo:
    session_id, seq, created, updated, messages, counts, turn_id, started, snapshot_seq = row
    try:
        raw_counts = orjson.loads(counts)
        return SessionInfo(
            session_id=session_id,
            seq=seq,
            created_at=datetime.fromisoformat(created),
            updated_at=datetime.fromisoformat(updated),
            messages=messages,
            counts=Map({_STATUSES[key]: value for key, value in raw_counts.items()}),
            active_turn_id=turn_id,
            active_turn_started_at=None if started is None else datetime.fromisoformat(started),
            snapshot_seq=snapshot_seq,
        )
    except (TypeError, ValueError, KeyError, AttributeError, orjson.JSONDecodeError) as exc:
        raise CorruptRow(
            f"Session {session_id!r} seq {seq}: its summary row does not decode ({exc!r})."
        ) from None


class Transaction:
    """``with``: BEGIN … COMMIT, or ROLLBACK on any error (SQLite errors become StoreErrors)."""

    def __init__(self, db: sqlite3.Connection, begin: str, path: Path) -> None:
        self._db, self._begin, self._path = db, begin, path

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
        if isinstance(exc, sqlite3.IntegrityError):
            raise SeqConflict(
                f"{str(self._path)!r} refused the write ({exc}); another writer changed the "
                "session. Nothing in this batch was stored; load the session again and retry."
            ) from exc
        if isinstance(exc, sqlite3.Error):
            raise StoreError(
                f"Cannot write {str(self._path)!r}: {exc}. Nothing in this batch was stored."
            ) from exc
