"""Which events touched a message, decided from the event and the session's head: the
message-history query of a long session (``Source.message_history``) reads only the
events that may name the message, and reads the states around one only when the
event and the head cannot tell (``_touches`` answers None).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from runtime import (
    ApprovalDecided,
    ApprovalRequested,
    BranchImported,
    Event,
    Message,
    MessageAdded,
    MetadataUpdated,
    OrphanRecovered,
    RolledBack,
    SessionState,
    StatusChanged,
    Turn,
    TurnEnded,
    TurnStarted,
    added_seq,
)

from .._cli._render import touched_ids

_PLAIN = re.compile(r"[A-Za-z0-9_.:@+-]{1,256}")
"""Ids a stored body holds as they are (JSON escapes none of these characters)."""


def _touches(
    event: Event, message: Message, head: SessionState, turns: Mapping[str, Turn]
) -> bool | None:
    """Whether ``event`` touched ``message`` (``touched_ids``), decided from the event and
    the ``head`` (its ``turns`` by id); None when that depends on the states around it."""
    empty = SessionState.empty(event.session_id)  # what these kinds touch is in the event
    if isinstance(event, MessageAdded | StatusChanged | MetadataUpdated | BranchImported):
        return message.id in touched_ids(event, empty, empty)
    if isinstance(event, TurnStarted | TurnEnded | OrphanRecovered):
        if isinstance(event, TurnEnded) and (
            any(m.id == message.id for m in event.partial)
            or (event.notice is not None and event.notice.id == message.id)
        ):
            return True
        turn = turns.get(event.turn_id)
        starts = isinstance(event, TurnStarted)
        if turn is None or (turn.started_seq if starts else turn.ended_seq) != event.seq:
            return None  # not the head's record of this turn
        if message.id in turn.input_ids:
            return True
        if starts or message.tool_call is None:
            return False  # a turn's open calls are its tool calls
        return _open_at(head, message, event.seq)
    if isinstance(event, ApprovalRequested | ApprovalDecided):
        return None if message.tool_call is not None else False
    if isinstance(event, RolledBack):
        return None
    return message.id in touched_ids(event, empty, empty)


def _open_at(head: SessionState, call: Message, seq: int) -> bool | None:
    """Whether the tool call ``call``, made in the turn that ends at ``seq``, was still open
    (no result) just before: from the head's maps of calls and results, when they name it
    (a call id used once); None otherwise."""
    assert call.tool_call is not None
    call_id = call.tool_call.id
    if head.tool_calls.get(call_id) != call.id:
        return None
    result_id = head.tool_results.get(call_id)
    if result_id is None:
        return True
    result = head.get(result_id)
    if result is None or result.turn_id != call.turn_id:
        return None
    added = added_seq(head, result)
    return None if added is None else added > seq
