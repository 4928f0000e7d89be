"""Recovery after a crash: turns whose runner died give their inputs back (seed 000 §4.4).

A turn claims its inputs (they become ``processing``) and ends them. If the
process running it dies, the turn stays active in the log and its inputs stay
``processing`` for ever. ``recover_orphans`` finds such turns and appends an
``OrphanRecovered`` event for each, which puts their inputs back to
``pending_agent`` so the next turn claims them again (DESIGN §11, invariant
9: every accepted user message reaches a final status, across restarts).

Tool calls left without a result are not given an invented stored result:
the model's view synthesises an interrupted result for them (projections).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from .._errors import InvalidArgument
from .._events import OrphanRecovered
from ._protocol import SessionInfo, Store

__all__ = ["DEFAULT_ORPHAN_AGE", "recover_orphans"]

DEFAULT_ORPHAN_AGE = timedelta(seconds=300)
"""How long an active turn must have been idle before recovery takes it back."""


def _seconds(delta: timedelta) -> str:
    return f"{delta.total_seconds():g} s"


def recover_orphans(
    store: Store,
    *,
    now: datetime,
    older_than: timedelta = DEFAULT_ORPHAN_AGE,
    sessions: Iterable[SessionInfo] | None = None,
) -> list[OrphanRecovered]:
    """Give back the inputs of every turn left active by a runner that died.

    Call it when a runtime starts, before it runs turns. A session's active
    turn is taken to be orphaned when the session's last event (the turn's
    start, or any output since) is older than ``older_than``: a turn that
    is still making progress in another process is left alone. All
    recoveries are stored in one batch.

    Args:
        store: the store to recover.
        now: the current wall-clock time (the store reads no clock).
        older_than: how long an active turn must have been idle (default 300 s).
        sessions: the summaries to look at (default: ``store.list_sessions()``, which
            raises ``CorruptRow`` if any summary is damaged); ``amber recover`` passes
            the sound ones so that one damaged session does not stop the others.

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
        idle = now - info.updated_at
        recovered.append(
            OrphanRecovered(
                session_id=info.session_id,
                seq=info.seq + 1,
                at=now,
                turn_id=info.active_turn_id,
                reason=(
                    f"no activity for {_seconds(idle)} (more than {_seconds(older_than)}) when "
                    "the runtime started; its runner is presumed dead"
                ),
                calls_interrupted=True,
            )
        )
    if recovered:
        store.append(recovered)
    return recovered
