"""Snapshots of a session's state, stored in chunks so that each writes only what changed.

A snapshot is the state at one seq: its messages, turns (in start order) and
model-call audit rows (in sequence order) in the codec's JSON (``to_data``),
split into chunks of ``chunk_size`` items (each chunk names the fields once
and holds one row of values per item, which halves its size and its parsing
time; a store keeps it zlib-compressed, ``pack_chunk``), plus a small record
listing, for each chunk, the seq of the snapshot that wrote the chunk's
current version. Items are appended and seldom change once their turn is
over, so a new snapshot rewrites the last chunk or two and the chunks whose
items changed, found from what changed since the previous snapshot (the
unshared paths of the message and audit-row tries, ``_delta``; the turns
started or ended since), without looking at the rest: the work and the bytes
written are O(what changed), not the whole history (DESIGN §13).

Reading puts the chunks back together, decodes them with the fast strict
decoders of ``_fast``, derives every index (``_assemble``: the state
``build_state`` would build; from the rows' key columns, ``_lazy.Facts``,
when they are sound), then checks the state for consistency. Every
problem is a ``CorruptRow`` naming the session, the snapshot's seq and the
chunk.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from datetime import datetime
from typing import Any

import attrs
import orjson

from .._article import article
from .._audit import AuditRow
from .._codec import from_data, to_data
from .._errors import CorruptRow, DecodeError
from .._fork import MissingTurn, TurnsInOrder
from .._repr import value_repr
from .._state import SessionState, check_consistent
from ._assemble import assemble_state
from ._chain import digest
from ._delta import changed_positions
from ._fast import (
    MESSAGE_FIELDS,
    TURN_FIELDS,
    decode_message_row,
    decode_message_rows,
    decode_turn_row,
    decode_turn_rows,
)
from ._lazy import Facts
from ._rowcodec import message_values

__all__ = ["PARTS", "Refs", "SnapshotPlan", "decode_snapshot", "pack_chunk", "plan_snapshot"]

SNAPSHOT_FORMAT = 4
"""The layout of a snapshot record this Amber writes and reads (2 added the model-call
audit rows, 3 the hash of the event it was built at, 4 moved the audit rows from the record
to chunks; older snapshots are dropped by the schema migration and rebuilt from the log)."""
PARTS = ("messages", "turns", "audit")
"""The parts of a state a snapshot stores in chunks."""
Refs = dict[str, list[int]]
"""For each part, the seq of the snapshot that wrote each chunk's current version."""
_RECORD_KEYS = frozenset({"format", "seq", "updated_at", "chunk_size", "counts", "chain", *PARTS})
_CHUNK_KEYS = frozenset({"fields", "rows"})
AUDIT_FIELDS = [field.name for field in attrs.fields(AuditRow)]
"""The order of an audit row's values in a chunk row."""
_FIELDS = {"messages": MESSAGE_FIELDS, "turns": TURN_FIELDS, "audit": AUDIT_FIELDS}


def _audit_row(fields: list[str], row: object) -> AuditRow:
    if type(row) is not list or len(row) != len(fields):
        raise DecodeError(
            f"Cannot decode AuditRow from JSON: expected a row of {len(fields)} values, got "
            f"{row!r:.80}."
        )
    return from_data(dict(zip(fields, row, strict=True)), AuditRow)


_ROWS: dict[str, Callable[[list[str], list[object]], list[Any] | None]] = {
    "messages": decode_message_rows,
    "turns": decode_turn_rows,
    "audit": lambda fields, rows: None,  # few: one by one, through the codec
}
_ROW: dict[str, Callable[[list[str], object], Any]] = {
    "messages": decode_message_row,
    "turns": decode_turn_row,
    "audit": _audit_row,
}


@attrs.frozen(kw_only=True)
class SnapshotPlan:
    """What to write for one snapshot."""

    __repr__ = value_repr

    seq: int
    """The snapshot's seq (the head's)."""
    record: str
    """The snapshot record (JSON text)."""
    chunks: list[tuple[str, int, str]]
    """``(part, chunk number, JSON text)`` of every chunk to (re)write."""
    refs: Refs
    """The record's chunk versions, to plan the next snapshot against."""


_ROW_CACHE: dict[int, tuple[Any, list[Any]]] = {}
"""Rows of items written lately, by identity (the item is kept, so its id is not reused):
the last chunk is rewritten by every snapshot, and most of its items did not change."""
_ROW_CACHE_SIZE = 16384


def _row(part: str, item: Any) -> list[Any]:
    cached = _ROW_CACHE.get(id(item))
    if cached is not None and cached[0] is item:
        return cached[1]
    if part == "messages":
        row = message_values(item)
    else:
        data = to_data(item)
        row = [data[name] for name in _FIELDS[part]]
    if len(_ROW_CACHE) >= _ROW_CACHE_SIZE:
        _ROW_CACHE.clear()
    _ROW_CACHE[id(item)] = (item, row)
    return row


def _encode_chunk(part: str, items: list[Any]) -> str:
    """A chunk as JSON: the field names once, then one row of values per item."""
    rows = [_row(part, item) for item in items]
    return orjson.dumps({"fields": _FIELDS[part], "rows": rows}).decode()


def _chunk(part: str, items: Any, number: int, chunk_size: int) -> tuple[str, int, str]:
    start = number * chunk_size
    end = min(start + chunk_size, len(items))
    return part, number, _encode_chunk(part, [items[i] for i in range(start, end)])


_VECTORS = {"messages": "messages", "audit": "audit_rows"}


class _Unordered(Exception):
    """A state's ``turn_order`` does not list its turns (a state built by hand)."""


def _turns_in_order(state: SessionState) -> TurnsInOrder:
    turns = TurnsInOrder(state)
    if not turns.complete:
        raise _Unordered
    return turns


def _changed(head: SessionState, previous: SessionState) -> dict[str, set[int] | None]:
    """For each part, the positions (below the previous length) that may have changed since
    ``previous``; None: unknown, compare every item."""
    messages = changed_positions(previous.messages, head.messages)
    turns: set[int] | None = None
    old_order = previous.turn_order
    if changed_positions(old_order, head.turn_order) == []:  # head's turns extend previous'
        # An ended turn never changes: only the turn active at the previous snapshot can have.
        active = previous.active_turn
        if active is None:
            turns = set()
        elif old_order and old_order[-1] == active.id:
            turns = {len(old_order) - 1}
    audit = changed_positions(previous.audit_rows, head.audit_rows)
    return {
        "messages": None if messages is None else set(messages),
        "turns": turns,
        "audit": None if audit is None else set(audit),
    }


def plan_snapshot(
    head: SessionState,
    *,
    previous: SessionState | None,
    refs: Refs | None,
    chunk_size: int,
    chain: str,
) -> SnapshotPlan:
    """Plan the snapshot of ``head``, rewriting only chunks that differ from ``previous``.

    The chunks to rewrite are found from what changed since ``previous`` (the
    paths of the message trie that are not shared, the turns started or ended
    since), so a snapshot costs what its events touched, not the session's
    length. Turns are written in the order they started (``turn_order``).

    Args:
        head: the state to snapshot.
        previous: the state of the session's current snapshot, if any.
        refs: that snapshot's chunk versions.
        chunk_size: items per chunk (must be the one ``refs`` was made with).
        chain: the hash of the event at ``head.seq`` (the chain's head).
    """
    try:
        return _plan(head, previous, refs, chunk_size, chain, ordered=True)
    except (_Unordered, MissingTurn):
        return _plan(head, previous, refs, chunk_size, chain, ordered=False)


def _plan(
    head: SessionState,
    previous: SessionState | None,
    refs: Refs | None,
    chunk_size: int,
    chain: str,
    *,
    ordered: bool,
) -> SnapshotPlan:
    def parts(state: SessionState) -> dict[str, Any]:
        rows = state.audit_rows
        return {
            "messages": state.messages,
            "turns": _turns_in_order(state) if ordered else state.turn_list(),
            # Rows in sequence order (their position is their sequence - 1).
            "audit": rows if ordered and len(rows) == len(state.audit) else state.model_calls(),
        }

    new_parts = parts(head)
    changed: dict[str, set[int] | None] = dict.fromkeys(PARTS)
    old_parts: dict[str, Any] = dict.fromkeys(PARTS, ())
    if previous is not None and refs is not None:
        old_parts = parts(previous)
        changed = _changed(head, previous)
        if not ordered:
            changed = dict.fromkeys(PARTS)
        for part in PARTS:  # a view that is not the vector itself: compare every item
            if part != "turns" and not (
                new_parts[part] is getattr(head, _VECTORS[part])
                and old_parts[part] is getattr(previous, _VECTORS[part])
            ):
                changed[part] = None
    chunks: list[tuple[str, int, str]] = []
    new_refs: Refs = {}
    for part in PARTS:
        items, old = new_parts[part], old_parts[part]
        old_refs = refs.get(part, []) if refs is not None and previous is not None else []
        touched = changed[part]
        count = -(-len(items) // chunk_size)
        if (
            touched is not None
            and len(old) <= len(items)
            and len(old_refs) == -(-len(old) // chunk_size)
        ):
            # Only the chunks holding a changed item, and those from the previous end on.
            kept = min(len(old) // chunk_size, count)
            versions = old_refs[:kept]
            for number in sorted({position // chunk_size for position in touched}):
                if number < kept:
                    versions[number] = head.seq
                    chunks.append(_chunk(part, items, number, chunk_size))
            for number in range(kept, count):
                versions.append(head.seq)
                chunks.append(_chunk(part, items, number, chunk_size))
        else:  # compare every item
            versions = []
            for number in range(count):
                start = number * chunk_size
                end = min(start + chunk_size, len(items))
                same = number < len(old_refs) and len(old) >= end
                if same and all(items[i] is old[i] for i in range(start, end)):
                    versions.append(old_refs[number])
                else:
                    versions.append(head.seq)
                    chunks.append(_chunk(part, items, number, chunk_size))
        new_refs[part] = versions
    record = {
        "format": SNAPSHOT_FORMAT,
        "seq": head.seq,
        "updated_at": None if head.updated_at is None else head.updated_at.isoformat(),
        "chunk_size": chunk_size,
        "counts": list(head.counts),
        "chain": chain,
        **new_refs,
    }
    return SnapshotPlan(
        seq=head.seq, record=orjson.dumps(record).decode(), chunks=chunks, refs=new_refs
    )


def decode_snapshot(
    session_id: str,
    seq: int,
    record: object,
    read_chunk: Callable[[str, int], tuple[int, object, object] | None],
    *,
    digest: object,
    event_hash: str | None,
    lazy: bool = False,
    kind: str = "snapshot",
) -> tuple[SessionState, Refs, int, str]:
    """Rebuild the state a snapshot holds.

    Args:
        session_id: the session (from the row's key).
        seq: the snapshot's seq (from the row).
        record: the snapshot record (JSON, bytes or text).
        read_chunk: ``(part, number) -> (version seq, JSON, digest)`` or None if missing.
        digest: the digest stored with the record.
        event_hash: the chain's hash stored with the event at ``seq`` (None: the
            log does not reach ``seq``).
        lazy: leave each message undecoded until it is read (``_lazy``); a row
            that does not decode then raises its ``CorruptRow`` when read.
        kind: what the errors call it (``"checkpoint"``: an older snapshot kept).

    Returns:
        The state at ``seq``, the snapshot's chunk versions, its chunk size and
        the chain hash it was built at.

    Raises:
        CorruptRow: naming the session, the seq and what is wrong.
    """
    where = f"Session {session_id!r} {kind} at seq {seq}"
    rebuilt = "Snapshots" if kind == "snapshot" else f"Snapshots and {kind}s"

    def corrupt(problem: str) -> CorruptRow:
        return CorruptRow(
            f"{where} is corrupt: {problem}. {rebuilt} are rebuilt from the event log by "
            "'amber recover --rebuild' (store.rebuild()).",
            session_id=session_id,
            seq=seq,
        )

    _check_digest(record, digest, corrupt, "the record")
    data = _loads(record, corrupt)
    if type(data) is not dict or data.get("format") != SNAPSHOT_FORMAT:
        got = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise corrupt(f"expected format {SNAPSHOT_FORMAT}, got {got!r}")
    keys = _RECORD_KEYS
    if data.keys() != keys:
        raise corrupt(f"expected a record with keys {sorted(keys)}, got {sorted(data)}")
    chain = data["chain"]
    if event_hash is None:
        raise corrupt(f"the log has no event at seq {seq}; the snapshot is ahead of it")
    if chain != event_hash:
        raise corrupt(
            "it was built from another log than the one stored (its chain hash "
            f"{str(chain)[:16]}… is not the hash of event seq {seq}, {event_hash[:16]}…)"
        )
    if type(data["seq"]) is not int or data["seq"] != seq:
        raise corrupt(f"the record says seq {data['seq']!r}")
    size = data["chunk_size"]
    if type(size) is not int or size < 1:
        raise corrupt(f"chunk_size must be a positive integer, got {size!r}")
    try:
        updated_at = (
            None if data["updated_at"] is None else datetime.fromisoformat(data["updated_at"])
        )
    except (TypeError, ValueError):
        raise corrupt(f"updated_at is not a timestamp: {data['updated_at']!r}") from None
    refs: Refs = {}
    items: dict[str, list[Any]] = {}
    # The key columns of the messages: all a lazy read takes of them; an eager read derives
    # the indexes and runs the message checks on them too (in C, not a Python loop each).
    facts = None
    if Facts.usable():

        def rows_of(body: object, what: str) -> list[Any]:  # parsed before: it parses again
            rows: list[Any] = _loads(_unpack(body, corrupt, what), corrupt, what)["rows"]
            return rows

        facts = Facts(session_id, size, corrupt, rows_of, lazy=lazy)
    for part in PARTS:
        versions = data[part]
        if type(versions) is not list or any(
            type(v) is not int or not 0 < v <= seq for v in versions
        ):
            raise corrupt(
                f"{part} must list chunk versions (seqs up to {seq}), got {versions!r:.80}"
            )
        refs[part] = versions
        values: list[Any] = []
        for number, version in enumerate(versions):
            found = read_chunk(part, number)
            if found is None:
                raise corrupt(f"{part} chunk {number} is missing")
            stored, text, chunk_digest = found
            _check_digest(text, chunk_digest, corrupt, f"{part} chunk {number}")
            if stored != version:
                raise corrupt(
                    f"{part} chunk {number} has version {stored}, the record expects {version}"
                )
            what = f"{part} chunk {number}"
            chunk = _loads(_unpack(text, corrupt, what), corrupt, what)
            if type(chunk) is not dict or chunk.keys() != _CHUNK_KEYS:
                raise corrupt(f"{part} chunk {number} must be an object with fields and rows")
            fields, rows = chunk["fields"], chunk["rows"]
            known = fields == _FIELDS[part]  # the usual case: this Amber's, all str
            if not known and (
                type(fields) is not list or any(type(name) is not str for name in fields)
            ):
                raise corrupt(f"{part} chunk {number} must name its fields, got {fields!r:.80}")
            if type(rows) is not list or not rows or len(rows) > size:
                raise corrupt(f"{part} chunk {number} must hold 1 to {size} rows")
            if number < len(versions) - 1 and len(rows) != size:
                raise corrupt(f"{part} chunk {number} holds {len(rows)} rows, expected {size}")
            if part == "messages" and facts is not None and facts.lazy:
                if known and facts.add(number, text, rows):
                    continue
                # Other fields (an older Amber's), or a key column in doubt: eagerly.
                return decode_snapshot(
                    session_id,
                    seq,
                    record,
                    read_chunk,
                    digest=digest,
                    event_hash=event_hash,
                    kind=kind,
                )
            decoded = _ROWS[part](fields, rows)
            if decoded is None:  # some row needs a closer look: one by one
                decode = _ROW[part]
                decoded = []
                for index, row in enumerate(rows):
                    try:
                        decoded.append(decode(fields, row))
                    except DecodeError as exc:
                        problem = str(exc).rstrip(".")
                        raise corrupt(f"{part} chunk {number} item {index}: {problem}") from None
            if (
                part == "messages"
                and facts is not None
                and not (known and facts.add(number, None, rows))
            ):
                facts = None  # the indexes from the messages, as build_state derives them
            values += decoded
        items[part] = values
    state = None
    if facts is not None:
        state = facts.state(
            seq=seq,
            updated_at=updated_at,
            turns=items["turns"],
            audit=items["audit"],
            messages=None if facts.lazy else items["messages"],
        )
        if state is None and facts.lazy:  # a key column in doubt: the eager read names it
            return decode_snapshot(
                session_id, seq, record, read_chunk, digest=digest, event_hash=event_hash, kind=kind
            )
    if state is not None and facts is not None:
        problems = facts.problems(state)
    else:
        state = assemble_state(
            session_id=session_id,
            seq=seq,
            updated_at=updated_at,
            messages=items["messages"],
            turns=items["turns"],
            audit=items["audit"],
        )
        problems = check_consistent(state)
    if list(state.counts) != data["counts"]:
        problems.append(f"counts {data['counts']!r} do not match the messages {list(state.counts)}")
    if problems:
        raise corrupt(
            "; ".join(problems[:10])
            + (f"; and {len(problems) - 10} more" if len(problems) > 10 else "")
        )
    return state, refs, size, chain


def pack_chunk(text: str, *, final: bool) -> bytes:
    """A chunk's JSON as a store keeps it: zlib-compressed (a third of the size).

    ``final``: the chunk is full, so it is seldom written again: compress harder
    (level 6); the last chunk, rewritten by every snapshot, takes the fast level 1.
    ``decode_snapshot`` reads both this and plain JSON text (older stores).
    """
    return zlib.compress(text.encode(), 6 if final else 1)


def _unpack(text: object, corrupt: Callable[[str], CorruptRow], what: str) -> object:
    if isinstance(text, bytes) and text[:1] == b"x":  # zlib's header; JSON starts with "{"
        try:
            return zlib.decompress(text)
        except zlib.error as exc:
            raise corrupt(f"{what} is not zlib-compressed JSON ({exc})") from None
    return text


def _check_digest(
    text: object, stored: object, corrupt: Callable[[str], CorruptRow], what: str
) -> None:
    if not isinstance(text, bytes):
        raise corrupt(f"{what} is {article(type(text).__name__)}, expected JSON text")
    if digest(text) != stored:
        raise corrupt(f"{what} does not match its digest: it was changed after it was written")


def _loads(text: object, corrupt: Callable[[str], CorruptRow], what: str = "the record") -> Any:
    if not isinstance(text, (bytes, str)):
        raise corrupt(f"{what} is {article(type(text).__name__)}, expected JSON text")
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise corrupt(f"{what} is not JSON ({exc})") from None
