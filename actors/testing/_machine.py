"""``LifecycleMachine``: a real ``Runtime`` under random traffic, checked after every step.

The machine plugs your tools, adapters and model into a ``Runtime`` and
drives it with Hypothesis: user messages (valid and invalid), cron prompts,
alerts and notifications, interrupts, tool and model faults, waits for
turns and deliveries, and restarts. After every step it reads what the
runtime stored and checks DESIGN §11 on every new state; at teardown it
checks liveness (every accepted input final, every output delivered, every
tool call ended). A failing example leaves its sessions in a SQLite file
that ``amber inspect`` opens.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, NoReturn, cast

import attrs
import hypothesis.errors
import pykka
from hypothesis import strategies as st
from hypothesis.control import current_build_context
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from runtime import (
    Attachment,
    BrowserElement,
    Category,
    Event,
    InputLimits,
    InvalidInput,
    MessageAdded,
    SessionState,
    UserInput,
    awaits_delivery,
    category_of,
)
from runtime.store import SQLiteStore, Store
from runtime.testing import (
    FINAL_INPUT_STATUSES,
    PLAN_KEY,
    DeliveryLedger,
    InvariantViolation,
    RestartableMemoryStore,
    TimelineChecker,
    TurnPlan,
    check_provider_views,
    check_settled,
    failure_path,
    inspect_commands,
    save_sessions,
    turn_plans,
)

from .._channels import LiveChannelAdapter, SilentChannelAdapter
from .._errors import InvalidConfig
from .._model import Model
from .._platform import FakePlatform
from .._settings import Settings
from .._tools import Tool, tool
from ._instrument import CallLedger, InstrumentedTool, ModelFault, ObservedModel, ToolFault
from ._observe import ObservedRuntime
from ._plans import PlannedModel

__all__ = ["LifecycleMachine", "lifecycle_machine"]

StateCheck = Callable[[SessionState], None]

_POSTED = (
    Category.CRON_PROMPT,
    Category.BACKGROUND_ALERT,
    Category.COMPACTION_REQUEST,
    Category.NOTIFICATION,
)


def _attachment(size: int) -> Attachment:
    return Attachment(id="att_x", name="big.bin", kind="file", media_type="text/csv", size=size)


_INVALID = (
    "blank text, nothing attached",
    "no sender",
    "text over the limit",
    "too many attachments",
    "attachment over the limit",
    "too many browser elements",
    "browser elements over the limit",
)


def _invalid_input(problem: str, limits: InputLimits) -> UserInput:
    """A user input that breaks one rule of ``validate_input``."""
    attachments: list[Attachment] = []
    elements: list[BrowserElement] = []
    text, sender = "hi", "tester"
    if problem == "blank text, nothing attached":
        text = " \n"
    elif problem == "no sender":
        sender = ""
    elif problem == "text over the limit":
        text = "x" * (limits.max_text_chars + 1)
    elif problem == "too many attachments":
        attachments = [
            attrs.evolve(_attachment(1), id=f"att_{i}") for i in range(limits.max_attachments + 1)
        ]
    elif problem == "attachment over the limit":
        attachments = [_attachment(limits.max_attachment_bytes + 1)]
    elif problem == "too many browser elements":
        elements = [BrowserElement(url="https://example.com/")] * (limits.max_browser_elements + 1)
    else:
        elements = [
            BrowserElement(url="https://example.com/", text="y" * (limits.max_browser_chars + 1))
        ]
    return UserInput(
        text=text,
        sender=sender,
        attachments=cast(Any, attachments),
        browser_elements=cast(Any, elements),
    )


_TEXTS = st.sampled_from(["hi", "what's the weather?", "run the tests", "again", "stop", "🙂"])


def _of(method: str) -> st.SearchStrategy[Any]:
    """A strategy the machine makes (``st.runner()`` is the machine), built once per class."""
    return st.runner().flatmap(lambda machine: machine._strategy(method))


class LifecycleMachine(RuleBasedStateMachine):
    """Drives a real ``Runtime`` with random traffic and checks DESIGN §11 after every step.

    Configure it with class attributes in a subclass (or ``lifecycle_machine``)
    and run it as a test: ``TestMyBot = MyMachine.TestCase``. Add your own
    rules in the subclass; use ``self.runtime``, ``self.send_input`` and
    ``self.accepted``.
    """

    tools: ClassVar[Sequence[Tool | Callable[..., Any]]] = ()
    """Your tools (``Tool`` values or plain functions)."""
    sessions: ClassVar[Sequence[str]] = ("s1", "s2")
    """The sessions traffic goes to."""
    store: ClassVar[str] = "memory"
    """``memory`` (fast; saved to SQLite only when an example fails) or ``sqlite``."""
    runtime_settings: ClassVar[Settings] = Settings(
        passivate_after=None, max_nudges=1, model_timeout=30.0, ask_timeout=10.0
    )
    """The runtime's ``Settings``."""
    wait_timeout: ClassVar[float] = 60.0
    """Seconds a wait for a turn or a delivery may take before it is a liveness failure.

    Waits end on events (a session going idle, a delivery reported); the
    timeout only names a hang. Keep it long: on a loaded machine a short one
    fails passing runs. Hangs are found on simulated time by the simulator
    (``simulation_machine``), where they cost nothing."""
    cancel_grace: ClassVar[float] = 30.0
    """Seconds a tool or model call may take to end once its turn is over (the wait ends as
    soon as the kit's ledger of running calls is empty)."""
    stop_timeout: ClassVar[float] = 30.0
    """Seconds a runtime may take to stop."""
    slow_seconds: ClassVar[float] = 0.01
    """How long a ``SLOW`` fault holds a call."""
    check_views: ClassVar[str] = "idle"
    """Invariant 7 on session heads: ``every`` step, when a session is ``idle`` (waits and
    teardown), or ``never``."""
    compare_heads: ClassVar[str] = "idle"
    """Invariant 5 at the runtime (its head equals the replay of the stored log): ``every``
    step, when a session is ``idle``, or ``never``. Asking a busy session actor for its head
    waits for its mailbox, so ``every`` is slower."""
    extra_checks: ClassVar[Sequence[StateCheck]] = ()
    """More ``(state) -> None`` checks for every new state."""
    max_answers: ClassVar[int] = 3
    """Most model answers a drawn turn plan holds."""
    plan_options: ClassVar[Mapping[str, bool]] = {}
    """Options of ``turn_plans`` (``errors``, ``empty``, ``invalid_calls``, ``pauses``)."""
    report_at: ClassVar[str] = "quiet"
    """When a violation seen after a step is raised: at the next ``quiet`` point (a wait, a
    settle, teardown; replays stay deterministic) or at once (``step``)."""
    restart_every: ClassVar[int] = 15
    """Steps between restarts, at least (a restart costs as much as ten other steps)."""
    failures_dir: ClassVar[str | None] = None
    """Where failing examples' sessions are saved (default ``$AMBER_FAILURES_DIR`` or
    ``.amber-failures``)."""

    # -- what is plugged in (override these) ----------------------------------------

    def make_model(self) -> Model | None:
        """The model; None (the default) uses a ``PlannedModel`` that follows drawn plans."""
        return None

    def make_adapters(self) -> Sequence[pykka.ActorRef[Any]]:
        """Started adapters, made anew at every (re)start.

        The default: a ``LiveChannelAdapter`` (``discord``) and a
        ``SilentChannelAdapter`` (``wechat``) on ``FakePlatform``s.
        """
        return [
            LiveChannelAdapter.start(client=FakePlatform("discord"), platform="discord"),
            SilentChannelAdapter.start(client=FakePlatform("wechat"), platform="wechat"),
        ]

    def inputs(self) -> st.SearchStrategy[str | UserInput]:
        """What a person sends: short texts, sometimes with a file or a selected page element."""
        attachment = st.builds(
            Attachment,
            id=st.sampled_from(["att_1", "att_2"]),
            name=st.just("data.csv"),
            kind=st.just("file"),
            media_type=st.just("text/csv"),
            size=st.sampled_from([10, 2048]),
        )
        element = st.builds(
            BrowserElement,
            url=st.just("https://example.com/page"),
            tag=st.just("table"),
            text=st.sampled_from(["a | b", "42"]),
        )
        full = st.builds(
            UserInput,
            text=st.sampled_from(["", "see attached", "what is this?"]),
            sender=st.just("tester"),
            attachments=st.lists(attachment, max_size=1, unique_by=lambda a: a.id),
            browser_elements=st.lists(element, max_size=2),
        ).filter(lambda i: bool(i.text or i.attachments or i.browser_elements))
        return st.one_of(_TEXTS, full)

    def plans(self) -> st.SearchStrategy[TurnPlan]:
        """The plans drawn for the ``PlannedModel`` (``turn_plans`` of your tools)."""
        if not self._planned:
            return st.just(TurnPlan())
        return turn_plans(
            list(self._tools.values()), max_answers=self.max_answers, **self.plan_options
        )

    # -- life of one example ---------------------------------------------------------

    def __init__(self) -> None:
        super().__init__()
        self.calls = CallLedger()
        """Every tool and model call of the example."""
        self.deliveries = DeliveryLedger(lock=threading.Lock())
        """Every announcement and delivery report."""
        self._tools = {
            t.name: InstrumentedTool.wrap(t, self.calls, slow_seconds=self.slow_seconds)
            for t in (item if isinstance(item, Tool) else tool(item) for item in self.tools)
        }
        user_model = self.make_model()
        self._planned = user_model is None
        self.plan_book: dict[str, TurnPlan] = {}
        """Plans drawn so far, by key (the ``amber_plan`` metadata of inputs)."""
        inner: Model = PlannedModel(self.plan_book) if user_model is None else user_model
        if isinstance(inner, PlannedModel):
            inner.plans = self.plan_book
        self.model = ObservedModel(inner, self.calls, slow_seconds=self.slow_seconds)
        """The model the runtime calls (yours, or the planned one), observed."""
        self._store = self._open_store()
        self._generation = itertools.count()
        self._counter = itertools.count(1)
        self.accepted: dict[str, list[str]] = {s: [] for s in self.sessions}
        """Ids of the inputs each session accepted."""
        self._checkers = {
            s: TimelineChecker(s, extra_checks=self.extra_checks) for s in self.sessions
        }
        self._channels: list[str] = []
        self._touched: set[str] = set()
        self.violation: InvariantViolation | None = None
        self._crashes = _CrashLog()
        logging.getLogger("pykka").addHandler(self._crashes)
        """The first violation the checks found (raised at the next quiet point)."""
        self._dirty: set[str] = set()  # sessions a step acted on since the last check
        self._busy: set[str] = set()  # sessions that may change between steps
        self._since_restart = 0
        self.runtime: ObservedRuntime = self._start()
        """The runtime under test (a new one after each restart)."""

    def _open_store(self) -> Store:
        if self.store == "memory":
            return RestartableMemoryStore()
        if self.store == "sqlite":
            import tempfile

            self._tmp = tempfile.TemporaryDirectory(prefix="amber-machine-")
            return _KeptSQLite(os.path.join(self._tmp.name, "amber.db"))
        raise InvalidConfig(
            f"LifecycleMachine.store must be 'memory' or 'sqlite' (got {self.store!r})."
        )

    def _start(self) -> ObservedRuntime:
        generation = next(self._generation)
        adapters = list(self.make_adapters())
        runtime = ObservedRuntime(
            ledger=self.deliveries,
            generation=generation,
            model=self.model,
            store=self._store,
            tools=list(self._tools.values()),
            adapters=adapters,
            settings=self.runtime_settings,
        )
        runtime.start()
        if not self._channels:
            platforms = [ref.proxy().platform.get(timeout=10) for ref in adapters]
            self._channels = sorted(set(platforms)) or ["cli"]
        return runtime

    # -- strategies the rules draw from ------------------------------------------------

    _strategies: ClassVar[dict[tuple[type, str], st.SearchStrategy[Any]]] = {}

    def _strategy(self, method: str) -> st.SearchStrategy[Any]:
        """``getattr(self, method)()``, cached per class (building strategies is slow)."""
        key = (type(self), method)
        found = self._strategies.get(key)
        if found is None:
            found = self._strategies[key] = getattr(self, method)()
        return found

    def _session_names(self) -> st.SearchStrategy[str]:
        return st.sampled_from(list(self.sessions))

    def _channel_names(self) -> st.SearchStrategy[str]:
        return st.sampled_from(self._channels)

    def _tool_names(self) -> st.SearchStrategy[str]:
        return st.sampled_from(sorted(self._tools))

    # -- helpers for rules -------------------------------------------------------------

    def send_input(
        self, session: str, text: str | UserInput, channel: str, plan: TurnPlan | None = None
    ) -> str:
        """Send a person's input (with ``plan`` for the planned model); returns its id."""
        metadata: dict[str, Any] = {}
        if plan is not None:
            key = f"p{next(self._counter)}"
            self.plan_book[key] = plan
            metadata[PLAN_KEY] = key
        user_input = text if isinstance(text, UserInput) else UserInput(text=text, sender="tester")
        user_input = attrs.evolve(
            user_input,
            chatbot_id=channel,
            channel_id="general",
            metadata={**dict(user_input.metadata), **metadata},
        )
        self._touched.add(session)
        self._dirty.add(session)
        try:
            message = self.runtime.send(session, user_input)
        except pykka.ActorDeadError:
            message = None
        if message is None:
            _raise(self._dead(session))
        self.accepted[session].append(message.id)
        return message.id

    # -- rules -------------------------------------------------------------------------

    @rule(
        session=_of("_session_names"),
        text=_of("inputs"),
        channel=_of("_channel_names"),
        plan=_of("plans"),
    )
    def send(self, session: str, text: str | UserInput, channel: str, plan: TurnPlan) -> None:
        """A person writes (a running turn is interrupted)."""
        self.send_input(session, text, channel, plan if self._planned else None)

    @rule(session=_of("_session_names"), problem=st.sampled_from(_INVALID))
    def send_invalid(self, session: str, problem: str) -> None:
        """Input that breaks a rule (``problem``) is refused with ``InvalidInput``.

        Nothing is stored: every input a session holds is one the machine saw
        accepted (checked after each step).
        """
        bad = _invalid_input(problem, self.runtime_settings.input_limits)
        try:
            self.runtime.send(session, bad)
        except InvalidInput:
            return
        raise InvariantViolation(
            f"Contract (invalid input is refused) broken: Runtime.send accepted input with "
            f"{problem}: {bad!r}",
            name="invalid input is refused",
        )

    @rule(
        session=_of("_session_names"),
        category=st.sampled_from(_POSTED),
        channel=_of("_channel_names"),
        plan=_of("plans"),
    )
    def post(self, session: str, category: Category, channel: str, plan: TurnPlan) -> None:
        """A cron prompt, alert or compaction request (starts a turn), or a notification."""
        metadata: dict[str, Any] = {}
        if self._planned and category.is_input:
            key = f"p{next(self._counter)}"
            self.plan_book[key] = plan
            metadata[PLAN_KEY] = key
        self._touched.add(session)
        self._dirty.add(session)
        try:
            message = self.runtime.post(
                session, category, f"{category.label} #{next(self._counter)}",
                chatbot_id=channel, channel_id="general", metadata=metadata,
            )  # fmt: skip
        except pykka.ActorDeadError:
            message = None
        if message is None:
            _raise(self._dead(session))
        if category.is_input:
            self.accepted[session].append(message.id)

    @rule(session=_of("_session_names"))
    def interrupt(self, session: str) -> None:
        """The user stops the running turn (if any)."""
        try:
            interrupted: bool | None = self.runtime.interrupt(session)
        except pykka.ActorDeadError:
            interrupted = None
        if interrupted is None:
            _raise(self._dead(session))
        if interrupted:
            self._dirty.add(session)

    @precondition(lambda self: bool(self._tools))
    @rule(name=_of("_tool_names"), fault=st.sampled_from(ToolFault))
    def break_tool(self, name: str, fault: ToolFault) -> None:
        """The tool's next call fails, times out or runs slowly."""
        self._tools[name].arm(fault)

    @precondition(lambda self: not self._planned)
    @rule(fault=st.sampled_from(ModelFault))
    def break_model(self, fault: ModelFault) -> None:
        """The model's next call fails (before or mid-stream) or is slow."""
        self.model.arm(fault)

    @rule(session=_of("_session_names"))
    def wait(self, session: str) -> None:
        """Wait for the session's turns to end; every input it accepted is final (invariant 9)."""
        if self.accepted[session]:
            state = self._wait_idle(session, settled=False)
            self._quiescent(session)
            check_settled(state, self.accepted[session])

    @rule(session=_of("_session_names"))
    def settle(self, session: str) -> None:
        """Wait until adapters have reported every output of the session delivered."""
        if self._known(session):
            self._wait_idle(session, settled=True)
            self._quiescent(session)

    @precondition(lambda self: self._since_restart >= self.restart_every)
    @rule()
    def restart(self) -> None:
        """Stop the runtime (running turns give their input back) and start a new one."""
        self.runtime.stop(timeout=self.stop_timeout)
        self.runtime = self._start()
        self._since_restart = 0
        self._dirty |= self._touched

    # -- checks ------------------------------------------------------------------------

    @invariant()
    def amber_invariants(self) -> None:
        """DESIGN §11 on every new stored state, the runtime's heads and the deliveries.

        What the checks find while turns run is kept and raised at the next
        quiet point (a wait, a settle, or teardown), so that a failure always
        shows at the same step of an example when Hypothesis replays it.
        Set ``report_at = "step"`` to raise at once.
        """
        self._since_restart += 1  # here, not in check_now: preconditions must not depend on timing
        self._observe()
        if self.report_at == "step" and self.violation is not None:
            _raise(self.violation)

    def _observe(self) -> None:
        if self.violation is not None:
            return
        try:
            self.check_now()
        except InvariantViolation as exc:
            self.violation = exc

    def _quiescent(self, session: str | None = None) -> None:
        """At a quiet point: let adapters finish, check everything, raise what was found."""
        for ref in self.runtime.gateway.adapters:
            with contextlib.suppress(pykka.ActorDeadError):
                ref.proxy().platform.get(timeout=self.wait_timeout)  # a barrier: mailbox order
        if session is not None:
            self._dirty.add(session)
        self._observe()
        if self.violation is not None:
            _raise(self.violation)
        if session is not None:
            self._check_views(session)

    def check_now(self) -> None:
        """Check every session now (what the invariant runs after each step)."""
        problems = self.calls.problems
        if problems:
            record = problems[0]
            raise InvariantViolation(
                f"Contract (a tool answers every call with a result or an error) broken by "
                f"call {record.number} of {record.what} with {record.arguments!r}: "
                f"{record.problem}",
                name="a tool answers every call with a result or an error",
                detail=record.problem or "",
            )
        dirty, self._dirty = self._dirty, set()
        sessions = [s for s in self.sessions if s in dirty or s in self._busy]
        if not sessions:
            return
        replayed: dict[str, SessionState] = {}
        fresh = self._fetch(sessions)
        for session in sessions:
            checker = self._checkers[session]
            self._check_inputs_accepted(session, fresh[session])
            head = replayed[session] = checker.feed(fresh[session])
            if self._may_change(head):
                self._busy.add(session)
            else:
                self._busy.discard(session)
            if self.compare_heads == "every":
                self._compare_head(session)
            if self.check_views == "every":
                self._check_views(session, idle=False)
        self.deliveries.check(replayed)

    def _may_change(self, head: SessionState) -> bool:
        """True while the session can change without a step: a turn, input or delivery pends."""
        if head.active_turn is not None or head.queued:
            return True
        gateway = self.runtime.gateway
        return any(gateway.expects_delivery(m) for m in head if m.active)

    def _compare_head(self, session: str) -> None:
        """Invariant 5 at the runtime: its head of ``session`` equals the replay of the log."""
        checker = self._checkers[session]
        head = self.runtime.state(session)
        while head.seq > checker.seq:  # the actor applied events we have not fetched yet
            more = self._fetch([session])[session]
            self._check_inputs_accepted(session, more)
            checker.feed(more)
        checker.compare(head, who="the runtime")

    def _fetch(self, sessions: Sequence[str]) -> dict[str, list[Event]]:
        seqs = {s: self._checkers[s].seq for s in sessions}
        return self.runtime.call_store(
            lambda store: {
                s: store.events(s, after=seqs[s]) if s in store else [] for s in sessions
            }
        )

    def _check_inputs_accepted(self, session: str, events: Sequence[Event]) -> None:
        accepted = set(self.accepted[session])
        for event in events:
            if (
                isinstance(event, MessageAdded)
                and category_of(event.message).is_input
                and event.message.id not in accepted
            ):
                detail = (
                    f"input {event.message.id!r} ({event.message.content[:40]!r}) is stored, but "
                    "the runtime never returned it as accepted (a refused input left a trace?)"
                )
                raise InvariantViolation(
                    f"Contract (refused input is never stored) broken at seq {event.seq}: {detail}",
                    name="refused input is never stored", seq=event.seq, detail=detail,
                    session_id=session, message_id=event.message.id,
                )  # fmt: skip

    def _check_views(self, session: str, *, idle: bool = True) -> None:
        if idle and self.compare_heads != "never":
            self._compare_head(session)
        if self.check_views == "never" or (self.check_views == "idle" and not idle):
            return
        settings = self.runtime_settings
        check_provider_views(
            self._checkers[session].timeline.head,
            system=settings.system_prompt,
            window=settings.window,
            artifacts=settings.artifacts,
            max_result_chars=settings.max_result_chars,
        )

    def _known(self, session: str) -> bool:
        return session in self._touched

    def _dead(self, session: str) -> InvariantViolation:
        """The session's actor died: say so, with the exception that killed it."""
        self._observe()
        if self.violation is not None:
            return self.violation
        why = self._crashes.last or "see the 'pykka' and 'amber.session' logs"
        detail = (
            f"the session actor of {session!r} died ({why}), so its inputs can never reach a "
            "final status; an exception escaped the actor (a runtime bug, or a part that broke "
            "its contract in a way the runtime does not survive)"
        )
        return InvariantViolation(
            f"Invariant 9 (every accepted user message reaches a final status) broken in "
            f"session {session!r}: {detail}",
            invariant=9, name="every accepted user message reaches a final status",
            detail=detail, session_id=session,
        )  # fmt: skip

    def _wait_idle(self, session: str, *, settled: bool) -> SessionState:
        self._observe()
        if self.violation is not None:  # no need to wait for what is broken already
            _raise(self.violation)
        dead = False
        try:
            return self.runtime.wait_idle(session, timeout=self.wait_timeout, settled=settled)
        except pykka.ActorDeadError:
            dead = True
        except TimeoutError:
            pass
        # Raised out here, with no exception context, so that Hypothesis sees one failure
        # however the stuck session showed itself (a timeout, or a dead actor).
        self._observe()  # a violation seen on the way is the likelier cause
        if self.violation is None and (dead or self._crashes.last is not None):
            _raise(self._dead(session))
        return _raise(self.violation or self._stuck(session, settled))

    def _stuck(self, session: str, settled: bool) -> InvariantViolation:
        state = self.runtime.state(session)
        running = (
            "; ".join(
                f"call {r.number} of {r.what} running for {time.monotonic() - r.started:.1f} s"
                for r in self.calls.running()
            )
            or "no tool or model call running"
        )
        turn = state.active_turn
        if turn is not None or state.queued:
            what = (
                f"turn {turn.id!r} is still active (open tool calls {sorted(turn.open_calls)})"
                if turn is not None
                else f"inputs {sorted(state.queued)} wait and no turn runs"
            )
            waiting = [
                m.id
                for m in state
                if m.id in self.accepted[session] and m.status not in FINAL_INPUT_STATUSES
            ]
            detail = (
                f"after {self.wait_timeout} s of waiting, {what}; inputs not final: {waiting}; "
                f"{running}"
            )
            number, name = 9, "every accepted user message reaches a final status"
        else:
            waiting = [f"{m.id} ({m.chatbot_id}, {m.status})" for m in state if awaits_delivery(m)]
            detail = (
                f"after {self.wait_timeout} s, outputs {waiting} are still not reported "
                "delivered by the adapters of their platforms"
            )
            number, name = 0, "adapters report every output they show or absorb delivered"
        head = f"Invariant {number} ({name})" if number else f"Contract ({name})"
        return InvariantViolation(
            f"{head} broken at seq {state.seq}: {detail}",
            invariant=number or None, name=name, seq=state.seq, detail=detail, session_id=session,
        )  # fmt: skip

    def teardown(self) -> None:
        """Check liveness (unless a step failed), stop the runtime, save a failing example."""
        failure = sys.exc_info()[1]
        failed = isinstance(failure, Exception) and not isinstance(
            failure, hypothesis.errors.UnsatisfiedAssumption
        )
        try:
            if not failed:
                try:
                    self._liveness()
                except Exception as exc:
                    self._stop()
                    self._save_failure(exc)
                    raise
            self._stop()
            if failed:
                assert failure is not None
                self._save_failure(failure)
        finally:
            logging.getLogger("pykka").removeHandler(self._crashes)
            if isinstance(self._store, RestartableMemoryStore):
                self._store.discard()
            elif isinstance(self._store, _KeptSQLite):
                self._store.discard()
                self._tmp.cleanup()

    def _liveness(self) -> None:
        self._dirty |= self._touched
        for session in self.sessions:
            if not self._known(session):
                continue
            state = self._wait_idle(session, settled=True)
            check_settled(state, self.accepted[session])
        self._quiescent()
        for session in self.sessions:
            if self._known(session):
                self._check_views(session)
                checker = self._checkers[session]
                checker.past.check(checker.timeline)
        left = self.calls.wait_quiet(self.cancel_grace)
        if left:
            record = left[0]
            raise InvariantViolation(
                "Contract (a call ends once its turn is over, cancelled or not) broken: "
                f"call {record.number} of {record.what} with {record.arguments!r} is still "
                f"running {self.cancel_grace} s after every turn ended; a tool must return, "
                "raise or let trio.Cancelled through when its turn is interrupted",
                name="a call ends once its turn is over",
            )

    def _stop(self) -> None:
        self.runtime.stop(timeout=self.stop_timeout)

    def _save_failure(self, failure: BaseException) -> None:
        try:
            final = current_build_context().is_final
        except hypothesis.errors.InvalidArgument:
            final = True
        if not final:
            return
        sessions = [s for s in self.sessions if s in self._store]
        if not sessions:
            return
        path = failure_path(_test_name(type(self)), self.failures_dir)
        saved = save_sessions(self._store, sessions, path)
        lines = [f"Amber saved the sessions of this example in {path}; time-travel with:"]
        lines += [f"    {command}" for command in inspect_commands(saved, path)]
        failure.add_note("\n".join(lines))


def _raise(violation: BaseException) -> NoReturn:
    """Raise ``violation`` from one place with no context (one failure for Hypothesis)."""
    violation.__context__ = None
    violation.__cause__ = None
    raise violation


class _CrashLog(logging.Handler):
    """Remembers the last exception that killed an actor (pykka logs it)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.last: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            self.last = f"{type(error).__name__}: {error}"


class _KeptSQLite(SQLiteStore):
    """A SQLite store a stopping runtime cannot close (the machine closes it)."""

    def close(self) -> None:
        pass

    def discard(self) -> None:
        super().close()


def _test_name(machine: type) -> str:
    current = os.environ.get("PYTEST_CURRENT_TEST", "")
    if current:
        node = current.split(" ")[0]
        parts = [p for p in node.split("::")[1:] if p != "runTest"]
        if parts:
            return "-".join(parts)
    return machine.__name__


def lifecycle_machine(
    *,
    tools: Sequence[Tool | Callable[..., Any]] = (),
    model: Model | Callable[[], Model] | None = None,
    adapters: Callable[[], Sequence[pykka.ActorRef[Any]]] | None = None,
    name: str = "LifecycleMachine",
    base: type[LifecycleMachine] = LifecycleMachine,
    **options: Any,
) -> type[LifecycleMachine]:
    """A ``LifecycleMachine`` subclass with your parts plugged in.

    Args:
        tools: your tools.
        model: a model, or a function that makes one per example; None uses
            the kit's ``PlannedModel``.
        adapters: a function that starts your adapters (called at each
            (re)start); None uses the default live and silent channels.
        name: the class name (shown in failures and saved files).
        base: the class to subclass.
        **options: other class attributes (``sessions``, ``store``,
            ``runtime_settings``, ``wait_timeout`` …).

    Returns:
        The class; run it with ``TestX = lifecycle_machine(...).TestCase``.
    """
    unknown = sorted(k for k in options if not hasattr(base, k) or k.startswith("_"))
    if unknown:
        raise InvalidConfig(
            f"lifecycle_machine() got unknown options {unknown}; the options are the class "
            "attributes of LifecycleMachine (sessions, store, runtime_settings, wait_timeout …)."
        )
    namespace: dict[str, Any] = {"tools": tuple(tools), **options, "__module__": base.__module__}
    if model is not None:

        def make_model(self: LifecycleMachine) -> Model:
            if not callable(model) or (hasattr(model, "stream") and not isinstance(model, type)):
                return model
            made: Model = model()
            return made

        namespace["make_model"] = make_model
    if adapters is not None:
        namespace["make_adapters"] = lambda self: adapters()
    return type(name, (base,), namespace)
