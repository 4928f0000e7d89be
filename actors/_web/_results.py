"""What a ``Source`` answers: the values its reads and its fork return.

``Loaded`` (a session's timeline, or a span of it, as a request sees it),
``SessionRow`` and ``Damaged`` (the sessions list), ``Forked`` (what a fork
stored), ``MessageHistory`` (one message's page of a long session) and
``KindSeqs`` (the kind filter's seqs and counts). Frozen values: the pages
read them, nothing changes them.
"""

from __future__ import annotations

import attrs

from runtime import BranchImported, CorruptRow, SessionState, Timeline
from runtime.store import SessionInfo

from ._stats import SessionTotals

__all__ = ["Damaged", "Forked", "KindSeqs", "Loaded", "MessageHistory", "SessionRow"]


@attrs.frozen(kw_only=True)
class Loaded:
    """One session's timeline as a request sees it."""

    timeline: Timeline
    """The states the viewer has: every one, or those from the latest snapshot on."""
    origin: BranchImported | None
    """The fork's first event, if the session is a fork and the first event is loaded."""
    loading: bool
    """True while the whole log is still being replayed (``timeline`` is partial)."""
    damage: CorruptRow | None = None
    """The damaged row that ends ``timeline`` before the stored head, if one does (asked
    for with ``sound_only``): the states before it are shown, none after."""
    head_seq: int | None = None
    """The session's last seq when ``timeline`` is a span (``Source.span``) that may end
    before it; None when ``timeline`` reaches the head."""

    @property
    def complete(self) -> bool:
        """True when the timeline holds every state from seq 0 to the head."""
        return self.timeline.first_seq == 0 and self.head_seq is None

    @property
    def last_seq(self) -> int:
        """The session's last seq (as far as it can be read, for a damaged log)."""
        return self.timeline.last_seq if self.head_seq is None else self.head_seq


@attrs.frozen(kw_only=True)
class SessionRow:
    """A session in the sessions list."""

    info: SessionInfo
    """The store's summary row."""
    totals: SessionTotals
    """Turns, tokens, cost and time, from the head."""
    forked_from: tuple[str, int] | None
    """``(source session, source seq)`` when the session is a fork."""
    pending: int
    """Inputs waiting for a turn (``pending_agent``)."""


@attrs.frozen(kw_only=True)
class Damaged:
    """A session the sessions list cannot read: its summary row or its log is damaged."""

    session_id: str
    error: CorruptRow
    """The store's error (its message says where, and how to repair)."""


@attrs.frozen(kw_only=True)
class Forked:
    """What a fork stored."""

    session_id: str
    """The new session."""
    source_session_id: str
    """The session it was forked from."""
    source_seq: int
    """The seq it was forked at."""
    head: SessionState
    """The new session's state."""


@attrs.frozen(kw_only=True)
class MessageHistory:
    """One message's page of a long session (``Source.message_history``)."""

    state: SessionState
    """The state the page shows."""
    head: SessionState
    """The session's head (where the message is, if it exists)."""
    events: list[tuple[int, str]]
    """``(seq, kind)`` of every event that touched the message (none if it does not exist)."""


@attrs.frozen(kw_only=True)
class KindSeqs:
    """The seqs of some kinds of events around a page's seq (``Source.kinds``)."""

    before: list[int]
    """The last matching seqs before the pivot, ascending."""
    after: list[int]
    """The first matching seqs from the pivot on, ascending."""
    counts: dict[str, int]
    """Events of each kind up to the page's last seq."""
