"""The router: which session actors are live, loading them, routing to them, passivating them.

It owns the live-session table and its lock. A call for a session goes to
its actor, started (and loaded from the store) on demand; a call that meets
an actor just passivated retries on a fresh one. An idle actor asks to be
passivated; the router agrees under the lock only if nothing happened since
(``close_if_idle(seq)``), so no input is ever routed to an actor that is
stopping. Adapters report deliveries here (the ``DeliverySink``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import attrs
import pykka
import trio

from runtime import Delivered, Status

from ._deadline import Deadline
from ._errors import OwnedElsewhere, RuntimeStopped, SessionGone
from ._services import Services
from ._session import SendFailed, SessionActor, describe_error

__all__ = ["Router"]

log = logging.getLogger("amber.router")

T = TypeVar("T")


@attrs.define(eq=False)
class _Live:
    ref: pykka.ActorRef[Any]
    proxy: Any


class Router:
    """The live-session table of a runtime (made and started by ``Runtime``)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._live: dict[str, _Live] = {}
        self._services: Services | None = None
        self._why_closed = "The runtime is not started; call start() or use it in a with block."
        self._closing = False  # closing: no new actors, nothing routed but delivery reports
        self._dropping = 0  # drops under way (their actors are out of the table, not stopped)
        self.claim: Callable[[str], bool] | None = None
        """With a shared store: takes a session's lease before its actor is made (False:
        another worker holds it, and the session is not loaded here)."""
        self.passivated: Callable[[str], None] | None = None
        """With a shared store: gives back the lease of a session that passivated."""
        self.unloadable: Callable[[str, Exception], None] | None = None
        """With a shared store: gives back, unannounced, the lease of a session whose load
        failed (with the error its callers got)."""

    def open(self, services: Services) -> None:
        """Start routing, with the services new session actors get."""
        with self._lock:
            self._services = services
            self._closing = False

    def close(
        self,
        why: str,
        *,
        timeout: float | Deadline,
        drain: Callable[[float], None] | None = None,
    ) -> None:
        """Stop routing; every live session shuts down (a running turn's input goes back to
        pending) and its actor stops.

        Args:
            why: the ``RuntimeStopped`` message of calls from now on.
            timeout: the close's deadline (seconds from now, or the stop's ``Deadline``):
                every wait shares it. The sessions' running sync tool calls are waited for
                until ``RESERVE`` s before it; then each session's shutdown, the drain,
                the wait for a session being dropped meanwhile and each actor's stop get
                what is left. Each wait ends as soon as what it waits for is done; only
                something that hangs uses the time left.
            drain: called with the seconds left once every session has shut down (so none
                publishes any more); returns when the adapters have handled what was
                published (the gateway's ``drain``). Until then the sessions' actors still
                store the adapters' delivery reports: a reply being sent when the runtime
                stopped is recorded delivered, and not sent again after a restart.
        """
        deadline = timeout if isinstance(timeout, Deadline) else Deadline(timeout, time.monotonic)
        with self._lock:
            self._why_closed = why
            self._closing = True
            live = list(self._live.items())
        self._drain_tools(live, deadline)
        for session_id, entry in live:
            try:
                entry.proxy.shutdown().get(timeout=deadline.left())
            except Exception:
                log.exception("session %s did not shut down cleanly", session_id)
        if drain is not None:
            try:
                drain(deadline.left())
            except Exception:
                log.exception("the adapters could not be drained")
        with self._lock:
            self._services = None
            self._live.clear()
            self._changed.notify_all()
            # A session being dropped (its lease lost, a reload) was out of the table when
            # the close began: wait for its actor to stop too, or it would run on after.
            if not self._changed.wait_for(lambda: self._dropping == 0, deadline.left()):
                log.warning("a session being stopped did not stop by the stop's deadline "
                            "(%s s)", deadline.timeout)  # fmt: skip
        # Each actor's stop is queued behind the delivery reports told to it in the drain.
        for session_id, entry in live:
            try:
                entry.ref.stop(block=True, timeout=deadline.left())
            except pykka.ActorDeadError:
                pass
            except pykka.Timeout:
                # Go on stopping the others: a Timeout escaping here left every later
                # actor, and the effects and store threads, running (pykka's actor threads
                # are not daemon threads: the process could not exit).
                log.warning("session %s did not stop by the stop's deadline (%s s)",
                            session_id, deadline.timeout)  # fmt: skip

    def _drain_tools(self, live: list[tuple[str, _Live]], deadline: Deadline) -> None:
        """Wait, until ``RESERVE`` s before the deadline, for the sessions' running sync tool
        calls: a call that ends meanwhile has its result stored (never run again after a
        restart); one still running after it is recorded interrupted by the shutdown."""
        services = self._services
        # A sync tool that stops the runtime: its own call ends only once the stop returns.
        own = services.effects.own_tool_call() if services is not None else None
        waits = []
        for session_id, entry in live:
            skip = own[1] if own is not None and own[0] == session_id else None
            try:
                waits.append((session_id, entry.proxy.drain(skip).get(timeout=deadline.left())))
            except Exception:
                log.exception("session %s could not begin its stop", session_id)
        for session_id, drained in waits:
            try:
                drained.get(timeout=deadline.drain_left())
            except pykka.Timeout:
                log.warning(
                    "session %s: tool calls still ran when the stop's time for them was out "
                    "(its timeout, %s s, less what the steps after need); they are recorded "
                    "interrupted (they may have run)", session_id, deadline.timeout,
                )  # fmt: skip

    # -- routing ------------------------------------------------------------------------

    def live(self, session_id: str) -> Any | None:
        """The session's actor proxy if it is live, else None."""
        with self._lock:
            entry = self._live.get(session_id)
        return None if entry is None else entry.proxy

    def live_sessions(self) -> list[str]:
        """Ids of the sessions with a live actor, sorted."""
        with self._lock:
            return sorted(self._live)

    def unless_live(self, session_id: str, fn: Callable[[], object]) -> None:
        """Call ``fn()`` if the session has no live actor, with no actor made for it meanwhile
        (under the table's lock: ``fn`` must not wait for a session actor)."""
        with self._lock:
            if session_id not in self._live:
                fn()

    def _entry(self, session_id: str, *, report: bool = False) -> _Live:
        with self._lock:
            services = self._services
            if services is None or (self._closing and not report):
                raise RuntimeStopped(self._why_closed)
            entry = self._live.get(session_id)
            if entry is None and self._closing:
                raise RuntimeStopped(self._why_closed)
            if entry is None:
                if self.claim is not None and not self.claim(session_id):
                    raise OwnedElsewhere(
                        f"Session {session_id!r} is run by another worker (it holds the "
                        "session's lease); send or post input to it (stored for its owner), "
                        "or call this on the worker that runs it."
                    )
                ref = SessionActor.start(services, session_id)
                entry = self._live[session_id] = _Live(ref, ref.proxy())
            return entry

    def load(self, session_id: str) -> None:
        """Make the session live (it loads and resumes what waits)."""
        self._entry(session_id)

    def drop(self, session_id: str, *, timeout: float = 30.0, lost: bool = False) -> None:
        """Stop the session's actor, if it is live (a running turn gives its input back,
        if the store still takes its writes). The next call loads it again.

        ``lost``: its lease was taken over, and the caller logged it: the refused writes
        of the stop are not logged again.
        """
        with self._lock:
            entry = self._live.pop(session_id, None)
            if entry is None:
                return
            self._dropping += 1
            self._changed.notify_all()
        try:
            entry.proxy.shutdown(lost=lost).get(timeout=timeout)
        except Exception:
            log.warning("session %s did not shut down cleanly", session_id, exc_info=True)
        finally:
            with contextlib.suppress(pykka.ActorDeadError, pykka.Timeout):
                entry.ref.stop(block=True, timeout=timeout)
            with self._lock:
                self._dropping -= 1
                self._changed.notify_all()

    def reload(self, session_id: str) -> None:
        """Stop the session's actor and load it again from the store (it changed elsewhere).

        A close that began meanwhile wins: the session is not loaded again, and nothing
        is raised (the caller, the lease keeper's thread, has nothing to do about it).
        """
        self.drop(session_id)
        try:
            self.load(session_id)
        except RuntimeStopped:
            log.debug("session %s not reloaded: the runtime is stopping", session_id)

    def call(self, session_id: str, fn: Callable[[Any], Any], *, timeout: float) -> Any:
        """``fn(proxy).get()`` on the session's actor, started if needed.

        Raises:
            RuntimeStopped: the runtime is not running.
            SessionGone: the actor stopped under every try.
        """
        for _ in range(3):
            entry = self._entry(session_id)
            try:
                return fn(entry.proxy).get(timeout=timeout)
            except pykka.ActorDeadError:
                # Passivated between lookup and call: drop it and load the session again.
                self.forget(session_id, entry.ref)
        raise SessionGone(
            f"Session {session_id!r} kept stopping while a call was routed to it; is the "
            "runtime stopping?"
        )

    def tell(self, session_id: str, message: Any) -> None:
        """Tell ``message`` to the session's actor, started if needed; an ``AskInput`` whose
        session keeps stopping fails its waiter.

        Raises:
            RuntimeStopped: the runtime is not running.
        """
        for _ in range(3):
            entry = self._entry(session_id)
            try:
                entry.ref.tell(message)
                return
            except pykka.ActorDeadError:
                self.forget(session_id, entry.ref)
        gone = SessionGone(f"Session {session_id!r} kept stopping; is the runtime stopping?")
        waiter = getattr(message, "waiter", None)
        if waiter is None:
            raise gone
        waiter.fail(gone)

    def reroute(self, session_id: str, message: Any) -> None:
        """A closed actor's message that must not be lost: to the session's next actor."""
        with self._lock:
            live = self._live.get(session_id)
            if live is not None and not live.ref.is_alive():
                del self._live[session_id]
        try:
            self.tell(session_id, message)
        except (RuntimeStopped, OwnedElsewhere) as exc:
            waiter = getattr(message, "waiter", None)
            if waiter is not None:
                waiter.fail(exc)

    # -- the delivery sink -------------------------------------------------------------------

    def delivered(self, session_id: str, message_id: str, expected: Status) -> None:
        """An adapter sent or absorbed ``message_id``; tell its session (loaded if needed)."""
        with self._lock:
            services = self._services
        if services is None:
            return
        report = Delivered(message_id=message_id, expected=expected, **services.stamp())
        for _ in range(3):
            try:
                entry = self._entry(session_id, report=True)
            except (RuntimeStopped, OwnedElsewhere):
                return  # stopped, or the session's owner elsewhere hears of it
            try:
                entry.ref.tell(report)
                return
            except pykka.ActorDeadError:
                self.forget(session_id, entry.ref)

    def failed(
        self, session_id: str, message_id: str, adapter: pykka.ActorRef[Any], error: Exception
    ) -> None:
        """An adapter could not send ``message_id`` (``error`` is what its ``render``
        raised): its live session tries again later (``Settings.delivery_retries``) and
        logs each try. A session not live is not loaded for it (loading it announces its
        undelivered output again anyway): the failure is logged here, with its traceback."""
        with self._lock:
            entry = self._live.get(session_id)
        if entry is not None:
            try:
                entry.ref.tell(SendFailed(message_id=message_id, adapter=adapter, error=error))
                return
            except pykka.ActorDeadError:
                pass
        log.error(
            "session %s: %s could not send message %s (%s); the session is not live, so it "
            "is sent again when the session is next loaded (its next input, or a restart)",
            session_id, adapter.actor_class.__name__, message_id, describe_error(error),
            exc_info=error,
        )  # fmt: skip

    # -- passivation ---------------------------------------------------------------------------

    def forget(self, session_id: str, ref: pykka.ActorRef[Any]) -> None:
        """Drop ``ref`` from the table if it is still the session's actor."""
        with self._lock:
            entry = self._live.get(session_id)
            if entry is not None and entry.ref is ref:
                del self._live[session_id]
                self._changed.notify_all()

    def load_failed(self, session_id: str, error: Exception) -> None:
        """A session's actor could not load it and stopped (its callers were told
        ``error``): its lease is given back (a shared store), unless the session is live
        again, so that another worker may run it rather than this one holding it until a
        poll."""
        if self.unloadable is not None:
            self.unloadable(session_id, error)

    def request_passivation(self, session_id: str, ref: pykka.ActorRef[Any], seq: int) -> None:
        """An idle actor asks to stop; decided off its thread (it must answer the ask)."""
        services = self._services
        if services is None or self._closing:
            return

        async def passivate() -> None:
            await trio.to_thread.run_sync(self._passivate, session_id, ref, seq)

        services.effects.submit(passivate, name=f"passivate {session_id}")

    def _passivate(self, session_id: str, ref: pykka.ActorRef[Any], seq: int) -> None:
        with self._lock:
            entry = self._live.get(session_id)
            services = self._services
            if services is None or self._closing or entry is None or entry.ref is not ref:
                return
            try:
                agreed = entry.proxy.close_if_idle(seq).get(timeout=services.settings.ask_timeout)
            except (pykka.ActorDeadError, pykka.Timeout):
                agreed = False
            if not agreed:
                return
            del self._live[session_id]
            self._changed.notify_all()
        ref.stop(block=False)
        log.debug("session %s passivated at seq %d", session_id, seq)
        if self.passivated is not None:
            self.passivated(session_id)

    def wait_passivated(self, session_id: str, timeout: float | None) -> bool:
        """Wait until the session has no live actor; False if it still has one after ``timeout``."""
        with self._changed:
            return self._changed.wait_for(lambda: session_id not in self._live, timeout)
