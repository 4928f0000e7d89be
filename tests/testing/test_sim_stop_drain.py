"""``Simulation.stop(drain=True)``: the tool calls running when the runtime stops come in
before their turn gives its input back, as ``Runtime.stop`` drains sync tool calls."""

from __future__ import annotations

from runtime import Status, TurnStatus
from runtime.testing import FakeTool, PlanModel, Simulation, ToolBehaviour, TurnPlan, UseTools

SLOW = FakeTool("slow", ToolBehaviour.SLOW, seconds=5.0)
HANG = FakeTool("hang", ToolBehaviour.HANG)


def _started(tool: str) -> Simulation:
    """A simulation whose session ``s`` runs a call of ``tool`` now."""
    sim = Simulation(model=PlanModel(), tools=[SLOW, HANG])
    sim.send("s", "go", plan=TurnPlan(UseTools((tool, {"text": "a"}))))
    sim.run_until(lambda sim: bool(sim.head("s").tool_calls))
    return sim


def _calls(sim: Simulation) -> list[tuple[Status, bool]]:
    """Each tool call of the first turn: its status, and whether it has a result."""
    state = sim.head("s")
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
