"""``apply(state, event) -> state``: the pure reducer (DESIGN §4).

``apply`` is deterministic: it reads no clock, makes no id and touches nothing
but its arguments, so replaying the same events always yields equal states.
It checks everything before it builds anything: a rejected event raises an
``EventRejected`` subclass and the caller's state is untouched (it is a
persistent value; nothing could touch it anyway).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyrsistent import pmap

from ._audit import AUDIT_CLOSED_BY, AuditRow, AuditStatus, operation_key
from ._category import Category, category_of
from ._errors import (
    AuditConflict,
    DuplicateMessage,
    EventRejected,
    ForeignEvent,
    IllegalTransition,
    InvalidMessage,
    SeqMismatch,
    StatusConflict,
    TurnConflict,
    UnknownMessage,
    UnmatchedToolResult,
)
from ._events import (
    ApprovalDecided,
    ApprovalRequested,
    BranchImported,
    Event,
    MessageAdded,
    MetadataUpdated,
    ModelCallFinished,
    ModelCallStarted,
    OrphanRecovered,
    RolledBack,
    StatusChanged,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
)
from ._lifecycle import Driver, check_transition
from ._message import Message, Status
from ._replace import replace
from ._state import SessionState, build_state, check_consistent, status_index
from ._turn import Turn, TurnStatus

__all__ = ["INTERRUPTED_MARK", "apply"]

_NEEDS_TURN = frozenset(
    {
        Category.THOUGHT,
        Category.TOOL_CALL,
        Category.TOOL_RESULT,
        Category.NUDGE,
        Category.CRASH_NOTICE,
    }
)
_PARTIAL = frozenset({Category.THOUGHT, Category.REPLY})
_RESERVED_FLAGS = frozenset(c.spec.flag for c in Category if c.spec.flag)
INTERRUPTED_MARK = "interrupted"
"""Metadata key set on output an interrupt or error cut short."""

_TURN_STATUS = {
    TurnOutcome.PROCESSED: (TurnStatus.PROCESSED, Status.PROCESSED),
    TurnOutcome.INTERRUPTED: (TurnStatus.INTERRUPTED, Status.INTERRUPTED),
    TurnOutcome.ERROR: (TurnStatus.ERROR, Status.ERROR),
}


def apply(state: SessionState, event: Event) -> SessionState:
    """Return the state after ``event``; ``state`` itself never changes.

    Raises:
        EventRejected: the event does not fit this state (its subclass says
            why); nothing was built.
        TypeError: ``event`` is not an Amber event.
    """
    handler = _HANDLERS.get(type(event))
    if handler is None:
        raise TypeError(
            f"apply() takes an Amber event (one of {_EVENT_NAMES}); "
            f"got {event!r} that is a {type(event).__name__!r}."
        )
    if event.session_id != state.session_id:
        raise ForeignEvent(
            f"{type(event).__name__} seq {event.seq} belongs to session {event.session_id!r}, "
            f"not {state.session_id!r}."
        )
    if event.seq != state.seq + 1:
        raise SeqMismatch(
            f"{type(event).__name__} has seq {event.seq} but session {state.session_id!r} is at "
            f"seq {state.seq}; the next event must have seq {state.seq + 1}."
        )
    return handler(state, event)


def _bump(counts: tuple[int, ...], old: Status | None, new: Status) -> tuple[int, ...]:
    values = list(counts)
    if old is not None:
        values[status_index(old)] -= 1
    values[status_index(new)] += 1
    return tuple(values)


def _message_added(state: SessionState, event: MessageAdded) -> SessionState:
    message = event.message
    category = _check_new_message(state, message, event.seq)
    turn = state.active_turn
    if category.is_input:
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
    if message.event_seq is None:
        message = replace(message, event_seq=event.seq)
    position = len(state.messages)
    changes: dict[str, Any] = {
        "seq": event.seq,
        "updated_at": event.at,
        "messages": state.messages.append(message),
        "index": state.index.set(message.id, position),
        "counts": _bump(state.counts, None, message.status),
    }
    if category.is_input:
        changes["queued"] = state.queued.set(message.id, position)
    elif category is Category.TOOL_CALL:
        assert message.tool_call is not None
        assert turn is not None
        call_id = message.tool_call.id
        changes["tool_calls"] = state.tool_calls.set(call_id, message.id)
        changes["active_turn"] = replace(turn, open_calls=turn.open_calls.set(call_id, message.id))
    elif category is Category.TOOL_RESULT:
        assert message.tool_call_id is not None
        assert turn is not None
        call_id = message.tool_call_id
        changes["tool_results"] = state.tool_results.set(call_id, message.id)
        changes["active_turn"] = replace(turn, open_calls=turn.open_calls.remove(call_id))
    return replace(state, **changes)


def _check_new_message(state: SessionState, message: Message, seq: int) -> Category:
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
    spec = category.spec
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


def _status_changed(state: SessionState, event: StatusChanged) -> SessionState:
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
        counts=_bump(state.counts, message.status, event.status),
    )


def _metadata_updated(state: SessionState, event: MetadataUpdated) -> SessionState:
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


def _turn_started(state: SessionState, event: TurnStarted) -> SessionState:
    if state.active_turn_id is not None:
        raise TurnConflict(
            f"TurnStarted seq {event.seq} starts turn {event.turn_id!r} while turn "
            f"{state.active_turn_id!r} is active; end it first (one active turn per session)."
        )
    if event.turn_id in state.turns:
        raise TurnConflict(
            f"TurnStarted seq {event.seq} reuses turn id {event.turn_id!r}; "
            "give each turn a new id."
        )
    if not state.queued:
        raise TurnConflict(
            f"TurnStarted seq {event.seq}: session {state.session_id!r} has no pending input to "
            "claim; a turn starts only when input is waiting."
        )
    positions = sorted(state.queued.values())
    messages = state.messages.evolver()
    ids = []
    for position in positions:
        message = state.messages[position]
        check_transition(message, Status.PROCESSING, Driver.TURN_STARTED)
        messages[position] = replace(message, status=Status.PROCESSING, turn_id=event.turn_id)
        ids.append(message.id)
    counts = list(state.counts)
    counts[status_index(Status.PENDING_AGENT)] -= len(ids)
    counts[status_index(Status.PROCESSING)] += len(ids)
    turn = Turn(
        id=event.turn_id,
        status=TurnStatus.ACTIVE,
        started_at=event.at,
        started_seq=event.seq,
        input_ids=ids,
        runner=event.runner,
    )
    return replace(
        state,
        seq=event.seq,
        updated_at=event.at,
        messages=messages.persistent(),
        queued=type(state.queued)(),
        active_turn=turn,
        counts=tuple(counts),
    )


def _active_turn(
    state: SessionState, event: TurnEnded | OrphanRecovered | ApprovalRequested | ApprovalDecided
) -> Turn:
    turn = state.active_turn
    if turn is None or turn.id != event.turn_id:
        where = f"turn {turn.id!r} is active" if turn else "no turn is active"
        raise TurnConflict(
            f"{type(event).__name__} seq {event.seq} names turn {event.turn_id!r} but {where}."
        )
    return turn


def _turn_ended(state: SessionState, event: TurnEnded) -> SessionState:
    turn = _active_turn(state, event)
    if event.partial and event.outcome is TurnOutcome.PROCESSED:
        raise EventRejected(
            f"TurnEnded seq {event.seq} ends turn {turn.id!r} as processed but carries partial "
            "output; add finished output with MessageAdded, partial output only comes with "
            "interrupted or error."
        )
    if turn.open_calls and event.outcome is TurnOutcome.PROCESSED:
        waiting = ", ".join(sorted(turn.open_calls))
        raise EventRejected(
            f"TurnEnded seq {event.seq} ends turn {turn.id!r} as processed while tool calls "
            f"{waiting} have no result; add their results first, or end the turn as "
            "interrupted or error."
        )
    turn_status, input_status = _TURN_STATUS[event.outcome]
    messages = state.messages.evolver()
    counts = list(state.counts)
    for message_id in turn.input_ids:
        position = state.index[message_id]
        message = state.messages[position]
        check_transition(message, input_status, Driver.TURN_ENDED)
        messages[position] = replace(message, status=input_status)
        counts[status_index(message.status)] -= 1
        counts[status_index(input_status)] += 1
    if event.outcome is TurnOutcome.INTERRUPTED:
        for message_id in turn.open_calls.values():
            position = state.index[message_id]
            message = state.messages[position]
            check_transition(message, Status.INTERRUPTED, Driver.TURN_ENDED)
            messages[position] = replace(message, status=Status.INTERRUPTED)
            counts[status_index(message.status)] -= 1
            counts[status_index(Status.INTERRUPTED)] += 1
    index = state.index
    seen: set[str] = set()
    for partial in event.partial:
        category = _check_new_message(state, partial, event.seq)
        if category not in _PARTIAL or partial.turn_id != turn.id or partial.id in seen:
            raise EventRejected(
                f"TurnEnded seq {event.seq}: partial message {partial.id!r} must be a thought or "
                f"reply of turn {turn.id!r} with a new id (got a {category.label} of turn "
                f"{partial.turn_id!r})."
            )
        seen.add(partial.id)
        marked = replace(
            partial,
            event_seq=event.seq,
            metadata=partial.metadata.set(INTERRUPTED_MARK, True),
        )
        index = index.set(marked.id, len(messages))
        messages.append(marked)
        counts[status_index(marked.status)] += 1
    audit_changes = _close_audit(state, event, event.outcome.value)
    ended = replace(
        turn,
        status=turn_status,
        ended_at=event.at,
        ended_seq=event.seq,
        reason=event.reason,
        metrics=event.metrics,
        duration_ms=event.duration_ms,
        open_calls=pmap() if event.outcome is TurnOutcome.INTERRUPTED else turn.open_calls,
        awaiting_approval=pmap(),
    )
    return replace(
        state,
        seq=event.seq,
        updated_at=event.at,
        messages=messages.persistent(),
        index=index,
        turns=state.turns.set(turn.id, ended),
        active_turn=None,
        counts=tuple(counts),
        **audit_changes,
    )


def _orphan_recovered(state: SessionState, event: OrphanRecovered) -> SessionState:
    turn = _active_turn(state, event)
    messages = state.messages.evolver()
    queued = state.queued
    for message_id in turn.input_ids:
        position = state.index[message_id]
        message = state.messages[position]
        check_transition(message, Status.PENDING_AGENT, Driver.ORPHAN_RECOVERED)
        messages[position] = replace(message, status=Status.PENDING_AGENT, turn_id=None)
        queued = queued.set(message_id, position)
    counts = list(state.counts)
    counts[status_index(Status.PROCESSING)] -= len(turn.input_ids)
    counts[status_index(Status.PENDING_AGENT)] += len(turn.input_ids)
    audit_changes = _close_audit(state, event, "recovered")
    recovered = replace(
        turn,
        status=TurnStatus.RECOVERED,
        ended_at=event.at,
        ended_seq=event.seq,
        reason=event.reason,
        awaiting_approval=pmap(),
    )
    return replace(
        state,
        seq=event.seq,
        updated_at=event.at,
        messages=messages.persistent(),
        queued=queued,
        turns=state.turns.set(turn.id, recovered),
        active_turn=None,
        counts=tuple(counts),
        **audit_changes,
    )


def _close_audit(
    state: SessionState, event: TurnEnded | OrphanRecovered, how: str
) -> dict[str, Any]:
    """Close the turn's running audit rows (seed 003's terminal reconcile)."""
    if not state.audit_running:
        return {}
    status = AUDIT_CLOSED_BY[how]
    audit = state.audit
    why = {
        "error": "its turn ended with an error",
        "interrupted": "its turn was interrupted",
        "processed": "its turn ended without the call finishing",
        "recovered": "its turn's runner died",
    }[how]
    for key in state.audit_running:
        row = audit[key]
        audit = audit.set(
            key,
            replace(
                row,
                status=status,
                finished_at=event.at,
                ended_seq=event.seq,
                error=event.reason or why,
            ),
        )
    return {"audit": audit, "audit_running": ()}


def _model_call_started(state: SessionState, event: ModelCallStarted) -> SessionState:
    turn = state.active_turn
    if turn is None or turn.id != event.turn_id:
        where = f"turn {turn.id!r} is active" if turn else "no turn is active"
        raise TurnConflict(
            f"ModelCallStarted seq {event.seq} names turn {event.turn_id!r} but {where}; a model "
            "call starts inside its running turn."
        )
    row = state.audit.get(event.source_key)
    if row is not None:
        if (row.operation_id, row.sequence, row.turn_id, row.role) == (
            event.operation_id,
            event.sequence,
            event.turn_id,
            event.role,
        ):
            return replace(state, seq=event.seq, updated_at=event.at)  # a replayed start
        raise AuditConflict(
            f"ModelCallStarted seq {event.seq} starts call {event.source_key!r} as operation "
            f"{event.operation_id!r} #{event.sequence}, but that call already started as "
            f"operation {row.operation_id!r} #{row.sequence}; one call has one operation id and "
            "one sequence."
        )
    op_key = operation_key(event.turn_id, event.role, event.operation_id)
    other_key = state.audit_ops.get(op_key)
    if other_key is not None:
        raise AuditConflict(
            f"ModelCallStarted seq {event.seq}: operation {event.operation_id!r} is already call "
            f"{other_key!r} of turn {event.turn_id!r} ({event.role}); operation ids are unique "
            "per turn and role."
        )
    expected = len(state.audit) + 1
    if event.sequence != expected:
        raise AuditConflict(
            f"ModelCallStarted seq {event.seq} has sequence {event.sequence} but the session's "
            f"next model call is #{expected}; sequences are strict and gapless."
        )
    row = AuditRow(
        operation_id=event.operation_id,
        source_key=event.source_key,
        turn_id=event.turn_id,
        role=event.role,
        sequence=event.sequence,
        status=AuditStatus.RUNNING,
        started_at=event.at,
        started_seq=event.seq,
        model=event.model,
        request=event.request,
    )
    return replace(
        state,
        seq=event.seq,
        updated_at=event.at,
        audit=state.audit.set(row.source_key, row),
        audit_ops=state.audit_ops.set(op_key, row.source_key),
        audit_running=(*state.audit_running, row.source_key),
    )


def _finished_row(state: SessionState, event: ModelCallFinished) -> AuditRow:
    """The row a finish names: by source key, else the active turn's row with its operation id."""
    if event.source_key is not None:
        row = state.audit.get(event.source_key)
        if row is None:
            raise AuditConflict(
                f"ModelCallFinished seq {event.seq} finishes call {event.source_key!r}, which "
                f"session {state.session_id!r} never started; start it with ModelCallStarted."
            )
        if row.operation_id != event.operation_id:
            raise AuditConflict(
                f"ModelCallFinished seq {event.seq} finishes call {event.source_key!r} as "
                f"operation {event.operation_id!r}, but it started as {row.operation_id!r}."
            )
        return row
    running = [
        state.audit[key]
        for key in state.audit_running
        if state.audit[key].operation_id == event.operation_id
    ]
    if not running:
        # A replayed finish of a row that is done: it belongs to the active turn.
        turn = state.active_turn_id
        running = [
            row
            for row in state.audit.values()
            if row.turn_id == turn and row.operation_id == event.operation_id
        ]
    if not running:
        raise AuditConflict(
            f"ModelCallFinished seq {event.seq} finishes operation {event.operation_id!r}, which "
            f"no call of the active turn of session {state.session_id!r} started; start it with "
            "ModelCallStarted."
        )
    if len(running) > 1:
        raise AuditConflict(
            f"ModelCallFinished seq {event.seq} finishes operation {event.operation_id!r}, which "
            f"calls {sorted(r.source_key for r in running)} share (in different roles); name the "
            "call with source_key."
        )
    return running[0]


def _model_call_finished(state: SessionState, event: ModelCallFinished) -> SessionState:
    row = _finished_row(state, event)
    fields = {
        "status": event.status,
        "duration_ms": event.duration_ms,
        "usage": event.usage,
        "content": event.content,
        "reasoning": event.reasoning,
        "tool_calls": event.tool_calls,
        "stop_reason": event.stop_reason,
        "error": event.error,
        "response_model": event.response_model,
        "retries": event.retries,
        "cost_usd": event.cost_usd,
    }
    if row.status is not AuditStatus.RUNNING:
        if all(getattr(row, name) == value for name, value in fields.items()):
            return replace(state, seq=event.seq, updated_at=event.at)  # a replayed finish
        raise AuditConflict(
            f"ModelCallFinished seq {event.seq} finishes operation {event.operation_id!r} as "
            f"{event.status}, but it is {row.status} already (since seq {row.ended_seq}); a "
            "finished model call never changes."
        )
    done = replace(row, finished_at=event.at, ended_seq=event.seq, **fields)
    return replace(
        state,
        seq=event.seq,
        updated_at=event.at,
        audit=state.audit.set(row.source_key, done),
        audit_running=tuple(k for k in state.audit_running if k != row.source_key),
    )


def _approval_requested(state: SessionState, event: ApprovalRequested) -> SessionState:
    turn = _active_turn(state, event)
    call_id = event.call_id
    if call_id not in turn.open_calls:
        why = "it has a result already" if call_id in state.tool_results else (
            "no open tool call of the turn has that id"
        )  # fmt: skip
        raise TurnConflict(
            f"ApprovalRequested seq {event.seq} asks approval of tool call {call_id!r}, but "
            f"{why}; only a call of the active turn still waiting for its result can wait "
            "for approval."
        )
    if call_id in turn.awaiting_approval:
        raise TurnConflict(
            f"ApprovalRequested seq {event.seq}: tool call {call_id!r} waits for approval "
            "already; decide it with ApprovalDecided."
        )
    awaiting = turn.awaiting_approval.set(call_id, turn.open_calls[call_id])
    return replace(
        state,
        seq=event.seq,
        updated_at=event.at,
        active_turn=replace(turn, awaiting_approval=awaiting),
    )


def _approval_decided(state: SessionState, event: ApprovalDecided) -> SessionState:
    turn = _active_turn(state, event)
    if event.call_id not in turn.awaiting_approval:
        raise TurnConflict(
            f"ApprovalDecided seq {event.seq} decides tool call {event.call_id!r}, which does "
            f"not wait for approval in turn {turn.id!r} (waiting: "
            f"{sorted(turn.awaiting_approval) or 'none'}); a call is decided once, after "
            "ApprovalRequested."
        )
    awaiting = turn.awaiting_approval.remove(event.call_id)
    return replace(
        state,
        seq=event.seq,
        updated_at=event.at,
        active_turn=replace(turn, awaiting_approval=awaiting),
    )


def _branch_imported(state: SessionState, event: BranchImported) -> SessionState:
    if state.messages or state.turns:
        raise EventRejected(
            f"BranchImported seq {event.seq} must start an empty session, but session "
            f"{state.session_id!r} already has {len(state.messages)} messages; fork into a new "
            "session id."
        )
    messages = [replace(m, event_seq=event.seq) for m in event.messages]
    imported = build_state(
        session_id=state.session_id,
        seq=event.seq,
        updated_at=event.at,
        messages=messages,
        turns=event.turns,
    )
    problems = check_consistent(imported)
    if problems:
        raise EventRejected(
            f"BranchImported seq {event.seq} from session {event.source_session_id!r} seq "
            f"{event.source_seq} is not a consistent state: {'; '.join(problems)}."
        )
    return imported


def _rolled_back(state: SessionState, event: RolledBack) -> SessionState:
    if state.active_turn_id is not None:
        raise TurnConflict(
            f"RolledBack seq {event.seq} while turn {state.active_turn_id!r} is active; end or "
            "interrupt the turn before rolling back."
        )
    if event.to_seq >= state.seq:
        raise EventRejected(
            f"RolledBack seq {event.seq} rolls back to seq {event.to_seq}, but session "
            f"{state.session_id!r} is at seq {state.seq}; to_seq must be below the current seq."
        )
    # Messages are appended in event order, so those added after to_seq are a suffix.
    messages = state.messages
    lo, hi = 0, len(messages)
    while lo < hi:
        mid = (lo + hi) // 2
        if (messages[mid].event_seq or 0) <= event.to_seq:
            lo = mid + 1
        else:
            hi = mid
    suffix = [(p, messages[p]) for p in range(lo, len(messages)) if messages[p].active]
    waiting = [m.id for _, m in suffix if m.status is Status.PENDING_AGENT]
    if waiting:
        raise EventRejected(
            f"RolledBack seq {event.seq} would hide input still waiting for a turn "
            f"({', '.join(repr(i) for i in waiting)}); let a turn settle it, then roll back."
        )
    evolver = messages.evolver()
    for position, message in suffix:
        evolver[position] = replace(message, active=False)
    return replace(state, seq=event.seq, updated_at=event.at, messages=evolver.persistent())


_HANDLERS: dict[type[Event], Callable[[SessionState, Any], SessionState]] = {
    MessageAdded: _message_added,
    StatusChanged: _status_changed,
    MetadataUpdated: _metadata_updated,
    TurnStarted: _turn_started,
    TurnEnded: _turn_ended,
    OrphanRecovered: _orphan_recovered,
    BranchImported: _branch_imported,
    RolledBack: _rolled_back,
    ModelCallStarted: _model_call_started,
    ModelCallFinished: _model_call_finished,
    ApprovalRequested: _approval_requested,
    ApprovalDecided: _approval_decided,
}
_EVENT_NAMES = ", ".join(sorted(cls.__name__ for cls in _HANDLERS))
