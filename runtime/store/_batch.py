"""Checking a batch of events against the heads of their sessions, before storing it."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .._article import type_named
from .._errors import InvalidArgument, InvalidEvent, SeqConflict
from .._events import BranchImported, Event
from .._reducer import apply
from .._state import SessionState
from .._storable import MAX_EVENT_BYTES, session_id_problem
from ._chain import link
from ._compact import encode_body

__all__ = ["check_batch", "check_session_id", "encode_batch", "sessions_of"]


def check_session_id(session_id: object) -> str:
    """``session_id`` if a session can have it; ``InvalidArgument`` saying why not otherwise."""
    if not isinstance(session_id, str) or not session_id:
        raise InvalidArgument(
            f"session_id must be a non-empty str (got {session_id!r} that is "
            f"{type_named(session_id)})."
        )
    problem = session_id_problem(session_id)
    if problem is not None:
        raise InvalidArgument(
            f"session_id {session_id!r} is not a session id: {problem}. No session can have it."
        )
    return session_id


def encode_batch(
    batch: list[Event], chains: dict[str, str]
) -> tuple[list[tuple[str, int, str, str, str]], dict[str, str]]:
    """The rows of a checked batch: ``(session_id, seq, kind, compact JSON body, hash)``.

    Args:
        batch: the events, each session's in seq order (as ``check_batch`` returns them).
        chains: each session's chain head before the batch (its genesis if it is new).

    Returns:
        The rows, and each session's chain head after the batch.

    Raises:
        InvalidEvent: an event's JSON is larger than ``MAX_EVENT_BYTES``; nothing is stored.
    """
    heads = dict(chains)
    rows: list[tuple[str, int, str, str, str]] = []
    for event in batch:
        body = encode_body(event)
        if len(body) > MAX_EVENT_BYTES:
            raise InvalidEvent(
                f"{type(event).__name__} seq {event.seq} of session {event.session_id!r} encodes "
                f"to {len(body)} bytes of JSON, more than a store keeps ({MAX_EVENT_BYTES}); keep "
                "large data in an artifact store and refer to it. Nothing in this batch was stored."
            )
        heads[event.session_id] = hashed = link(heads[event.session_id], body)
        rows.append((event.session_id, event.seq, event.kind, body.decode(), hashed))
    return rows, heads


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
        InvalidArgument: an item is not an Amber event.
        SeqConflict: an event's seq is taken already or skips one (a fork's
            ``BranchImported`` at seq 1: its session id is taken).
        EventRejected: an event does not apply to its session's head.
    """
    batch = list(events)
    heads: dict[str, SessionState] = {}
    for position, event in enumerate(batch):
        if not isinstance(event, Event) or type(event) is Event:
            raise InvalidArgument(
                f"append() takes Amber events; item {position} is {event!r} that is "
                f"{type_named(event)}. Nothing was stored."
            )
        state = heads.get(event.session_id)
        if state is None:
            state = head(event.session_id)
        expected = state.seq + 1
        if event.seq != expected:
            name = type(event).__name__
            if event.seq == 1 and isinstance(event, BranchImported):
                # A fork starts a new session: loading again and retrying would fail again.
                why = (
                    f"the store already holds a session {event.session_id!r} (its head is at "
                    f"seq {state.seq}), and a fork starts a new session; pick another id for "
                    "the fork (one that is not in the store)."
                )
            elif event.seq < expected:
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


def sessions_of(batch: list[Event]) -> list[str]:
    """The sessions a batch touches (items that are not events are refused later)."""
    return sorted({event.session_id for event in batch if isinstance(event, Event)})
