"""What the simulator tests of a cut tool call share (a crash, an interrupt): the tools, the
texts the model reads, a model that keeps its requests, and the results it read."""

from __future__ import annotations

from runtime import ModelRequest, Response, ToolResultPart
from runtime.testing import FakeTool, PlanModel, ToolBehaviour

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


def results_by_call(request: ModelRequest) -> dict[str, str]:
    """The tool results the model reads in ``request``: call id -> text."""
    return {
        part.call_id: part.text
        for message in request.view.messages
        for part in message.parts
        if isinstance(part, ToolResultPart)
    }
