"""What every event store offers: the ``Store`` protocol and ``SessionInfo``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self, runtime_checkable

import attrs
from immutables import Map

from .._events import Event
from .._message import Status
from .._repr import value_repr
from .._session_cost import SessionCost, session_cost
from .._state import SessionState
from .._timeline import Timeline

if TYPE_CHECKING:
    from ._check import CheckReport, RebuildReport

__all__ = ["SessionInfo", "Store"]

_NO_CALLS = SessionCost(usd=0.0, priced=0, unpriced=0)


@attrs.frozen(kw_only=True)
class SessionInfo:
    """A stored session at a glance, without loading its state."""

    __repr__ = value_repr

    session_id: str
    """The session."""
    seq: int
    """Seq of its last event."""
    created_at: datetime
    """``at`` of its first event."""
    updated_at: datetime
    """``at`` of its last event (last activity)."""
    messages: int
    """How many messages it holds (rolled-back ones included)."""
    counts: Map[Status, int]
    """Message counts by status; statuses no message has are left out."""
    active_turn_id: str | None
    """The turn running at its last event, if any."""
    active_turn_started_at: datetime | None
    """When that turn started."""
    snapshot_seq: int
    """Seq of its latest snapshot (0: none yet)."""
    cost: SessionCost | None = _NO_CALLS
    """What its model calls cost, as recorded in their audit rows (``session_cost`` of its
    head's; the default: no call); None when the summary does not hold it (a row an older
    Amber wrote that could not be filled: ``amber recover --rebuild`` writes it)."""
    waits_for_approval: bool = False
    """True when its active turn only waits for a person to approve tool calls
    (``SessionState.waits_for_approval`` of its head); False as well when the summary does
    not hold it (``cost`` is None then): ``waits_for_approval(store, info)`` loads the head
    for such a row."""

    @property
    def needs_runner(self) -> bool:
        """True when a runtime that starts should load the session: a turn is active (its
        runner may be dead), input waits, or output may wait for delivery (``pending`` or
        ``responded`` messages; a session whose only such messages are nudges, which stay
        ``responded``, is loaded and passivated again for nothing)."""
        counts = self.counts
        return self.active_turn_id is not None or any(
            counts.get(status)
            for status in (Status.PENDING_AGENT, Status.PENDING, Status.RESPONDED)
        )

    @classmethod
    def of(cls, state: SessionState, *, created_at: datetime, snapshot_seq: int) -> SessionInfo:
        """The summary of a session whose head is ``state``."""
        if state.updated_at is None:
            raise ValueError(
                f"SessionInfo.of() needs a state with events; session {state.session_id!r} "
                "is at seq 0."
            )
        turn = state.active_turn
        return cls(
            session_id=state.session_id,
            seq=state.seq,
            created_at=created_at,
            updated_at=state.updated_at,
            messages=len(state.messages),
            counts=Map(state.status_counts()),
            active_turn_id=None if turn is None else turn.id,
            active_turn_started_at=None if turn is None else turn.started_at,
            snapshot_seq=snapshot_seq,
            cost=session_cost(state.audit.values()),
            waits_for_approval=state.waits_for_approval,
        )


@runtime_checkable
class Store(Protocol):
    """An append-only event log per session, with snapshots for fast loads.

    Every implementation keeps these promises:

    - ``append`` stores a batch all or nothing. Each event must carry its
      session's next seq and must apply to the session's head (it is applied
      before anything is stored), so an illegal event is never stored.
    - Once ``append`` returns, the events are durable (for a durable store)
      and the caller may apply and announce them.
    - Reads never skip a row: a row that does not decode or does not fit is
      a ``CorruptRow`` error naming the session and the seq.
    - Each event carries a hash chained to the one before it, computed over
      its canonical JSON (``_chain``); reads check it, so an edited, dropped
      or reordered row is named, not replayed.
    """

    def append(self, events: Iterable[Event]) -> dict[str, SessionState]:
        """Store ``events`` (one or many sessions) in one transaction.

        Returns:
            The new head of every session the batch touched.

        Raises:
            SeqConflict: an event's seq is taken or skips one.
            EventRejected: an event does not apply to its session's head.
            StoreError: the store cannot write; nothing was stored.
        """
        ...

    def load_state(self, session_id: str) -> SessionState:
        """The session's latest state (from its snapshot and the events after it)."""
        ...

    def load_timeline(self, session_id: str, *, from_snapshot: bool = False) -> Timeline:
        """Every state of the session, replayed from its first event.

        With ``from_snapshot=True`` the timeline starts at the latest snapshot
        and holds only the states after it (``first_seq`` says where).
        """
        ...

    def events(self, session_id: str, *, after: int = 0) -> list[Event]:
        """The session's events with seq above ``after``, in seq order."""
        ...

    def session(self, session_id: str) -> SessionInfo:
        """The session's summary."""
        ...

    def list_sessions(self) -> list[SessionInfo]:
        """Every stored session, most recently active first."""
        ...

    def snapshot(self, session_id: str, *, rebuild: bool = False) -> int:
        """Snapshot the session's head now; returns its seq.

        ``rebuild=True`` replays the whole log instead of reading the current
        snapshot (the way out of a corrupt one).
        """
        ...

    def verify(self, session_id: str) -> Timeline:
        """Replay the whole log and check the snapshot reproduces the same state.

        Raises:
            ReplayMismatch: the snapshot differs from the replayed state at its seq.
        """
        ...

    def check(self) -> CheckReport:
        """Check every session: each row, the hash chain, and the derived rows against
        a replay of the log. Reports problems (session, seq, what), never raises them."""
        ...

    def rebuild(self, session_id: str | None = None) -> RebuildReport:
        """Write the derived rows (summaries, snapshots) again from the events."""
        ...

    def export_session(self, session_id: str) -> dict[str, Any]:
        """The session as JSON-ready data (its whole event log)."""
        ...

    def import_session(self, data: Mapping[str, Any] | str | bytes) -> SessionState:
        """Store a session exported by ``export_session``; returns its head."""
        ...

    def __contains__(self, session_id: object) -> bool: ...

    def close(self) -> None:
        """Release the store; later calls raise ``StoreClosed``."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...
