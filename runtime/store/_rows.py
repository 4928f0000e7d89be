"""Reading and writing a store's rows, every row checked on the way in.

Functions over an open connection, called inside a transaction by
``SQLiteStore`` and ``PostgresStore``: the events of a session (decoded strictly, checked against
their row, the seq before and the hash chain), their replay, the snapshot,
the summary row's seq (the rest of summaries: ``_summaries``). Every problem
is a ``CorruptRow`` naming the session and the seq.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import attrs
import orjson

from .._article import article
from .._errors import CorruptRow, DecodeError, EventRejected
from .._events import EVENT_TYPES, Event, reports_error
from .._reducer import apply
from .._state import SessionState
from .._storable import MAX_SEQ
from .._timeline import Timeline
from ._chain import ChainCheck, digest, genesis, link
from ._checkpoints import checkpoint, forget, keep
from ._compact import decode_body
from ._db import Db
from ._snapshot import Refs, SnapshotPlan, decode_snapshot, pack_chunk
from ._summaries import lost_events, missing_summary, shown, summary_intact, timestamp

__all__ = [
    "ERROR_MARKERS",
    "chain_at",
    "delete_snapshot",
    "last_seq",
    "read_error_flags",
    "read_events",
    "read_snapshot",
    "replay_rows",
    "session_row",
    "snapshot_digest",
    "untrusted_past",
    "write_snapshot",
]


def last_seq(db: Db, session_id: str) -> int | None:
    """The seq of the session's last stored event, or None if it has none."""
    row = db.execute("SELECT max(seq) FROM events WHERE session_id = ?", (session_id,)).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def session_row(db: Db, session_id: str) -> tuple[int, datetime] | None:
    """The session's last seq and creation time from its summary row, or None.

    Raises:
        CorruptRow: the summary row is damaged, or missing while the session has events.
    """
    # One round trip: the summary row (if any) and the log's last seq.
    found, seq, created_at, stored_last = db.execute(
        "SELECT (SELECT count(*) FROM sessions WHERE session_id = ?), "
        "(SELECT seq FROM sessions WHERE session_id = ?), "
        "(SELECT created_at FROM sessions WHERE session_id = ?), "
        "(SELECT max(seq) FROM events WHERE session_id = ?)",
        (session_id, session_id, session_id, session_id),
    ).fetchone()
    last = None if stored_last is None else int(stored_last)
    if not found:
        if last is not None:
            raise missing_summary(session_id, last)
        return None
    if type(seq) is not int or seq < 1:
        raise CorruptRow(
            f"Session {session_id!r}: its summary row has seq {seq!r}, which is not a seq. "
            "Rebuild the summary with 'amber recover --rebuild'.",
            session_id=session_id,
        )
    if last is not None and seq > last and summary_intact(db, session_id):
        raise lost_events(session_id, seq, last)
    if last != seq:
        raise CorruptRow(
            f"Session {session_id!r} seq {seq}: its summary row says the log ends at seq {seq}, "
            f"but it ends at seq {last}. Rebuild the summary with 'amber recover --rebuild' if "
            "the log is the one you expect.",
            session_id=session_id,
            seq=seq if last is None else min(seq, last + 1),
        )
    parsed = timestamp(created_at)
    if parsed is None:
        raise CorruptRow(
            f"Session {session_id!r} seq {seq}: its summary row has created_at "
            f"{shown(created_at)}, which is not a timestamp with a UTC offset. Rebuild the "
            "summary with 'amber recover --rebuild'.",
            session_id=session_id,
            seq=seq,
        )
    return seq, parsed


def chain_at(db: Db, session_id: str, seq: int) -> str:
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
            f"{shown(stored)}); the row was written by other software or damaged. Restore the "
            "file from a backup.",
            session_id=session_id,
            seq=seq,
        )
    return stored


def read_events(db: Db, chain: ChainCheck, after: int, upto: int | None = None) -> Iterator[Event]:
    """Decoded events after seq ``after`` (up to ``upto``, if given), each checked against its
    row, the seq before and the hash chain (``chain`` holds the hash at ``after``)."""
    session_id = chain.session_id
    for seq, kind, body, stored in _rows(db, session_id, after, upto):
        event = _decoded(session_id, seq, kind, body)
        chain.row(seq, stored, body, event)
        yield event


ERROR_MARKERS: dict[str, bytes] = {
    "message_added": b"true",
    "turn_ended": b'"error"',
    "model_call_finished": b'"failed"',
}
"""For each kind of event that can report an error (``reports_error``), bytes every stored
body of such an event holds when it does, in either body format: an error tool result's
``is_error`` is ``true``, a turn's outcome ``"error"``, a model call's status ``"failed"``.
A body without them reports none (a property test pins this against the codec)."""


def read_error_flags(
    db: Db, chain: ChainCheck, after: int, upto: int | None = None
) -> Iterator[tuple[str, bool]]:
    """Each event's kind and whether it reports an error (``reports_error``), seqs after
    ``after`` (up to ``upto``, if given), every row checked against the seq before and the
    hash chain as ``read_events`` checks it; several times faster than decoding every event.

    A compact body that hashes as stored, lacks its kind's ``ERROR_MARKERS`` and has the
    shape of its row's kind (``_fits``: the kind column is not hashed) is not decoded: it
    reports no error. Any other row is decoded and checked as ``read_events`` checks it
    (a body in the first format always is). So a row written with a valid hash by other
    software, whose body has the right fields but values that would not decode, passes
    here and fails when read whole.
    """
    session_id = chain.session_id
    for seq, kind, body, stored in _rows(db, session_id, after, upto):
        marker = ERROR_MARKERS.get(kind)
        if (
            (marker is None or marker not in body)
            and link(chain.head, body) == stored
            and _fits(kind, body)
        ):
            chain.head = stored
            yield kind, False
            continue
        event = _decoded(session_id, seq, kind, body)
        chain.row(seq, stored, body, event)
        yield kind, reports_error(event)


def _shapes() -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """For each kind but ``message_added``: the names a compact body may hold, and those it
    must (the fields without a default; ``kind``, ``session_id`` and ``seq`` are the row's)."""
    row = {"kind", "session_id", "seq"}
    shapes = {}
    for kind, cls in EVENT_TYPES.items():
        fields = [field for field in attrs.fields(cls) if field.name not in row]
        shapes[kind] = (
            frozenset(field.name for field in fields),
            frozenset(field.name for field in fields if field.default is attrs.NOTHING),
        )
    return shapes


_SHAPES = _shapes()


def _fits(kind: str, body: bytes) -> bool:
    """Whether a compact ``body`` has the shape of a ``kind`` event: a ``message_added`` is
    an array, any other kind an object of its fields (the row's kind is not hashed: a row
    relabelled to another kind must not pass unread)."""
    if kind == "message_added":
        return body[:1] == b"["
    shape = _SHAPES.get(kind)
    if shape is None or body[:1] != b"{":
        return False
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    if type(data) is not dict:
        return False
    names = data.keys()
    allowed, required = shape
    return names <= allowed and required <= names


def _rows(
    db: Db, session_id: str, after: int, upto: int | None
) -> Iterator[tuple[int, str, bytes, object]]:
    """The session's rows after seq ``after`` (up to ``upto``), gapless and with bytes bodies."""
    rows = db.execute(
        "SELECT seq, kind, CAST(body AS BLOB), hash FROM events "
        "WHERE session_id = ? AND seq > ? AND seq <= ? ORDER BY seq",
        (session_id, after, MAX_SEQ if upto is None else upto),
    )
    expected = after + 1
    for seq, kind, body, stored in rows:
        if seq != expected:
            raise CorruptRow(
                f"Session {session_id!r} event seq {expected} is missing: the next stored "
                f"event has seq {shown(seq)}. The log has a gap and cannot be replayed past seq "
                f"{expected - 1}; restore the file from a backup.",
                session_id=session_id,
                seq=expected,
            )
        if not isinstance(body, bytes):
            raise CorruptRow(
                f"Session {session_id!r} event seq {seq} is corrupt: its body is "
                f"{type(body).__name__}, not JSON text. {untrusted_past(seq)}",
                session_id=session_id,
                seq=seq,
            )
        yield seq, kind, body, stored
        expected += 1


def untrusted_past(seq: int, log: str = "The log") -> str:
    """What to do about damaged event ``seq``: the sentence that ends its ``CorruptRow``."""
    return f"{log} cannot be trusted past seq {seq - 1}; restore the file from a backup."


def _decoded(session_id: str, seq: int, kind: str, body: bytes) -> Event:
    """The event a row holds, which must be the row's own (its kind, session and seq)."""
    where = f"Session {session_id!r} event seq {seq}"
    try:
        event = decode_body(kind, session_id, seq, body)
    except DecodeError as exc:
        raise CorruptRow(
            f"{where} is corrupt: {exc} {untrusted_past(seq)}", session_id=session_id, seq=seq
        ) from None
    if event.session_id != session_id or event.seq != seq or event.kind != kind:
        raise CorruptRow(
            f"{where} is foreign: its row says {shown(kind)} but its body is "
            f"{article(repr(event.kind))} event of session {event.session_id!r} seq {event.seq}. "
            f"{untrusted_past(seq)}"
            if event.kind != kind
            else f"{where} is foreign: its body is an event of session "
            f"{event.session_id!r} seq {event.seq}. {untrusted_past(seq)}",
            session_id=session_id,
            seq=seq,
        )
    return event


def replay_rows(
    db: Db, base: SessionState, *, upto: int, chain: str | None = None
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
                f"state before it: {exc} The log is damaged or was written by other software: "
                f"{untrusted_past(event.seq, 'it')}",
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


def read_snapshot(
    db: Db, session_id: str, chunk_size: int, *, lazy: bool = False
) -> tuple[SessionState, Refs | None, str | None, str | None]:
    """The session's snapshot state (empty if none), its chunk versions, its chain hash and
    its record's digest (None if none).

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
        return SessionState.empty(session_id), None, None, None
    seq, record, record_digest = row
    if type(seq) is not int or seq < 1:
        raise CorruptRow(
            f"Session {session_id!r} snapshot has seq {shown(seq)}, which is not a seq. "
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
    try:
        state, refs, written_with, chain = decode_snapshot(
            session_id,
            seq,
            record,
            lambda part, number: chunks.get((part, number)),
            digest=record_digest,
            event_hash=event_hash,
            lazy=lazy,
        )
    except CorruptRow:
        if event_hash is not None:
            _check_event(db, session_id, seq)  # the event row, not the snapshot, may be edited
        raise
    return state, (refs if written_with == chunk_size else None), chain, record_digest


def _check_event(db: Db, session_id: str, seq: int) -> None:
    """Raise the ``CorruptRow`` of the event at ``seq`` if its row does not chain from the one
    before: a snapshot that disagrees with its event's stored hash is sound when that hash
    was edited, and a rebuild (the snapshot's mend) would not mend the log. Only read once a
    snapshot failed."""
    check = ChainCheck(session_id, chain_at(db, session_id, seq - 1))
    for _ in read_events(db, check, seq - 1, seq):
        pass


def snapshot_digest(db: Db, session_id: str) -> object:
    """The digest stored with the session's snapshot record (None: it has no snapshot)."""
    row = db.execute("SELECT digest FROM snapshots WHERE session_id = ?", (session_id,)).fetchone()
    return None if row is None else row[0]


def write_snapshot(db: Db, plan: SnapshotPlan, session_id: str) -> str:
    """Write the chunks (compressed, see ``pack_chunk``) and the record a plan lists,
    dropping chunks past its end; the record's digest."""
    keep(db, plan, session_id)  # chunk versions an older checkpoint still names
    rows = []
    for part, number, body in plan.chunks:
        packed = pack_chunk(body, final=number < len(plan.refs[part]) - 1)
        rows.append((session_id, part, number, plan.seq, packed, digest(packed)))
    db.executemany(
        "INSERT INTO snapshot_chunks (session_id, part, chunk, seq, body, digest) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, part, chunk) DO UPDATE SET "
        "seq = excluded.seq, body = excluded.body, digest = excluded.digest",
        rows,
    )
    for part, versions in plan.refs.items():
        db.execute(
            "DELETE FROM snapshot_chunks WHERE session_id = ? AND part = ? AND chunk >= ?",
            (session_id, part, len(versions)),
        )
    record_digest = digest(plan.record.encode())
    db.execute(
        "INSERT INTO snapshots (session_id, seq, record, digest) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (session_id) DO UPDATE SET seq = excluded.seq, record = excluded.record, "
        "digest = excluded.digest",
        (session_id, plan.seq, plan.record, record_digest),
    )
    checkpoint(db, plan, session_id)
    return record_digest


def delete_snapshot(db: Db, session_id: str) -> None:
    """Drop the session's snapshot (its record and chunks) and its checkpoints."""
    forget(db, session_id)
    db.execute("DELETE FROM snapshot_chunks WHERE session_id = ?", (session_id,))
    db.execute("DELETE FROM snapshots WHERE session_id = ?", (session_id,))
