"""``Timeline``: a session's chain of states, for time travel (DESIGN §5).

A timeline is a persistent sequence of ``(event, state)`` pairs over a base
state. ``append`` returns a new timeline; ``at(seq)`` reads any state in
O(log n); ``diff``, ``fork``, ``replay`` and ``verify`` work from there. Past
states are values: a state read at seq k is equal, and hashes equal, after any
number of later events.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime

import attrs
from pyrsistent.typing import PVector

from ._diff import StateDiff, diff
from ._errors import ReplayMismatch, SeqOutOfRange
from ._events import BranchImported, Event
from ._reducer import apply
from ._state import SessionState, new_vector

__all__ = ["Timeline", "replay", "verify"]


@attrs.frozen(kw_only=True)
class Timeline:
    """Every state of one session from ``base`` on, with the event that made each."""

    base: SessionState
    """The state before the first entry (empty, or a snapshot)."""
    entries: PVector[tuple[Event, SessionState]] = attrs.field(factory=new_vector)
    """``(event, state after it)`` for each event, in seq order."""

    @classmethod
    def start(cls, session_id: str) -> Timeline:
        """An empty timeline of a new session."""
        return cls(base=SessionState.empty(session_id))

    @classmethod
    def from_state(cls, state: SessionState) -> Timeline:
        """A timeline that starts at ``state`` (a snapshot, say)."""
        return cls(base=state)

    @property
    def session_id(self) -> str:
        """The session."""
        return self.base.session_id

    @property
    def head(self) -> SessionState:
        """The latest state."""
        return self.entries[-1][1] if self.entries else self.base

    @property
    def first_seq(self) -> int:
        """The lowest seq ``at`` accepts (the base's)."""
        return self.base.seq

    @property
    def last_seq(self) -> int:
        """The highest seq ``at`` accepts (the head's)."""
        return self.base.seq + len(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def append(self, event: Event) -> Timeline:
        """The timeline with ``event`` applied to the head.

        Raises:
            EventRejected: the event does not fit the head; this timeline is unchanged.
        """
        state = apply(self.head, event)
        return attrs.evolve(self, entries=self.entries.append((event, state)))

    def extend(self, events: Iterable[Event]) -> Timeline:
        """The timeline with every event applied in order."""
        entries = self.entries.evolver()
        state = self.head
        for event in events:
            state = apply(state, event)
            entries.append((event, state))
        return attrs.evolve(self, entries=entries.persistent())

    def _position(self, seq: int, *, what: str = "state") -> int:
        if isinstance(seq, bool) or not isinstance(seq, int):
            raise TypeError(f"seq must be an int (got {seq!r} that is a {type(seq).__name__!r}).")
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
        return self.base if position == 0 else self.entries[position - 1][1]

    def event(self, seq: int) -> Event:
        """The event with ``seq``.

        Raises:
            SeqOutOfRange: the timeline does not hold that seq.
        """
        return self.entries[self._position(seq, what="event") - 1][0]

    def events(self) -> list[Event]:
        """Every event, in seq order."""
        return [event for event, _ in self.entries]

    def states(self) -> Iterator[SessionState]:
        """Every state from the base to the head."""
        yield self.base
        for _, state in self.entries:
            yield state

    def diff(self, a: int, b: int) -> StateDiff:
        """What changed from the state at seq ``a`` to the state at seq ``b``."""
        return diff(self.at(a), self.at(b))

    def fork(self, seq: int, new_session_id: str, *, at: datetime) -> Timeline:
        """A new session that starts from the state at ``seq``.

        The new timeline's first event is a ``BranchImported`` carrying that
        state's messages and turns, rewritten to ``new_session_id``. Give it to
        a store like any other event to keep the fork.

        Args:
            seq: the state to fork from.
            new_session_id: the new session's id (not this one's).
            at: wall-clock time of the fork (``apply`` reads no clock).
        """
        if new_session_id == self.session_id:
            raise ValueError(
                f"fork() needs a new session id; got {new_session_id!r}, the source's own id."
            )
        source = self.at(seq)
        event = BranchImported(
            session_id=new_session_id,
            seq=1,
            at=at,
            source_session_id=self.session_id,
            source_seq=seq,
            messages=[attrs.evolve(m, session_id=new_session_id) for m in source.messages],
            turns=source.turn_list(),
        )
        return Timeline.start(new_session_id).append(event)


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
