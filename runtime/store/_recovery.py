"""Recovery after a crash: turns whose runner died give their inputs back (seed 000 §4.4).

A turn claims its inputs (they become ``processing``) and ends them. If the
process running it dies, the turn stays active in the log and its inputs stay
``processing`` for ever. ``recover_orphans`` finds such turns and appends an
``OrphanRecovered`` event for each, which puts their inputs back to
``pending_agent`` so the next turn claims them again (DESIGN §11, invariant
9: every accepted user message reaches a final status, across restarts).

Tool calls left without a result are not given an invented stored result:
the model's view synthesises an interrupted result for them (projections).
Those the dead runner had handed to their tools (``runtime/_handed.py``) are
marked ``may_have_run`` first, so that result says they may have run.

A turn that only waits for a person to approve its tool calls logs nothing
while it waits, however long the person takes: it is no orphan, and is left
alone (``waits_for_approval``); a runner that loads it waits on.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from .._clean import MAY_HAVE_RUN
from .._errors import InvalidArgument
from .._events import Event, MetadataUpdated, OrphanRecovered
from .._handed import handed_calls, marked_messages, started_text
from ._protocol import SessionInfo, Store

__all__ = ["DEFAULT_ORPHAN_AGE", "recover_orphans", "waits_for_approval"]

DEFAULT_ORPHAN_AGE = timedelta(seconds=300)
"""How long an active turn must have been idle before recovery takes it back."""


def _seconds(delta: timedelta) -> str:
    return f"{delta.total_seconds():g} s"


def waits_for_approval(store: Store, info: SessionInfo) -> bool:
    """True when the session's active turn only waits for a person to approve tool calls
    (``SessionState.waits_for_approval``): no orphan, however long it has been idle.

    Read from the summary row (``info.waits_for_approval``), which holds the head's flag;
    a row without it (an older Amber's that no migration filled: ``info.cost`` is None)
    loads the session's head (from its latest snapshot) instead. False when no turn is
    active.
    """
    if info.active_turn_id is None:
        return False
    if _holds_flag(info):
        return info.waits_for_approval
    return store.load_state(info.session_id).waits_for_approval


def _holds_flag(info: SessionInfo) -> bool:
    """Whether the summary row holds the approval flag: the cost and the flag are written
    together (schema 4, PostgreSQL 2), and a row without them has no cost (None)."""
    return info.cost is not None


def recover_orphans(
    store: Store,
    *,
    now: datetime,
    older_than: timedelta = DEFAULT_ORPHAN_AGE,
    sessions: Iterable[SessionInfo] | None = None,
    by: str = "recover_orphans()",
) -> list[OrphanRecovered]:
    """Give back the inputs of every turn left active by a runner that died.

    Call it before runners start on the store (``amber recover`` does). A
    session's active turn is taken to be orphaned when the session's last
    event (the turn's start, or any output since) is older than
    ``older_than``: a turn that is still making progress in another process
    is left alone, and so is a turn that only waits for a person to approve
    its tool calls (``waits_for_approval``), which logs nothing while it
    waits. Each call of the turn that was handed to its tool and has no result
    is marked ``may_have_run`` (a ``MetadataUpdated`` before the recovery: it
    may have run, and the reason names it). All are stored in one batch.

    Args:
        store: the store to recover.
        now: the current wall-clock time (the store reads no clock).
        older_than: how long an active turn must have been idle (default 300 s).
        sessions: the summaries to look at (default: ``store.list_sessions()``, which
            raises ``CorruptRow`` if any summary is damaged); ``amber recover`` passes
            the sound ones so that one damaged session does not stop the others.
        by: who recovers, named in each event's reason (``amber recover``).

    Returns:
        The ``OrphanRecovered`` events appended (one per recovered session; the markings
        stored before each are not listed).

    Raises:
        ValueError: ``now`` is naive, or ``older_than`` is negative.
        SeqConflict: another writer changed a session meanwhile; nothing was stored.
    """
    if not isinstance(now, datetime) or now.utcoffset() is None:
        raise InvalidArgument(
            f"now must be a timezone-aware datetime (got {now!r}); use datetime.now(timezone.utc)."
        )
    if not isinstance(older_than, timedelta) or older_than < timedelta(0):
        raise InvalidArgument(
            f"older_than must be a non-negative timedelta (got {older_than!r}), like "
            "timedelta(seconds=300)."
        )
    try:
        cutoff = now - older_than
    except OverflowError:
        raise InvalidArgument(
            f"older_than {older_than!r} reaches before the year 1; pass a shorter age."
        ) from None
    recovered: list[OrphanRecovered] = []
    batch: list[Event] = []
    for info in store.list_sessions() if sessions is None else sessions:
        if info.active_turn_id is None or info.updated_at > cutoff:
            continue
        if _holds_flag(info) and info.waits_for_approval:
            continue  # a person is slow, no runner died (the summary row says so)
        state = store.load_state(info.session_id)
        if state.waits_for_approval:
            continue  # a person is slow, no runner died
        idle = now - info.updated_at
        reason = (
            f"no activity for {_seconds(idle)} (more than {_seconds(older_than)}) when "
            f"{by} ran; its runner is presumed dead"
        )
        # The calls handed to their tools may have run; one waiting for approval never did.
        handed = handed_calls(state)
        if handed:
            reason = f"{reason}; {started_text(state, handed)}"
        seq = info.seq
        for message_id in marked_messages(state, handed):
            seq += 1
            batch.append(
                MetadataUpdated(
                    session_id=info.session_id,
                    seq=seq,
                    at=now,
                    message_id=message_id,
                    metadata={MAY_HAVE_RUN: True},
                )
            )
        event = OrphanRecovered(
            session_id=info.session_id,
            seq=seq + 1,
            at=now,
            turn_id=info.active_turn_id,
            reason=reason,
            calls_interrupted=True,
        )
        batch.append(event)
        recovered.append(event)
    if batch:
        store.append(batch)
    return recovered
