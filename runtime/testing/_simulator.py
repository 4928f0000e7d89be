"""Deterministic simulation testing: the turn machine under Hypothesis, or under a seed.

``SimulationMachine`` drives a ``Simulation`` with Hypothesis rules: people
send (valid and invalid input, with the model's plan for the turn), post,
interrupt; completions arrive in drawn orders (``run``); the process
crashes or stops; everything settles. DESIGN §11 is checked after every
step and liveness at the end; a failure shrinks to a short example, saved
where ``amber inspect`` opens it. ``simulation_machine`` plugs your parts in.

``simulate(seed)`` is the same walk drawn from a seed instead (no
Hypothesis): fast, for long hunts and benchmarks, and a failure names its
seed and prints its steps.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

import hypothesis.errors
from hypothesis import strategies as st
from hypothesis.control import current_build_context
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from .. import (
    Attachment,
    BrowserElement,
    Category,
    ChannelKind,
    InputLimits,
    InvalidInput,
    TurnSettings,
    UserInput,
)
from .._errors import InvalidArgument
from ._answers import PLAN_OPTIONS, turn_plans
from ._options import (
    Check,
    check_machine_class,
    check_options,
    flag,
    instance,
    mapping_of_flags,
    optional_path,
    sequence_of,
    session_names,
    whole,
)
from ._parts import FakeChannel, PlanModel, SimAdapter, SimModel, SimTool, fake_tools
from ._plans import TurnPlan
from ._saved import failure_path, inspect_commands, save_sessions
from ._testcase import MachineTestCase
from ._world import Simulation

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["INVALID_INPUTS", "SimulationMachine", "invalid_input", "simulation_machine"]

INVALID_INPUTS = (
    "blank text, nothing attached",
    "no sender",
    "text over the limit",
    "too many attachments",
    "attachment over the limit",
    "too many browser elements",
    "browser elements over the limit",
)
"""The rules of user input ``invalid_input`` can break, one at a time."""


def invalid_input(problem: str, limits: InputLimits | None = None) -> UserInput:
    """A user input that breaks one rule (one of ``INVALID_INPUTS``) of ``validate_input``."""
    limits = limits or InputLimits()
    attachments: list[Attachment] = []
    elements: list[BrowserElement] = []
    text, sender = "hi", "tester"

    def attachment(i: int, size: int) -> Attachment:
        return Attachment(id=f"att_{i}", name="big.bin", kind="file", media_type="text/csv",
                          size=size)  # fmt: skip

    if problem == "blank text, nothing attached":
        text = " \n"
    elif problem == "no sender":
        sender = ""
    elif problem == "text over the limit":
        text = "x" * (limits.max_text_chars + 1)
    elif problem == "too many attachments":
        attachments = [attachment(i, 1) for i in range(limits.max_attachments + 1)]
    elif problem == "attachment over the limit":
        attachments = [attachment(0, limits.max_attachment_bytes + 1)]
    elif problem == "too many browser elements":
        elements = [BrowserElement(url="https://example.com/")] * (limits.max_browser_elements + 1)
    elif problem == "browser elements over the limit":
        text_over = "y" * (limits.max_browser_chars + 1)
        elements = [BrowserElement(url="https://example.com/", text=text_over)]
    else:
        raise ValueError(f"invalid_input() takes one of {INVALID_INPUTS} (got {problem!r}).")
    return UserInput(
        text=text,
        sender=sender,
        attachments=cast(Any, attachments),
        browser_elements=cast(Any, elements),
    )


_TEXTS = st.sampled_from(["hi", "what's the weather?", "run the tests", "again", "stop", "🙂"])
_POSTED = (
    Category.CRON_PROMPT,
    Category.BACKGROUND_ALERT,
    Category.COMPACTION_REQUEST,
    Category.NOTIFICATION,
)


def _of(method: str) -> st.SearchStrategy[Any]:
    """A strategy the machine makes (``st.runner()`` is the machine), built once per class."""
    return st.runner().flatmap(lambda machine: machine._strategy(method))


def _default_adapters() -> Sequence[SimAdapter]:
    return (
        FakeChannel("discord", ChannelKind.LIVE),
        FakeChannel("wechat", ChannelKind.SILENT),
    )


class SimulationMachine(RuleBasedStateMachine):
    """Drives a ``Simulation`` with Hypothesis and checks DESIGN §11 after every step.

    Configure it with class attributes in a subclass (or ``simulation_machine``)
    and run it as a test: ``TestMyBot = MyMachine.TestCase``.
    """

    tools: ClassVar[Sequence[SimTool]] = tuple(fake_tools())
    """The tools (simulated; ``actors.testing.simulation_machine`` bridges real ones)."""
    sessions: ClassVar[Sequence[str]] = ("s1", "s2")
    """The sessions traffic goes to."""
    settings: ClassVar[TurnSettings] = TurnSettings(
        max_nudges=1,
        model_timeout=60.0,
        passivate_after=30.0,
        recover_after=300.0,
        approval_timeout=120.0,
    )
    """The turn machine's settings."""
    max_answers: ClassVar[int] = 3
    """Most model answers a drawn turn plan holds."""
    plan_options: ClassVar[dict[str, bool]] = {"stalls": True}
    """Options of ``turn_plans`` (``errors``, ``empty``, ``invalid_calls``, ``pauses``,
    ``stalls``)."""
    interrupt_stuck: ClassVar[bool] = False
    """At the end, interrupt turns stuck on a tool that never returns (a person giving up).
    Off (the default), a stuck turn is a failure: a tool call that never returns fails the
    step it starts in, and ``wait`` and ``settle`` check liveness, as the end does."""
    failures_dir: ClassVar[str | None] = None
    """Where failing examples' sessions are saved (default ``$AMBER_FAILURES_DIR`` or
    ``.amber-failures``)."""
    explain: ClassVar[bool] = False
    """Run Hypothesis's explain phase on a failure (it replays the whole example once per
    step; off by default, whatever the ``TestCase``'s settings say)."""

    TestCase = MachineTestCase()

    # -- what is plugged in (override these) ----------------------------------------------

    def make_model(self) -> SimModel | None:
        """The model, made per example; None (the default) follows drawn ``TurnPlan``s."""
        return None

    def make_adapters(self) -> Sequence[SimAdapter]:
        """The adapters, made per example: a live and a silent channel by default."""
        return _default_adapters()

    def make_store(self) -> Store | None:
        """The store, made per example (closed at its end); None (the default): a fresh
        ``MemoryStore``. Return a ``SQLiteStore`` or ``PostgresStore`` to run the same
        simulation and checks on a durable store."""
        return None

    def __init__(self) -> None:
        super().__init__()
        made = self.make_model()
        self._planned = made is None
        model: SimModel = PlanModel() if made is None else made
        self._choices: list[int] = []
        self._store = self.make_store()
        self.sim = Simulation(
            model=model,
            tools=self.tools,
            adapters=self.make_adapters(),
            settings=self.settings,
            choose=self._choose,
            store=self._store,
        )
        """The simulation under test."""
        self._channels = sorted({a.platform for a in self.sim.adapters}) or ["sim"]

    # -- strategies the rules draw from ----------------------------------------------------

    _strategies: ClassVar[dict[tuple[type, str], st.SearchStrategy[Any]]] = {}

    def _strategy(self, method: str) -> st.SearchStrategy[Any]:
        key = (type(self), method)
        found = self._strategies.get(key)
        if found is None:
            found = self._strategies[key] = getattr(self, method)()
        return found

    def _session_names(self) -> st.SearchStrategy[str]:
        return st.sampled_from(list(self.sessions))

    def _channel_names(self) -> st.SearchStrategy[str]:
        return st.sampled_from(self._channels)

    def plans(self) -> st.SearchStrategy[TurnPlan]:
        """The plans drawn for the planned model (``turn_plans`` of the tools)."""
        if not self._planned:
            return st.just(TurnPlan())
        return turn_plans(self.tools, max_answers=self.max_answers, **self.plan_options)

    def _choose(self, n: int) -> int:
        return self._choices.pop(0) % n if self._choices else 0

    # -- rules ----------------------------------------------------------------------------

    @rule(session=_of("_session_names"), text=_TEXTS, channel=_of("_channel_names"),
          plan=_of("plans"))  # fmt: skip
    def send(self, session: str, text: str, channel: str, plan: TurnPlan) -> None:
        """A person writes (a running turn is interrupted)."""
        self.sim.send(session, text, plan=plan if self._planned else None, channel=channel)

    @rule(session=_of("_session_names"), problem=st.sampled_from(INVALID_INPUTS))
    def send_invalid(self, session: str, problem: str) -> None:
        """Input that breaks a rule is refused with ``InvalidInput``; nothing is stored."""
        before = self.sim.head(session).seq
        try:
            self.sim.send(session, invalid_input(problem))
        except InvalidInput:
            assert self.sim.head(session).seq == before, "a refused input left events"
            return
        raise AssertionError(f"an input with {problem} was accepted")

    @rule(session=_of("_session_names"), category=st.sampled_from(_POSTED),
          channel=_of("_channel_names"), plan=_of("plans"))  # fmt: skip
    def post(self, session: str, category: Category, channel: str, plan: TurnPlan) -> None:
        """A cron prompt, alert or compaction request (starts a turn), or a notification."""
        planned = plan if self._planned and category.is_input else None
        self.sim.post(session, category, f"a {category.label}", channel=channel, plan=planned)

    @rule(session=_of("_session_names"))
    def interrupt(self, session: str) -> None:
        """The user stops the running turn (if any)."""
        self.sim.interrupt(session)

    def _waiting(self) -> list[tuple[str, str]]:
        """Every tool call waiting for approval, as (session, call id), in a fixed order."""
        return [(s, call_id) for s in self.sessions for call_id in self.sim.approvals(s)]

    # Only while a call waits: drawn when nothing does, the step did nothing, yet shrunk
    # failures kept printing it.
    @precondition(lambda self: bool(self._waiting()))
    @rule(approved=st.booleans(), which=st.integers(0, 15))
    def decide(self, approved: bool, which: int) -> None:
        """A person approves or denies a tool call that waits (``which`` picks one of all
        the waiting calls, of every session)."""
        waiting = self._waiting()
        session, call_id = waiting[which % len(waiting)]
        assert self.sim.decide(session, call_id, approved, None if approved else "no")

    @rule(choices=st.lists(st.integers(0, 7), min_size=1, max_size=12))
    def run(self, choices: list[int]) -> None:
        """Completions arrive, in the order ``choices`` picks (0: the earliest due).

        One completion per choice; a choice the simulation asks for on the way (whether a
        cancelled run had already reported) takes the next one.
        """
        self._choices = list(choices)
        while self._choices and self.sim.run([self._choices.pop(0)]):
            pass
        self._choices = []

    @rule(session=_of("_session_names"))
    def wait(self, session: str) -> None:
        """A person waits for the answer: the session's work completes (the other sessions'
        waits); then (unless ``interrupt_stuck``) every input it accepted is final."""
        self.sim.wait(session)
        if not self.interrupt_stuck:
            self.sim.raise_problem()
            self.sim.check_liveness(sessions=[session])

    @rule(session=_of("_session_names"))
    def run_to_tools(self, session: str) -> None:
        """The session's completions arrive in the natural order until its turn runs tool
        calls (or none is left): the stop, crash, interrupt or decision drawn next lands
        while they run, which drawn orders of completions rarely reach (a model's answer
        streams in many chunks)."""
        self.sim.wait(session, until=lambda sim: _runs_tools(sim, session))

    @rule()
    def settle(self) -> None:
        """Everything in flight completes, in the natural order; then liveness holds (unless
        ``interrupt_stuck``: a person gives up on stuck turns only at the end)."""
        self.sim.settle()
        if not self.interrupt_stuck:
            self.sim.raise_problem()
            self.sim.check_liveness()

    @precondition(lambda self: self.sim.steps > 0)
    @rule()
    def crash(self) -> None:
        """The process dies; a new one rebuilds every session from the store and recovers."""
        self.sim.crash()

    @precondition(lambda self: self.sim.steps > 0)
    @rule(drain=st.booleans())
    def stop(self, drain: bool) -> None:
        """The runtime stops cleanly (running turns give their input back; with ``drain``,
        after the running calls of tools that cannot be cancelled, the others cut) and
        restarts."""
        self.sim.stop(drain=drain)

    @invariant()
    def amber_invariants(self) -> None:
        """The checks of every step ran as it went (``Simulation``); raise what parts broke,
        and (unless ``interrupt_stuck``) a tool call that never returns, at the step it
        starts: cut short there, the example would fail liveness at its end."""
        self.sim.raise_problem()
        if not self.interrupt_stuck:
            self.sim.check_hangs()

    def teardown(self) -> None:
        """Settle, check liveness; save a failing example's sessions for ``amber inspect``."""
        failure = sys.exc_info()[1]
        try:
            try:
                if failure is None:
                    self.sim.settle(interrupt_stuck=self.interrupt_stuck)
                    self.sim.raise_problem()
                    self.sim.check_liveness()
            except Exception as exc:
                self._save(exc)
                raise
            if isinstance(failure, Exception) and not isinstance(
                failure, hypothesis.errors.UnsatisfiedAssumption
            ):
                self._save(failure)
        finally:
            if self._store is not None:
                self._store.close()

    def _save(self, failure: BaseException) -> None:
        try:
            final = current_build_context().is_final
        except hypothesis.errors.InvalidArgument:
            final = True
        if not final:
            return
        store = self.sim.store
        sessions = [s for s in self.sessions if s in store]
        if not sessions:
            return
        path = failure_path(_test_name(type(self)), self.failures_dir)
        saved = save_sessions(store, sessions, path)
        lines = [f"Amber saved the sessions of this example in {path}; time-travel with:"]
        lines += [f"    {command}" for command in inspect_commands(saved, path)]
        failure.add_note("\n".join(lines))


def _runs_tools(sim: Simulation, session: str) -> bool:
    machine = sim.machines.get(session)
    return machine is not None and machine.run is not None and bool(machine.run.tools)


def _test_name(machine: type) -> str:
    current = os.environ.get("PYTEST_CURRENT_TEST", "")
    if current:
        node = current.split(" ")[0]
        parts = [p for p in node.split("::")[1:] if p != "runTest"]
        if parts:
            return "-".join(parts)
    return machine.__name__


def _is_sim_tool(item: Any) -> bool:
    return all(hasattr(item, a) for a in ("name", "spec", "run"))


SIMULATION_OPTIONS: dict[str, Check] = {
    "tools": sequence_of(_is_sim_tool, "simulated tools (with name, spec() and run())"),
    "sessions": session_names,
    "settings": instance(TurnSettings),
    "max_answers": whole(1),
    "plan_options": mapping_of_flags(PLAN_OPTIONS),
    "interrupt_stuck": flag,
    "failures_dir": optional_path,
    "explain": flag,
}
"""The checks of ``simulation_machine``'s options."""


def _check_machine(
    tools: Sequence[Any] | None, model: Any, adapters: Any, name: Any, base: Any
) -> None:
    """The arguments of ``simulation_machine`` that are not class attributes."""
    function = "simulation_machine"
    check_machine_class(function, base, SimulationMachine, name, error=InvalidArgument)
    for option, value in (("model", model), ("adapters", adapters)):
        if value is not None and not callable(value):
            raise InvalidArgument(
                f"{function}() option {option!r} must be None or a function that makes the "
                f"{'model' if option == 'model' else 'adapters'} per example (got {value!r})."
            )
    if tools is None:
        return
    if isinstance(tools, str | bytes) or not isinstance(tools, Sequence):
        raise InvalidArgument(
            f"{function}() option 'tools' must be a sequence of simulated tools (got {tools!r})."
        )
    names: set[str] = set()
    for i, item in enumerate(tools):
        if not _is_sim_tool(item):
            raise InvalidArgument(
                f"{function}() option 'tools' must hold simulated tools (a name, spec() and "
                f"run(arguments)); tools[{i}] is {item!r}. Bridge real tools with "
                "actors.testing.simulation_machine or sim_tool."
            )
        if item.name in names:
            raise InvalidArgument(
                f"{function}() option 'tools' must name each tool once; {item.name!r} is there "
                "twice."
            )
        names.add(item.name)


def simulation_machine(
    *,
    tools: Sequence[SimTool] | None = None,
    model: Callable[[], SimModel] | None = None,
    adapters: Callable[[], Sequence[SimAdapter]] | None = None,
    name: str = "SimulationMachine",
    base: type[SimulationMachine] = SimulationMachine,
    **options: Any,
) -> type[SimulationMachine]:
    """A ``SimulationMachine`` subclass with your parts plugged in.

    Args:
        tools: the tools (simulated parts); None keeps ``fake_tools()``.
        model: makes the model per example; None follows drawn ``TurnPlan``s.
        adapters: makes the adapters per example; None: a live and a silent channel.
        name: the class name (shown in failures and saved files).
        base: the class to subclass.
        **options: other class attributes (``sessions``, ``settings``, ``failures_dir`` …).

    Returns:
        The class; run it with ``TestX = simulation_machine(...).TestCase``.

    Raises:
        InvalidArgument: an option is unknown or does not fit (the message names it, what
            was expected and what was given).
    """
    _check_machine(tools, model, adapters, name, base)
    check_options("simulation_machine", base, options, SIMULATION_OPTIONS)
    namespace: dict[str, Any] = {**options, "__module__": base.__module__}
    if tools is not None:
        namespace["tools"] = tuple(tools)
    if model is not None:
        namespace["make_model"] = lambda self: model()
    if adapters is not None:
        namespace["make_adapters"] = lambda self: adapters()
    return type(name, (base,), namespace)
