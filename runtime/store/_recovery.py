"""Recovery after a crash: turns whose runner died give their inputs back (seed 000 §4.4).

A turn claims its inputs (they become ``processing``) and ends them. If the
process running it dies, the turn stays active in the log and its inputs stay
``processing`` for ever. ``recover_orphans`` finds such turns and appends an
``OrphanRecovered`` event for each, which puts their inputs back to
``pending_agent`` so the next turn claims them again (DESIGN §11, invariant
9: every accepted user message reaches a final status, across restarts).

Tool calls left without a result are not given an invented stored result:
the model's view synthesises an interrupted result for them (projections).

A turn that only waits for a person to approve its tool calls logs nothing
while it waits, however long the person takes: it is no orphan, and is left
alone (``waits_for_approval``); a runner that loads it waits on.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from .._errors import InvalidArgument
from .._events import OrphanRecovered
from ._protocol import SessionInfo, Store

__all__ = ["DEFAULT_ORPHAN_AGE", "recover_orphans", "waits_for_approval"]

DEFAULT_ORPHAN_AGE = timedelta(seconds=300)
"""How long an active turn must have been idle before recovery takes it back."""


def _seconds(delta: timedelta) -> str:
    return f"{delta.total_seconds():g} s"


def waits_for_approval(store: Store, info: SessionInfo) -> bool:
    """True when the session's active turn only waits for a person to approve tool calls
    (``SessionState.waits_for_approval``): no orphan, however long it has been idle.

    Loads the session's head (from its latest snapshot); False when no turn is active.
    """
    if info.active_turn_id is None:
        return False
    return store.load_state(info.session_id).waits_for_approval


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
    waits. All recoveries are stored in one batch.

    Args:
        store: the store to recover.
        now: the current wall-clock time (the store reads no clock).
        older_than: how long an active turn must have been idle (default 300 s).
        sessions: the summaries to look at (default: ``store.list_sessions()``, which
            raises ``CorruptRow`` if any summary is damaged); ``amber recover`` passes
            the sound ones so that one damaged session does not stop the others.
        by: who recovers, named in each event's reason (``amber recover``).

    Returns:
        The ``OrphanRecovered`` events appended (one per recovered session).

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
    for info in store.list_sessions() if sessions is None else sessions:
        if info.active_turn_id is None or info.updated_at > cutoff:
            continue
        if waits_for_approval(store, info):
            continue  # a person is slow, no runner died
        idle = now - info.updated_at
        recovered.append(
            OrphanRecovered(
                session_id=info.session_id,
                seq=info.seq + 1,
                at=now,
                turn_id=info.active_turn_id,
                reason=(
                    f"no activity for {_seconds(idle)} (more than {_seconds(older_than)}) when "
                    f"{by} ran; its runner is presumed dead"
                ),
                calls_interrupted=True,
            )
        )
    if recovered:
        store.append(recovered)
    return recovered
