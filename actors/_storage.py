"""The store thread: one thread owns the store; appends from many sessions share a commit.

A ``Store`` is not thread-safe, and a durable commit costs an fsync (~0.4 ms
here). Every session actor hands its events to this thread and waits for the
commit; requests that queued up meanwhile are stored in one transaction
(group commit), so a hundred busy sessions pay for a few fsyncs, not a hundred.
If a merged batch is rejected, its requests are retried one by one so that
each caller gets its own answer and nobody's events are lost for another's.
"""

from __future__ import annotations

import gc
import logging
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

from runtime import Event, SessionState
from runtime.store import Store

__all__ = ["StoreThread"]

log = logging.getLogger("amber.store")

T = TypeVar("T")

_STOP = object()


class _Append:
    __slots__ = ("events", "future")

    def __init__(self, events: Sequence[Event]) -> None:
        self.events = events
        self.future: Future[dict[str, SessionState]] = Future()


class _Call:
    __slots__ = ("fn", "future")

    def __init__(self, fn: Callable[[Store], Any]) -> None:
        self.fn = fn
        self.future: Future[Any] = Future()


class StoreThread:
    """Runs every store call on one thread, with group commit for appends.

    Args:
        store: the store; this thread uses it from now on (and closes it on ``stop``).
        max_batch: the most append requests merged into one transaction.
        gc_freeze_every: call ``gc.freeze()`` after this many stored events
            (0: never). Long-lived states are moved out of the cyclic GC's
            reach, which keeps collections short as history grows (DESIGN §13).
    """

    def __init__(
        self, store: Store, *, max_batch: int = 256, gc_freeze_every: int = 10_000
    ) -> None:
        self._store = store
        self._max_batch = max_batch
        self._gc_every = gc_freeze_every
        self._since_freeze = 0
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name="amber-store", daemon=True)
        self._stopped = False
        self.commits = 0
        """Transactions committed (for benchmarks)."""
        self.appended = 0
        """Events stored."""

    @property
    def store(self) -> Store:
        """The store (use it only through ``call`` while the thread runs)."""
        return self._store

    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    def append(self, events: Sequence[Event]) -> Future[dict[str, SessionState]]:
        """Store ``events`` (one transaction, possibly shared with other callers).

        The future's result is the new head of every session the events touch,
        or the store's error (nothing of these events was stored).
        """
        request = _Append(events)
        if self._stopped:
            request.future.set_exception(_stopped())
        else:
            self._queue.put(request)
        return request.future

    def call(self, fn: Callable[[Store], T]) -> Future[T]:
        """Run ``fn(store)`` on the store thread (reads, snapshots, exports)."""
        request = _Call(fn)
        if self._stopped:
            request.future.set_exception(_stopped())
        else:
            self._queue.put(request)
        return request.future

    def stop(self, *, timeout: float = 30.0, close: bool = True) -> None:
        """Finish queued work, then stop the thread (and close the store)."""
        if self._stopped:
            return
        self._stopped = True
        self._queue.put(_STOP)
        if self._thread.is_alive():
            self._thread.join(timeout)
        if close:
            self._store.close()

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            if isinstance(item, _Call):
                self._run(item)
                continue
            assert isinstance(item, _Append)
            batch = [item]
            stop = False
            while len(batch) < self._max_batch:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if isinstance(nxt, _Append):
                    batch.append(nxt)
                    continue
                # A read or stop ends the batch; it runs after the commit, in order.
                self._commit(batch)
                batch = []
                if nxt is _STOP:
                    stop = True
                else:
                    assert isinstance(nxt, _Call)
                    self._run(nxt)
                break
            if batch:
                self._commit(batch)
            if stop:
                return

    def _run(self, request: _Call) -> None:
        try:
            value = request.fn(self._store)
        except BaseException as exc:
            request.future.set_exception(exc)
        else:
            request.future.set_result(value)

    def _commit(self, batch: list[_Append]) -> None:
        events = [event for request in batch for event in request.events]
        if len(batch) > 1:
            try:
                heads = self._store.append(events)
            except Exception:
                log.debug("a group commit of %d requests failed; retrying each", len(batch))
            else:
                self._done(len(events))
                for request in batch:
                    request.future.set_result(
                        {e.session_id: heads[e.session_id] for e in request.events}
                    )
                return
        for request in batch:
            try:
                heads = self._store.append(request.events)
            except BaseException as exc:
                request.future.set_exception(exc)
            else:
                self._done(len(request.events))
                request.future.set_result(heads)

    def _done(self, count: int) -> None:
        self.commits += 1
        self.appended += count
        if self._gc_every:
            self._since_freeze += count
            if self._since_freeze >= self._gc_every:
                self._since_freeze = 0
                gc.freeze()


def _stopped() -> RuntimeError:
    return RuntimeError("The runtime's store thread has stopped; start a new Runtime to write.")
