"""Everything the viewer reads from or writes to a store, in one place.

The pages never touch a store: they ask a ``Source``. It opens the store of
``--db`` for each operation through the CLI's ``open_store`` (the same
checks as every ``amber`` command: the file must exist and be an Amber
store, nothing is ever created) and reports the CLI's errors (``CliError``
with its exit code), so a bad request reads the same in a browser as on the
command line. A PostgreSQL store (issue 17) slots in here and nowhere else.

A session page reads only the states it shows (``span``): from the nearest
stored state at or before them (a snapshot or checkpoint), as ``amber show
--at`` does, so its cost is the distance from there, not the session's
length. What a ``Source`` keeps, per process:

- each session's **last span**, brought on with the events after it when the
  next page needs later states (moving between seqs reads a few events);
- the **timelines** of short sessions (up to ``_WHOLE`` events, loaded by
  the first request), of sessions up to ``_BACKGROUND`` events (replayed in
  a background thread once the first page is sent) and of the pages that
  read every event (the kind filter, a message's history, the charts,
  jumps), brought up to date on every request (the events stored since are
  read and applied: a live session stays live); at most ``budget`` events
  of complete timelines (least recently used out first). A request that
  needs a state the partial timeline lacks waits for the replay;
- each session's count of events of each kind (``kinds``), read from the
  log's kind column once and brought on with the rows stored since.

The kind filter of a long session reads the seqs it shows from the log's
kind column around the page's seq (``kind_seqs``: a few rows through the
primary key), and only the states around them (``lines``).

Reads never write: the viewer's only writes are ``fork`` (an ``append`` of
the fork's first event, as ``amber fork`` does).

Beside it: ``_loading`` (the timelines and their background replays),
``_spans`` (the last spans and kind counts), ``_touches`` (which events touched
a message, for ``message_history``) and ``_results`` (the values it answers).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any

import orjson

from runtime import (
    BranchImported,
    CorruptRow,
    Event,
    SessionState,
    Status,
    Timeline,
    added_seq,
)
from runtime.store import SessionInfo, Store

from .._cli._admin import fork_session, free_id
from .._cli._app import open_store, require_session
from .._cli._render import touched_ids
from .._cli._replay import Check, verify_session
from .._damage import sessions_and_damage
from ._loading import Loading, _Entry
from ._params import WebError
from ._results import Damaged, Forked, KindSeqs, Loaded, MessageHistory, SessionRow
from ._spans import Spans
from ._stats import (
    StatusSeries,
    session_totals,
    status_series,
    stored_series,
)
from ._touches import _PLAIN, _touches

__all__ = ["Damaged", "Forked", "KindSeqs", "Loaded", "MessageHistory", "SessionRow", "Source"]

Opener = Callable[[str], AbstractContextManager[Store]]
"""Opens the store at a ``--db`` value for one operation (the CLI's ``open_store``)."""

_EXACT_FORK_CHECK = 2_000
"""Sessions up to this many events have their first event read to tell forks apart."""
_WHOLE = 2_000
"""Sessions up to this many events are loaded whole for a span and cached (moving between
seqs then reads nothing; the filter counts each kind); longer ones are read by span."""

_BACKGROUND = 20_000
"""Sessions up to this many events are also replayed whole in a background thread once
their first span is sent (moving between seqs then reads nothing); longer ones are read
by span only (the whole log of 100,000 events takes 10-15 s and holds every state)."""
_GAP = 1_000
"""Filtered rows this many seqs apart or more are read in separate spans (the distance
between stored states: each span reads at most that far from one)."""

Window = Callable[[int], tuple[int, int, int]]
"""Given a session's last seq: the seq a page shows, and the first and last seq of the
states it reads."""


class Source(Loading, Spans):
    """The store behind the viewer, with a per-process cache of timelines.

    Args:
        db: the ``--db`` value (an SQLite file path today).
        opener: opens the store for one operation (default: the CLI's ``open_store``).
        budget: how many events of complete timelines to keep cached.
        freeze_gc: call ``gc.freeze()`` after each load, so that the cyclic
            collector stops walking the loaded states (full collections of a
            10,000-event timeline pause every thread for 0.1-0.2 s). Only for a
            process that serves the viewer alone (``amber web``): it affects
            the whole process. The states stay freed by reference counting.

    Thread-safe: the web server answers requests on a pool of threads, and
    each operation opens its own store connection.
    """

    def __init__(
        self,
        db: str,
        *,
        opener: Opener | None = None,
        budget: int = 200_000,
        freeze_gc: bool = False,
    ) -> None:
        self.db = db
        """The store's ``--db`` value, as the user gave it."""
        self._opener: Opener = opener if opener is not None else open_store
        self._budget = budget
        self._freeze = freeze_gc
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._origins: dict[tuple[str, datetime], BranchImported | None] = {}
        self._rows: dict[str, SessionRow] = {}
        self._spans: OrderedDict[str, tuple[datetime, Timeline]] = OrderedDict()
        self._counts: OrderedDict[str, tuple[datetime, int, dict[str, int]]] = OrderedDict()

    @contextmanager
    def _store(self) -> Iterator[Store]:
        with self._opener(self.db) as store:
            yield store

    def check(self) -> int:
        """Open the store once (the server's start-up check); returns how many sessions it has.

        Raises:
            CliError: no store at ``db``, or not an Amber store (the CLI's exit codes).
        """
        with self._store() as store:
            listed, damaged = sessions_and_damage(store)
            return len(listed) + len(damaged)

    # --- the sessions list ------------------------------------------------------------

    def sessions(self) -> tuple[list[SessionRow], list[Damaged]]:
        """Every sound session with its totals, most recently active first, and the
        damaged ones (a summary row or a log that fails the store's checks) with their
        errors: one damaged session does not hide the others (as ``amber recover``).

        Raises:
            CliError: the store as a whole cannot be read.
        """
        with self._store() as store:
            infos, errors = sessions_and_damage(store)
            damaged = [Damaged(session_id=e.session_id or "?", error=e) for e in errors]
            rows = []
            for info in infos:
                with self._lock:
                    row = self._rows.get(info.session_id)
                if row is None or row.info != info:
                    try:
                        head = self._cached_head(info) or store.load_state(info.session_id)
                        origin = self._origin(store, info, head)
                    except CorruptRow as exc:
                        damaged.append(Damaged(session_id=info.session_id, error=exc))
                        continue
                    row = SessionRow(
                        info=info,
                        totals=session_totals(head),
                        forked_from=None
                        if origin is None
                        else (origin.source_session_id, origin.source_seq),
                        pending=head.status_counts().get(Status.PENDING_AGENT, 0),
                    )
                    with self._lock:
                        self._rows[info.session_id] = row
                rows.append(row)
        return rows, sorted(damaged, key=lambda d: d.session_id)

    def _cached_head(self, info: SessionInfo) -> SessionState | None:
        with self._lock:
            entry = self._entries.get(info.session_id)
            if entry is None or entry.created_at != info.created_at:
                return None
            head = entry.timeline.head
        return head if head.seq == info.seq else None

    def _origin(self, store: Store, info: SessionInfo, head: SessionState) -> BranchImported | None:
        """The fork's first event, read once per session (the first event never changes).

        A store that reads one event (``event``: SQLite, PostgreSQL) reads only
        that row. Otherwise: a fork's first event imports every message at seq
        1, so a head with other than exactly one message from seq 1 is a fork;
        with exactly one, only the first event tells, and it is read for
        sessions of up to ``_EXACT_FORK_CHECK`` events.
        """
        key = (info.session_id, info.created_at)
        with self._lock:
            if key in self._origins:
                return self._origins[key]
        first: Event | None = None
        read_one = getattr(store, "event", None)
        if info.seq < 1:
            pass
        elif read_one is not None:
            first = read_one(info.session_id, 1)
        else:
            from_first = sum(1 for m in head.messages if added_seq(head, m) == 1)
            if from_first != 1 or info.seq <= _EXACT_FORK_CHECK:
                first = _first(store.events(info.session_id))
        origin = first if isinstance(first, BranchImported) else None
        with self._lock:
            self._origins[key] = origin
        return origin

    # --- one session ------------------------------------------------------------------

    def timeline(self, session_id: str, *, need: int = 0, sound_only: bool = False) -> Loaded:
        """The session's timeline, up to date, holding at least the states from seq ``need``.

        ``need=0`` asks for every state (waits for the whole log); a negative
        ``need`` counts back from the head (-1: the head, -2: the state before
        it). A ``need`` at or after the latest snapshot may be answered from
        it while the whole log loads in the background.

        ``sound_only``: if the log is damaged after ``need``, the states before
        the damaged row (as ``amber show --at`` reads them), with the error in
        ``Loaded.damage``; not cached.

        Raises:
            CliError: no such session (``NOT_FOUND``, with the closest ids), or
                the store cannot be read.
            CorruptRow: a row the states from ``need`` on are read from is damaged.
        """
        try:
            return self._timeline(session_id, need)
        except CorruptRow as exc:
            if not sound_only or exc.session_id != session_id or not exc.seq:
                raise
            damage, last = exc, exc.seq - 1
        with self._store() as store:
            info = store.session(session_id)
            if need < 0:
                need = max(0, info.seq + 1 + need)
            load_span = getattr(store, "load_span", None)  # SQLite, PostgreSQL
            if need > last or load_span is None:
                raise damage
            try:
                sound: Timeline = load_span(session_id, 0, last)
            except CorruptRow:
                raise damage from None
            origin = self._origin_of(session_id, info, sound, store)
        return Loaded(timeline=sound, origin=origin, loading=False, damage=damage)

    def span(self, session_id: str, window: Window, *, whole: bool = False) -> Loaded:
        """The states a page shows, read from the nearest stored state at or before the
        first (a snapshot, a checkpoint or seq 0), as ``amber show`` reads them: the cost
        is the distance from there, not the session's length.

        ``window(last seq)`` gives ``(seq, first, last)``: the seq the page shows and the
        states it reads. A cached complete timeline, or a session of up to ``_WHOLE``
        events (loaded whole and cached), answers instead, and so does ``whole=True`` (a
        page that reads every event) or a store that cannot read a span. If the log is
        damaged within the window, the states before the damaged row are returned with
        the error in ``Loaded.damage``; the error is raised instead when the page's seq is
        at or after the damaged row, or counted back from the head.

        Raises:
            CliError: no such session, or the store cannot be read.
            CorruptRow: a row the page's states are read from is damaged.
            WebError: whatever ``window`` raises (a seq out of range).
        """
        with self._store() as store:
            require_session(store, session_id, self.db)
            info = store.session(session_id)
            seq, first, last = window(info.seq)
            load_span = getattr(store, "load_span", None)  # SQLite, PostgreSQL
            entry = self._current(session_id, info)
            cached = entry is not None and entry.done.is_set() and entry.timeline.first_seq == 0
            if not (whole or cached or load_span is None or info.seq <= _WHOLE):
                damage: CorruptRow | None = None
                head = info.seq
                try:
                    line = self._span(store, session_id, info, first, last)
                except CorruptRow as exc:
                    if exc.session_id != session_id or not exc.seq:
                        raise
                    damage, head = exc, exc.seq - 1
                    _, first, last = _within(window, seq, head, exc)
                    line = load_span(session_id, first, last)
                origin = self._origin_of(session_id, info, line, store)
                if entry is None and damage is None and info.seq <= _BACKGROUND:
                    self._start(session_id, info, line)
                return Loaded(
                    timeline=line, origin=origin, loading=False, damage=damage, head_seq=head
                )
        loaded = self.timeline(session_id, need=0, sound_only=True)
        if loaded.damage is not None:
            _within(window, seq, loaded.last_seq, loaded.damage)
        return loaded

    def message_history(
        self, session_id: str, message_id: str, at: Callable[[int], int]
    ) -> MessageHistory | None:
        """The state at ``at(last seq)``, the head, and the events that touched the message
        (as ``touched_ids`` finds them over every event), for a session past ``_WHOLE``
        events: from the head's turns and the events that may name the message
        (``mentions``, ``kind_seqs``), each decoded alone; only the few whose effect
        depends on the states around them (an approval of a tool call, a rollback, the end
        of the turn of a call the head cannot tell open or not) are read with them. None
        when the store cannot (the page then reads every event), the session is short or
        its every state is cached, or the message's id (or its call's) is not plain enough
        to be searched for as stored (``_PLAIN``).

        Raises:
            CliError: no such session, or the store cannot be read.
            CorruptRow: a row the states or events are read from is damaged.
            WebError: whatever ``at`` raises (a seq out of range).
        """
        with self._store() as store:
            require_session(store, session_id, self.db)
            info = store.session(session_id)
            if info.seq <= _WHOLE or not all(
                hasattr(store, name) for name in ("load_span", "mentions", "kind_seqs", "event")
            ):
                return None
            entry = self._current(session_id, info)
            if entry is not None and entry.done.is_set() and entry.timeline.first_seq == 0:
                return None  # every state is cached: reading them is cheaper
            if not _PLAIN.fullmatch(message_id):
                return None
            seq = at(info.seq)
            read: Any = store
            head = read.load_span(session_id, info.seq, lazy=True).head
            state = (
                head if seq == head.seq else read.load_span(session_id, seq, seq, lazy=True).head
            )
            message = head.get(message_id)
            if message is None:
                return MessageHistory(state=state, head=head, events=[])
            call = message.tool_call.id if message.tool_call is not None else None
            turns = head.turn_list()
            if (call is not None and not _PLAIN.fullmatch(call)) or len(
                {t.id for t in turns}
            ) != len(turns):
                return None
            added = added_seq(head, message) or 1
            candidates = {added}
            candidates.update(
                read.mentions(
                    session_id, ["status_changed", "metadata_updated"], f'"{message_id}"', added
                )
            )
            for turn in turns:
                made_in = turn.started_seq < added and (
                    turn.ended_seq is None or added <= turn.ended_seq
                )
                if message_id in turn.input_ids or (call is not None and made_in):
                    candidates.update(s for s in (turn.started_seq, turn.ended_seq) if s)
            if call is not None:
                candidates.update(
                    read.mentions(
                        session_id, ["approval_requested", "approval_decided"], f'"{call}"', added
                    )
                )
            candidates.update(
                read.kind_seqs(session_id, ["rolled_back"], added + 1, before=0, after=info.seq)[1]
            )
            by_turn = {t.id: t for t in turns}
            found: list[tuple[int, str]] = []
            unsure: list[Event] = []
            for s in sorted(c for c in candidates if 1 <= c <= info.seq):
                event = read.event(session_id, s)
                touched = _touches(event, message, head, by_turn)
                if touched is None:
                    unsure.append(event)
                elif touched:
                    found.append((s, event.kind))
        if unsure:
            lines = self.lines(session_id, [e.seq for e in unsure], Timeline.from_state(head))
            for event in unsure:
                line = next(t for t in lines if t.first_seq < event.seq <= t.last_seq)
                before, after = line.at(event.seq - 1), line.at(event.seq)
                if message_id in touched_ids(event, before, after):
                    found.append((event.seq, event.kind))
        return MessageHistory(state=state, head=head, events=sorted(found))

    def charted(self, session_id: str) -> tuple[SessionState, StatusSeries]:
        """The head and the statuses over seqs the charts draw. A session of up to
        ``_BACKGROUND`` events (or a store that keeps no stored states) is read whole and
        sampled evenly (``status_series``); a longer one is read at its head alone
        (``span``) and sampled at its stored states (``stored_counts``: checkpoints every
        1,000 events and the latest snapshot, read without replaying).

        Raises:
            CliError: no such session, or the store cannot be read.
            CorruptRow: a row the head or a stored state is read from is damaged.
        """
        with self._store() as store:
            require_session(store, session_id, self.db)
            length = store.session(session_id).seq
            stored = hasattr(store, "stored_counts")
        if length <= _BACKGROUND or not stored:
            timeline = self.timeline(session_id).timeline
            return timeline.head, status_series(timeline)
        head = self.span(session_id, lambda last: (last, last, last)).timeline.head
        with self._store() as store:
            counts = store.stored_counts(session_id, head.seq)  # type: ignore[attr-defined]
        return head, stored_series(counts, head)

    def lines(self, session_id: str, seqs: Sequence[int], have: Timeline) -> list[Timeline]:
        """Timelines that hold each of ``seqs`` and the state before it: ``have``, brought on
        with the events after it when the seqs past it are less than ``_GAP`` further (the
        rows after a page's seq), and spans read from the nearest stored state
        (``load_span``, lazily: rows show a few messages), one per run of the other seqs
        less than ``_GAP`` apart.

        Raises:
            CliError: no such session, or the store cannot be read.
            CorruptRow: a row the states are read from is damaged.
        """
        with self._store() as store:
            read: Any = store
            after = [s for s in seqs if s > have.last_seq and s - 1 >= have.first_seq]
            if after and max(after) - have.last_seq < _GAP:
                have = have.extend(read.events_between(session_id, have.last_seq + 1, max(after)))
            runs: list[list[int]] = []
            for seq in sorted(seqs):
                if have.first_seq <= seq - 1 and seq <= have.last_seq:
                    continue
                if runs and seq - runs[-1][-1] < _GAP:
                    runs[-1].append(seq)
                else:
                    runs.append([seq])
            return [have] + [
                read.load_span(session_id, run[0] - 1, run[-1], lazy=True) for run in runs
            ]

    def _timeline(self, session_id: str, need: int) -> Loaded:
        with self._store() as store:
            require_session(store, session_id, self.db)
            info = store.session(session_id)
            if need < 0:
                need = max(0, info.seq + 1 + need)
            entry = self._current(session_id, info)
            if entry is None:
                if need > 0 and 0 < info.snapshot_seq <= need:
                    partial = store.load_timeline(session_id, from_snapshot=True)
                    entry = self._start(session_id, info, partial)
                else:
                    entry = self._install(session_id, info, store.load_timeline(session_id))
            timeline = entry.timeline
            if timeline.first_seq > need:
                timeline = self._wait(session_id, entry)
            if timeline.last_seq < info.seq:
                timeline = timeline.extend(store.events(session_id, after=timeline.last_seq))
                self._refresh(session_id, entry, timeline)
            origin = self._origin_of(session_id, info, timeline, store)
        return Loaded(
            timeline=timeline,
            origin=origin,
            loading=timeline.first_seq > 0 and not entry.done.is_set(),
        )

    def _origin_of(
        self, session_id: str, info: SessionInfo, timeline: Timeline, store: Store
    ) -> BranchImported | None:
        if timeline.first_seq == 0 and timeline.last_seq > 0:
            first = timeline.event(1)
            origin = first if isinstance(first, BranchImported) else None
            with self._lock:
                self._origins[(session_id, info.created_at)] = origin
            return origin
        return self._origin(store, info, timeline.head)

    # --- actions ------------------------------------------------------------------------

    def fork(self, session_id: str, at_seq: int, new_id: str | None) -> Forked:
        """Fork ``session_id`` at ``at_seq`` as ``new_id`` (or a free id): ``amber fork``'s code.

        Raises:
            CliError: the CLI's errors (no such session or seq: ``NOT_FOUND``;
                ``new_id`` taken: ``CONFLICT``; an event the store refuses).
        """
        with self._store() as store:  # the state at the fork point, as amber fork reads it
            target, seq, head = fork_session(store, session_id, at_seq, new_id, self.db)
        return Forked(session_id=target, source_session_id=session_id, source_seq=seq, head=head)

    def fork_id(self, session_id: str, at_seq: int) -> str:
        """The id a fork of ``session_id`` at ``at_seq`` without a name gets now (the fork
        form's suggestion): ``SESSION-fork-SEQ``, or its first free ``-N``."""
        with self._store() as store:
            return free_id(store, f"{session_id}-fork-{at_seq}")

    def export(self, session_id: str) -> bytes:
        """The session as ``amber export`` prints it (the same JSON, with a final newline)."""
        with self._store() as store:
            require_session(store, session_id, self.db)
            data = store.export_session(session_id)
        return orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n"

    def verify(self, session_id: str) -> tuple[int, list[Check]]:
        """``amber replay --verify`` for one session: replay the log, compare with the store."""
        with self._store() as store:
            require_session(store, session_id, self.db)
            return verify_session(store, session_id)


def _within(window: Window, seq: int, head: int, damage: CorruptRow) -> tuple[int, int, int]:
    """``window(head)`` for a log readable up to ``head``; ``damage`` if it shows another
    seq than ``seq`` (asked for at or after the damage, or counted back from the head)."""
    try:
        shown = window(head)
    except WebError:
        raise damage from None
    if shown[0] != seq:
        raise damage
    return shown


def _first(events: list[Event]) -> Event | None:
    return events[0] if events else None
