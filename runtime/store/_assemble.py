"""A session state from a snapshot's parts: ``build_state``, sooner.

``build_state`` derives the message indexes in one Python loop over the
messages (~2 µs each). A snapshot read derives them column by column
instead: the ids and statuses are pulled out with ``map``, the counts come
from ``Counter`` and the id index from ``zip``, all loops in C; only the
messages that can be queued, tool calls or results are looked at in Python.
Everything that does not depend on the messages (turns, audit rows) is left
to ``build_state`` itself. The result is the state ``build_state`` makes
from the same parts, consistent or not (tests pin it), so the caller still
checks it with ``check_consistent``. If ``SessionState`` gains a field this
module does not know, it defers to ``build_state`` altogether.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime
from operator import attrgetter

import attrs
from immutables import Map
from pyrsistent.typing import PVector

from .._audit import AuditRow
from .._message import Message, MessageType, Status
from .._positions import InputQueue, MessageIndex
from .._state import STATUS_ORDER, SessionState, build_state, new_vector
from .._turn import Turn

__all__ = ["FAST_STATES", "assemble_facts", "assemble_state"]

_KNOWN_FIELDS = (
    "session_id", "seq", "updated_at", "messages", "index", "queued", "turns", "active_turn",
    "tool_calls", "tool_results", "counts", "audit", "audit_ops", "audit_running", "audit_rows",
    "turn_order",
)  # fmt: skip
FAST_STATES = tuple(field.name for field in attrs.fields(SessionState)) == _KNOWN_FIELDS
"""False when ``SessionState``'s fields changed and this module was not taught them."""
_ID = attrgetter("id")
_STATUS = attrgetter("status")
_PENDING_AGENT = Status.PENDING_AGENT
_TOOL_CALL = MessageType.TOOL_CALL
_TOOL_RESULT = MessageType.TOOL_RESULT


def assemble_state(
    *,
    session_id: str,
    seq: int,
    updated_at: datetime | None,
    messages: list[Message],
    turns: list[Turn],
    audit: Iterable[AuditRow] = (),
) -> SessionState:
    """The state ``build_state`` would build from these parts, every index derived."""
    if not FAST_STATES:
        return build_state(
            session_id=session_id,
            seq=seq,
            updated_at=updated_at,
            messages=messages,
            turns=turns,
            audit=audit,
        )
    ids = list(map(_ID, messages))
    statuses = list(map(_STATUS, messages))
    queued = {
        ids[position]: position
        for position, status in enumerate(statuses)
        if status is _PENDING_AGENT and messages[position].active
    }
    calls = {
        m.tool_call.id: m.id for m in messages if m.type is _TOOL_CALL and m.tool_call is not None
    }
    results = {
        m.tool_call_id: m.id
        for m in messages
        if m.type is _TOOL_RESULT and m.tool_call_id is not None
    }
    return assemble_facts(
        session_id=session_id,
        seq=seq,
        updated_at=updated_at,
        messages=new_vector(messages),
        ids=ids,
        counts=Counter(statuses),
        queued=queued,
        tool_calls=calls,
        tool_results=results,
        turns=turns,
        audit=audit,
    )


def assemble_facts(
    *,
    session_id: str,
    seq: int,
    updated_at: datetime | None,
    messages: PVector[Message],
    ids: list[str],
    counts: Mapping[Status, int],
    queued: dict[str, int],
    tool_calls: dict[str, str],
    tool_results: dict[str, str],
    turns: list[Turn],
    audit: Iterable[AuditRow] = (),
) -> SessionState:
    """The state of ``messages`` with its indexes made from these facts of them.

    ``ids`` are the messages', position by position; ``counts`` how many have
    each status (a status left out: none); ``queued``
    the pending active inputs (id -> position); ``tool_calls`` call id -> message
    id; ``tool_results`` answered call id -> result id. A lazy snapshot read
    (``_lazy``) takes them from its rows' key columns without building a message.
    Only for a ``SessionState`` this module knows (``FAST_STATES``).
    """
    without_messages = build_state(
        session_id=session_id, seq=seq, updated_at=updated_at, messages=(), turns=turns, audit=audit
    )
    return attrs.evolve(
        without_messages,
        messages=messages,
        index=MessageIndex(ids),
        queued=InputQueue(queued),
        tool_calls=Map(tool_calls),
        tool_results=Map(tool_results),
        counts=tuple(counts.get(status, 0) for status in STATUS_ORDER),
    )
