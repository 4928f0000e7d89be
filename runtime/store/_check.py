"""A store's full consistency check and the rebuild of its derived rows, for every store.

A session's events are the truth; everything else a store keeps about it is
derived from them: its summary row (what ``list_sessions`` shows) and its
snapshot (what ``load_state`` starts from). ``Store.check()`` replays every
session's whole log, checking each row and the hash chain, and compares the
derived rows with the replay; it reports every problem it finds, with the
session, the seq and what is wrong, instead of stopping at the first
(``amber check``). ``Store.rebuild()`` rewrites the derived rows from the
events (``amber recover --rebuild``); a session whose events are damaged is
left as it is and reported.

The comparisons here work on values (``SessionInfo``, states), so every store
implementation shares them; finding the rows is the store's own business.
"""

from __future__ import annotations

from datetime import datetime

import attrs
from immutables import Map

from .._errors import CorruptRow
from .._repr import value_repr
from .._state import SessionState
from .._timeline import Timeline
from ._protocol import SessionInfo

__all__ = ["CheckReport", "Problem", "RebuildReport", "snapshot_problem", "summary_problem"]


@attrs.frozen(kw_only=True)
class Problem:
    """One thing a store holds that is wrong."""

    __repr__ = value_repr

    session_id: str | None
    """The session it concerns (None: the store as a whole)."""
    seq: int | None
    """The seq of the row that is wrong, if one is."""
    what: str
    """What is wrong, for people."""
    derived: bool
    """True when only derived rows are wrong (a summary, a snapshot, a guard):
    ``rebuild()`` mends it. False when events are damaged: restore a backup."""

    def __str__(self) -> str:
        where = "store" if self.session_id is None else f"session {self.session_id!r}"
        if self.seq is not None:
            where += f" seq {self.seq}"
        return f"{where}: {self.what}"

    @classmethod
    def of(cls, error: CorruptRow, *, derived: bool) -> Problem:
        """The problem a ``CorruptRow`` reports."""
        return cls(session_id=error.session_id, seq=error.seq, what=str(error), derived=derived)


@attrs.frozen(kw_only=True)
class CheckReport:
    """What ``Store.check()`` found."""

    __repr__ = value_repr

    sessions: int
    """How many sessions were checked (every one with events)."""
    events: int
    """How many events were read, decoded, chained and replayed (of a damaged log, the
    ones before the damaged row)."""
    problems: tuple[Problem, ...]
    """Everything found wrong, in session order."""
    heads: Map[str, str] = attrs.field(factory=Map)
    """Each sound session's chain head (the hash of its last event): record them
    elsewhere to tell later that a log was not cut short or rewritten."""

    @property
    def ok(self) -> bool:
        """True when nothing is wrong."""
        return not self.problems

    @property
    def rebuildable(self) -> bool:
        """True when every problem is in derived rows (``rebuild()`` mends them all)."""
        return all(problem.derived for problem in self.problems)


@attrs.frozen(kw_only=True)
class RebuildReport:
    """What ``Store.rebuild()`` did."""

    __repr__ = value_repr

    rebuilt: tuple[str, ...]
    """Sessions whose summary row and snapshot were written again from their events."""
    removed: tuple[str, ...]
    """Sessions with derived rows but no events, whose derived rows were dropped."""
    skipped: tuple[Problem, ...]
    """Sessions left as they were because their events are damaged."""


def summary_problem(timeline: Timeline, info: SessionInfo | CorruptRow | None) -> Problem | None:
    """What is wrong with a session's summary, given the replay of its whole log."""
    head = timeline.head
    session_id = head.session_id
    if info is None:
        return Problem(
            session_id=session_id,
            seq=head.seq,
            what="its events are stored but its summary row is missing, so listings leave it out",
            derived=True,
        )
    if isinstance(info, CorruptRow):
        return Problem.of(info, derived=True)
    first: datetime = timeline.event(timeline.first_seq + 1).at
    expected = SessionInfo.of(head, created_at=first, snapshot_seq=info.snapshot_seq)
    if info == expected:
        return None
    fields = [
        f"{field.name} {getattr(info, field.name)!r} (replay: {getattr(expected, field.name)!r})"
        for field in attrs.fields(SessionInfo)
        if getattr(info, field.name) != getattr(expected, field.name)
    ]
    return Problem(
        session_id=session_id,
        seq=head.seq,
        what=f"its summary row disagrees with the replayed log: {'; '.join(fields)}",
        derived=True,
    )


def snapshot_problem(
    timeline: Timeline, snapshot: SessionState | CorruptRow | None, *, kind: str = "snapshot"
) -> Problem | None:
    """What is wrong with a session's snapshot (or ``kind``: a checkpoint, an older snapshot
    kept), given the replay of its whole log."""
    if snapshot is None or (isinstance(snapshot, SessionState) and snapshot.seq == 0):
        return None
    if isinstance(snapshot, CorruptRow):
        return Problem.of(snapshot, derived=True)
    session_id = timeline.session_id
    if snapshot.seq > timeline.last_seq:
        return Problem(
            session_id=session_id,
            seq=snapshot.seq,
            what=f"its {kind} is at seq {snapshot.seq}, past the log's end ({timeline.last_seq})",
            derived=True,
        )
    replayed = timeline.at(snapshot.seq)
    if replayed == snapshot:
        return None
    from .._diff import diff  # defined on first use: reading a store does not diff states

    delta = diff(snapshot, replayed)
    details = [f"{len(delta.added)} added", f"{len(delta.removed)} removed"]
    details += [f"{c.message_id}.{c.field}" for c in delta.changed[:5]]
    return Problem(
        session_id=session_id,
        seq=snapshot.seq,
        what=f"its {kind} differs from the replayed state at seq {snapshot.seq} "
        f"({', '.join(details)})",
        derived=True,
    )
