"""The effects thread: one trio event loop that runs model calls, tool runs and timers.

Actors never block on slow work. They ``submit`` an async function to the
loop; it runs in its own cancel scope and reports back by telling an actor.
``EffectHandle.cancel`` cancels that scope from any thread, so an interrupt is
a cancel-scope cancel, not a flag the effect has to poll.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar

import trio

from ._errors import AlreadyStarted, EffectsStopped, InvalidConfig

__all__ = ["EffectHandle", "Effects"]

log = logging.getLogger("amber.effects")

_TOOL_RUN: ContextVar[tuple[Effects, str, str, str] | None] = ContextVar(
    "amber_tool_run", default=None
)
"""The loop, session, tool and call id of the tool run this code is part of (None: none). A
context
variable: trio gives each task a context of its own and copies it into the worker thread
of a sync tool, so the tool's code, and what it calls, sees it."""


class EffectHandle:
    """A submitted effect: cancel it from any thread."""

    __slots__ = ("_cancelled", "_effects", "_lock", "_scope", "done", "name")

    def __init__(self, effects: Effects, name: str) -> None:
        self._effects = effects
        self._scope: trio.CancelScope | None = None
        self._cancelled = False
        self._lock = threading.Lock()
        self.name = name
        self.done = threading.Event()
        """Set once the effect has finished (normally, by error or cancelled)."""

    @property
    def cancelled(self) -> bool:
        """True once ``cancel`` was called."""
        return self._cancelled

    def cancel(self) -> None:
        """Cancel the effect's scope (thread-safe; idempotent; never blocks)."""
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            scope = self._scope
        if scope is not None and not self.done.is_set():
            self._effects.call_soon(scope.cancel)

    def _bind(self, scope: trio.CancelScope) -> bool:
        """Attach the running scope; False if cancel came first (then do not start)."""
        with self._lock:
            self._scope = scope
            return not self._cancelled

    def __repr__(self) -> str:
        state = "done" if self.done.is_set() else "cancelled" if self._cancelled else "running"
        return f"<EffectHandle {self.name} {state}>"


class Effects:
    """A trio loop in its own daemon thread.

    Args:
        name: the thread's name.
    """

    def __init__(self, *, name: str = "amber-effects") -> None:
        self._name = name
        self._thread: threading.Thread | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._ready = threading.Event()
        self._stop: trio.Event | None = None
        self._failure: BaseException | None = None
        self.running = 0
        """Effects started and not yet finished (read it from the loop or for display)."""

    @property
    def alive(self) -> bool:
        """True while the loop runs."""
        return self._thread is not None and self._thread.is_alive() and self._token is not None

    def refuse_blocking(self, what: str, instead: str) -> None:
        """Refuse a call that blocks until a turn gets on, made on the loop thread (from an
        async tool): the loop it would block runs every turn, so it could only time out.

        Raises:
            InvalidConfig: called on the loop thread.
        """
        if self._thread is not None and threading.current_thread() is self._thread:
            raise InvalidConfig(
                f"Runtime.{what}() was called on the runtime's effects loop (from an async "
                "tool, or code it calls): it would block the loop that runs every turn, its "
                f"own answer's too, until it timed out. {instead}"
            )

    @contextlib.contextmanager
    def running_tool(self, session_id: str, tool_name: str, call_id: str = "") -> Iterator[None]:
        """Mark the code run inside as the tool ``tool_name``'s run ``call_id`` in
        ``session_id``'s turn (for ``refuse_own_wait`` and ``own_tool_call``)."""
        token = _TOOL_RUN.set((self, session_id, tool_name, call_id))
        try:
            yield
        finally:
            _TOOL_RUN.reset(token)

    def own_tool_call(self) -> tuple[str, str] | None:
        """The session and call id of this loop's tool run the calling code is part of (a
        sync tool that stops the runtime: the stop must not wait for it), else None."""
        run = _TOOL_RUN.get()
        return None if run is None or run[0] is not self else (run[1], run[3])

    def refuse_own_wait(self, what: str, session_id: str, why: str, instead: str) -> None:
        """Refuse a wait for ``session_id`` made by a tool running in that session's turn (a
        sync tool, in its worker thread): the turn waits for the tool, so it could only time
        out.

        Raises:
            InvalidConfig: called from a tool run of this loop in ``session_id``'s turn.
        """
        run = _TOOL_RUN.get()
        if run is None or run[0] is not self or run[1] != session_id:
            return
        raise InvalidConfig(
            f"Runtime.{what}({session_id!r}) was called from the tool {run[2]!r}, which runs "
            f"in a turn of session {session_id!r}: {why}, so the wait could only time out. "
            f"{instead}"
        )

    def start(self, *, timeout: float = 10.0) -> None:
        """Start the loop; returns once it accepts effects.

        Raises:
            RuntimeError: already started, or the loop did not come up in ``timeout``.
        """
        if self._thread is not None:
            raise AlreadyStarted("Effects.start() was called twice; an Effects loop starts once.")
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout) or self._token is None:
            raise EffectsStopped(
                f"The trio effects loop did not start within {timeout} s"
                + (f": {self._failure!r}" if self._failure else ".")
            )

    def _run(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as exc:
            self._failure = exc
            log.exception("the trio effects loop failed")
        finally:
            self._token = None
            self._ready.set()

    async def _main(self) -> None:
        self._stop = trio.Event()
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._token = trio.lowlevel.current_trio_token()
            self._ready.set()
            await self._stop.wait()
            nursery.cancel_scope.cancel()

    def call_soon(self, fn: Callable[[], object]) -> None:
        """Run a quick sync ``fn`` on the loop thread soon (thread-safe).

        Raises:
            EffectsStopped: the loop is not running.
        """
        token = self._token
        if token is None:
            raise EffectsStopped(
                "The effects loop is not running; start the Runtime before submitting work."
            )
        try:
            token.run_sync_soon(fn)
        except trio.RunFinishedError:
            raise EffectsStopped("The effects loop has stopped; no new work is accepted.") from None

    def handle(self, name: str = "effect") -> EffectHandle:
        """A handle to pass to ``submit`` later (so it can be cancelled before it starts)."""
        return EffectHandle(self, name)

    def submit(
        self,
        fn: Callable[[], Awaitable[object]],
        *,
        name: str = "effect",
        handle: EffectHandle | None = None,
    ) -> EffectHandle:
        """Run ``await fn()`` on the loop in a new cancel scope.

        ``fn`` reports its own results (by telling an actor); an exception it
        lets out is logged, never raised here. Cancellation ends it quietly. A
        ``handle`` cancelled before the effect starts keeps it from starting.

        Raises:
            EffectsStopped: the loop is not running.
        """
        if handle is None:
            handle = EffectHandle(self, name)

        def spawn() -> None:
            if self._nursery is None:
                handle.done.set()
                return
            self._nursery.start_soon(self._guard, fn, handle, name=handle.name)

        self.call_soon(spawn)
        return handle

    async def _guard(self, fn: Callable[[], Awaitable[object]], handle: EffectHandle) -> None:
        self.running += 1
        try:
            with trio.CancelScope() as scope:
                if not handle._bind(scope):
                    return
                await fn()
        except Exception:
            log.exception("effect %s failed", handle.name)
        finally:
            self.running -= 1
            handle.done.set()

    def stop(self, *, timeout: float = 10.0) -> None:
        """Cancel every running effect and stop the loop (idempotent)."""
        thread = self._thread
        if thread is None or not thread.is_alive():
            return
        stop = self._stop
        if stop is not None:
            with contextlib.suppress(EffectsStopped):
                self.call_soon(stop.set)
        thread.join(timeout)
        if thread.is_alive():
            log.warning("the trio effects loop did not stop within %s s", timeout)
