"""Sessions another worker owns, or nobody runs: input and approval decisions stored for
their owner, and whether a session only waits for a person (DESIGN §10).

``store_input`` and ``store_decision`` store, without running the session, what its
owner's machine would store (a ``MessageAdded``; a ``MetadataUpdated`` that asks for
the decision); the owner, woken by the append's ``NOTIFY``, answers or takes it.
``waits_for_a_person`` says when a session has nothing to run until a person decides:
workers leave it alone, and a front end's ``wait_idle`` returns. ``LeaseKeeper``
(``_leasing``) uses them.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from runtime import (
    ApprovalDecided,
    Draft,
    InputArrived,
    Message,
    MessageAdded,
    MetadataUpdated,
    SessionMachine,
    SessionState,
    TurnSettings,
    awaits_delivery,
    step,
)
from runtime._decisions import decision_metadata, stored_decision

from ._damage import head_to_run
from ._errors import NotAwaitingApproval

__all__ = [
    "decision_waits",
    "delivers_nothing",
    "stop_listening",
    "store_decision",
    "store_input",
    "waits_for_a_person",
]


def store_input(
    store: Any, session_id: str, draft: Draft, *, settings: TurnSettings, at: datetime
) -> Message:
    """Store an input for a session without running it: the ``MessageAdded`` its owner's
    machine would store (the owner, woken by the append's ``NOTIFY``, answers it).

    Raises:
        SeqConflict: the session changed meanwhile (try again).
    """
    head = head_to_run(store, session_id) if session_id in store else SessionState.empty(session_id)
    arrived = InputArrived(draft=draft, at=at, mono=time.monotonic())
    decision = step(SessionMachine.load(head), settings, arrived)
    added = [event for event in decision.events if isinstance(event, MessageAdded)]
    store.append(added)
    message: Message = added[0].message
    return message


def store_decision(
    store: Any,
    session_id: str,
    call_id: str,
    approved: bool,
    reason: str | None,
    by: str | None,
    *,
    at: datetime,
) -> None:
    """Store the decision on a tool call that waits for approval for the session's owner
    to take (a ``MetadataUpdated`` of the call's message), without running the session.

    Raises:
        NotAwaitingApproval: no call of that id waits, or a decision on it is stored
            already (taken once, by the owner).
        InvalidEvent: ``approved`` is not a bool, or ``reason`` or ``by`` not a str or None.
        SeqConflict: the session changed meanwhile (try again).
    """
    state = head_to_run(store, session_id) if session_id in store else None
    turn = state.active_turn if state is not None else None
    message_id = turn.awaiting_approval.get(call_id) if turn is not None else None
    if state is None or message_id is None:
        raise NotAwaitingApproval(
            f"No tool call {call_id!r} waits for approval in session {session_id!r}; it was "
            "decided already, or its turn ended (Runtime.pending_approvals lists those that "
            "wait)."
        )
    assert turn is not None
    # Checked as the owner will check it (InvalidEvent: a reason or by that is not a str).
    ApprovalDecided(session_id=session_id, seq=state.seq + 1, at=at, turn_id=turn.id,
                    call_id=call_id, approved=approved, reason=reason, by=by)  # fmt: skip
    stored = stored_decision(state.message(message_id))
    if stored is not None:
        verdict = "approved" if stored[0] else "denied"
        who = f" by {stored[2]!r}" if stored[2] is not None else ""
        raise NotAwaitingApproval(
            f"Tool call {call_id!r} of session {session_id!r} was {verdict}{who} already, "
            "from a process that does not run the session; the worker that runs it takes "
            "that decision (a call is decided once). Runtime.pending_approvals lists it "
            "until then."
        )
    metadata = decision_metadata(approved, reason, by)
    event = MetadataUpdated(
        session_id=session_id, seq=state.seq + 1, at=at, message_id=message_id, metadata=metadata
    )
    store.append([event])


def decision_waits(state: SessionState) -> bool:
    """True when a call of the active turn waits with a decision stored for the owner."""
    turn = state.active_turn
    return turn is not None and any(
        stored_decision(state.message(message_id)) is not None
        for message_id in turn.awaiting_approval.values()
    )


def stop_listening(
    stop: threading.Event,
    thread: threading.Thread,
    listener: Any,
    call: Callable[[Callable[[Any], Any]], Any],
) -> None:
    """Stop a thread that waits on the store's notifications (``listener``): set ``stop``,
    wake the listeners so it sees it, join it, then close the listener."""
    stop.set()
    if thread.is_alive():
        with contextlib.suppress(Exception):
            call(lambda s: s.wake_listeners())
        thread.join(60.0)
    if listener is not None:
        listener.close()


def delivers_nothing(message: Message) -> bool:
    """``waits_for_a_person``'s ``delivers`` for a runtime with no adapter (a front end, an
    adapter-less worker): no output is delivered here."""
    return False


def waits_for_a_person(state: SessionState, *, delivers: Callable[[Message], bool]) -> bool:
    """True when the session's only work is a turn waiting for tool calls to be approved:
    nothing runs until a person decides (or an input comes), so a worker has nothing to do
    for it (unless ``approval_timeout`` denies the calls in time). A decision stored for
    the owner by another process is work: the session is picked up to take it.

    Args:
        state: the session's head.
        delivers: whether output waiting for delivery would be delivered by whoever asks
            (``awaits_delivery`` for a worker with adapters; ``delivers_nothing`` for one
            without, or a front end): such output is work, other output is not (a worker
            that loaded the session for it would have nothing to do, and pass it on to the
            next at every poll).
    """
    turn = state.active_turn
    if turn is None or not turn.awaiting_approval or state.queued:
        return False
    if set(turn.open_calls) != set(turn.awaiting_approval):
        return False  # a call was running: the turn is an orphan to recover
    if decision_waits(state):
        return False
    asked = set(turn.awaiting_approval.values())
    return not any(
        m.active and awaits_delivery(m) and m.id not in asked and delivers(m) for m in state
    )
