"""The reducer's message events: a message added, its status or metadata changed (DESIGN §4)."""

from __future__ import annotations

from ._category import INPUT_CATEGORIES, Category, category_of
from ._errors import (
    DuplicateMessage,
    EventRejected,
    ForeignEvent,
    IllegalTransition,
    InvalidMessage,
    StatusConflict,
    TurnConflict,
    UnknownMessage,
    UnmatchedToolResult,
)
from ._events import (
    MessageAdded,
    MetadataUpdated,
    StatusChanged,
)
from ._lifecycle import Driver, check_transition
from ._message import Message, Status
from ._replace import replace, replacer
from ._state import SessionState, appended, status_index

__all__ = [
    "PARTIAL",
    "bump",
    "check_new_message",
    "message_added",
    "metadata_updated",
    "status_changed",
]

_NEEDS_TURN = frozenset(
    {
        Category.THOUGHT,
        Category.TOOL_CALL,
        Category.TOOL_RESULT,
        Category.NUDGE,
        Category.CRASH_NOTICE,
    }
)


PARTIAL = frozenset({Category.THOUGHT, Category.REPLY})


_RESERVED_FLAGS = frozenset(c.spec.flag for c in Category if c.spec.flag)
_SPECS = {c: c.spec for c in Category}


_COUNT_OF = {status: status_index(status) for status in Status}
"""Each status's place in ``SessionState.counts``."""


def bump(counts: tuple[int, ...], old: Status | None, new: Status) -> tuple[int, ...]:
    values = list(counts)
    if old is not None:
        values[status_index(old)] -= 1
    values[status_index(new)] += 1
    return tuple(values)


# The reducer's most common changes, by position (no dict of changes to build):
# a message stamped with the seq that adds it, and a state with one more message.
_stamped = replacer(Message, "event_seq")
_with_input = replacer(SessionState, "seq", "updated_at", "messages", "index", "counts", "queued")
_with_output = replacer(SessionState, "seq", "updated_at", "messages", "index", "counts")


def message_added(state: SessionState, event: MessageAdded) -> SessionState:
    message = event.message
    category = check_new_message(state, message, event.seq)
    turn = state.active_turn
    is_input = category in INPUT_CATEGORIES
    if is_input:
        if message.turn_id is not None:
            raise TurnConflict(
                f"Input message {message.id!r} ({category.label}) is added with turn_id "
                f"{message.turn_id!r}; inputs are added unclaimed (turn_id=None) and a "
                "TurnStarted event claims them."
            )
    elif (message.turn_id is not None or category in _NEEDS_TURN) and (
        turn is None or message.turn_id != turn.id
    ):
        where = f"turn {turn.id!r} is active" if turn else "no turn is active"
        raise TurnConflict(
            f"Message {message.id!r} ({category.label}) names turn {message.turn_id!r} but "
            f"{where}; turn output is added while its turn runs."
        )
    seq = event.seq
    if message.event_seq is None:
        message = _stamped(message, seq)
    position = len(state.messages)
    message_id = message.id
    # The append case, fast: check_new_message refused an id the session has, so the
    # index and the queue (which holds ids of the session's messages) take it at their
    # end without looking it up again.
    messages = appended(state.messages, message)
    index = state.index.add_new(message_id)
    tally = list(state.counts)
    tally[_COUNT_OF[message.status]] += 1
    counts = tuple(tally)
    if is_input:
        queued = state.queued.set_new(message_id, position)
        return _with_input(state, seq, event.at, messages, index, counts, queued)
    if category is Category.TOOL_CALL:
        assert message.tool_call is not None
        assert turn is not None
        call_id = message.tool_call.id
        return replace(
            state,
            seq=seq,
            updated_at=event.at,
            messages=messages,
            index=index,
            counts=counts,
            tool_calls=state.tool_calls.set(call_id, message_id),
            active_turn=replace(turn, open_calls=turn.open_calls.set(call_id, message_id)),
        )
    if category is Category.TOOL_RESULT:
        assert message.tool_call_id is not None
        assert turn is not None
        call_id = message.tool_call_id
        return replace(
            state,
            seq=seq,
            updated_at=event.at,
            messages=messages,
            index=index,
            counts=counts,
            tool_results=state.tool_results.set(call_id, message_id),
            active_turn=replace(turn, open_calls=turn.open_calls.remove(call_id)),
        )
    return _with_output(state, seq, event.at, messages, index, counts)


def check_new_message(state: SessionState, message: Message, seq: int) -> Category:
    """Checks every new message passes, whichever event brings it."""
    if message.session_id != state.session_id:
        raise ForeignEvent(
            f"Message {message.id!r} belongs to session {message.session_id!r}, not "
            f"{state.session_id!r}."
        )
    if message.id in state.index:
        raise DuplicateMessage(
            f"Session {state.session_id!r} already has a message {message.id!r}; give each "
            "message a new id."
        )
    category = category_of(message)
    spec = _SPECS[category]  # a dict lookup, not the property's call
    if not spec.stored:
        raise InvalidMessage(
            f"Message {message.id!r} is a {category.label}, which is virtual and never stored; "
            "pass it to the projections instead."
        )
    if message.status is not spec.initial:
        raise IllegalTransition(
            f"Message {message.id!r} ({category.label}) must be added as {spec.initial} "
            f"(got {message.status})."
        )
    if not message.active:
        raise IllegalTransition(f"Message {message.id!r} must be added active (got active=False).")
    if message.event_seq is not None and message.event_seq != seq:
        raise EventRejected(
            f"Message {message.id!r} has event_seq {message.event_seq} but is added by the event "
            f"with seq {seq}; leave event_seq None and the reducer sets it."
        )
    if message.parent_id is not None and message.parent_id not in state.index:
        raise UnknownMessage(
            f"Message {message.id!r} names parent {message.parent_id!r}, which session "
            f"{state.session_id!r} does not have."
        )
    if category is Category.TOOL_CALL:
        assert message.tool_call is not None
        holder = state.tool_calls.get(message.tool_call.id)
        if holder is not None:
            raise DuplicateMessage(
                f"Tool call id {message.tool_call.id!r} of message {message.id!r} is already used "
                f"by message {holder!r}; tool call ids are unique in a session."
            )
    elif category is Category.TOOL_RESULT:
        _check_result(state, message)
    return category


def _check_result(state: SessionState, message: Message) -> None:
    call_id = message.tool_call_id
    assert call_id is not None
    turn = state.active_turn
    if turn is not None and call_id in turn.awaiting_approval:
        raise UnmatchedToolResult(
            f"Tool result {message.id!r} answers tool call {call_id!r}, which still waits for "
            "approval; decide it first (ApprovalDecided)."
        )
    if turn is not None and call_id in turn.open_calls:
        call_message = turn.open_calls[call_id]
        if message.parent_id is not None and message.parent_id != call_message:
            raise UnmatchedToolResult(
                f"Tool result {message.id!r} answers call {call_id!r} (message {call_message!r}) "
                f"but names parent {message.parent_id!r}; a result's parent is its call."
            )
        return
    if call_id in state.tool_results:
        why = f"it was already answered by message {state.tool_results[call_id]!r}"
    elif call_id in state.tool_calls:
        why = "that call belongs to another turn"
    else:
        why = "no tool call has that id"
    raise UnmatchedToolResult(
        f"Tool result {message.id!r} answers tool call {call_id!r}, but {why}; a result answers "
        "exactly one open call of its own turn."
    )


def status_changed(state: SessionState, event: StatusChanged) -> SessionState:
    position = state.index.get(event.message_id)
    if position is None:
        raise UnknownMessage(
            f"StatusChanged seq {event.seq} names message {event.message_id!r}, which session "
            f"{state.session_id!r} does not have."
        )
    message = state.messages[position]
    if message.status is not event.expected:
        raise StatusConflict(
            f"StatusChanged seq {event.seq} expected message {message.id!r} to be "
            f"{event.expected}, but it is {message.status}; read the state again and retry."
        )
    check_transition(message, event.status, Driver.STATUS_CHANGED)
    return replace(
        state,
        seq=event.seq,
        updated_at=event.at,
        messages=state.messages.set(position, replace(message, status=event.status)),
        counts=bump(state.counts, message.status, event.status),
    )


def metadata_updated(state: SessionState, event: MetadataUpdated) -> SessionState:
    position = state.index.get(event.message_id)
    if position is None:
        raise UnknownMessage(
            f"MetadataUpdated seq {event.seq} names message {event.message_id!r}, which session "
            f"{state.session_id!r} does not have."
        )
    reserved = sorted(_RESERVED_FLAGS.intersection(event.metadata))
    if reserved:
        raise EventRejected(
            f"MetadataUpdated seq {event.seq} sets {', '.join(reserved)} on message "
            f"{event.message_id!r}; those keys fix a message's category and cannot change."
        )
    message = state.messages[position]
    metadata = message.metadata.update(event.metadata)
    return replace(
        state,
        seq=event.seq,
        updated_at=event.at,
        messages=state.messages.set(position, replace(message, metadata=metadata)),
    )
