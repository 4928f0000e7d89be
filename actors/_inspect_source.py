"""Where ``amber inspect`` reads states from: a timeline in memory, or a store read lazily.

``amber inspect`` on a session of 100,000 events used to replay the whole log
and describe every row before its first draw (tens of seconds). A
``StoredSession`` instead reads a short span of states around the seq asked
for (``load_span``: from the nearest snapshot, so it costs the distance to
that snapshot, not the session's length) and keeps the last few; the
timeline's rows are walked the same way, a window at a time, and its marks
(turn boundaries, errors) come from the events alone, read on a connection
of their own while the app is drawn.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Protocol, TypeVar

from runtime import Event, InvalidArgument, SessionState, Timeline, reports_error
from runtime.store import CorruptRow, SqlStore

__all__ = [
    "EVENTS_PER_READ",
    "SPAN",
    "SPANS_KEPT",
    "InspectSource",
    "StoredSession",
    "TimelineSource",
]

_Item = TypeVar("_Item")

SPAN = 250
"""How many states before and after the ones asked for a ``StoredSession`` reads with them
(half of ``amber inspect``'s window: the span read for the first draw holds its rows)."""

SPANS_KEPT = 4
"""How many spans a ``StoredSession`` keeps (the least recently used goes first)."""

EVENTS_PER_READ = 2_000
"""How many events ``StoredSession.events`` reads at a time (a reader can stop between)."""


class InspectSource(Protocol):
    """What ``InspectApp`` reads: any state, any event and the walk that makes its rows."""

    @property
    def session_id(self) -> str:
        """The session inspected."""
        ...

    @property
    def first_seq(self) -> int:
        """The first seq that can be shown (its state has no event)."""
        ...

    @property
    def last_seq(self) -> int:
        """The last seq that can be shown."""
        ...

    @property
    def streams(self) -> bool:
        """Whether ``entries`` is slow enough to read on a thread of its own."""
        ...

    def at(self, seq: int) -> SessionState:
        """The state at ``seq`` (``first_seq <= seq <= last_seq``)."""
        ...

    def event(self, seq: int) -> Event:
        """The event that made the state at ``seq`` (``first_seq < seq <= last_seq``)."""
        ...

    def entries(self, first: int, last: int) -> Iterator[tuple[Event, SessionState, SessionState]]:
        """``(event, state before, state after)`` for seqs ``first`` to ``last``
        (``first_seq < first``), in order."""
        ...

    def events(self) -> Iterator[Event]:
        """Every event after ``first_seq``, in order. A ``StoredSession`` reads them on a
        store of its own: this may run on another thread than the other methods."""
        ...

    def flags(self) -> Iterator[tuple[str, bool]]:
        """Each event's kind and whether it reports an error (``runtime.reports_error``),
        after ``first_seq``, in order: the timeline's marks (turn boundaries, errors). Like
        ``events``, it may run on another thread."""
        ...


class TimelineSource:
    """A timeline already in memory (a test's, or one a program built)."""

    streams = False

    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline
        """The timeline shown."""

    @property
    def session_id(self) -> str:
        """The session inspected."""
        return self.timeline.session_id

    @property
    def first_seq(self) -> int:
        """The timeline's first seq."""
        return self.timeline.first_seq

    @property
    def last_seq(self) -> int:
        """The timeline's last seq."""
        return self.timeline.last_seq

    def at(self, seq: int) -> SessionState:
        """The state at ``seq``."""
        return self.timeline.at(seq)

    def event(self, seq: int) -> Event:
        """The event at ``seq``."""
        return self.timeline.event(seq)

    def entries(self, first: int, last: int) -> Iterator[tuple[Event, SessionState, SessionState]]:
        """The events from ``first`` to ``last`` with the states before and after them."""
        line = self.timeline
        for seq in range(first, last + 1):
            yield line.event(seq), line.at(seq - 1), line.at(seq)

    def events(self) -> Iterator[Event]:
        """Every event of the timeline."""
        return iter(self.timeline.events())

    def flags(self) -> Iterator[tuple[str, bool]]:
        """Each event's kind and whether it reports an error."""
        return ((event.kind, reports_error(event)) for event in self.timeline.events())


class StoredSession:
    """A stored session read lazily: spans of ``SPAN`` states around the seqs asked for.

    ``open_store`` opens the store (a new connection each call): one is kept
    for ``at``, ``event`` and ``entries``, and ``events`` opens its own, so
    that it can run on a worker thread while the app shows states. The session's
    head is fixed when this opens (events appended later are not shown).
    Close it when done.
    """

    streams = True

    def __init__(self, open_store: Callable[[], SqlStore], session_id: str) -> None:
        self._open = open_store
        self._store = open_store()
        try:
            self._last = self._store.session(session_id).seq
        except BaseException:
            self._store.close()
            raise
        self._session_id = session_id
        self._spans: OrderedDict[int, Timeline] = OrderedDict()
        self.reads = 0
        """How many spans were read from the store (the tests count them)."""

    @property
    def session_id(self) -> str:
        """The session inspected."""
        return self._session_id

    @property
    def first_seq(self) -> int:
        """Always 0: the empty state before the first event."""
        return 0

    @property
    def last_seq(self) -> int:
        """The session's head when this opened."""
        return self._last

    def at(self, seq: int) -> SessionState:
        """The state at ``seq``, from a kept span or a new one read around it (a span that
        meets a damaged row after ``seq`` is read again up to ``seq`` only).

        Raises:
            CorruptRow: a row on the way from the nearest snapshot is damaged.
        """
        return self._span(seq, seq).at(seq)

    def event(self, seq: int) -> Event:
        """The event at ``seq``, from a kept span or a new one read around it."""
        return self._span(seq - 1, seq).event(seq)

    def _span(self, first: int, last: int) -> Timeline:
        """A kept span that holds the states from ``first`` to ``last``, or a new one:
        ``SPAN`` states either side of them."""
        line = self._kept(first, last)
        if line is not None:
            return line
        if not 0 <= first <= last <= self._last:
            raise InvalidArgument(
                f"Expected seqs from 0 to {self._last} (the session's head), got {first} to {last}."
            )
        start = max(first - SPAN - 1, 0)  # and the state before: the pane diffs against it
        try:
            return self._read(start, min(last + SPAN, self._last))
        except CorruptRow:  # damaged after ``last``, perhaps: read no further than ``last``
            return self._read(start, last)

    def _kept(self, first: int, last: int) -> Timeline | None:
        for key, line in self._spans.items():
            if line.first_seq <= first and last <= line.last_seq:
                self._spans.move_to_end(key)
                return line
        return None

    def _read(self, first: int, last: int) -> Timeline:
        line = self._store.load_span(self._session_id, first, last)
        self.reads += 1
        self._spans[first] = line
        self._spans.move_to_end(first)
        while len(self._spans) > SPANS_KEPT:
            self._spans.popitem(last=False)
        return line

    def entries(self, first: int, last: int) -> Iterator[tuple[Event, SessionState, SessionState]]:
        """The events from ``first`` to ``last`` with the states before and after them,
        from a kept span or one read for them (then kept: the app shows their states
        next).

        Raises:
            CorruptRow: after yielding the entries before a damaged row.
        """
        line = self._kept(first - 1, last)
        if line is None:
            try:
                line = self._read(first - 1, last)
            except CorruptRow:  # the entries before the damaged row, then its error
                yield from self._walked(first, last)
                return
        for seq in range(first, last + 1):
            yield line.event(seq), line.at(seq - 1), line.at(seq)

    def _walked(self, first: int, last: int) -> Iterator[tuple[Event, SessionState, SessionState]]:
        walked: list[tuple[Event, SessionState, SessionState]] = []
        try:
            for entry in self._store.walk(self._session_id, first, last):
                walked.append(entry)  # read whole: the walk holds the read transaction
        except CorruptRow:
            yield from walked
            raise
        yield from walked

    def events(self) -> Iterator[Event]:
        """Every event up to the head, read ``EVENTS_PER_READ`` at a time on a store
        opened for it (closed at the end, or when the iterator is closed: close it on
        the thread that iterates). A damaged row: the events before it, then its
        ``CorruptRow``."""
        return self._in_chunks(SqlStore.events_between)

    def flags(self) -> Iterator[tuple[str, bool]]:
        """Each event's kind and whether it reports an error, up to the head, read as
        ``events`` reads the events (``SqlStore.error_flags``: checked against the hash
        chain, only the rows that may report an error decoded). A damaged row: the flags
        before it, then its ``CorruptRow``."""
        return self._in_chunks(SqlStore.error_flags)

    def _in_chunks(self, read: Callable[[SqlStore, str, int, int], list[_Item]]) -> Iterator[_Item]:
        """What ``read(store, session, first, last)`` reads of seqs 1 to the head,
        ``EVENTS_PER_READ`` seqs at a time, on a store opened for it and closed at the end
        (or when the iterator is closed); at a damaged row, what it reads before that row,
        then the row's ``CorruptRow``."""
        if not self._last:
            return
        store = self._open()
        try:
            for first in range(1, self._last + 1, EVENTS_PER_READ):
                last = min(first + EVENTS_PER_READ - 1, self._last)
                try:
                    items = read(store, self._session_id, first, last)
                except CorruptRow as exc:
                    damaged = exc.seq if exc.seq is not None and first < exc.seq <= last else 0
                    if damaged:
                        yield from read(store, self._session_id, first, damaged - 1)
                    raise
                yield from items
        finally:
            store.close()

    def close(self) -> None:
        """Close the store kept for ``at``, ``event`` and ``entries``."""
        self._spans.clear()
        self._store.close()
