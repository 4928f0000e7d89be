"""Checking a batch of events against the heads of their sessions, before storing it."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .._errors import SeqConflict
from .._events import Event
from .._reducer import apply
from .._state import SessionState

__all__ = ["check_batch", "check_session_id"]


def check_session_id(session_id: object) -> str:
    """``session_id`` if it is a non-empty str; a clear ``TypeError`` otherwise."""
    if not isinstance(session_id, str) or not session_id:
        raise TypeError(
            f"session_id must be a non-empty str (got {session_id!r} that is a "
            f"{type(session_id).__name__!r})."
        )
    return session_id


def check_batch(
    events: Iterable[Event], head: Callable[[str], SessionState]
) -> tuple[list[Event], dict[str, SessionState]]:
    """Apply ``events`` in order to their sessions' heads, storing nothing.

    Args:
        events: the batch; it may mix sessions, each in its own seq order.
        head: the stored head of a session (the empty state if it has none).

    Returns:
        The batch as a list, and the new head of every session it touches.

    Raises:
        TypeError: an item is not an Amber event.
        SeqConflict: an event's seq is taken already or skips one.
        EventRejected: an event does not apply to its session's head.
    """
    batch = list(events)
    heads: dict[str, SessionState] = {}
    for position, event in enumerate(batch):
        if not isinstance(event, Event) or type(event) is Event:
            raise TypeError(
                f"append() takes Amber events; item {position} is {event!r} that is a "
                f"{type(event).__name__!r}. Nothing was stored."
            )
        state = heads.get(event.session_id)
        if state is None:
            state = head(event.session_id)
        expected = state.seq + 1
        if event.seq != expected:
            name = type(event).__name__
            if event.seq < expected:
                why = (
                    f"the store already holds seq {event.seq} (the head is at seq {state.seq}); "
                    "another writer got there first: load the session again and rebuild the event."
                )
            else:
                why = (
                    f"the head is at seq {state.seq}, so the next event must have seq {expected}; "
                    "a gap would lose events."
                )
            raise SeqConflict(
                f"Cannot append {name} seq {event.seq} to session {event.session_id!r}: {why} "
                "Nothing in this batch was stored."
            )
        heads[event.session_id] = apply(state, event)
    return batch, heads
