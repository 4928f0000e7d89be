"""``Simulation.stop(drain=True)``: the tool calls running when the runtime stops come in
before their turn gives its input back, as ``Runtime.stop`` drains sync tool calls; the
calls of cancellable tools (async ones) are cut at once."""

from __future__ import annotations

from runtime import Status, TurnStatus
from runtime.testing import (
    FakeTool,
    PlanModel,
    Say,
    Simulation,
    SimulationMachine,
    ToolBehaviour,
    TurnPlan,
    UseTools,
    fake_tools,
)

SLOW = FakeTool("slow", ToolBehaviour.SLOW, seconds=5.0)
HANG = FakeTool("hang", ToolBehaviour.HANG)
ASYNC = FakeTool("async", ToolBehaviour.SLOW, seconds=5.0, cancellable=True)


def _started(*tools: str, session: str = "s", sim: Simulation | None = None) -> Simulation:
    """A simulation whose ``session`` runs a call of each of ``tools`` now."""
    sim = sim or Simulation(model=PlanModel(), tools=[SLOW, HANG, ASYNC])
    calls = tuple((tool, {"text": "a"}) for tool in tools)
    sim.send(session, "go", plan=TurnPlan(UseTools(*calls)))
    sim.run_until(lambda sim: len(sim.head(session).tool_calls) == len(tools))
    return sim


def _calls(sim: Simulation, session: str = "s") -> list[tuple[Status, bool]]:
    """Each tool call of the first turn: its status, and whether it has a result."""
    state = sim.head(session)
    first = state.turn_list()[0]
    return [
        (m.status, m.tool_call.id in state.tool_results)
        for m in state
        if m.tool_call is not None and m.turn_id == first.id
    ]


class TestStopDrain:
    def test_a_running_call_ends_in_the_drain(self) -> None:
        """Its result is stored, the call is not interrupted, the turn is recovered."""
        sim = _started("slow")
        sim.stop(drain=True)
        assert _calls(sim) == [(Status.RESPONDED, True)]
        assert sim.head("s").turn_list()[0].status is TurnStatus.RECOVERED
        sim.settle()
        sim.raise_problem()

    def test_without_the_drain_the_call_is_interrupted(self) -> None:
        """The stop as before: the call is cut, with no result."""
        sim = _started("slow")
        sim.stop()
        assert _calls(sim) == [(Status.INTERRUPTED, False)]

    def test_a_call_that_never_returns_is_cut_when_the_drain_ends(self) -> None:
        """A hung call: the drain ends with nothing on its way, and the call is interrupted."""
        sim = _started("hang")
        sim.stop(drain=True)
        assert _calls(sim) == [(Status.INTERRUPTED, False)]


class TestStopDrainCancellable:
    def test_a_cancellable_call_is_cut_at_once(self) -> None:
        """An async tool's call is interrupted by a draining stop, though its result is on
        its way (``Runtime.stop`` cancels it), and the turn is recovered."""
        sim = _started("async")
        sim.stop(drain=True)
        assert _calls(sim) == [(Status.INTERRUPTED, False)]
        state = sim.head("s")
        assert state.turn_list()[0].status is TurnStatus.RECOVERED
        (call,) = [m for m in state if m.tool_call is not None]
        assert call.metadata.get("may_have_run") is True

    def test_in_one_turn_the_sync_call_ends_and_the_async_one_is_cut(self) -> None:
        """The stop waits for the sync call only: its result is stored, the async call is
        interrupted and may have run."""
        sim = _started("slow", "async")
        sim.stop(drain=True)
        assert _calls(sim) == [(Status.RESPONDED, True), (Status.INTERRUPTED, False)]
        sim.settle()
        sim.raise_problem()

    def test_across_sessions_only_the_sync_call_is_waited_for(self) -> None:
        """A session running an async call is cut at once; one running a sync call has its
        result stored."""
        sim = _started("async", session="a")
        _started("slow", session="b", sim=sim)
        sim.stop(drain=True)
        assert _calls(sim, "a") == [(Status.INTERRUPTED, False)]
        assert _calls(sim, "b") == [(Status.RESPONDED, True)]

    def test_a_fake_tool_is_not_cancellable_by_default(self) -> None:
        """Without ``cancellable`` a ``FakeTool`` is drained, as before it had one."""
        assert FakeTool("t").cancellable is False
        assert [t.name for t in fake_tools() if t.cancellable] == ["slow_async"]


class TestMachineReachesMixedStops:
    def test_run_to_tools_then_a_draining_stop(self) -> None:
        """The stateful machine's ``run_to_tools`` rule leaves the turn running its calls,
        so the ``stop`` drawn next waits for the sync one and cuts the async one."""
        machine = SimulationMachine()
        plan = TurnPlan(UseTools(("slow", {"text": "a"}), ("slow_async", {"text": "b"})))
        machine.send("s1", "hi", "discord", plan)
        machine.run_to_tools("s1")
        assert len(machine.sim.head("s1").tool_calls) == 2
        machine.stop(drain=True)
        assert _calls(machine.sim, "s1") == [(Status.RESPONDED, True), (Status.INTERRUPTED, False)]
        machine.teardown()

    def test_run_to_tools_ends_when_nothing_is_left(self) -> None:
        """A turn that calls no tool: the rule lets it finish (and an idle session waits)."""
        machine = SimulationMachine()
        machine.run_to_tools("s2")
        machine.send("s1", "hi", "discord", TurnPlan(Say("hello")))
        machine.run_to_tools("s1")
        assert machine.sim.head("s1").active_turn is None
        machine.teardown()
