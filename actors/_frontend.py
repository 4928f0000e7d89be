"""A front end that runs no sessions: answers read from a shared store (DESIGN §10).

``Runtime(store="postgresql://…", run_sessions=False)`` is a front end (a web
app, a chat gateway): it stores input and approval decisions for the workers
that run the sessions, and never takes a lease or calls a model. What it waits
for, it reads from the store: an ``AnswerWatch`` listens on the store's
``NOTIFY`` channel and, when a watched session got events, checks it again:

- ``ask`` (and ``ask_async``, ``stream``): the input's ``Reply`` once the input
  reached a final status (``runtime.reply_of``). A stream yields only the
  ``Reply``: the live pieces of a turn run elsewhere are not stored.
- ``wait_idle``: the head state once no turn runs (or one only waits for
  approval) and no input waits.

A notification lost while the listening connection was down is covered by a
check of every watched session each ``poll`` seconds.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from runtime import FINAL_INPUT, SessionState, StoreError, reply_of

from ._answers import ReplyWaiter
from ._damage import call_told
from ._elsewhere import delivers_nothing, stop_listening, waits_for_a_person
from ._errors import OwnedElsewhere, RuntimeStopped
from ._storage import StoreThread

__all__ = ["AnswerWatch", "StateWait", "is_idle", "runs_no_sessions"]

log = logging.getLogger("amber.frontend")


def is_idle(state: SessionState) -> bool:
    """No input waits, and no turn is active or the one active only waits for a person
    to approve tool calls (``wait_idle``'s condition, read from the store). Output waiting
    for delivery does not count: delivery is the workers' adapters' business, and a worker
    without adapters leaves such a session alone."""
    if state.queued:
        return False
    return state.active_turn is None or waits_for_a_person(state, delivers=delivers_nothing)


class StateWait:
    """A wait for a session's state to meet ``done`` (``wait_idle``)."""

    def __init__(self, done: Callable[[SessionState], bool]) -> None:
        self.done = done
        self.state: SessionState | None = None
        self.error: BaseException | None = None
        self.event = threading.Event()


class AnswerWatch:
    """Resolves a front end's waits from the store, woken by its notifications.

    Args:
        store: the runtime's store thread (a ``PostgresStore``).
        poll: seconds between checks of every watched session (lost notifications).
    """

    def __init__(self, store: StoreThread, *, poll: float) -> None:
        self._store = store
        self._poll = poll
        self._lock = threading.Lock()
        self._asks: dict[str, list[tuple[str, ReplyWaiter]]] = {}
        self._waits: dict[str, list[StateWait]] = {}
        self._stop = threading.Event()
        self._stopped: str | None = None  # why, once stop() failed the open waits
        self._listener: Any = None
        self._thread = threading.Thread(target=self._loop, name="amber-answers", daemon=True)

    def _call(self, fn: Callable[[Any], Any]) -> Any:
        return call_told(self._store, fn, 60.0)

    def start(self) -> None:
        """Start listening."""
        self._listener = self._call(lambda s: s.listener(others_only=True))
        self._thread.start()

    def stop(self, why: str) -> None:
        """Stop listening; every wait still open fails with ``RuntimeStopped(why)``."""
        stop_listening(self._stop, self._thread, self._listener, self._call)
        with self._lock:
            self._stopped = why  # a wait registering from now on fails at once
            asks, self._asks = self._asks, {}
            waits, self._waits = self._waits, {}
        for entries in asks.values():
            for _, waiter in entries:
                waiter.fail(RuntimeStopped(why))
        for pending in waits.values():
            for wait in pending:
                wait.error = RuntimeStopped(why)
                wait.event.set()

    def watch_answer(self, session_id: str, input_id: str, waiter: ReplyWaiter) -> None:
        """Resolve ``waiter`` with the input's ``Reply`` once the store holds it (fail it
        with ``RuntimeStopped`` if the watch stopped)."""
        with self._lock:
            stopped = self._stopped
            if stopped is None:
                self._asks.setdefault(session_id, []).append((input_id, waiter))
        if stopped is not None:
            waiter.fail(RuntimeStopped(stopped))  # nothing would ever wake it
            return
        self.check(session_id)  # it may have been answered before the watch began

    def forget(self, session_id: str, waiter: ReplyWaiter) -> None:
        """Stop watching for ``waiter`` (its caller stopped waiting)."""
        with self._lock:
            entries = self._asks.get(session_id, [])
            entries[:] = [entry for entry in entries if entry[1] is not waiter]

    def wait_state(self, session_id: str, wait: StateWait, timeout: float | None) -> bool:
        """Block until the session's state meets ``wait.done`` (True) or ``timeout`` passed.

        Raises:
            RuntimeStopped: the runtime stopped meanwhile.
        """
        with self._lock:
            if self._stopped is not None:
                raise RuntimeStopped(self._stopped)  # nothing would ever wake it
            self._waits.setdefault(session_id, []).append(wait)
        try:
            self.check(session_id)
            met = wait.event.wait(timeout)
        finally:
            with self._lock:
                pending = self._waits.get(session_id, [])
                if wait in pending:
                    pending.remove(wait)
        if wait.error is not None:
            raise wait.error
        return met

    def check(self, session_id: str) -> None:
        """Read the session's head and resolve the waits on it that it meets."""
        with self._lock:
            if not self._asks.get(session_id) and not self._waits.get(session_id):
                return
        state: SessionState = self._call(lambda s: s.load_state(session_id))
        answered: list[tuple[ReplyWaiter, Any]] = []
        with self._lock:
            entries = self._asks.get(session_id, [])
            keep = []
            for input_id, waiter in entries:
                message = state.get(input_id)
                if message is not None and message.status in FINAL_INPUT:
                    answered.append((waiter, reply_of(state, input_id)))
                else:
                    keep.append((input_id, waiter))
            entries[:] = keep
            met = [wait for wait in self._waits.get(session_id, []) if wait.done(state)]
        for waiter, reply in answered:
            waiter.resolve(reply)
        for wait in met:
            wait.state = state
            wait.event.set()

    def _watched(self) -> set[str]:
        with self._lock:
            asked = {session_id for session_id, entries in self._asks.items() if entries}
            return asked | {session_id for session_id, waits in self._waits.items() if waits}

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                notified = self._listener.wait(self._poll)
                due = self._watched() if not notified else notified & self._watched()
            except StoreError:
                log.warning("lost the notification connection; reconnecting")
                self._reconnect()
                due = self._watched()
            for session_id in sorted(due):
                try:
                    self.check(session_id)
                except Exception:
                    log.warning("could not read session %s; trying again", session_id,
                                exc_info=True)  # fmt: skip

    def _reconnect(self) -> None:
        try:
            self._listener.close()
            self._listener = self._call(lambda s: s.listener(others_only=True))
        except Exception:
            self._stop.wait(1.0)


def runs_no_sessions(session_id: str, what: str = "this") -> bool:
    """The router's claim on a front end: every session is run by the workers."""
    raise OwnedElsewhere(
        f"Session {session_id!r} is run by the workers, not by this runtime (it was made with "
        f"run_sessions=False): {what} needs the session's actor. send, post of any other "
        "category than a notification, ask, stream, approve, deny and wait_idle work here; "
        "call the rest on a runtime that runs sessions (with a model)."
    )
