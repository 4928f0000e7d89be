"""``TimelineChecker``: the invariants, checked incrementally as events arrive."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .._errors import AmberError
from .._events import Event
from .._state import SessionState
from .._timeline import Timeline
from ._audit_checks import check_audit
from ._invariants import STATE_CHECKS, PastStates, check_lifecycle, check_phased_order
from ._violation import fail

__all__ = ["TimelineChecker"]


class TimelineChecker:
    """Checks a session as its events arrive, each state once.

    It keeps its own timeline, replayed from the events it is fed, so every
    check is also a replay check (invariant 5): feed it a store's log and
    compare the states the runtime holds with ``compare``. Per new state it
    runs invariants 1 (against the state before), 2, 3 and 4 and any
    ``extra_checks``; invariant 8 (and 7, when ``views`` is set) runs on the
    last state of each batch, since projections cost a walk of the history.
    It remembers states in a ``PastStates`` (invariant 6).

    Args:
        session_id: the session checked.
        extra_checks: more ``(state) -> None`` checks for every new state.
        views: a ``(state) -> None`` check of the provider views (e.g.
            ``functools.partial(check_provider_views, system=...)``); None skips 7.
        every_state: run the projection checks on every state, not only on
            the last of each batch.
        remember: keep the last state of each batch in ``past`` (it costs a
            hash of the state); off for a caller that never checks them.
    """

    def __init__(
        self,
        session_id: str,
        *,
        extra_checks: Iterable[Callable[[SessionState], None]] = (),
        views: Callable[[SessionState], None] | None = None,
        every_state: bool = False,
        remember: bool = True,
    ) -> None:
        self.session_id = session_id
        self.timeline = Timeline.start(session_id)
        """The timeline replayed from every event fed so far."""
        self.past = PastStates()
        """States remembered for invariant 6 (none with ``remember=False``)."""
        self._checks = (*STATE_CHECKS, *extra_checks)
        self._views = views
        self._every_state = every_state
        self._remember = remember
        self._ordered: SessionState | None = None  # the last state invariant 8 held for
        self.compared = -1
        """The seq of the last state ``compare`` found equal to the replay."""

    @property
    def seq(self) -> int:
        """The seq of the last event checked."""
        return self.timeline.last_seq

    def feed(self, events: Iterable[Event]) -> SessionState:
        """Apply and check ``events`` (the next ones of the session's log); returns the head.

        Raises:
            InvariantViolation: an event does not follow (seq), does not
                apply, or makes a state that breaks an invariant.
        """
        timeline = self.timeline
        previous = timeline.head
        fed = False
        for event in events:
            if event.seq != previous.seq + 1:
                raise fail(
                    5, "gapless seq", event.seq, f"expected seq {previous.seq + 1}",
                    session_id=self.session_id,
                )  # fmt: skip
            try:
                timeline = timeline.append(event)
            except AmberError as exc:
                raise fail(
                    5, "the log replays", event.seq,
                    f"the stored {type(event).__name__} does not apply: {exc}",
                    session_id=self.session_id,
                ) from exc  # fmt: skip
            state = timeline.head
            self.timeline = timeline
            for check in self._checks:
                check(state)
            if state.audit or previous.audit:
                check_audit(state, previous)
            check_lifecycle(previous, state)
            if self._every_state:
                self._projections(state)
            previous = state
            fed = True
        if fed:
            if not self._every_state:
                self._projections(previous)
            if self._remember:
                self.past.remember(previous)
        return previous

    def check(self, timeline: Timeline) -> None:
        """Feed the events of ``timeline`` not seen yet, then compare its states with the replay.

        A timeline that starts after the events checked so far (loaded from a
        snapshot) is compared where the two overlap.
        """
        if timeline.session_id != self.session_id:
            raise ValueError(
                f"This checker checks session {self.session_id!r}, not {timeline.session_id!r}."
            )
        if timeline.last_seq > self.seq:
            if timeline.first_seq > self.seq:
                raise ValueError(
                    f"The timeline starts at seq {timeline.first_seq}, after the {self.seq} "
                    "events checked so far; feed the events in between first."
                )
            self.feed(timeline.event(seq) for seq in range(self.seq + 1, timeline.last_seq + 1))
        for seq in range(max(timeline.first_seq, 1), timeline.last_seq + 1):
            self.compare(timeline.at(seq))

    def compare(self, state: SessionState, *, who: str = "the timeline") -> None:
        """Invariant 5: ``state`` equals the replayed state at its seq.

        Args:
            state: a state someone holds (a runtime's head, a store's load).
            who: who holds it, for the message.
        """
        if state.seq > self.seq or state.seq < self.timeline.first_seq:
            raise ValueError(
                f"compare() needs a state the checker has replayed (seq {self.timeline.first_seq}"
                f" to {self.seq}); got seq {state.seq}."
            )
        if state.seq == self.compared:
            return
        replayed = self.timeline.at(state.seq)
        if replayed is state or replayed == state:
            self.compared = state.seq
            return
        detail = f"{who}'s state differs from the replay of the log"
        for message in state.messages:
            other = replayed.get(message.id)
            if other != message:
                detail += f"; message {message.id!r} is {message!r} but replays as {other!r}"
                break
        else:
            if len(replayed.messages) != len(state.messages):
                detail += f" ({len(state.messages)} vs {len(replayed.messages)} messages)"
        raise fail(
            5, "replay reproduces every state", state.seq, detail, session_id=self.session_id
        )

    def _projections(self, state: SessionState) -> None:
        last = self._ordered
        # ``session_history`` reads these fields only: the same values, the same history.
        if not (
            last is not None
            and last.messages is state.messages
            and last.index is state.index
            and last.turns is state.turns
            and last.active_turn is state.active_turn
            and last.turn_order is state.turn_order
        ):
            check_phased_order(state)
            self._ordered = state
        if self._views is not None:
            self._views(state)
