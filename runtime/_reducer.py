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

from ._article import type_named
from ._errors import (
    EventRejected,
    ForeignEvent,
    SeqMismatch,
    TurnConflict,
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
    TurnStarted,
)
from ._message import Status
from ._reduce_audit import model_call_finished, model_call_started
from ._reduce_messages import message_added, metadata_updated, status_changed
from ._reduce_turns import (
    INTERRUPTED_MARK,
    approval_decided,
    approval_requested,
    orphan_recovered,
    turn_ended,
    turn_started,
)
from ._replace import replace
from ._state import IMPORT_SEQ, SessionState, added_seq, build_state, check_consistent

__all__ = ["INTERRUPTED_MARK", "apply"]


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
            f"got {event!r} that is {type_named(event)}."
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


def _branch_imported(state: SessionState, event: BranchImported) -> SessionState:
    if state.messages or state.turns:
        raise EventRejected(
            f"BranchImported seq {event.seq} must start an empty session, but session "
            f"{state.session_id!r} already has {len(state.messages)} messages; fork into a new "
            "session id."
        )
    seq, session_id = event.seq, state.session_id
    if seq == IMPORT_SEQ:
        # Messages of other sessions keep their provenance (the fork shares them as they are).
        messages = [
            m if m.event_seq == seq or m.session_id != session_id else replace(m, event_seq=seq)
            for m in event.messages
        ]
    else:  # an import after an empty one: rewritten to this session, as forks once were
        messages = [
            m
            if m.event_seq == seq and m.session_id == session_id
            else replace(m, session_id=session_id, event_seq=seq)
            for m in event.messages
        ]
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
    # Messages are appended in event order, so those added after to_seq are a suffix
    # (messages inherited by a fork come first, added by its BranchImported, seq 1).
    messages = state.messages
    lo, hi = 0, len(messages)
    while lo < hi:
        mid = (lo + hi) // 2
        if (added_seq(state, messages[mid]) or 0) <= event.to_seq:
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
    MessageAdded: message_added,
    StatusChanged: status_changed,
    MetadataUpdated: metadata_updated,
    TurnStarted: turn_started,
    TurnEnded: turn_ended,
    OrphanRecovered: orphan_recovered,
    BranchImported: _branch_imported,
    RolledBack: _rolled_back,
    ModelCallStarted: model_call_started,
    ModelCallFinished: model_call_finished,
    ApprovalRequested: approval_requested,
    ApprovalDecided: approval_decided,
}
_EVENT_NAMES = ", ".join(sorted(cls.__name__ for cls in _HANDLERS))
