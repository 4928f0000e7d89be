"""``LifecycleMachine.post_input``: a subclass's own rules post the way the built-in ones do.

A rule that calls ``self.runtime.post`` directly leaves the machine unaware of
the input: it is stored but never recorded as accepted, so the next check of
the session reports a refused input that left a trace. ``post_input`` records
it (and marks the session to check), as ``send_input`` does for messages.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.testing import LifecycleMachine, Say, TurnPlan
from runtime import Category, InvalidInput, Status
from runtime.testing import InvariantViolation


@pytest.fixture
def machine_class(tmp_path: Path) -> type[LifecycleMachine]:
    return type("Machine", (LifecycleMachine,), {"failures_dir": str(tmp_path)})


@pytest.fixture
def machine(machine_class: type[LifecycleMachine]) -> Iterator[LifecycleMachine]:
    made = machine_class()
    yield made
    made.teardown()


class TestPostInput:
    def test_posted_input_is_accepted_and_checked(self, machine: LifecycleMachine) -> None:
        """A compaction request posted by a rule starts a turn that ends; checks pass."""
        posted = machine.post_input("s1", Category.COMPACTION_REQUEST, "compact please")
        assert machine.accepted["s1"] == [posted]
        machine.amber_invariants()
        machine.wait("s1")
        machine.settle("s1")
        state = machine.runtime.state("s1")
        assert state.message(posted).status is Status.PROCESSED

    def test_plan_is_followed(self, machine: LifecycleMachine) -> None:
        """With a plan, the planned model answers the posted input's turn by it."""
        machine.post_input(
            "s2", Category.CRON_PROMPT, "daily digest", channel="wechat",
            plan=TurnPlan(Say("digest ready")),
        )  # fmt: skip
        machine.wait("s2")
        state = machine.runtime.state("s2")
        assert [m.content for m in state.messages][-1] == "digest ready"

    def test_notification_is_not_an_input(self, machine: LifecycleMachine) -> None:
        """A notification is posted and checked, but not counted as an accepted input."""
        machine.post_input("s1", Category.NOTIFICATION, "build finished")
        assert machine.accepted["s1"] == []
        machine.settle("s1")

    def test_category_that_cannot_be_posted_is_refused(self, machine: LifecycleMachine) -> None:
        """A user message is ``send_input``'s: the runtime refuses it, nothing is recorded."""
        with pytest.raises(InvalidInput):
            machine.post_input("s1", Category.USER_QUESTION, "hi")
        assert machine.accepted["s1"] == []

    def test_runtime_post_directly_is_reported(self, machine_class: type[LifecycleMachine]) -> None:
        """Why the helper exists: an input posted behind the machine's back is a violation."""
        machine = machine_class()
        machine.runtime.post("s1", Category.COMPACTION_REQUEST, "compact please")
        machine.send_input("s1", "hi", "discord")

        def steps() -> None:
            try:
                machine.amber_invariants()
                machine.wait("s1")
            finally:
                machine.teardown()  # as Hypothesis does, with the failure in flight

        with pytest.raises(
            InvariantViolation, match=r"^Contract \(refused input is never stored\)"
        ):
            steps()
