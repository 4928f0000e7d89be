"""The reducer's turn events: a turn started, ended or recovered; approvals of tool calls."""

from __future__ import annotations

from typing import Any

from pyrsistent import pmap

from ._category import Category
from ._errors import (
    EventRejected,
    TurnConflict,
)
from ._events import (
    ApprovalDecided,
    ApprovalRequested,
    OrphanRecovered,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
)
from ._lifecycle import Driver, check_transition
from ._message import Status
from ._reduce_audit import close_audit
from ._reduce_messages import PARTIAL, check_new_message
from ._replace import replace
from ._state import SessionState, status_index
from ._turn import Turn, TurnStatus

__all__ = [
    "INTERRUPTED_MARK",
    "approval_decided",
    "approval_requested",
    "orphan_recovered",
    "turn_ended",
    "turn_started",
]

INTERRUPTED_MARK = "interrupted"
"""Metadata key set on output an interrupt or error cut short."""


_TURN_STATUS = {
    TurnOutcome.PROCESSED: (TurnStatus.PROCESSED, Status.PROCESSED),
    TurnOutcome.INTERRUPTED: (TurnStatus.INTERRUPTED, Status.INTERRUPTED),
    TurnOutcome.ERROR: (TurnStatus.ERROR, Status.ERROR),
}


def turn_started(state: SessionState, event: TurnStarted) -> SessionState:
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
        turn_order=state.turn_order.append(turn.id),
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


def _interrupt_calls(
    state: SessionState, turn: Turn, messages: Any, counts: list[int], driver: Driver
) -> None:
    """Mark ``turn``'s open tool calls interrupted in ``messages`` (an evolver of the state's
    messages) and ``counts``, as ``driver`` may."""
    for message_id in turn.open_calls.values():
        position = state.index[message_id]
        message = state.messages[position]
        check_transition(message, Status.INTERRUPTED, driver)
        messages[position] = replace(message, status=Status.INTERRUPTED)
        counts[status_index(message.status)] -= 1
        counts[status_index(Status.INTERRUPTED)] += 1


def turn_ended(state: SessionState, event: TurnEnded) -> SessionState:
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
        _interrupt_calls(state, turn, messages, counts, Driver.TURN_ENDED)
    index = state.index
    seen: set[str] = set()
    for partial in event.partial:
        category = check_new_message(state, partial, event.seq)
        if category not in PARTIAL or partial.turn_id != turn.id or partial.id in seen:
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
        index = index.add(marked.id)
        messages.append(marked)
        counts[status_index(marked.status)] += 1
    notice = event.notice
    if notice is not None:
        category = check_new_message(state, notice, event.seq)
        problem = None
        if category is not Category.CRASH_NOTICE or notice.turn_id != turn.id:
            problem = (
                f"must be a crash notice of turn {turn.id!r} (got a {category.label} of turn "
                f"{notice.turn_id!r})"
            )
        elif notice.id in seen:
            problem = "has the id of a partial message of this end; give it a new id"
        elif event.outcome is TurnOutcome.PROCESSED:
            problem = (
                "comes with a turn ended processed; a crash notice only comes with "
                "interrupted or error"
            )
        if problem is not None:
            raise EventRejected(f"TurnEnded seq {event.seq}: notice {notice.id!r} {problem}.")
        stamped = replace(notice, event_seq=event.seq)
        index = index.add(stamped.id)
        messages.append(stamped)
        counts[status_index(stamped.status)] += 1
    audit_changes = close_audit(state, event, event.outcome.value)
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


def orphan_recovered(state: SessionState, event: OrphanRecovered) -> SessionState:
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
    open_calls = turn.open_calls
    if event.calls_interrupted:  # logs from before the field leave the calls open
        _interrupt_calls(state, turn, messages, counts, Driver.ORPHAN_RECOVERED)
        open_calls = pmap()
    audit_changes = close_audit(state, event, "recovered")
    recovered = replace(
        turn,
        status=TurnStatus.RECOVERED,
        ended_at=event.at,
        ended_seq=event.seq,
        reason=event.reason,
        open_calls=open_calls,
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


def approval_requested(state: SessionState, event: ApprovalRequested) -> SessionState:
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


def approval_decided(state: SessionState, event: ApprovalDecided) -> SessionState:
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
