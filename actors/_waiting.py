"""Waiting for a session to be idle: ``wait_idle``.

A mixin of ``Runtime``. A live session's actor answers a ``when_idle`` future
once no turn runs and no input waits (and, ``settled``, every message an adapter
delivers is reported delivered); a quiet session with nothing to deliver is
answered from the store; a front end (``run_sessions=False``) waits on the
store's notifications. A wait that times out drops its future from the actor
(a waiter left there would keep the session from passivating) and says, in
``IdleTimeout``, what the session still waits for.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import pykka

from runtime import SessionState, Status, UnknownSession

from ._answers import in_a_thread, warn_blocking
from ._drafts import session_id_of
from ._errors import IdleTimeout, OwnedElsewhere
from ._frontend import AnswerWatch, StateWait, is_idle
from ._seconds import wait_limit

if TYPE_CHECKING:
    from runtime.store import Store

    from ._effects import Effects
    from ._gateway import Gateway
    from ._router import Router
    from ._settings import Settings

__all__ = ["Waiting"]

log = logging.getLogger("amber.runtime")

T = TypeVar("T")


class Waiting:
    """``wait_idle`` (mixed into ``Runtime``)."""

    router: Router
    settings: Settings
    gateway: Gateway
    _watch: AnswerWatch | None
    _effects: Effects | None

    def _call_store(self, fn: Callable[[Store], T], *, timeout: float | None = None) -> T:
        raise NotImplementedError

    def wait_idle(
        self, session_id: str, *, timeout: float | None = 30.0, settled: bool = True
    ) -> SessionState:
        """Wait until no turn runs (or one only waits for approval) and no input waits;
        returns the head state.

        With ``settled`` (the default) it also waits until adapters have
        reported every message they deliver as delivered. A session that is not
        live (passivated, or not loaded since a restart) whose stored output waits
        for one of this runtime's adapters is loaded for it, which announces that
        output again (it is sent again); a session another worker runs (it holds
        the lease) is answered from the store, as is one with nothing to deliver.

        On a front end (``run_sessions=False``) it waits, from the store, until the
        workers have answered every input and no turn runs (``settled`` is not
        waited for: delivery is the workers' adapters' business).

        Raises:
            IdleTimeout: not idle within ``timeout`` seconds.
            UnknownSession: the store has no such session.
            InvalidInput: ``session_id`` is not a session id.
            InvalidConfig: ``timeout`` is not a positive number of seconds (at most 100
                years) or None, or it was called on the effects loop (from an async tool),
                or from a sync tool running in this session's turn (which waits for it).

        Warns:
            RuntimeWarning: called on a running asyncio or trio loop, which it blocks
                (run it in a worker thread there).
        """
        session_id = session_id_of(session_id, stored=True)
        timeout = wait_limit(timeout, what="wait_idle")
        if self._effects is not None:
            self._effects.refuse_blocking(
                "wait_idle",
                "An async tool cannot wait for a session; make it a sync tool (def), which "
                "runs in a worker thread and may wait for another session.",
            )
            self._effects.refuse_own_wait(
                "wait_idle",
                session_id,
                "the session is busy until the tool returns",
                "Return from the tool instead: the turn goes on once it has. To act once the "
                "turn is over, wait where the input was sent (ask, or send then wait_idle), "
                "or subscribe(session_id=...) to its updates. A tool may wait for another "
                "session.",
            )
        warn_blocking("wait_idle", "the session is idle", in_a_thread("wait_idle"))
        if self._watch is not None:
            return self._wait_idle_stored(session_id, timeout)
        stored: SessionState | None = None  # quiet in the store, loaded only to deliver
        if self.router.live(session_id) is None:
            info = self._call_store(lambda s: s.session(session_id) if session_id in s else None)
            if info is None:
                raise UnknownSession(
                    f"Session {session_id!r} has no stored input to wait for: nothing was ever "
                    "accepted for it (an input refused with InvalidInput stores nothing). Send "
                    "it a message first, or list the stored sessions with Runtime.sessions()."
                )
            if info.active_turn_id is None and not info.counts.get(Status.PENDING_AGENT):
                stored = self._call_store(lambda s: s.load_state(session_id))
                if not (settled and self._delivers_on_load(stored)):
                    return stored
                # Loading the session announces its undelivered output again: wait for that.
        try:
            future = self.router.call(
                session_id, lambda p: p.when_idle(settled), timeout=self.settings.ask_timeout
            )
        except OwnedElsewhere:
            if stored is None:
                raise
            return stored  # another worker runs it: its adapters deliver the output
        return self._await_idle(session_id, future, timeout, settled)

    def _delivers_on_load(self, state: SessionState) -> bool:
        """True when loading the session would announce output one of this runtime's
        adapters delivers (what ``Loaded`` announces again: active undelivered output)."""
        return any(m.active and self.gateway.expects_delivery(m) for m in state)

    def _await_idle(
        self, session_id: str, future: Any, timeout: float | None, settled: bool
    ) -> SessionState:
        """Wait for a ``when_idle`` future of the session's actor, dropping it if the wait
        ends without its answer."""
        try:
            state: SessionState = future.get(timeout=timeout)
        except pykka.Timeout:
            self._forget_waiter(session_id, future, wait=True)
            try:
                state = future.get(timeout=0)  # answered just as the wait timed out
            except pykka.Timeout:
                raise IdleTimeout(self._not_idle(session_id, timeout, settled)) from None
        except BaseException:  # KeyboardInterrupt, say: the caller no longer waits either
            self._forget_waiter(session_id, future, wait=False)
            raise
        return state

    def _wait_idle_stored(self, session_id: str, timeout: float | None) -> SessionState:
        """``wait_idle`` on a front end: woken by the store's notifications."""
        assert self._watch is not None
        if not self._call_store(lambda s: session_id in s):
            raise UnknownSession(
                f"Session {session_id!r} has no stored input to wait for: nothing was ever "
                "accepted for it. Send it a message first, or list the stored sessions with "
                "Runtime.sessions()."
            )
        wait = StateWait(is_idle)
        if not self._watch.wait_state(session_id, wait, timeout):
            raise IdleTimeout(
                f"Session {session_id!r} was not idle within {timeout} s: the workers have not "
                "answered every input yet (is a worker running? 'amber sessions' shows what "
                "waits). Raise the timeout."
            )
        assert wait.state is not None
        return wait.state

    def _forget_waiter(self, session_id: str, future: Any, *, wait: bool) -> None:
        """Drop a ``when_idle`` future nobody waits for from the session's actor (a waiter
        left there would keep the session from ever passivating)."""
        proxy = self.router.live(session_id)
        if proxy is None:
            return  # the actor stopped: its waiters went with it
        try:
            dropped = proxy.forget_waiter(future)
            if wait:
                dropped.get(timeout=self.settings.ask_timeout)
        except Exception:  # gone or busy: a stopped actor holds no waiter
            log.debug("session %s: a timed-out wait was not dropped", session_id, exc_info=True)

    def _not_idle(self, session_id: str, timeout: float | None, settled: bool) -> str:
        """IdleTimeout's message: what the session still waits for, asked of its actor."""
        head = f"Session {session_id!r} was not idle within {timeout} s"
        proxy = self.router.live(session_id)
        why: dict[str, str] = {}
        if proxy is not None:
            try:
                why = proxy.waiting_for(settled).get(timeout=min(5.0, self.settings.ask_timeout))
            except Exception:  # busy or gone: the message says less, but still raises
                log.debug("session %s did not say what it waits for", session_id, exc_info=True)
        if not why:
            return (
                f"{head}; a turn may be waiting on a slow model or tool (raise the timeout, or "
                f"interrupt it with interrupt({session_id!r}))."
            )
        hints = []
        if "turn" in why or "inputs" in why:
            hints.append(f"Raise the timeout, or interrupt the turn (interrupt({session_id!r})).")
        if "delivery" in why:
            hints.append(
                "Is an adapter failing to send (see the amber.session log)? "
                "wait_idle(settled=False) does not wait for delivery."
            )
        return f"{head}: {'; '.join(why.values())}. {' '.join(hints)}"
