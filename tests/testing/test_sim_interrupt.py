"""``Simulation.interrupt()`` while a tool call runs: the call was handed to its tool, so the
next model call reads that it may have run (a sync tool's thread runs on after an
interrupt), while one that waited for approval never started and reads as before."""

from __future__ import annotations

from handed_support import GUARDED, HANG, MAY_HAVE_RUN, NEVER_STARTED, Recording, results_by_call

from runtime import (
    ModelRequest,
    SessionState,
    Status,
    TurnStatus,
)
from runtime.testing import Simulation, TurnPlan, UseTools


def _interrupted(*tools: str) -> tuple[SessionState, ModelRequest]:
    """Session ``s``'s turn called ``tools`` at once; the user interrupted it while they ran
    (or waited), then asked again. Returns the session, and the model's request then."""
    model = Recording()
    sim = Simulation(model=model, tools=[HANG, GUARDED])
    sim.send("s", "go", plan=TurnPlan(UseTools(*[(tool, {"text": "a"}) for tool in tools])))
    sim.run_until(lambda sim: len(sim.head("s").tool_calls) == len(tools))
    assert sim.interrupt("s")
    before = len(model.requests)
    sim.send("s", "again")
    sim.run_until(lambda sim: len(model.requests) > before)
    sim.raise_problem()
    return sim.head("s"), model.requests[before]


class TestInterruptMidCall:
    def test_a_running_call_may_have_run(self) -> None:
        """The interrupted turn's reason names the call and says it may have run; the next
        model call reads so for its result, so it checks before calling it again."""
        state, request = _interrupted("hang")
        (call,) = [m for m in state if m.tool_call is not None]
        assert call.status is Status.INTERRUPTED
        assert call.tool_call is not None
        ended = state.turn_list()[0]
        assert ended.status is TurnStatus.INTERRUPTED
        assert ended.reason == (
            f"interrupted by the user; tool call {call.tool_call.id} (hang) had started; it "
            "may have run, so check before running it again"
        )
        assert results_by_call(request) == {call.tool_call.id: MAY_HAVE_RUN}

    def test_a_call_that_waited_for_approval_never_started(self) -> None:
        """Beside the running call, one that waited for approval reads as before."""
        state, request = _interrupted("hang", "guarded")
        ids = {m.tool_call.name: m.tool_call.id for m in state if m.tool_call is not None}
        assert results_by_call(request) == {
            ids["hang"]: MAY_HAVE_RUN,
            ids["guarded"]: NEVER_STARTED,
        }
