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

import itertools
import logging
import os
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import attrs
import pykka
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from runtime import (
    Attachment,
    BrowserElement,
    Category,
    InvalidInput,
    SessionState,
    UserInput,
)
from runtime.store import SQLiteStore, Store
from runtime.testing import (
    INVALID_INPUTS,
    PLAN_KEY,
    DeliveryLedger,
    InvariantViolation,
    RestartableMemoryStore,
    TimelineChecker,
    TurnPlan,
    check_settled,
    invalid_input,
    turn_plans,
)
from runtime.testing._testcase import MachineTestCase

from .._channels import LiveChannelAdapter, SilentChannelAdapter
from .._errors import InvalidConfig
from .._model import Model
from .._platform import FakePlatform
from .._settings import Settings
from .._tools import Tool, tool
from ._checks import MachineChecks, _CrashLog, _raise
from ._instrument import CallLedger, InstrumentedTool, ModelFault, ObservedModel, ToolFault
from ._observe import ObservedRuntime
from ._plans import PlannedModel

__all__ = ["LifecycleMachine"]

StateCheck = Callable[[SessionState], None]

_POSTED = (
    Category.CRON_PROMPT,
    Category.BACKGROUND_ALERT,
    Category.COMPACTION_REQUEST,
    Category.NOTIFICATION,
)


_TEXTS = st.sampled_from(["hi", "what's the weather?", "run the tests", "again", "stop", "🙂"])


def _of(method: str) -> st.SearchStrategy[Any]:
    """A strategy the machine makes (``st.runner()`` is the machine), built once per class."""
    return st.runner().flatmap(lambda machine: machine._strategy(method))


class LifecycleMachine(MachineChecks, RuleBasedStateMachine):
    """Drives a real ``Runtime`` with random traffic and checks DESIGN §11 after every step.

    Configure it with class attributes in a subclass (or ``lifecycle_machine``)
    and run it as a test: ``TestMyBot = MyMachine.TestCase``. Add your own
    rules in the subclass; use ``self.runtime``, ``self.send_input``,
    ``self.post_input`` and ``self.accepted``.
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
    explain: ClassVar[bool] = False
    """Run Hypothesis's explain phase on a failure (it replays the whole example once per
    step; off by default, whatever the ``TestCase``'s settings say)."""

    model_may_always_fail: ClassVar[bool] = False
    """Let an example end green when every call of your model raised an exception that is
    no provider or transport error (a ``TypeError``, say: the model never answered, so the
    example tested only failed turns). Off: teardown fails naming the first one."""

    TestCase = MachineTestCase()

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

    def _discard_store(self) -> None:
        if isinstance(self._store, RestartableMemoryStore):
            self._store.discard()
        elif isinstance(self._store, _KeptSQLite):
            self._store.discard()
            self._tmp.cleanup()
        elif hasattr(self._store, "discard"):
            self._store.discard()

    def _open_store(self) -> Store:
        if self.store == "memory":
            return RestartableMemoryStore()
        if self.store == "sqlite":
            import tempfile

            self._tmp = tempfile.TemporaryDirectory(prefix="amber-machine-")
            return _KeptSQLite(os.path.join(self._tmp.name, "amber.db"))
        if self.store == "postgres":
            from ._kept_postgres import kept_postgres

            return kept_postgres()
        raise InvalidConfig(
            f"LifecycleMachine.store must be 'memory', 'sqlite' or 'postgres' (got {self.store!r})."
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

    def post_input(
        self,
        session: str,
        category: Category,
        text: str,
        channel: str | None = None,
        plan: TurnPlan | None = None,
    ) -> str:
        """Post a cron prompt, alert or compaction request (starts a turn), or a notification,
        the way the ``post`` rule does; returns its id.

        Use it in your rules rather than ``self.runtime.post``: the machine records
        an input it posted as accepted (a stored input it never saw accepted is a
        violation) and checks the session after the step.

        Args:
            session: the session.
            category: one ``Runtime.post`` takes (``CRON_PROMPT``, ``BACKGROUND_ALERT``,
                ``COMPACTION_REQUEST``, ``NOTIFICATION``).
            text: its content.
            channel: the platform (``chatbot_id``); None: the first of the adapters'.
            plan: how the planned model answers its turn (None: the default plan).

        Raises:
            InvalidInput: the runtime refused it (nothing was stored or recorded).
        """
        metadata: dict[str, Any] = {}
        if plan is not None and self._planned and category.is_input:
            key = f"p{next(self._counter)}"
            self.plan_book[key] = plan
            metadata[PLAN_KEY] = key
        try:
            message = self.runtime.post(
                session, category, text, chatbot_id=channel or self._channels[0],
                channel_id="general", metadata=metadata,
            )  # fmt: skip
        except pykka.ActorDeadError:
            message = None
        # After the post: one refused with InvalidInput stored nothing to check or wait for.
        self._touched.add(session)
        self._dirty.add(session)
        if message is None:
            _raise(self._dead(session))
        if category.is_input:
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

    @rule(session=_of("_session_names"), problem=st.sampled_from(INVALID_INPUTS))
    def send_invalid(self, session: str, problem: str) -> None:
        """Input that breaks a rule (``problem``) is refused with ``InvalidInput``.

        Nothing is stored: every input a session holds is one the machine saw
        accepted (checked after each step).
        """
        bad = invalid_input(problem, self.runtime_settings.input_limits)
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
        text = f"{category.label} #{next(self._counter)}"
        self.post_input(session, category, text, channel, plan if self._planned else None)

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

    def _liveness(self) -> None:
        super()._liveness()
        if self.model_may_always_fail:
            return
        # Counted over the run, not the example: whether an example's only call ends or is
        # interrupted first depends on timing, so a verdict per example would not replay.
        # Once every one of _MODEL_SAMPLE calls has raised, every later example fails too.
        tally = _MODEL_TALLIES.setdefault(type(self), _ModelTally())
        tally.add(self.model)
        first = tally.always_broken()
        if first is None:
            return
        trace = "".join(traceback.format_exception(first)).rstrip()
        raise InvariantViolation(
            f"Every call of the model so far in this run ({tally.answered}, over "
            f"{tally.examples} examples) raised; the first raised {type(first).__name__}: "
            f"{first}. That is no provider or transport error (an Amber ModelError, an OSError, "
            "an HTTP client's or SDK's exception) but a bug in the model, so every turn ended "
            "in error and nothing else was tested. Fix the model, or set "
            "model_may_always_fail = True on the machine if it is meant to fail. The first "
            f"call's traceback:\n{trace}",
            name="the model answers",
        )

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


class _KeptSQLite(SQLiteStore):
    """A SQLite store a stopping runtime cannot close (the machine closes it)."""

    def close(self) -> None:
        pass

    def discard(self) -> None:
        super().close()


_MODEL_SAMPLE = 5
"""Calls of the model, all raising a bug, before the machine says the model never answers."""


class _ModelTally:
    """A machine class's model calls over the examples of the process's runs."""

    def __init__(self) -> None:
        self.examples = 0
        self.answered = 0
        self.bugs = 0
        self.first: BaseException | None = None

    def add(self, model: ObservedModel) -> None:
        self.examples += 1
        self.answered += model.answered
        self.bugs += len(model.bugs)
        if self.first is None and model.bugs:
            self.first = model.bugs[0]

    def always_broken(self) -> BaseException | None:
        if self.answered >= _MODEL_SAMPLE and self.bugs == self.answered:
            return self.first
        return None


_MODEL_TALLIES: dict[type, _ModelTally] = {}
