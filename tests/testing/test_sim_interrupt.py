"""``Simulation.interrupt()`` while a tool call runs: the call was handed to its tool, so the
next model call reads that it may have run (a sync tool's thread runs on after an
interrupt), while one that waited for approval never started and reads as before."""

from __future__ import annotations

from runtime import (
    ModelRequest,
    Response,
    SessionState,
    Status,
    ToolResultPart,
    TurnStatus,
)
from runtime.testing import FakeTool, PlanModel, Simulation, ToolBehaviour, TurnPlan, UseTools

HANG = FakeTool("hang", ToolBehaviour.HANG)
GUARDED = FakeTool("guarded", approval=True)

MAY_HAVE_RUN = (
    "[Interrupted: the call to hang was still running when its turn was cut off, and its "
    "result was lost; it may have run, in part or in full. Check before calling it again.]"
)
NEVER_STARTED = "[Interrupted: the call to guarded ended before it returned a result.]"


class Recording(PlanModel):
    """A ``PlanModel`` that keeps every request it answers."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[ModelRequest] = []

    def respond(self, request: ModelRequest) -> Response:
        """Keep the request, answer by the plan."""
        self.requests.append(request)
        return super().respond(request)


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


def _results(request: ModelRequest) -> dict[str, str]:
    return {
        part.call_id: part.text
        for message in request.view.messages
        for part in message.parts
        if isinstance(part, ToolResultPart)
    }


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
        assert _results(request) == {call.tool_call.id: MAY_HAVE_RUN}

    def test_a_call_that_waited_for_approval_never_started(self) -> None:
        """Beside the running call, one that waited for approval reads as before."""
        state, request = _interrupted("hang", "guarded")
        ids = {m.tool_call.name: m.tool_call.id for m in state if m.tool_call is not None}
        assert _results(request) == {ids["hang"]: MAY_HAVE_RUN, ids["guarded"]: NEVER_STARTED}
