"""``Simulation.crash()`` while a tool call runs: the restart's recovery tells a call that was
handed to its tool (it may have run) from one that never started (it waited for approval)."""

from __future__ import annotations

from runtime import ModelRequest, Response, SessionState, Status, ToolResultPart, TurnStatus
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


def _results(request: ModelRequest) -> dict[str, str]:
    """The tool results the model reads in ``request``: call id -> text."""
    return {
        part.call_id: part.text
        for message in request.view.messages
        for part in message.parts
        if isinstance(part, ToolResultPart)
    }


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
        assert _results(request) == {call.tool_call.id: MAY_HAVE_RUN}

    def test_a_call_that_waited_for_approval_never_started(self) -> None:
        """Beside a running call, one that waited for a person's approval when the process
        died had not run: its result says so as before, without the warning."""
        state, request = _crashed("hang", "guarded")
        ids = {m.tool_call.name: m.tool_call.id for m in state if m.tool_call is not None}
        assert _results(request) == {
            ids["hang"]: MAY_HAVE_RUN,
            ids["guarded"]: NEVER_STARTED,
        }
        reason = state.turn_list()[0].reason
        assert reason is not None
        assert ids["guarded"] not in reason
