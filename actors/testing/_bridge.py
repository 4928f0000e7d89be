"""Your real parts in the simulator: tools, models and adapters run on simulated time.

The simulator (``runtime.testing.Simulation``) calls parts synchronously.
These bridges run yours inside it:

- ``sim_tool(tool)`` runs ``tool.invoke`` in a private trio run. An async
  tool runs under trio's ``MockClock`` with autojump: its sleeps and time
  limits cost no real time, and a call still running after ``hang_after``
  simulated seconds never returns (a hang). A sync tool (or one bridged with
  ``clock="real"``: a shell command, a real socket) runs on the real clock.
- ``sim_model(model)`` streams ``model.stream(request)`` the same way and
  turns what it yields (and when) into a script; a ``ScriptedModel`` is used
  as it is.
- ``sim_adapter(adapter)`` gives an adapter (an ``Adapter`` instance, not
  started: no thread) each update directly and collects what it reports.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Literal

import trio
import trio.testing

from runtime import (
    ChannelKind,
    Delay,
    Fail,
    Hang,
    InvalidArgument,
    ModelRequest,
    Response,
    ScriptStep,
    Status,
    ToolSpec,
    Update,
)
from runtime._article import type_named
from runtime._storable import shown
from runtime.testing import Report, SimAdapter, SimModel, SimTool, SimulationMachine, ToolRun
from runtime.testing import simulation_machine as _simulation_machine
from runtime.testing._options import with_article

from .._adapter import Adapter
from .._errors import InvalidConfig
from .._model import Model
from .._tools import Tool, tool

__all__ = ["as_tool", "sim_adapter", "sim_model", "sim_tool", "simulation_machine"]

Clock = Literal["auto", "mock", "real"]


def _mock(clock: Clock, is_async: bool) -> bool:
    if clock == "auto":
        return is_async
    return clock == "mock"


class _BridgedTool:
    """A real ``Tool`` run inside the simulator."""

    def __init__(self, tool: Tool, *, clock: Clock, hang_after: float) -> None:
        self.tool = tool
        signature = getattr(tool, "_signature", None)
        is_async = bool(getattr(signature, "is_async", True))
        self._mock = _mock(clock, is_async)
        self._hang_after = hang_after

    @property
    def name(self) -> str:
        return self.tool.name

    @property
    def cancellable(self) -> bool:
        """The tool's own (``Tool.cancellable``): a draining stop waits for a sync tool's
        calls, and cuts an async tool's."""
        return self.tool.cancellable

    def spec(self) -> ToolSpec:
        return self.tool.spec()

    def run(self, arguments: Mapping[str, Any]) -> ToolRun:
        async def main() -> ToolRun:
            start = trio.current_time()
            with trio.move_on_after(self._hang_after):
                outcome = await self.tool.invoke(arguments)
                # Real time is not simulated time: a run on the real clock takes none of
                # it, so that an example replays the same way (Hypothesis shrinks it).
                seconds = trio.current_time() - start if self._mock else 0.0
                return ToolRun(seconds=seconds, outcome=outcome)
            return ToolRun(seconds=self._hang_after, outcome=None)

        clock = trio.testing.MockClock(autojump_threshold=0) if self._mock else None
        result: ToolRun = trio.run(main, clock=clock)
        return result


def sim_tool(
    tool_or_function: Tool | Callable[..., Any],
    *,
    clock: Clock = "auto",
    hang_after: float = 60.0,
) -> SimTool:
    """Your tool as a simulator part.

    Args:
        tool_or_function: a ``Tool`` (or a plain function, wrapped with ``tool``).
        clock: ``mock`` runs it on trio's mock clock (sleeps and limits are free),
            ``real`` on the real one (for tools that wait on threads, processes or
            sockets), ``auto`` picks ``mock`` for async functions and ``real`` for
            sync ones.
        hang_after: simulated seconds after which a call that has not returned
            counts as never returning (it matters for tools with no time limit of
            their own; a busy retry loop costs real time for each simulated step).
    """
    hang_after = _hang_after(
        "sim_tool", hang_after, "60", "how long a call may run before it counts as never returning"
    )
    made = as_tool("sim_tool", tool_or_function)
    return _BridgedTool(made, clock=clock, hang_after=hang_after)


def _hang_after(where: str, value: object, example: str, meaning: str) -> float:
    """``hang_after`` checked: a finite number of simulated seconds over 0 (``where``,
    ``example`` and ``meaning`` word the error)."""
    from .._seconds import MAX_SECONDS

    number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if number is None or not 0 < number <= MAX_SECONDS:  # nan fails both
        raise InvalidArgument(
            f"{where}() option 'hang_after' must be a number of simulated seconds over 0 and at "
            f"most {MAX_SECONDS} (100 years); got {value!r}. Pass a plain number such as "
            f"{example} ({meaning})."
        )
    return float(number)


def as_tool(where: str, value: Tool | Callable[..., Any]) -> Tool:
    """``value`` as a ``Tool``: a plain function is wrapped with ``tool()`` (as ``sim_tool``
    does); anything else is ``InvalidArgument`` saying what to pass."""
    if isinstance(value, Tool):
        return value
    if callable(value):
        return tool(value)
    raise InvalidArgument(
        f"{where}() takes a Tool (made with @tool) or a plain function to wrap with tool(); "
        f"got {shown(value)} that is {type_named(value)}."
    )


class _BridgedModel:
    """A real ``Model`` whose answers are recorded on the mock clock as scripts."""

    def __init__(self, model: Model, *, hang_after: float) -> None:
        self.model = model
        self.name = getattr(model, "name", None)
        self._hang_after = hang_after

    def respond(self, request: ModelRequest) -> Response:
        async def main() -> list[ScriptStep]:
            steps: list[ScriptStep] = []
            last = trio.current_time()
            with trio.move_on_after(self._hang_after):
                try:
                    stream: AsyncIterator[Any] = self.model.stream(request)
                    async for chunk in stream:
                        now = trio.current_time()
                        if now > last:
                            steps.append(Delay(now - last))
                            last = now
                        steps.append(chunk)
                except Exception as exc:
                    steps.append(Fail(str(exc), error_type=type(exc).__name__))
                return steps
            steps.append(Hang())
            return steps

        steps = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
        return Response(tuple(steps))


def sim_model(model: Model | SimModel, *, hang_after: float = 600.0) -> SimModel:
    """Your model as a simulator part (a ``ScriptedModel`` or any ``respond`` model as it is).

    Args:
        model: the model.
        hang_after: simulated seconds after which a stream that has not ended
            counts as never ending.
    """
    if hasattr(model, "respond"):
        return model  # type: ignore[return-value]
    hang_after = _hang_after(
        "sim_model", hang_after, "600", "how long a stream may run before it counts as never ending"
    )
    if not hasattr(model, "stream"):
        raise InvalidConfig(
            f"sim_model() takes a Model (with an async stream(request)) or a simulator model "
            f"(with respond(request)); got {model!r}."
        )
    return _BridgedModel(model, hang_after=hang_after)


class _BridgedAdapter:
    """A real ``Adapter`` (not started) told each update directly."""

    def __init__(self, adapter: Adapter, *, seconds: float, label: str | None) -> None:
        self.adapter = adapter
        self.platform = adapter.platform
        self.kind = ChannelKind(adapter.kind)
        self.sessions = adapter.sessions
        self.channels = adapter.channels
        self.label = label or f"{type(adapter).__name__}({adapter.platform!r})"
        self._seconds = seconds
        self._reports: list[Report] = []
        adapter.attach(self)

    def delivered(self, session_id: str, message_id: str, expected: Status) -> None:
        """The adapter's delivery sink: collect the report."""
        self._reports.append(
            Report(message_id=message_id, expected=expected, seconds=self._seconds)
        )

    def on_update(self, update: Update) -> Sequence[Report]:
        self._reports = []
        self.adapter.on_receive(update)
        reports, self._reports = self._reports, []
        return tuple(reports)


def sim_adapter(
    adapter: Adapter | SimAdapter, *, seconds: float = 0.05, label: str | None = None
) -> SimAdapter:
    """Your adapter as a simulator part: pass it made but not started (``MyAdapter(...)``).

    Args:
        adapter: the adapter instance (``Adapter.start`` is not called: no thread).
        seconds: simulated time a delivery report takes to reach the session.
        label: its name in failures (default: class and platform).
    """
    if isinstance(adapter, Adapter):
        return _BridgedAdapter(adapter, seconds=seconds, label=label)
    if hasattr(adapter, "on_update") and hasattr(adapter, "platform"):
        return adapter
    raise InvalidConfig(
        f"sim_adapter() takes an Adapter instance (made, not started) or a simulator adapter; "
        f"got {adapter!r}."
    )


def _is_sim_tool(item: Any) -> bool:
    return all(hasattr(item, a) for a in ("name", "spec", "run"))


def _is_model(item: Any) -> bool:
    return hasattr(item, "stream") or hasattr(item, "respond")


def _as_sim_tool(item: Any) -> SimTool:
    if isinstance(item, Tool) or not (hasattr(item, "run") and hasattr(item, "spec")):
        return sim_tool(item)
    return item  # type: ignore[no-any-return]


def simulation_machine(
    *,
    tools: Sequence[Tool | Callable[..., Any] | SimTool] | None = None,
    model: Model | SimModel | Callable[[], Model | SimModel] | None = None,
    adapters: Callable[[], Sequence[Adapter | SimAdapter]] | None = None,
    name: str = "SimulationMachine",
    **options: Any,
) -> type[SimulationMachine]:
    """``runtime.testing.simulation_machine`` with your real parts bridged in.

    Args:
        tools: your tools (``Tool``s or functions, run by ``sim_tool``) or
            simulated ones; None keeps ``fake_tools()``.
        model: your model (or a function making one per example), run by
            ``sim_model``; None follows drawn ``TurnPlan``s.
        adapters: a function making your adapters (instances, not started)
            per example; None: a live and a silent ``FakeChannel``.
        name: the class name (shown in failures and saved files).
        **options: other class attributes of ``SimulationMachine``.

    Returns:
        The class; run it with ``TestX = simulation_machine(...).TestCase``.
    """
    if tools is not None:
        if isinstance(tools, str | bytes) or not isinstance(tools, Sequence):
            raise InvalidConfig(
                "simulation_machine() option 'tools' must be a sequence of tools (Tools, "
                f"functions or simulated tools) (got {tools!r})."
            )
        for i, item in enumerate(tools):
            if not callable(item) and not _is_sim_tool(item):
                raise InvalidConfig(
                    "simulation_machine() option 'tools' must hold tools (a Tool, a function "
                    f"or a simulated tool); tools[{i}] is {item!r} that is "
                    f"{with_article(type(item).__name__)}."
                )
    if adapters is not None and not callable(adapters):
        raise InvalidConfig(
            "simulation_machine() option 'adapters' must be None or a function that makes the "
            f"adapters (instances, not started) per example (got {adapters!r})."
        )
    if model is not None and not callable(model) and not _is_model(model):
        raise InvalidConfig(
            "simulation_machine() option 'model' must be None, a Model, a simulated model or a "
            f"function that makes one per example (got {model!r} that is "
            f"{with_article(type(model).__name__)})."
        )
    bridged_tools = None if tools is None else [_as_sim_tool(t) for t in tools]
    make_model: Callable[[], SimModel] | None = None
    if model is not None:
        if isinstance(model, type) or not (hasattr(model, "stream") or hasattr(model, "respond")):
            factory: Callable[[], Any] = model  # a class or a function: one model per example
            make_model = lambda: sim_model(factory())  # noqa: E731
        else:
            made = sim_model(model)
            make_model = lambda: made  # noqa: E731
    make_adapters: Callable[[], Sequence[SimAdapter]] | None = None
    if adapters is not None:
        make_adapters = lambda: [sim_adapter(a) for a in adapters()]  # noqa: E731
    try:
        return _simulation_machine(
            tools=bridged_tools, model=make_model, adapters=make_adapters, name=name, **options
        )
    except InvalidArgument as exc:  # the pure factory's checks: the same error as the bridge's
        raise InvalidConfig(str(exc)) from None
