"""``Runtime``: the actor system a chat bot embeds (DESIGN §7).

It owns the store thread, the trio effects loop, the gateway, one actor per
tool and one per live session. Session actors are made on demand, stopped
when idle for ``Settings.passivate_after`` seconds and reloaded from the
store on the next message. ``stop()`` (or leaving the ``with`` block) ends
running turns cleanly: their input goes back to pending and is answered when
the runtime starts again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any, Self, TypeVar

import pykka

from runtime import (
    ArtifactStore,
    AuditRow,
    Category,
    Delta,
    Draft,
    InputLimits,
    Message,
    SessionState,
    Timeline,
    UnknownSession,
    Update,
    UserInput,
)
from runtime.store import SessionInfo, Store

from ._answers import ReplyWaiter, StreamEvent, in_a_thread, warn_blocking
from ._approving import Approving
from ._asking import Asking
from ._damage import call_told, resumable
from ._deadline import Deadline
from ._drafts import interrupt_reason, post_draft, session_id_of, user_draft
from ._effects import Effects
from ._errors import (
    AlreadyStarted,
    InvalidConfig,
    OwnedElsewhere,
    RuntimeStopped,
    StopTimeout,
    not_running,
    unknown_session,
)
from ._frontend import AnswerWatch, runs_no_sessions
from ._gateway import Gateway, Subscription
from ._ids import Clock, utc_now
from ._leasing import LeaseKeeper
from ._model import Model
from ._ownership import Resume, StoreBusy, new_runner_id, resume_policy
from ._router import Router
from ._runtime_args import (
    _adapter_list,
    _check_adapters,
    _front_end_model,
    _stop,
    _tool_list,
    check_settings,
    check_store_function,
)
from ._seconds import wait_limit
from ._services import Monotonic, Services
from ._settings import Settings
from ._sharing import add_notification, join_shared_store, route_input
from ._storage import StoreThread
from ._stores import StoreHold, check_front_end_store, check_store, hold_store, is_shared
from ._teardown import stop_all, stop_in_background
from ._tool_actor import ToolActor, ToolStats
from ._toolbox import Toolbox
from ._tools import Tool
from ._waiting import Waiting

__all__ = ["Runtime"]

log = logging.getLogger("amber.runtime")

T = TypeVar("T")


class Runtime(Asking, Approving, Waiting):
    """Amber's actor runtime: sessions, tools, adapters, a model and a store.

    Args:
        model: the model every session calls (a ``ScriptedModel``, a provider);
            required unless ``run_sessions=False``.
        store: a ``Store``, a SQLite file path (default ``amber.db``), or
            ``":memory:"`` for an in-memory store (tests).
        tools: ``Tool`` values (or plain callables, wrapped with ``tool``).
        adapters: started adapter actors (``CliAdapter.start()`` …); the
            runtime attaches them and stops them when it stops.
        settings: how sessions run; ``Settings()`` by default.
        resume: which stored sessions the runtime loads and answers when it
            starts: ``"none"`` (the default: only the sessions it is sent to),
            ``"all"`` (a service: every session with input waiting, a turn a
            dead runner left, or output not yet delivered), or the ids of the
            sessions to continue.
        clock: wall-clock time for events (UTC now by default).
        monotonic: monotonic seconds for durations (``time.monotonic`` by default).
        runner: this runtime's incarnation id, recorded with each turn it starts
            (default: a new random one; give one only to make runs reproducible).
        run_sessions: False makes a front end on a shared (PostgreSQL) store: it
            never runs a session nor takes a lease, and needs no ``model``. ``send``
            and ``post`` store input for the workers (their ``NOTIFY`` wakes one),
            ``approve`` and ``deny`` store decisions, and ``ask``, ``stream`` and
            ``wait_idle`` read the answer from the store when a worker has stored it.
            What needs the session's actor here raises ``OwnedElsewhere``:
            ``interrupt``, and ``post`` of a notification (docs/scaling.md). A store
            that is not shared (a SQLite path, ``":memory:"``) raises ``InvalidConfig``
            here, before any file is made.

    Ids are derived from the session and its seq by the turn machine
    (``msg_3fa1c2b9_000017`` is the message added at seq 17), so every
    process makes the same ids for the same events and none collides with
    another's.

    Use it as a context manager, or call ``start()`` and ``stop()``::

        with Runtime(model=ScriptedModel([reply("Hi!")]), store=":memory:") as rt:
            rt.send("s1", "hello")
            state = rt.wait_idle("s1", timeout=5)
    """

    def __init__(
        self,
        *,
        model: Model | None = None,
        store: Store | str | os.PathLike[str] = "amber.db",
        tools: Iterable[Tool | Callable[..., Any]] = (),
        adapters: Iterable[pykka.ActorRef[Any]] = (),
        settings: Settings | None = None,
        resume: Resume = "none",
        clock: Clock = utc_now,
        monotonic: Monotonic = time.monotonic,
        runner: str | None = None,
        run_sessions: bool = True,
    ) -> None:
        self._adapter_refs = _adapter_list(adapters)
        try:
            _check_adapters(self._adapter_refs)
            check_store(store)
            model = _front_end_model(model, run_sessions, resume)
            if not run_sessions:
                check_front_end_store(store)  # before start() opens (makes) a SQLite file
            self._configure(model, tools, settings, resume, runner)
        except BaseException:
            # The adapters were handed over with this call: nothing else will stop them.
            for ref in self._adapter_refs:
                if isinstance(ref, pykka.ActorRef):
                    _stop(ref, 5.0)
            raise
        self.clock = clock
        self.monotonic = monotonic
        self._hold: StoreHold | None = None
        self._store_arg = store
        self._lock = threading.Lock()
        self._state = "new"
        self._stopped = threading.Event()
        self._started = threading.Event()  # set when a start() under way returns
        self._starter: int | None = None  # the thread running start(), while it runs
        self.failed: StoreBusy | None = None
        """Why the runtime stopped on its own (another runtime took its name); None if not."""
        self._store: StoreThread | None = None
        self._keeper: LeaseKeeper | None = None
        self.run_sessions: bool = run_sessions
        """False: a front end that stores input and reads answers (runs no session)."""
        self._watch: AnswerWatch | None = None
        self._effects: Effects | None = None
        self._tool_refs: dict[str, pykka.ActorRef[Any]] = {}
        self.router = Router()
        """The live-session table: loading, routing, passivation."""
        self.gateway = Gateway(self.router)
        """Fans output out to adapters and subscribers."""

    def _configure(
        self,
        model: Model,
        tools: Iterable[Tool | Callable[..., Any]],
        settings: Settings | None,
        resume: Resume,
        runner: str | None,
    ) -> None:
        if not hasattr(model, "stream") or not callable(model.stream):
            raise InvalidConfig(
                f"model must have an async stream(request) method (a ScriptedModel or a "
                f"provider model); got {model!r}."
            )
        self.settings = check_settings(settings)
        self.model = model
        self.toolbox = tools if isinstance(tools, Toolbox) else Toolbox(_tool_list(tools))
        self.resume = resume_policy(resume)
        """Which stored sessions ``start`` resumes (``"all"``, ``"none"`` or ids)."""
        if runner is not None and (not isinstance(runner, str) or not runner):
            raise InvalidConfig(f"runner must be a non-empty str or None (got {runner!r}).")
        self.runner = runner or new_runner_id()
        """This runtime's incarnation, recorded with every turn it starts."""

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> Self:
        """Start the store thread, the effects loop, tool actors and adapters.

        The sessions of the ``resume`` policy that have input waiting, a turn
        a runner left active, or output not yet delivered are loaded and
        resumed. A SQLite store is locked for this runtime while it runs.

        Raises:
            AlreadyStarted: the runtime was started before.
            StoreBusy: another runtime runs this SQLite file, or this ``Store`` object, or
                took this runtime's name while it started (PostgreSQL).
            StoreError: the store cannot be opened, or (a SQLite file) cannot be written.
        """
        with self._lock:
            if self._state != "new":
                raise AlreadyStarted(
                    f"Runtime.start() on a runtime that is {self._state}; a runtime starts once, "
                    "make a new one to start again."
                )
            self._state = "starting"
            self._starter = threading.get_ident()
            self._started.clear()
        try:
            self._start()
        finally:  # a stop called meanwhile on another thread goes on from here
            with self._lock:
                self._starter = None
            self._started.set()
        return self

    def _start(self) -> None:
        try:
            opened, self._hold = hold_store(self._store_arg, self.runner)
        except BaseException:
            with self._lock:
                self._state = "new"  # nothing started: ``stop`` stops the adapters handed over
            raise
        store = StoreThread(opened)
        store.start()
        self._store = store
        # Leases (PostgreSQL): a turn the owner finds active was left by a fenced-off runner.
        shared = is_shared(opened)
        exclusive = shared or not getattr(opened, "shared", False)
        effects = Effects()
        effects.start()
        self._effects = effects
        try:
            for tool in self.toolbox:
                self._tool_refs[tool.name] = ToolActor.start(tool, effects)
            for ref in self._adapter_refs:
                self.gateway.register(ref)
            name = getattr(self.model, "name", None)
            settings = self.settings
            services = Services(
                store=store,
                effects=effects,
                publisher=self.gateway,
                model=self.model,
                tool_refs=self._tool_refs,
                drained_tools=frozenset(t.name for t in self.toolbox if not t.cancellable),
                settings=settings,
                turn_settings=settings.turn_settings(
                    tools=self.toolbox.specs(),
                    model_name=name if isinstance(name, str) and name else None,
                    runner=self.runner,
                    exclusive=exclusive,
                ),
                clock=self.clock,
                monotonic=self.monotonic,
                passivate=self.router.request_passivation,
                forget=self.router.forget,
                load_failed=self.router.load_failed,
                reroute=self.router.reroute,
            )
            self.router.open(services)
            with self._lock:
                self._state = "running"
            resume = self.resume
            if shared:  # sessions are owned through leases (DESIGN §10)
                self._keeper, self._watch = join_shared_store(
                    opened, store, self.router, owner=self.runner, clock=self.clock,
                    turn_settings=services.turn_settings, settings=settings,
                    wake=resume == "all", run_sessions=self.run_sessions,
                    delivers=self.gateway.expects_delivery if self._adapter_refs else None,
                    on_name_lost=self._name_lost,
                )  # fmt: skip
            if resume != "none" and (not shared or resume != "all"):
                for info in self._call_store(resumable):  # a damaged one is logged, left out
                    if info.needs_runner and (resume == "all" or info.session_id in resume):
                        with contextlib.suppress(OwnedElsewhere):  # run by another worker
                            self.router.load(info.session_id)
        except BaseException as exc:
            self.stop()
            if isinstance(exc, RuntimeStopped) and self.failed is not None:
                raise self.failed from exc  # why it stopped (its name lost meanwhile)
            raise

    def stop(self, *, timeout: float = 30.0) -> None:
        """Stop everything; a running turn's input goes back to pending (idempotent).

        ``timeout`` bounds the whole stop: running sync tool calls are waited for (their
        results stored) until ``RESERVE`` (1 s, at most half the timeout) before it, every
        later step gets what is left, and the store's close at least ``STORE_FLOOR`` (1 s):
        the stop returns within ``timeout`` + 1 s, plus the lease keeper's own bounded
        waits (PostgreSQL). Every event stored before ``stop`` returns is on disk.

        Raises:
            StopTimeout: a stop begun by another thread still ran after ``timeout``.
        """
        deadline = Deadline(timeout, self.monotonic)
        with self._lock:
            starting = self._starter not in (None, threading.get_ident())
        if starting:  # start() runs on another thread: stop what it started, once it returns
            self._started.wait()
        with self._lock:
            was = self._state
            if was == "new":  # never started: only the adapters handed over run
                self._state = "stopped"
                for ref in self._adapter_refs:
                    _stop(ref, deadline.left())
                return
            self._state = "stopped" if was == "stopped" else "stopping"
        if was in ("stopping", "stopped"):  # by another thread (say, on losing its name)
            if not self._stopped.wait(deadline.left()):
                raise StopTimeout(
                    f"Runtime.stop(timeout={timeout!r}) waited {timeout!r} s for the stop "
                    "another thread began, and it still runs (it waits for a sync tool call, "
                    "say); call stop() again, with a longer timeout, to wait for it."
                )
            return
        try:
            stop_all(self, not_running("stopped", self.failed), deadline)
        finally:  # every step was tried: a stop waiting on this one returns
            with self._lock:
                self._state = "stopped"
            self._stopped.set()

    def _name_lost(self, error: StoreBusy) -> None:
        """Another runtime took this one's name while its connection was down: stop, on a
        thread of its own (``stop`` joins the lease keeper's thread, which calls this)."""
        self.failed = error
        stop_in_background(self)

    def __enter__(self) -> Self:
        try:
            return self.start()
        except BaseException:
            # ``with`` calls no ``__exit__`` when this raises: stop what was handed over (the
            # adapters), or a thread of theirs keeps the process alive.
            self.stop()
            raise

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
        session_id = session_id_of(session_id)
        draft = user_draft(
            "send", session_id, text, fields, self.clock, self.settings.input_limits,
            artifacts=self.settings.artifacts,
        )  # fmt: skip
        return self._route_input(session_id, draft)

    def post(self, session_id: str, category: Category, content: str, **fields: Any) -> Message:
        """Post a cron prompt, compaction request or background alert (starts a turn),
        or a notification (delivered to the user, never sent to the model).

        Raises:
            InvalidInput: ``category`` cannot be posted from outside a turn, a field
                is wrong, or it is over ``Settings.input_limits``; nothing was stored.
            OwnedElsewhere: a notification, on a runtime that runs no sessions
                (``run_sessions=False``) or for a session another worker runs: it needs
                the session's actor.
        """
        session_id = session_id_of(session_id)
        draft = post_draft(
            session_id, category, content, fields, self.clock,
            artifacts=self.settings.artifacts, limits=self.settings.input_limits,
        )  # fmt: skip
        if category is Category.NOTIFICATION:
            if not self.run_sessions:
                runs_no_sessions(session_id, "posting a notification")
            return add_notification(
                self.router, session_id, draft, timeout=self.settings.ask_timeout
            )
        return self._route_input(session_id, draft)

    def interrupt(self, session_id: str, reason: str = "interrupted by the user") -> bool:
        """Interrupt the session's running turn; True if there was one.

        Raises:
            InvalidInput: ``session_id`` is not a session id, or ``reason`` not a str.
            OwnedElsewhere: this runtime runs no sessions (``run_sessions=False``).
        """
        session_id, reason = session_id_of(session_id, stored=True), interrupt_reason(reason)
        if not self.run_sessions:
            runs_no_sessions(session_id, "interrupt")
        proxy = self.router.live(session_id)
        if proxy is None:
            return False
        try:
            result: bool = proxy.interrupt(reason).get(timeout=self.settings.ask_timeout)
        except pykka.ActorDeadError:
            return False  # passivated: nothing was running
        return result

    def _start_ask(
        self,
        session_id: str,
        text: UserInput | str,
        fields: dict[str, Any],
        sink: Callable[[StreamEvent], None] | None,
        *,
        what: str,
    ) -> ReplyWaiter:
        if self._watch is None:
            return super()._start_ask(session_id, text, fields, sink, what=what)
        # A front end: store the input for the workers, then watch the store for its answer.
        session_id = session_id_of(session_id)
        draft = user_draft(
            what, session_id, text, fields, self.clock, self._limits(), artifacts=self._artifacts()
        )
        message = self._route_input(session_id, draft)
        waiter = ReplyWaiter(sink)
        waiter.stored(message)
        self._watch.watch_answer(session_id, message.id, waiter)
        return waiter

    def _cancel_ask(self, session_id: str, waiter: ReplyWaiter) -> None:
        if self._watch is None:
            super()._cancel_ask(session_id, waiter)
            return
        waiter.cancelled = True  # the turn runs on a worker: it goes on
        self._watch.forget(session_id, waiter)

    def state(self, session_id: str) -> SessionState:
        """The session's head state (from its actor if live, else from the store).

        Raises:
            InvalidInput: ``session_id`` is not a session id.
            UnknownSession: the store has no such session.
        """
        session_id = session_id_of(session_id, stored=True)
        proxy = self.router.live(session_id)
        if proxy is not None:
            try:
                state: SessionState = proxy.state_now().get(timeout=self.settings.ask_timeout)
                return state
            except pykka.ActorDeadError:
                pass
        try:
            return self._call_store(lambda s: s.load_state(session_id))
        except UnknownSession:
            raise unknown_session(session_id) from None

    def model_calls(self, session_id: str, turn_id: str | None = None) -> tuple[AuditRow, ...]:
        """The session's model calls (audit rows) in sequence order, running ones included.

        Raises:
            InvalidInput: ``session_id`` is not a session id.
            UnknownSession: the store has no such session.
        """
        return self.state(session_id).model_calls(turn_id)

    def timeline(self, session_id: str) -> Timeline:
        """Every state of the session since its first event, read from the store.

        Raises:
            InvalidInput: ``session_id`` is not a session id.
            UnknownSession: the store has no such session.
        """
        session_id = session_id_of(session_id, stored=True)
        try:
            return self._call_store(lambda s: s.load_timeline(session_id))
        except UnknownSession:
            raise unknown_session(session_id) from None

    def sessions(self) -> list[SessionInfo]:
        """Every stored session, most recently active first."""
        return self._call_store(lambda s: s.list_sessions())

    def live_sessions(self) -> list[str]:
        """Ids of the sessions with a running actor."""
        return self.router.live_sessions()

    def wait_passivated(self, session_id: str, *, timeout: float | None = 30.0) -> bool:
        """Wait until the session has no live actor; False if it still has one after ``timeout``.

        Raises:
            InvalidInput: ``session_id`` is not a session id.
            InvalidConfig: ``timeout`` is not a positive number of seconds (at most 100
                years) or None, or it was called from a tool running in this session's
                turn (the session cannot passivate before the tool returns).

        Warns:
            RuntimeWarning: called on a running asyncio or trio loop (it blocks it).
        """
        session_id = session_id_of(session_id, stored=True)
        limit = wait_limit(timeout, what="wait_passivated")
        if self._effects is not None:
            self._effects.refuse_own_wait(
                "wait_passivated",
                session_id,
                "a session cannot passivate while its turn runs, and the turn waits for the tool",
                "Return from the tool instead; wait for the session to passivate where its "
                "input was sent.",
            )
        warn_blocking("wait_passivated", "the session passivates", in_a_thread("wait_passivated"))
        return self.router.wait_passivated(session_id, limit)

    def subscribe(
        self,
        on_update: Callable[[Update], object] | None = None,
        *,
        on_delta: Callable[[Delta], object] | None = None,
        session_id: str | None = None,
    ) -> Subscription:
        """Call ``on_update`` with every new or changed message and ``on_delta`` with every
        live piece of a streaming model message (of ``session_id`` only, if given).

        Each subscription runs its callbacks in order in a thread of its own.

        Raises:
            InvalidInput: ``session_id`` is neither a session id nor None.
            InvalidConfig: neither callback given, or one is not callable or is an async
                function (its coroutine would never run).
        """
        session_id = None if session_id is None else session_id_of(session_id, stored=True)
        return self.gateway.subscribe(on_update, on_delta=on_delta, session_id=session_id)

    def tool_stats(self) -> list[ToolStats]:
        """Counts per tool."""
        return [ref.proxy().stats().get(timeout=10) for ref in self._tool_refs.values()]

    def call_store(self, fn: Callable[[Store], T], *, timeout: float | None = None) -> T:
        """Run ``fn(store)`` on the store's thread and return its result (exports, snapshots).

        Raises:
            InvalidConfig: ``fn`` is no function of one argument, or ``timeout`` is not a
                positive number of seconds or None (``Settings.store_timeout``).
        """
        check_store_function(fn)
        limit = wait_limit(timeout, what="call_store", none_is="for Settings.store_timeout")
        return self._call_store(fn, timeout=limit)

    # -- internals ----------------------------------------------------------------------

    def _call_store(self, fn: Callable[[Store], T], *, timeout: float | None = None) -> T:
        if self._store is None or self._state not in ("running", "starting"):
            raise RuntimeStopped(not_running(self._state, self.failed))
        return call_told(self._store, fn, timeout or self.settings.store_timeout)

    def _limits(self) -> InputLimits:
        return self.settings.input_limits

    def _artifacts(self) -> ArtifactStore | None:
        return self.settings.artifacts

    def _check_running(self) -> None:
        if self._state != "running":
            raise RuntimeStopped(not_running(self._state, self.failed))

    def _route_input(self, session_id: str, draft: Draft) -> Message:
        if self._state != "running":
            raise RuntimeStopped(not_running(self._state, self.failed))
        return route_input(
            self.router, self._keeper, session_id, draft, run_sessions=self.run_sessions,
            timeout=self.settings.ask_timeout,
        )  # fmt: skip
