"""``Timeline``: a session's chain of states, for time travel (DESIGN §5).

A timeline is a persistent sequence of ``(event, state)`` pairs over a base
state. ``append`` returns a new timeline; ``at(seq)`` reads any state in
O(log n); ``diff``, ``fork``, ``replay`` and ``verify`` work from there. Past
states are values: a state read at seq k is equal, and hashes equal, after any
number of later events.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, overload

import attrs

from ._article import type_named
from ._errors import ReplayMismatch, SeqOutOfRange
from ._events import Event
from ._fork import fork_parts
from ._reducer import apply
from ._replace import replacer
from ._repr import value_repr
from ._state import SessionState

if TYPE_CHECKING:
    from ._diff import StateDiff

__all__ = ["Entries", "Timeline", "replay", "verify"]


class Entries(Sequence[tuple[Event, SessionState]]):
    """A read-only view of a timeline's ``(event, state)`` pairs, in seq order."""

    __slots__ = ("_count", "_events", "_states")

    def __init__(self, events: list[Event], states: list[SessionState], count: int) -> None:
        self._events = events
        self._states = states
        self._count = count

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> tuple[Event, SessionState]: ...

    @overload
    def __getitem__(self, index: slice) -> list[tuple[Event, SessionState]]: ...

    def __getitem__(
        self, index: int | slice
    ) -> tuple[Event, SessionState] | list[tuple[Event, SessionState]]:
        if isinstance(index, slice):
            return list(self)[index]
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError(f"entry {index} out of range for {self._count} entries")
        return self._events[index], self._states[index]

    def __iter__(self) -> Iterator[tuple[Event, SessionState]]:
        events, states = self._events, self._states
        return ((events[i], states[i]) for i in range(self._count))


@attrs.frozen(kw_only=True, eq=False)
class Timeline:
    """Every state of one session from ``base`` on, with the event that made each.

    A timeline is a value: ``append`` returns a new timeline and the old one
    still holds exactly what it held. Versions made by appending share one
    private, append-only pair of lists, events and states (each version knows
    how many entries it sees), so ``at(seq)`` is one list index, O(1), and
    ``append`` is O(1).
    Appending to a version that is no longer the newest (branching from an
    old timeline object) copies its entries first, O(n); a fork of the
    *session* (``fork``) starts a new, small timeline instead.
    """

    __repr__ = value_repr

    base: SessionState
    """The state before the first entry (empty, or a snapshot)."""
    _events: list[Event] = attrs.field(factory=list, alias="events", repr=False)
    _states: list[SessionState] = attrs.field(factory=list, alias="states", repr=False)
    _count: int = attrs.field(default=0, alias="count")

    @classmethod
    def start(cls, session_id: str) -> Timeline:
        """An empty timeline of a new session."""
        return cls(base=SessionState.empty(session_id))

    @classmethod
    def from_state(cls, state: SessionState) -> Timeline:
        """A timeline that starts at ``state`` (a snapshot, say)."""
        return cls(base=state)

    @property
    def entries(self) -> Entries:
        """``(event, state after it)`` for each event, in seq order (a read-only view)."""
        return Entries(self._events, self._states, self._count)

    @property
    def session_id(self) -> str:
        """The session."""
        return self.base.session_id

    @property
    def head(self) -> SessionState:
        """The latest state."""
        return self._states[self._count - 1] if self._count else self.base

    @property
    def first_seq(self) -> int:
        """The lowest seq ``at`` accepts (the base's)."""
        return self.base.seq

    @property
    def last_seq(self) -> int:
        """The highest seq ``at`` accepts (the head's)."""
        return self.base.seq + self._count

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        # A timeline is a value, not a container: an empty one is still a timeline.
        return True

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Timeline):
            return NotImplemented
        if self._count != other._count or self.base != other.base:
            return False
        if self._states is other._states and self._events is other._events:
            return True
        n = self._count
        return self._events[:n] == other._events[:n] and self._states[:n] == other._states[:n]

    def __hash__(self) -> int:
        return hash((self.base, self._count, self.head))

    def _grown(self, events: list[Event], states: list[SessionState]) -> Timeline:
        shared_events, shared_states, count = self._events, self._states, self._count
        if events and len(shared_events) == count and len(shared_states) == count:
            shared_events.extend(events)
            shared_states.extend(states)
            # Another thread may have grown the same version at the same time;
            # then the entries at ``count`` are not ours and we branch off.
            if shared_events[count] is events[0] and shared_states[count] is states[0]:
                return Timeline(
                    base=self.base,
                    events=shared_events,
                    states=shared_states,
                    count=count + len(events),
                )
        return Timeline(
            base=self.base,
            events=shared_events[:count] + events,
            states=shared_states[:count] + states,
            count=count + len(events),
        )

    def append(self, event: Event) -> Timeline:
        """The timeline with ``event`` applied to the head.

        Raises:
            EventRejected: the event does not fit the head; this timeline is unchanged.
        """
        events, states, count = self._events, self._states, self._count
        # The head, read inline (``head``'s property call was a step's overhead).
        state = apply(states[count - 1] if count else self.base, event)
        if len(events) == count and len(states) == count:  # the newest version: share
            events.append(event)
            states.append(state)
            # As in _grown: another thread may have grown the same version meanwhile.
            if events[count] is event and states[count] is state:
                return _with_count(self, count + 1)
        return self._grown([event], [state])

    def extend(self, events: Iterable[Event]) -> Timeline:
        """The timeline with every event applied in order (all or nothing)."""
        applied: list[Event] = []
        states: list[SessionState] = []
        state = self.head
        for event in events:
            state = apply(state, event)
            applied.append(event)
            states.append(state)
        return self._grown(applied, states) if applied else self

    @classmethod
    def _assemble(
        cls, base: SessionState, events: list[Event], states: list[SessionState]
    ) -> Timeline:
        """A timeline from events the caller applied itself (trusted; used by stores)."""
        return cls(base=base, events=events, states=states, count=len(events))

    def _position(self, seq: int, *, what: str = "state") -> int:
        if isinstance(seq, bool) or not isinstance(seq, int):
            raise TypeError(f"seq must be an int (got {seq!r} that is {type_named(seq)}).")
        low = self.first_seq if what == "state" else self.first_seq + 1
        if not low <= seq <= self.last_seq:
            if self.last_seq < low:
                held = "no events" if what == "event" else f"only seq {low}"
            else:
                held = f"seq {low} to {self.last_seq}"
            raise SeqOutOfRange(
                f"Session {self.session_id!r} has no {what} at seq {seq}; this timeline holds "
                f"{held}."
            )
        return seq - self.first_seq

    def at(self, seq: int) -> SessionState:
        """The state right after the event with ``seq`` (``first_seq``: the base).

        Raises:
            SeqOutOfRange: the timeline does not hold that seq.
        """
        position = self._position(seq)
        return self.base if position == 0 else self._states[position - 1]

    def event(self, seq: int) -> Event:
        """The event with ``seq``.

        Raises:
            SeqOutOfRange: the timeline does not hold that seq.
        """
        return self._events[self._position(seq, what="event") - 1]

    def events(self) -> list[Event]:
        """Every event, in seq order."""
        return self._events[: self._count]

    def states(self) -> Iterator[SessionState]:
        """Every state from the base to the head."""
        yield self.base
        yield from self._states[: self._count]

    def diff(self, a: int, b: int) -> StateDiff:
        """What changed from the state at seq ``a`` to the state at seq ``b``."""
        from ._diff import diff  # its classes are defined on first use, not by every reader

        return diff(self.at(a), self.at(b))

    def fork(self, seq: int, new_session_id: str, *, at: datetime) -> Timeline:
        """A new session that starts from the state at ``seq``, in constant time.

        The new timeline's first event is a ``BranchImported`` that shares that
        state's messages and turns; the fork's state shares the source's vector
        and indexes. Inherited messages keep their provenance: the
        ``session_id`` and ``event_seq`` of the session and event that added
        them (``inherited``, ``added_seq``). Give the event to a store like any
        other event to keep the fork.

        Args:
            seq: the state to fork from.
            new_session_id: the new session's id (not this one's).
            at: wall-clock time of the fork (``apply`` reads no clock).
        """
        if new_session_id == self.session_id:
            raise ValueError(
                f"fork() needs a new session id; got {new_session_id!r}, the source's own id."
            )
        event, state = fork_parts(
            self.at(seq),
            source_session_id=self.session_id,
            source_seq=seq,
            new_session_id=new_session_id,
            at=at,
        )
        # The event checked the new session id. The state is the source's, made by apply()
        # (or a snapshot checked when read), with the fields an import sets: apply() of the
        # event gives an equal state (a property test pins it), which is what a replay of
        # the stored log does.
        start = SessionState.empty(new_session_id)
        if state is None:
            return Timeline(base=start).append(event)
        return Timeline._assemble(start, [event], [state])


_with_count = replacer(Timeline, "_count")
"""The same timeline seeing ``count`` entries of its shared lists (trusted)."""


def replay(events: Iterable[Event], *, base: SessionState | None = None) -> Timeline:
    """Rebuild a timeline from an event log.

    Args:
        events: the log, in seq order.
        base: the state the log starts from; by default the empty state of
            the first event's session.

    Raises:
        ValueError: no events and no base, so the session is unknown.
        EventRejected: an event does not apply (names its seq).
    """
    events = list(events)
    if base is None:
        if not events:
            raise ValueError(
                "replay() needs at least one event or a base state to know the session."
            )
        base = SessionState.empty(events[0].session_id)
    return Timeline.from_state(base).extend(events)


def verify(
    events: Iterable[Event],
    recorded: Iterable[SessionState],
    *,
    base: SessionState | None = None,
) -> Timeline:
    """Check that replaying ``events`` reproduces every ``recorded`` state.

    Args:
        events: the stored log, in seq order.
        recorded: states recorded earlier (snapshots), each checked at its seq.
        base: the state the log starts from (see ``replay``).

    Returns:
        The replayed timeline.

    Raises:
        ReplayMismatch: a recorded state differs from the replayed one; the
            message names the seq and the first differences.
        SeqOutOfRange: a recorded state's seq is not covered by the log.
    """
    timeline = replay(events, base=base)
    for state in sorted(recorded, key=lambda s: s.seq):
        replayed = timeline.at(state.seq)
        if replayed != state:
            from ._diff import diff

            delta = diff(state, replayed)
            details = [f"{len(delta.added)} added", f"{len(delta.removed)} removed"]
            details += [
                f"{c.message_id}.{c.field}: {c.before!r} -> {c.after!r}" for c in delta.changed[:5]
            ]
            if not delta:
                details.append("messages equal; indexes, turns or counters differ")
            raise ReplayMismatch(
                f"Replaying session {timeline.session_id!r} does not reproduce the recorded state "
                f"at seq {state.seq} (recorded -> replayed: {'; '.join(details)})."
            )
    return timeline
