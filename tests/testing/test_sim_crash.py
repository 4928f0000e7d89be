"""``Simulation.crash()`` while a tool call runs: the restart's recovery tells a call that was
handed to its tool (it may have run) from one that never started (it waited for approval)."""

from __future__ import annotations

from handed_support import GUARDED, HANG, MAY_HAVE_RUN, NEVER_STARTED, Recording, results_by_call

from runtime import ModelRequest, SessionState, Status, TurnStatus
from runtime.testing import Simulation, TurnPlan, UseTools


def _crashed(*tools: str) -> tuple[SessionState, ModelRequest]:
    """Session ``s``'s turn called ``tools`` at once; the process died while they ran (or
    waited); the restart recovered the turn and answered the input again. Returns the
    session then, and the model's first request after the restart."""
    model = Recording()
    sim = Simulation(model=model, tools=[HANG, GUARDED])
    calls = [(tool, {"text": "a"}) for tool in tools]
    sim.send("s", "go", plan=TurnPlan(UseTools(*calls)))
    sim.run_until(lambda sim: len(sim.head("s").tool_calls) == len(tools))
    before = len(model.requests)
    sim.crash()
    sim.run_until(lambda sim: len(model.requests) > before)
    sim.raise_problem()
    return sim.head("s"), model.requests[before]


class TestCrashMidCall:
    def test_a_call_handed_to_its_tool_may_have_run(self) -> None:
        """The call was running when the process died: the recovered turn's reason names it
        and says it may have run, and the next model call reads so for its result (as for
        a call a stop cut), so that it checks before calling it again."""
        state, request = _crashed("hang")
        (call,) = [m for m in state if m.tool_call is not None]
        assert call.status is Status.INTERRUPTED
        recovered = state.turn_list()[0]
        assert recovered.status is TurnStatus.RECOVERED
        assert recovered.reason is not None
        assert call.tool_call is not None
        assert f"tool call {call.tool_call.id} (hang) had started" in recovered.reason
        assert "it may have run, so check before running it again" in recovered.reason
        assert results_by_call(request) == {call.tool_call.id: MAY_HAVE_RUN}

    def test_a_call_that_waited_for_approval_never_started(self) -> None:
        """Beside a running call, one that waited for a person's approval when the process
        died had not run: its result says so as before, without the warning."""
        state, request = _crashed("hang", "guarded")
        ids = {m.tool_call.name: m.tool_call.id for m in state if m.tool_call is not None}
        assert results_by_call(request) == {
            ids["hang"]: MAY_HAVE_RUN,
            ids["guarded"]: NEVER_STARTED,
        }
        reason = state.turn_list()[0].reason
        assert reason is not None
        assert ids["guarded"] not in reason
