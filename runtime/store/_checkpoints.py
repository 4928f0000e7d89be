"""Older snapshots kept as checkpoints, so that any seq is near a stored state.

A store keeps its latest snapshot; time travel to a seq before it would
otherwise replay from the session's start. Every ``CHECKPOINT_EVERY`` events
the snapshot's record is also kept in ``snapshot_history``. Its chunks are the
snapshot's own rows while they last; when a later snapshot replaces a chunk
version that a checkpoint names (a version no newer than the latest
checkpoint), the old version is first copied to ``chunk_versions``. Most
chunks never change once full, so a checkpoint costs a few chunk versions
(the last one of each part, and those whose messages changed after it), not a
copy of the session.

``read_checkpoint`` decodes the checkpoint nearest at or before a seq, with
every check a snapshot gets (digests, the chain hash, the state's
consistency).
"""

from __future__ import annotations

from typing import Any

import orjson

from .._errors import CorruptRow
from .._state import SessionState
from .._storable import MAX_SEQ
from ._chain import digest
from ._db import Db
from ._snapshot import PARTS, SnapshotPlan, decode_snapshot

__all__ = [
    "CHECKPOINT_EVERY",
    "TABLES",
    "checkpoint",
    "forget",
    "keep",
    "kept",
    "nearest",
    "read_checkpoint",
]

CHECKPOINT_EVERY = 1_000
"""Events between checkpoints (at the first snapshot at or past each step)."""

TABLES = (
    """CREATE TABLE IF NOT EXISTS snapshot_history (
        session_id TEXT NOT NULL,
        seq        INTEGER NOT NULL,
        record     TEXT NOT NULL,
        digest     TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS chunk_versions (
        session_id TEXT NOT NULL,
        part       TEXT NOT NULL,
        chunk      INTEGER NOT NULL,
        seq        INTEGER NOT NULL,
        body       TEXT NOT NULL,
        digest     TEXT,
        PRIMARY KEY (session_id, part, chunk, seq)
    ) WITHOUT ROWID""",
)
"""The checkpoint tables (SQLite schema 3; ``_pg_schema`` has PostgreSQL's own)."""


def _latest(db: Db, session_id: str) -> int | None:
    row = db.execute(
        "SELECT max(seq) FROM snapshot_history WHERE session_id = ?", (session_id,)
    ).fetchone()
    return row[0] if row is not None and type(row[0]) is int else None


def keep(db: Db, plan: SnapshotPlan, session_id: str) -> None:
    """Before ``plan`` is written: copy the chunk versions it replaces (or drops) that a
    checkpoint names, i.e. those no newer than the latest checkpoint."""
    latest = _latest(db, session_id)
    if latest is None:
        return
    replaced = [(session_id, part, number, latest) for part, number, _ in plan.chunks]
    db.executemany(
        "INSERT INTO chunk_versions (session_id, part, chunk, seq, body, digest) "
        "SELECT session_id, part, chunk, seq, body, digest FROM snapshot_chunks "
        "WHERE session_id = ? AND part = ? AND chunk = ? AND seq <= ? ON CONFLICT DO NOTHING",
        replaced,
    )
    for part, versions in plan.refs.items():
        db.execute(
            "INSERT INTO chunk_versions (session_id, part, chunk, seq, body, digest) "
            "SELECT session_id, part, chunk, seq, body, digest FROM snapshot_chunks "
            "WHERE session_id = ? AND part = ? AND chunk >= ? AND seq <= ? ON CONFLICT DO NOTHING",
            (session_id, part, len(versions), latest),
        )


def checkpoint(db: Db, plan: SnapshotPlan, session_id: str) -> None:
    """After ``plan`` is written: keep its record as a checkpoint if one is due."""
    latest = _latest(db, session_id)
    if latest is None or plan.seq - latest >= CHECKPOINT_EVERY:
        db.execute(
            "INSERT INTO snapshot_history (session_id, seq, record, digest) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (session_id, seq) DO UPDATE SET record = excluded.record, "
            "digest = excluded.digest",
            (session_id, plan.seq, plan.record, digest(plan.record.encode())),
        )


def forget(db: Db, session_id: str) -> None:
    """Drop the session's checkpoints (derived data, as snapshots are)."""
    db.execute("DELETE FROM snapshot_history WHERE session_id = ?", (session_id,))
    db.execute("DELETE FROM chunk_versions WHERE session_id = ?", (session_id,))


def nearest(db: Db, session_id: str, seq: int) -> int | None:
    """The seq of the latest checkpoint at or before ``seq``, if any."""
    row = db.execute(
        "SELECT max(seq) FROM snapshot_history WHERE session_id = ? AND seq <= ?",
        (session_id, seq),
    ).fetchone()
    return row[0] if row is not None and type(row[0]) is int else None


def kept(db: Db, session_id: str, upto: int | None = None) -> list[int]:
    """The seqs of the session's checkpoints (up to ``upto``), latest first."""
    rows = db.execute(
        "SELECT seq FROM snapshot_history WHERE session_id = ? AND seq <= ? ORDER BY seq DESC",
        (session_id, MAX_SEQ if upto is None else upto),
    )
    return [row[0] for row in rows if type(row[0]) is int]


def read_checkpoint(
    db: Db, session_id: str, seq: int, event_hash: str | None, *, lazy: bool = False
) -> tuple[SessionState, str]:
    """The state the checkpoint at ``seq`` holds and the chain hash it was built at.

    Raises:
        CorruptRow: naming the session, the checkpoint's seq and what is wrong.
    """
    row = db.execute(
        "SELECT CAST(record AS BLOB), digest FROM snapshot_history "
        "WHERE session_id = ? AND seq = ?",
        (session_id, seq),
    ).fetchone()
    if row is None:
        raise CorruptRow(
            f"Session {session_id!r} has no checkpoint at seq {seq}.",
            session_id=session_id,
            seq=seq,
        )
    record, record_digest = row
    try:
        data: Any = orjson.loads(record)
        wanted = {part: list(data[part]) for part in PARTS}
    except (orjson.JSONDecodeError, KeyError, TypeError):
        wanted = {}  # decode_snapshot names the problem
    # The head's chunks that the checkpoint may use: those below each part's count (an
    # early checkpoint of a long session needs a few of its thousand).
    current: dict[tuple[str, int], tuple[int, object, object]] = {}
    for part in PARTS:
        count = len(wanted.get(part, ()))
        if not count:
            continue
        for number, version, body, chunk_digest in db.execute(
            "SELECT chunk, seq, CAST(body AS BLOB), digest FROM snapshot_chunks "
            "WHERE session_id = ? AND part = ? AND chunk < ?",
            (session_id, part, count),
        ):
            current[(part, number)] = (version, body, chunk_digest)

    def read_chunk(part: str, number: int) -> tuple[int, object, object] | None:
        versions = wanted.get(part, [])
        version = versions[number] if number < len(versions) else None
        found = current.get((part, number))
        if found is not None and found[0] == version:
            return found
        old = db.execute(
            "SELECT seq, CAST(body AS BLOB), digest FROM chunk_versions "
            "WHERE session_id = ? AND part = ? AND chunk = ? AND seq = ?",
            (session_id, part, number, version),
        ).fetchone()
        return None if old is None else (old[0], old[1], old[2])

    state, _, _, chain = decode_snapshot(
        session_id,
        seq,
        record,
        read_chunk,
        digest=record_digest,
        event_hash=event_hash,
        lazy=lazy,
        kind="checkpoint",
    )
    return state, chain
