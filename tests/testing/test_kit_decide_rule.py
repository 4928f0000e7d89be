"""The machine's ``decide`` rule runs only while a tool call waits for approval.

A ``decide`` step drawn while nothing waits did nothing, yet it took a step:
shrunk failures printed runs of no-op ``state.decide(...)`` lines. The rule
has a precondition now; the approve and deny paths must still be explored.
"""

from __future__ import annotations

from typing import ClassVar

import attrs
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, run_state_machine_as_test

from runtime import ApprovalDecided
from runtime.testing import SimulationMachine, TurnPlan, UseTools, fake_tools

GENERATE = settings(
    max_examples=40,
    stateful_step_count=20,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.generate],
    derandomize=True,
)


class Decisions(SimulationMachine):
    """One tool, ``guarded``, called by every turn; its calls wait for approval with no
    time limit (a ``run`` step would otherwise let the timeout deny them). Records each
    decision."""

    tools = tuple(t for t in fake_tools() if t.spec().needs_approval)
    settings = attrs.evolve(SimulationMachine.settings, approval_timeout=None)
    interrupt_stuck = True  # a call no one decides is interrupted at the end
    seen: ClassVar[set[bool]] = set()

    def plans(self) -> st.SearchStrategy[TurnPlan]:
        return st.just(TurnPlan(UseTools(("guarded", {"text": "x"}))))

    @invariant()
    def record(self) -> None:
        for session in self.sessions:
            if session in self.sim.store:
                for event in self.sim.store.events(session):
                    if isinstance(event, ApprovalDecided) and event.by == "tester":
                        type(self).seen.add(event.approved)


def applicable(machine: SimulationMachine, name: str) -> bool:
    """Whether Hypothesis may run the rule ``name`` of ``machine`` now (its preconditions)."""
    found = getattr(type(machine), name).hypothesis_stateful_rule  # set by @rule/@precondition
    return all(holds(machine) for holds in found.preconditions)


def test_decide_is_not_applicable_while_nothing_waits() -> None:
    """``decide`` is drawn only while a call waits; it then decides that call."""
    machine = Decisions()
    assert not applicable(machine, "decide")
    machine.send("s2", "hi", "discord", TurnPlan(UseTools(("guarded", {"text": "x"}))))
    machine.run([0] * 12)
    assert machine.sim.approvals("s2")
    assert applicable(machine, "decide")
    machine.decide(approved=False, which=0)
    assert not applicable(machine, "decide")
    assert Decisions.seen == set()  # the invariant did not run here
    decided = [e for e in machine.sim.store.events("s2") if isinstance(e, ApprovalDecided)]
    assert [(e.approved, e.by) for e in decided] == [(False, "tester")]


def test_calls_are_still_approved_and_denied() -> None:
    """With a tool that waits for approval, the machine (the tester, not a timeout) both
    approves and denies calls."""
    Decisions.seen.clear()
    # 200: the draws are derandomized, and each new rule of the machine (a draining stop)
    # moves them; at 60 and 100 examples no deny was drawn once the stop rule came.
    run_state_machine_as_test(Decisions, settings=settings(GENERATE, max_examples=200))
    assert Decisions.seen == {True, False}
