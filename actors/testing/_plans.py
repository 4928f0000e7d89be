"""``PlannedModel``: a ``ScriptedModel`` that answers each turn by the plan its input names.

The plans themselves (``TurnPlan``, ``Say``, ``UseTools``, ``RaiseError``,
``SayNothing``) are values of ``runtime.testing``, shared with the simulator.
"""

from __future__ import annotations

from collections.abc import Mapping

from runtime import ModelRequest, Response
from runtime.testing import TurnPlan, plan_for

from .._scripted import ScriptedModel

__all__ = ["PlannedModel"]


class PlannedModel(ScriptedModel):
    """A ``ScriptedModel`` that answers each turn by the plan of the input that started it.

    The plan is looked up by the ``amber_plan`` metadata of the turn's latest
    input that has one (``plans[key]``); a turn without a plan gets
    ``default``. ``plans`` may grow while the model runs.

    Args:
        plans: plan key -> plan (the ``LifecycleMachine`` fills it as it sends).
        default: the plan of turns whose inputs carry none.
    """

    def __init__(
        self, plans: Mapping[str, TurnPlan] | None = None, *, default: TurnPlan | None = None
    ) -> None:
        self.plans: dict[str, TurnPlan] = dict(plans or {})
        self.default = default or TurnPlan()
        super().__init__(self._respond)

    def plan_for(self, request: ModelRequest) -> TurnPlan:
        """The plan of the request's turn."""
        return plan_for(request.state, self.plans, self.default)

    def _respond(self, request: ModelRequest) -> Response:
        return self.plan_for(request).answer(request.call_index).response()
