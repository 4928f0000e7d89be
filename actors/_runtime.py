"""``Runtime``: the actor system a chat bot embeds (DESIGN §7).

It owns the store thread, the trio effects loop, the gateway, one actor per
tool and one per live session. Session actors are made on demand, stopped
when idle for ``Settings.passivate_after`` seconds and reloaded from the
store on the next message. ``stop()`` (or leaving the ``with`` block) ends
running turns cleanly: their input goes back to pending and is answered when
the runtime starts again.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

import attrs
import pykka
import trio

from runtime import (
    AuditRow,
    Category,
    Delta,
    Message,
    SessionState,
    Status,
    Timeline,
    UnknownSession,
    Update,
    UserInput,
)
from runtime.store import MemoryStore, SessionInfo, SQLiteStore, Store

from ._effects import Effects
from ._gateway import Gateway, Subscription
from ._ids import Clock, IdFactory, random_ids, utc_now
from ._model import Model
from ._services import Services
from ._session import SessionActor, _Delivered
from ._settings import Settings
from ._storage import StoreThread
from ._tool_actor import ToolActor, ToolStats
from ._tools import Tool, Toolbox

__all__ = ["Runtime", "RuntimeStopped"]

log = logging.getLogger("amber.runtime")

T = TypeVar("T")


class RuntimeStopped(RuntimeError):
    """The runtime is not running (not started yet, or stopped)."""


@attrs.define(eq=False)
class _Live:
    ref: pykka.ActorRef[Any]
    proxy: Any


def _open_store(store: Store | str | os.PathLike[str]) -> Store:
    if isinstance(store, str) and store == ":memory:":
        return MemoryStore()
    if isinstance(store, str | os.PathLike):
        return SQLiteStore(Path(store))
    if isinstance(store, Store):
        return store
    raise TypeError(
        f"store must be a Store, a path to a SQLite file, or ':memory:' (got {store!r} that is "
        f"a {type(store).__name__!r})."
    )


class Runtime:
    """Amber's actor runtime: sessions, tools, adapters, a model and a store.

    Args:
        model: the model every session calls (a ``ScriptedModel``, a provider).
        store: a ``Store``, a SQLite file path (default ``amber.db``), or
            ``":memory:"`` for an in-memory store (tests).
        tools: ``Tool`` values (or plain callables, wrapped with ``tool``).
        adapters: started adapter actors (``CliAdapter.start()`` …); the
            runtime attaches them and stops them when it stops.
        settings: how sessions run; ``Settings()`` by default.
        ids: makes message and turn ids (random by default).
        clock: wall-clock time for events (UTC now by default).

    Use it as a context manager, or call ``start()`` and ``stop()``::

        with Runtime(model=ScriptedModel([reply("Hi!")]), store=":memory:") as rt:
            rt.send("s1", "hello")
            state = rt.wait_idle("s1", timeout=5)
    """

    def __init__(
        self,
        *,
        model: Model,
        store: Store | str | os.PathLike[str] = "amber.db",
        tools: Iterable[Tool | Callable[..., Any]] = (),
        adapters: Iterable[pykka.ActorRef[Any]] = (),
        settings: Settings | None = None,
        ids: IdFactory = random_ids,
        clock: Clock = utc_now,
    ) -> None:
        if not hasattr(model, "stream") or not callable(model.stream):
            raise TypeError(
                f"model must have an async stream(request) method (a ScriptedModel or a "
                f"provider model); got {model!r}."
            )
        if settings is not None and not isinstance(settings, Settings):
            raise TypeError(f"settings must be a Settings (got {settings!r}).")
        self.settings = settings or Settings()
        self.model = model
        self.toolbox = tools if isinstance(tools, Toolbox) else Toolbox(tools)
        self.ids = ids
        self.clock = clock
        self._store_arg = store
        self._adapter_refs = list(adapters)
        self._lock = threading.RLock()
        self._live_changed = threading.Condition(self._lock)
        self._live: dict[str, _Live] = {}
        self._state = "new"
        self._store: StoreThread | None = None
        self._effects: Effects | None = None
        self._tool_refs: dict[str, pykka.ActorRef[Any]] = {}
        self._services: Services | None = None
        self.gateway = Gateway(self)
        """The broker: ``submit``, ``post``, ``subscribe``."""

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> Self:
        """Start the store thread, the effects loop, tool actors and adapters.

        Sessions that have input waiting (or a turn left running by a stopped
        runtime) are loaded and resumed.

        Raises:
            RuntimeError: the runtime was started before.
            StoreError: the store cannot be opened.
        """
        with self._lock:
            if self._state != "new":
                raise RuntimeError(
                    f"Runtime.start() on a runtime that is {self._state}; a runtime starts once, "
                    "make a new one to start again."
                )
            self._state = "starting"
        store = StoreThread(_open_store(self._store_arg))
        store.start()
        self._store = store
        effects = Effects()
        effects.start()
        self._effects = effects
        try:
            for tool in self.toolbox:
                self._tool_refs[tool.name] = ToolActor.start(tool, effects)
            for ref in self._adapter_refs:
                self.gateway.register(ref)
            self._services = Services(
                store=store,
                effects=effects,
                gateway=self.gateway,
                model=self.model,
                tools=self.toolbox,
                tool_specs=self.toolbox.specs(),
                tool_refs=self._tool_refs,
                settings=self.settings,
                ids=self.ids,
                clock=self.clock,
                passivate=self._request_passivation,
                forget=self._forget,
            )
            with self._lock:
                self._state = "running"
            for info in self._call_store(lambda s: s.list_sessions()):
                if info.active_turn_id is not None or info.counts.get(Status.PENDING_AGENT):
                    self._session(info.session_id)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, *, timeout: float = 30.0) -> None:
        """Stop everything; a running turn's input goes back to pending (idempotent).

        Every event stored before ``stop`` returns is on disk; no thread is
        left running.
        """
        with self._lock:
            if self._state in ("stopped", "new"):
                self._state = "stopped"
                return
            self._state = "stopping"
            live = list(self._live.items())
            self._live.clear()
        for session_id, entry in live:
            try:
                entry.proxy.shutdown().get(timeout=timeout)
            except Exception:
                log.exception("session %s did not shut down cleanly", session_id)
            entry.ref.stop(block=True, timeout=timeout)
        for ref in self._tool_refs.values():
            _stop(ref, timeout)
        for ref in self._adapter_refs:
            _stop(ref, timeout)
        for sub in list(self.gateway._subscribers):
            sub.close()
        if self._effects is not None:
            self._effects.stop(timeout=timeout)
        if self._store is not None:
            self._store.stop(timeout=timeout)
        with self._lock:
            self._state = "stopped"

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """True between ``start`` and ``stop``."""
        return self._state == "running"

    # -- the embedding API ---------------------------------------------------------------

    def send(self, session_id: str, text: UserInput | str, **fields: Any) -> Message:
        """A person's message to a session; returns it as stored (``pending_agent``).

        ``fields`` fill the other ``UserInput`` fields (``sender``,
        ``chatbot_id``, ``channel_id``, ``attachments`` …).

        Raises:
            InvalidInput: the input breaks a rule; nothing was stored.
            RuntimeStopped: the runtime is not running.
        """
        return self.gateway.submit(session_id, text, **fields)

    def post(self, session_id: str, category: Category, content: str, **fields: Any) -> Message:
        """Post a cron prompt, compaction request, background alert or notification."""
        return self.gateway.post(session_id, category, content, **fields)

    def interrupt(self, session_id: str, reason: str = "interrupted by the user") -> bool:
        """Interrupt the session's running turn; True if there was one."""
        with self._lock:
            entry = self._live.get(session_id)
        if entry is None:
            return False
        result: bool = entry.proxy.interrupt(reason).get(timeout=self.settings.ask_timeout)
        return result

    def wait_idle(
        self, session_id: str, *, timeout: float | None = 30.0, settled: bool = True
    ) -> SessionState:
        """Wait until no turn runs and no input waits; returns the head state.

        With ``settled`` (the default) it also waits until adapters have
        reported every message they deliver as delivered.

        Raises:
            TimeoutError: not idle within ``timeout`` seconds.
            UnknownSession: the store has no such session.
        """
        entry = self._session_if_needed(session_id)
        if entry is None:
            return self._call_store(lambda s: s.load_state(session_id))
        try:
            future = entry.proxy.when_idle(settled).get(timeout=self.settings.ask_timeout)
        except pykka.ActorDeadError:  # passivated or stopped meanwhile: ask again
            future = self._session_call(session_id, lambda p: p.when_idle(settled))
        try:
            state: SessionState = future.get(timeout=timeout)
        except pykka.Timeout:
            raise TimeoutError(
                f"Session {session_id!r} was not idle within {timeout} s; a turn may be waiting "
                "on a slow model or tool (raise the timeout, or interrupt it)."
            ) from None
        return state

    def state(self, session_id: str) -> SessionState:
        """The session's head state (from its actor if live, else from the store).

        Raises:
            UnknownSession: the store has no such session.
        """
        with self._lock:
            entry = self._live.get(session_id)
        if entry is not None:
            try:
                state: SessionState = entry.proxy.state_now().get(timeout=self.settings.ask_timeout)
                return state
            except pykka.ActorDeadError:
                pass
        return self._call_store(lambda s: s.load_state(session_id))

    def model_calls(self, session_id: str, turn_id: str | None = None) -> tuple[AuditRow, ...]:
        """The session's model calls (audit rows) in sequence order, running ones included.

        Raises:
            UnknownSession: the store has no such session.
        """
        return self.state(session_id).model_calls(turn_id)

    def timeline(self, session_id: str) -> Timeline:
        """Every state of the session since its first event, read from the store.

        Raises:
            UnknownSession: the store has no such session.
        """
        return self._call_store(lambda s: s.load_timeline(session_id))

    def sessions(self) -> list[SessionInfo]:
        """Every stored session, most recently active first."""
        return self._call_store(lambda s: s.list_sessions())

    def live_sessions(self) -> list[str]:
        """Ids of the sessions with a running actor."""
        with self._lock:
            return sorted(self._live)

    def wait_passivated(self, session_id: str, *, timeout: float | None = 30.0) -> bool:
        """Wait until the session has no live actor; False if it still has one after ``timeout``."""
        with self._live_changed:
            return self._live_changed.wait_for(lambda: session_id not in self._live, timeout)

    def subscribe(
        self,
        callback: Callable[[Update | Delta], object],
        *,
        session_id: str | None = None,
        deltas: bool = False,
    ) -> Subscription:
        """Call ``callback`` with every new or changed message (and live deltas if asked)."""
        return self.gateway.subscribe(callback, session_id=session_id, deltas=deltas)

    def tool_stats(self) -> list[ToolStats]:
        """Counts per tool."""
        return [ref.proxy().stats().get(timeout=10) for ref in self._tool_refs.values()]

    def call_store(self, fn: Callable[[Store], T], *, timeout: float | None = None) -> T:
        """Run ``fn(store)`` on the store's thread and return its result (exports, snapshots)."""
        return self._call_store(fn, timeout=timeout)

    # -- internals ----------------------------------------------------------------------

    def _call_store(self, fn: Callable[[Store], T], *, timeout: float | None = None) -> T:
        if self._store is None or self._state not in ("running", "starting"):
            raise RuntimeStopped(_not_running(self._state))
        return self._store.call(fn).result(timeout or self.settings.store_timeout)

    def _session(self, session_id: str) -> _Live:
        """The session's live actor, started (and loaded) if needed."""
        with self._lock:
            if self._state != "running":
                raise RuntimeStopped(_not_running(self._state))
            entry = self._live.get(session_id)
            if entry is None:
                assert self._services is not None
                ref = SessionActor.start(self._services, session_id)
                entry = self._live[session_id] = _Live(ref, ref.proxy())
            return entry

    def _session_if_needed(self, session_id: str) -> _Live | None:
        with self._lock:
            entry = self._live.get(session_id)
        if entry is not None:
            return entry
        info = self._call_store(lambda s: s.session(session_id) if session_id in s else None)
        if info is None:
            raise UnknownSession(
                f"There is no session {session_id!r}; send it a message first, or list the "
                "stored ones with Runtime.sessions()."
            )
        if info.active_turn_id is None and not info.counts.get(Status.PENDING_AGENT):
            return None
        return self._session(session_id)

    def _session_call(self, session_id: str, fn: Callable[[Any], Any]) -> Any:
        for _ in range(3):
            entry = self._session(session_id)
            try:
                return fn(entry.proxy).get(timeout=self.settings.ask_timeout)
            except pykka.ActorDeadError:
                # Passivated between lookup and call: drop it and load the session again.
                with self._lock:
                    if self._live.get(session_id) is entry:
                        del self._live[session_id]
        raise RuntimeStopped(f"Session {session_id!r} kept stopping; is the runtime stopping?")

    def _add_input(self, message: Message) -> Message:
        result: Message = self._session_call(message.session_id, lambda p: p.add_input(message))
        return result

    def _deliver(self, session_id: str, message_id: str, expected: Status) -> None:
        with self._lock:
            if self._state != "running":
                return
            entry = self._live.get(session_id)
        if entry is None:
            entry = self._session(session_id)
        try:
            entry.ref.tell(_Delivered(message_id, expected))
        except pykka.ActorDeadError:
            self._session(session_id).ref.tell(_Delivered(message_id, expected))

    def _forget(self, session_id: str, ref: pykka.ActorRef[Any]) -> None:
        with self._lock:
            entry = self._live.get(session_id)
            if entry is not None and entry.ref is ref:
                del self._live[session_id]
                self._live_changed.notify_all()

    def _request_passivation(self, session_id: str, ref: pykka.ActorRef[Any], seq: int) -> None:
        effects = self._effects
        if effects is None:
            return

        async def passivate() -> None:
            await trio.to_thread.run_sync(self._passivate, session_id, ref, seq)

        effects.submit(passivate, name=f"passivate {session_id}")

    def _passivate(self, session_id: str, ref: pykka.ActorRef[Any], seq: int) -> None:
        with self._lock:
            entry = self._live.get(session_id)
            if self._state != "running" or entry is None or entry.ref is not ref:
                return
            try:
                agreed = entry.proxy.close_if_idle(seq).get(timeout=self.settings.ask_timeout)
            except (pykka.ActorDeadError, pykka.Timeout):
                agreed = False
            if not agreed:
                return
            del self._live[session_id]
            self._live_changed.notify_all()
        ref.stop(block=False)
        log.debug("session %s passivated at seq %d", session_id, seq)


def _stop(ref: pykka.ActorRef[Any], timeout: float) -> None:
    try:
        ref.stop(block=True, timeout=timeout)
    except pykka.ActorDeadError:
        pass
    except pykka.Timeout:
        log.warning("actor %s did not stop within %s s", ref, timeout)


def _not_running(state: str) -> str:
    if state == "new":
        return "The runtime is not started; call start() or use it in a with block."
    return f"The runtime is {state}; make a new Runtime to go on."
