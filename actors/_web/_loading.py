"""The ``Source``'s cache of whole timelines, replayed in background threads.

A mixin of ``Source``. Each entry holds one session's timeline: complete (a
short session, loaded whole by the request that asked), or partial (the states
from the latest snapshot on, or the first span a page read) while a thread
replays the whole log. The thread is started by ``start_loads`` once the page
is sent, so that it does not compete with the rendering; a request that needs
a state the partial timeline lacks waits for it (``_wait``, at most
``_LOAD_TIMEOUT`` seconds). Requests bring entries up to date with the events
stored since (``_refresh``); at most ``budget`` events of complete timelines are
kept, least recently used out first (``_evict``). An entry whose store no longer
matches (the session recreated, or shorter) is dropped (``_current``).
"""

from __future__ import annotations

import gc
import threading
from collections import OrderedDict
from contextlib import AbstractContextManager
from datetime import datetime

import attrs

from runtime import CorruptRow, Timeline
from runtime.store import SessionInfo, Store

from .._cli._app import CliError, ExitCode

__all__ = ["Loading"]

_LOAD_TIMEOUT = 120.0
"""Seconds a request waits for a timeline being loaded by another thread."""


@attrs.define(eq=False)
class _Entry:
    """What the cache holds for one session (changed under ``Source._lock`` only)."""

    created_at: datetime
    timeline: Timeline
    loader: threading.Thread | None = None
    """The thread that will replay the whole log, until ``start_loads`` starts it."""
    done: threading.Event = attrs.field(factory=threading.Event)
    error: BaseException | None = None


class Loading:
    """The cache of whole timelines and their background replays (mixed into ``Source``)."""

    _lock: threading.Lock
    _entries: OrderedDict[str, _Entry]
    _budget: int
    _freeze: bool

    def _store(self) -> AbstractContextManager[Store]:
        raise NotImplementedError

    def _current(self, session_id: str, info: SessionInfo) -> _Entry | None:
        """The cached entry, unless the store no longer matches it (recreated or shorter)."""
        with self._lock:
            entry = self._entries.get(session_id)
            if entry is None:
                return None
            if entry.created_at != info.created_at or entry.timeline.last_seq > info.seq:
                del self._entries[session_id]
                return None
            self._entries.move_to_end(session_id)
            return entry

    def _install(self, session_id: str, info: SessionInfo, timeline: Timeline) -> _Entry:
        entry = _Entry(created_at=info.created_at, timeline=timeline)
        entry.done.set()
        with self._lock:
            self._entries[session_id] = entry
            self._evict()
        self._loaded()
        return entry

    def _loaded(self) -> None:
        if self._freeze:
            gc.freeze()

    def _start(self, session_id: str, info: SessionInfo, partial: Timeline) -> _Entry:
        """Cache ``partial``; the whole log is replayed by a thread ``start_loads`` starts."""
        entry = _Entry(created_at=info.created_at, timeline=partial)
        entry.loader = threading.Thread(
            target=self._load_whole,
            args=(session_id, entry),
            name=f"amber-web-load-{session_id}",
            daemon=True,
        )
        with self._lock:
            self._entries[session_id] = entry
        self._loaded()
        return entry

    def start_loads(self) -> None:
        """Start the background replays that requests asked for.

        The application calls it once a response is sent: a replay started
        earlier would compete with the page being rendered for the
        interpreter (one thread runs Python at a time).
        """
        with self._lock:
            waiting = [e.loader for e in self._entries.values() if e.loader is not None]
            for entry in self._entries.values():
                entry.loader = None
        for loader in waiting:
            loader.start()

    def _load_whole(self, session_id: str, entry: _Entry) -> None:
        try:
            with self._store() as store:
                whole = store.load_timeline(session_id)
        except BaseException as exc:  # reported to the request that waits for it
            with self._lock:
                entry.error = exc
        else:
            with self._lock:
                if whole.last_seq < entry.timeline.last_seq:
                    # Requests moved the partial on meanwhile: catch up with them.
                    newer = [e for e in entry.timeline.events() if e.seq > whole.last_seq]
                    whole = whole.extend(newer)
                entry.timeline = whole
                self._evict()
            self._loaded()
        finally:
            entry.done.set()

    def _wait(self, session_id: str, entry: _Entry) -> Timeline:
        self.start_loads()
        if not entry.done.wait(_LOAD_TIMEOUT):
            raise CliError(
                f"Loading session {session_id!r} took more than {_LOAD_TIMEOUT:.0f} s; try again.",
                ExitCode.FAILED,
            )
        with self._lock:
            error, timeline = entry.error, entry.timeline
            if error is not None and self._entries.get(session_id) is entry:
                del self._entries[session_id]  # the next request tries again
        if error is not None:
            if isinstance(error, CliError | CorruptRow):
                raise error
            raise CliError(f"{type(error).__name__}: {error}", ExitCode.FAILED) from error
        return timeline

    def _refresh(self, session_id: str, entry: _Entry, timeline: Timeline) -> None:
        with self._lock:
            if entry.timeline.last_seq < timeline.last_seq and (
                entry.timeline.first_seq >= timeline.first_seq
            ):
                entry.timeline = timeline

    def _evict(self) -> None:
        """Drop least recently used complete timelines beyond the budget (under the lock)."""
        total = sum(len(e.timeline) for e in self._entries.values())
        for session_id in list(self._entries):
            if total <= self._budget or len(self._entries) == 1:
                break
            entry = self._entries[session_id]
            if entry.done.is_set():
                total -= len(entry.timeline)
                del self._entries[session_id]

    def wait_loaded(self, timeout: float | None = None) -> bool:
        """Wait until no background load runs; True if none is left (for tests, benchmarks)."""
        self.start_loads()
        with self._lock:
            pending = [e.done for e in self._entries.values()]
        return all(done.wait(timeout) for done in pending)
