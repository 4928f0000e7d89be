"""The simulated shell: what ``actors.SessionActor`` and the runtime do, without threads.

``SimShell`` holds a runtime's state on simulated time (the store, one
``SessionMachine`` per live session, the work in flight as sources of
completions) and does what the real shell does with each decision: store
its events (copies through JSON, as a durable store keeps them), adopt the
next machine, check the new events, and turn each command into future
completions (a model call's chunks and end, a tool's result, a timer, a
delivery report, a ``Resume``, a passivation). ``Simulation`` adds what a
person or a test does with it.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs

from .. import Announce as _Announce
from .. import (
    CallModel,
    CancelRun,
    ClearTimer,
    Delay,
    Delivered,
    Draft,
    Event,
    Fail,
    Hang,
    Input,
    InputArrived,
    InvalidArgument,
    Loaded,
    Message,
    MessageAdded,
    ModelChunk,
    ModelEnded,
    ModelRequest,
    Passivate,
    Response,
    Resume,
    ResumeSoon,
    RunTool,
    SessionMachine,
    SessionState,
    SetTimer,
    TimerFired,
    ToolDone,
    TurnSettings,
    Visibility,
    awaits_delivery,
    channel_rule,
    from_json,
    step,
    to_json,
)
from .._article import type_named
from .._chunks import describe_chunk
from .._notices import model_error_type
from .._script import check_response
from .._storable import shown
from ..store import MemoryStore, Store
from ._checker import TimelineChecker
from ._ledger import DeliveryLedger, DeliveryReport
from ._parts import ScriptModel, SimAdapter, SimModel, SimTool
from ._plans import PLAN_KEY, TurnPlan
from ._views import check_provider_views
from ._violation import InvariantViolation

__all__ = ["EPOCH", "SimShell"]

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
"""Simulated time 0."""

_Key = tuple[str, ...]


@attrs.define(eq=False)
class _Source:
    """Completions of one origin, delivered in order."""

    key: _Key
    session_id: str
    order: int
    items: deque[tuple[float, Any]] = attrs.field(factory=deque)


class SimShell:
    """The shell of a simulated runtime (see ``Simulation`` for its arguments)."""

    def __init__(
        self,
        *,
        model: SimModel,
        tools: Sequence[SimTool] = (),
        adapters: Sequence[SimAdapter] = (),
        settings: TurnSettings | None = None,
        store: Store | None = None,
        choose: Callable[[int], int] | None = None,
        freeze_time: bool = False,
        check_views: bool = True,
        isolate: bool = True,
        max_events: int = 20_000,
    ) -> None:
        base = settings or TurnSettings()
        name = getattr(model, "name", None)
        self.settings = attrs.evolve(
            base,
            tools=tuple(t.spec() for t in tools),
            model_name=base.model_name or (name if isinstance(name, str) else None),
        )
        self._runner = self.settings.runner or "runner_sim"
        self.settings = attrs.evolve(self.settings, runner=self._runner)
        self.model = model
        self.tools = {t.name: t for t in tools}
        self.adapters = list(adapters)
        self.store: Store = store if store is not None else MemoryStore()
        self.choose = choose or (lambda n: 0)
        self.freeze_time = freeze_time
        self.check_views = check_views
        self.isolate = isolate
        self.max_events = max_events
        self.now = 0.0
        """Simulated seconds since ``EPOCH``."""
        self.machines: dict[str, SessionMachine] = {}
        """The live sessions' machines."""
        self.checkers: dict[str, TimelineChecker] = {}
        self.ledger = DeliveryLedger()
        """Announcements and delivery reports (the delivery contract)."""
        self.accepted: dict[str, list[str]] = {}
        """Ids of the inputs each session accepted."""
        self.running_tools: dict[tuple[str, str], tuple[str, float]] = {}
        """Tool runs that will never return by themselves: (session, call id) -> (tool, start)."""
        self.generation = 0
        """Restarts so far."""
        self.steps = 0
        """Inputs the machines took."""
        self._sources: dict[_Key, _Source] = {}
        self._order = itertools.count()
        self._problem: InvariantViolation | None = None
        self._tool_calls: dict[str, int] = {}
        self._model_calls: dict[str, int] = {}

    def head(self, session_id: str) -> SessionState:
        """The session's head (from its machine if live, else from the store)."""
        machine = self.machines.get(session_id)
        if machine is not None:
            return machine.state
        if session_id in self.store:
            return self.store.load_state(session_id)
        return SessionState.empty(session_id)

    def raise_problem(self) -> None:
        """Raise the first contract violation a part caused, if any."""
        if self._problem is not None:
            raise self._problem

    # -- the shell, simulated ------------------------------------------------------------------

    def _plan(self, where: str, plan: TurnPlan | None, key: str | None = None) -> dict[str, Any]:
        """Give the planned model ``plan``; the metadata that names it.

        Raises:
            InvalidArgument: ``plan`` is not a ``TurnPlan``, ``key`` not a str, or the
                model follows no plans (the plan would be dropped without a word).
        """
        if plan is None:
            return {}
        if not isinstance(plan, TurnPlan):
            raise InvalidArgument(
                f"Simulation.{where}() option 'plan' takes a TurnPlan (like "
                f"TurnPlan(Say('hi'))); got {shown(plan)} that is {type_named(plan)}."
            )
        if key is not None and not isinstance(key, str):
            raise InvalidArgument(
                f"Simulation.{where}() option 'plan_key' takes a str naming the plan; got "
                f"{shown(key)} that is {type_named(key)}."
            )
        plans = getattr(self.model, "plans", None)
        if not isinstance(plans, dict):
            raise InvalidArgument(
                f"Simulation.{where}() option 'plan' needs a model that follows plans (a "
                f"PlanModel); this simulation's model is {type_named(self.model)}. Make it "
                "with Simulation(model=PlanModel(), ...), or leave plan out."
            )
        key = key or f"plan-{len(plans) + 1}"
        plans[key] = plan
        return {PLAN_KEY: key}

    def _stamp(self) -> dict[str, Any]:
        if self.freeze_time:
            return {"at": EPOCH, "mono": 0.0}
        return {"at": EPOCH + timedelta(seconds=self.now), "mono": self.now}

    def _arrive(self, session_id: str, draft: Draft) -> Message:
        decision = self._step(session_id, InputArrived(draft=draft, **self._stamp()))
        event = decision.events[0]
        assert isinstance(event, MessageAdded)
        self.accepted.setdefault(session_id, []).append(event.message.id)
        return self.machines[session_id].state.message(event.message.id)

    def _machine(self, session_id: str, *, restart: bool = False) -> SessionMachine:
        """The session's machine, loaded from the store (and recovered) if not live."""
        machine = self.machines.get(session_id)
        if machine is None:
            machine = SessionMachine.load(self.head(session_id))
            self._apply(session_id, machine, Loaded(**self._stamp()))
            machine = self.machines[session_id]
        return machine

    def _restart(self) -> None:
        self.generation += 1
        # A new process is a new runner: on a shared store its predecessor's turns
        # are another runner's, and wait recover_after.
        self.settings = attrs.evolve(self.settings, runner=f"{self._runner}-{self.generation}")
        for info in self.store.list_sessions():
            if info.needs_runner:
                self._machine(info.session_id, restart=True)

    def _step(self, session_id: str, input: Input) -> Any:
        return self._apply(session_id, self._machine(session_id), input)

    def _apply(self, session_id: str, machine: SessionMachine, input: Input) -> Any:
        decision = step(machine, self.settings, input)
        events: Sequence[Event] = decision.events
        if self.isolate and events:
            # Stored as a durable store keeps them: copies through JSON, so a part
            # that forces a frozen value open changes the machine's head, not the log.
            events = [from_json(to_json(event), Event) for event in events]
        if events:
            self.store.append(events)
        self.machines[session_id] = decision.machine
        self.steps += 1
        checker = self.checkers.get(session_id)
        if checker is None:
            # Not ``remember`` (a hash of each state): nothing here checks past states;
            # a part that changes the machine's state in place fails ``compare`` below.
            checker = self.checkers[session_id] = TimelineChecker(session_id, remember=False)
            stored = self.store.events(session_id) if session_id in self.store else []
            checker.feed(e for e in stored if e.seq <= machine.state.seq)
        checker.feed(events)
        checker.compare(decision.machine.state, who="the machine")
        for command in decision.commands:
            self._run(session_id, command)
        return decision

    def _run(self, session_id: str, command: Any) -> None:
        now = self.now
        if isinstance(command, _Announce):
            self._announce(session_id, command.update)
        elif isinstance(command, CallModel):
            self._call_model(session_id, command)
        elif isinstance(command, RunTool):
            self._run_tool(session_id, command)
        elif isinstance(command, CancelRun):
            for kind in ("model", "tool"):
                source = self._sources.pop((kind, session_id, command.run_id), None)
                if source is not None and source.items and self.choose(2) == 1:
                    # The run had already reported before the cancel reached it: the
                    # report waits in the mailbox and the machine must ignore it.
                    stale = (f"stale-{kind}", session_id, command.run_id)
                    self._add(stale, session_id, [source.items[0]])
            self.running_tools.pop((session_id, command.run_id), None)
        elif isinstance(command, SetTimer):
            key = ("timer", session_id, command.name)
            self._sources.pop(key, None)
            self._add(key, session_id, [(now + command.seconds, command.name)])
        elif isinstance(command, ClearTimer):
            self._sources.pop(("timer", session_id, command.name), None)
        elif isinstance(command, ResumeSoon):
            self._add(("mailbox", session_id), session_id, [(now, "resume")])
        elif isinstance(command, Passivate):
            self._add(("mailbox", session_id), session_id, [(now, ("passivate", command.seq))])

    def _add(self, key: _Key, session_id: str, items: Sequence[tuple[float, Any]]) -> None:
        source = self._sources.get(key)
        if source is None:
            source = self._sources[key] = _Source(key, session_id, next(self._order))
        for due, item in items:
            last = source.items[-1][0] if source.items else due
            source.items.append((max(due, last), item))

    def _call_model(self, session_id: str, command: CallModel) -> None:
        if self.check_views:
            s = self.settings
            check_provider_views(
                command.request.state,
                system=s.system_prompt,
                window=s.window,
                artifacts=s.artifacts,
                max_result_chars=s.max_result_chars,
            )
        t = self.now
        items: list[tuple[float, Any]] = []
        number = self._model_calls[session_id] = self._model_calls.get(session_id, 0) + 1
        try:
            response = self.model.respond(command.request)
        except Exception as exc:
            items.append((t, ("end", (f"{type(exc).__name__}: {exc}", model_error_type(exc)))))
        else:
            self._check_response(response, session_id, number, command.request)
            for part in response.steps:
                if isinstance(part, Delay):
                    t += part.seconds
                elif isinstance(part, Fail):
                    error = f"{part.error_type}: {part.message or part.error_type}"
                    items.append((t, ("end", (error, part.error_type))))
                    break
                elif isinstance(part, Hang):
                    break
                else:
                    items.append((t, ("chunk", part)))
            else:
                items.append((t, ("end", (None, None))))
        self._add(("model", session_id, command.run_id), session_id, items)

    def _check_response(
        self, response: object, session_id: str, number: int, request: ModelRequest
    ) -> None:
        """An ``InvariantViolation`` (raised at once) if the model answered call ``number`` of
        the session with something the simulator cannot stream: not a ``Response``, or a
        ``Delay`` that is not finite seconds >= 0; for a ``ScriptModel`` (a script a test
        wrote) any step that is not a chunk, a ``Delay``, a ``Fail`` or a ``Hang`` with
        fields of their types. Another model's chunks are the runtime's to judge, as a real
        model's are (a malformed one fails the call)."""
        model = type(self.model).__name__
        if not isinstance(response, Response):
            what = (
                f"{describe_chunk(response)}; it must return a Response (built with reply(), "
                "call(), error() … or Response([step, …]))"
            )
        else:
            try:
                check_response(response, "", strict=isinstance(self.model, ScriptModel))
                return
            except InvalidArgument as exc:
                what = f"a Response whose {str(exc).removeprefix('.')}"
        detail = (
            f"{model}'s respond(request) returned {what.rstrip('.')} (turn {request.turn_id!r}, "
            f"its call {request.call_index + 1})"
        )
        raise InvariantViolation(
            f"Contract (a model answers every call with a Response) broken by call {number} "
            f"of session {session_id!r}: {detail}.",
            name="a model answers every call with a Response",
            detail=detail, session_id=session_id,
        )  # fmt: skip

    def _run_tool(self, session_id: str, command: RunTool) -> None:
        tool = self.tools[command.name]
        number = self._tool_calls[command.name] = self._tool_calls.get(command.name, 0) + 1
        try:
            run = tool.run(command.arguments)
        except Exception as exc:
            detail = f"invoke raised {type(exc).__name__}: {exc}"
            self._problem = self._problem or InvariantViolation(
                f"Contract (a tool answers every call with a result or an error) broken by "
                f"call {number} of tool {command.name!r} with {dict(command.arguments)!r}: "
                f"{detail}",
                name="a tool answers every call with a result or an error",
                detail=detail, session_id=session_id,
            )  # fmt: skip
            return
        if run.outcome is None:
            self.running_tools[(session_id, command.call_id)] = (command.name, self.now)
            return
        key = ("tool", session_id, command.call_id)
        self._add(key, session_id, [(self.now + run.seconds, run.outcome)])

    def _announce(self, session_id: str, update: Any) -> None:
        self.ledger.announced(update)
        for adapter in self.adapters:
            if not _serves(adapter, update.message):
                continue
            for report in adapter.on_update(update):
                key = ("delivery", adapter.label, session_id)
                item = ("delivered", adapter, report)
                self._add(key, session_id, [(self.now + report.seconds, item)])

    def _candidates(self) -> list[tuple[float, int, _Key]]:
        out = [(s.items[0][0], s.order, s.key) for s in self._sources.values() if s.items]
        out.sort()
        return out

    def _deliver(self, key: _Key) -> None:
        source = self._sources[key]
        due, item = source.items.popleft()
        if not source.items:
            del self._sources[key]
        self.now = max(self.now, due)
        session_id = source.session_id
        kind = key[0]
        stamp = self._stamp()
        if kind in ("model", "stale-model"):
            what, value = item
            run_id = key[2]
            if what == "chunk":
                self._step(session_id, ModelChunk(run_id=run_id, chunk=value, **stamp))
            else:
                error, error_type = value
                self._step(
                    session_id,
                    ModelEnded(run_id=run_id, error=error, error_type=error_type, **stamp),
                )
        elif kind in ("tool", "stale-tool"):
            self._step(session_id, ToolDone(call_id=key[2], outcome=item, **stamp))
        elif kind == "timer":
            if session_id in self.machines:
                self._step(session_id, TimerFired(name=item, **stamp))
        elif kind == "delivery":
            _, adapter, report = item
            self.ledger.reported(
                DeliveryReport(
                    adapter=adapter.label, platform=adapter.platform, kind=adapter.kind,
                    session_id=session_id, message_id=report.message_id,
                    expected=report.expected,
                )
            )  # fmt: skip
            self._step(session_id, Delivered(message_id=report.message_id,
                                             expected=report.expected, **stamp))  # fmt: skip
            self.ledger.check({session_id: self.machines[session_id].state})
        elif item == "resume":
            if session_id in self.machines:
                self._step(session_id, Resume(**stamp))
        else:
            self._passivate(session_id, item[1])

    def _passivate(self, session_id: str, seq: int) -> None:
        machine = self.machines.get(session_id)
        if machine is None or not machine.is_quiet or machine.state.seq != seq:
            return
        del self.machines[session_id]
        for key in [k for k, s in self._sources.items()
                    if s.session_id == session_id and k[0] in ("timer", "mailbox")]:  # fmt: skip
            del self._sources[key]

    def _check_delivered(self, state: SessionState) -> None:
        failed: set[str] = set()
        for adapter in self.adapters:
            failed |= set(getattr(adapter, "failed", ()))
        waiting = []
        for message in state.messages:
            if not message.active or not awaits_delivery(message) or message.id in failed:
                continue
            if any(
                _serves(a, message)
                and channel_rule(a.kind, message).visibility is not Visibility.HIDDEN
                for a in self.adapters
            ):
                waiting.append(f"{message.id} ({message.chatbot_id}, {message.status})")
        if waiting:
            detail = (
                f"outputs {waiting} are still not reported delivered by the adapters of their "
                "platforms once everything settled"
            )
            raise InvariantViolation(
                f"Contract (adapters report every output they show or absorb delivered) broken "
                f"at seq {state.seq}: {detail}",
                name="adapters report every output they show or absorb delivered",
                seq=state.seq, detail=detail, session_id=state.session_id,
            )  # fmt: skip


def _serves(adapter: SimAdapter, message: Message) -> bool:
    """The adapter's platform, and its sessions and channels if it is scoped to some."""
    sessions = getattr(adapter, "sessions", None)
    channels = getattr(adapter, "channels", None)
    return (
        adapter.platform == message.chatbot_id
        and (sessions is None or message.session_id in sessions)
        and (channels is None or message.channel_id in channels)
    )
