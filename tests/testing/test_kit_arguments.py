"""The testing kit's entry points refuse arguments they cannot use, saying so.

``sim_tool(hang_after=...)``, ``Simulation.send``/``post`` and their ``plan``, and
``check_tool_call`` on a plain function: a wrong value fails at once with a sentence
naming the argument, what it got and what to pass, not later as an ``AttributeError``
from deep inside (or, for a plan the model cannot use, not at all).
"""

from __future__ import annotations

from typing import Any

import pytest

from actors.testing import check_tool_call, sim_tool
from runtime import Category, InvalidArgument
from runtime.testing import PlanModel, Say, ScriptModel, Simulation, TurnPlan


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class TestSimToolHangAfter:
    @pytest.mark.parametrize(
        "value", [-1, 0, -0.5, float("nan"), float("inf"), "5", True, None, [60]]
    )
    def test_refused(self, value: Any) -> None:
        """hang_after is a finite number of simulated seconds over 0; anything else is
        refused when the part is made (a negative one made every call a hang)."""
        with pytest.raises(InvalidArgument) as caught:
            sim_tool(add, hang_after=value)
        assert str(caught.value) == (
            "sim_tool() option 'hang_after' must be a number of simulated seconds over 0 and "
            f"at most 3153600000 (100 years); got {value!r}. Pass a plain number such as 60 "
            "(how long a call may run before it counts as never returning)."
        )

    @pytest.mark.parametrize("value", [0.001, 1, 60.0, 3600])
    def test_taken(self, value: float) -> None:
        assert sim_tool(add, hang_after=value).name == "add"


class TestSimulationArguments:
    def sim(self) -> Simulation:
        return Simulation(model=PlanModel())

    @pytest.mark.parametrize("text", [5, None, b"hi"])
    def test_send_text(self, text: Any) -> None:
        with pytest.raises(InvalidArgument, match=r"^Simulation\.send\(\) takes the text"):
            self.sim().send("s", text)

    def test_send_text_message(self) -> None:
        with pytest.raises(InvalidArgument) as caught:
            self.sim().send("s", 5)
        assert str(caught.value) == (
            "Simulation.send() takes the text (a str) or a UserInput; got 5 that is an 'int'."
        )

    @pytest.mark.parametrize("call", ["send", "post"])
    def test_a_plan_that_is_not_a_turn_plan(self, call: str) -> None:
        sim = self.sim()
        send = call == "send"
        with pytest.raises(InvalidArgument) as caught:
            (sim.send("s", "hi", plan=Say("x")) if send  # type: ignore[arg-type]
             else sim.post("s", Category.CRON_PROMPT, "hi", plan="p"))  # type: ignore[arg-type]  # fmt: skip
        assert str(caught.value).startswith(
            f"Simulation.{call}() option 'plan' takes a TurnPlan (like TurnPlan(Say("
        )

    def test_a_plan_the_model_cannot_use(self) -> None:
        """A plan given to a simulation whose model is not a PlanModel was dropped
        silently: the turn ran the model's own script instead."""
        sim = Simulation(model=ScriptModel([]))
        with pytest.raises(InvalidArgument) as caught:
            sim.send("s", "hi", plan=TurnPlan(Say("x")))
        assert str(caught.value) == (
            "Simulation.send() option 'plan' needs a model that follows plans (a PlanModel); "
            "this simulation's model is a 'ScriptModel'. Make it with "
            "Simulation(model=PlanModel(), ...), or leave plan out."
        )
        assert sim.machines == {}

    def test_plan_key(self) -> None:
        with pytest.raises(InvalidArgument, match=r"^Simulation\.send\(\) option 'plan_key'"):
            self.sim().send("s", "hi", plan=TurnPlan(Say("x")), plan_key=5)  # type: ignore[arg-type]

    def test_post_category(self) -> None:
        with pytest.raises(InvalidArgument) as caught:
            self.sim().post("s", "cron_prompt", "hi")  # type: ignore[arg-type]
        assert str(caught.value) == (
            "Simulation.post() takes a Category (like Category.CRON_PROMPT); got 'cron_prompt' "
            "that is a 'str'."
        )

    def test_post_a_category_made_by_a_turn(self) -> None:
        with pytest.raises(InvalidArgument) as caught:
            self.sim().post("s", Category.REPLY, "hi")
        assert str(caught.value) == (
            "Simulation.post() takes cron prompts, compaction requests, background alerts and "
            "notifications; a reply is made by a turn, not posted."
        )

    def test_post_taken(self) -> None:
        sim = self.sim()
        posted = sim.post("s", Category.CRON_PROMPT, "tick", plan=TurnPlan(Say("x")))
        assert posted.content == "tick"


class TestCheckToolCallOnAFunction:
    def test_a_plain_function_is_made_a_tool(self) -> None:
        """check_tool_call takes a plain function as sim_tool does (wrapped with tool());
        it failed with AttributeError: 'function' object has no attribute 'name'."""
        outcome = check_tool_call(add, {"a": 1, "b": 2})
        assert outcome is not None
        assert outcome.content == "3"

    def test_something_else_is_refused(self) -> None:
        with pytest.raises(InvalidArgument) as caught:
            check_tool_call(5, {})  # type: ignore[arg-type]
        assert str(caught.value) == (
            "check_tool_call() takes a Tool (made with @tool) or a plain function to wrap "
            "with tool(); got 5 that is an 'int'."
        )
