"""A decision on a waiting call during a stop's drain starts no tool run (DESIGN §7).

While a stop waits for a turn's sync tool runs, a front end may store a decision on
another call of the turn that waits for approval (``store_decision``); the owner adopts
it (``ApprovalGiven``). Before, the approval ran the tool in the middle of the stop (a
denial answered the call, and the model would have been called). The decision is left
stored: the call waits on, and the next start takes it.
"""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime import (
    ApprovalDecided,
    ApprovalGiven,
    CallModel,
    Loaded,
    RunTool,
    SessionMachine,
    Stopping,
    ToolDone,
    ToolOutcome,
)
from tests.runtime import test_machine
from tests.runtime.test_machine import SETTINGS, TOOL, Driver, commands, kinds

GUARDED = attrs.evolve(TOOL, name="guarded", needs_approval=True)


def _draining(d: Driver) -> tuple[str, str]:
    """c0 (lookup) runs and a stop drains it; c1 (guarded) waits for a person."""
    c0, c1 = test_machine.TestRecovery._calling(d, "lookup", "guarded")
    assert d(Stopping, draining={c0}).events == ()
    return c0, c1


class TestADecisionDuringTheDrain:
    @pytest.mark.parametrize("approved", [True, False], ids=["approval", "denial"])
    def test_is_not_taken(self, approved: bool) -> None:
        """Nothing is stored or run for it; the call still waits."""
        d = Driver(attrs.evolve(SETTINGS, tools=(TOOL, GUARDED)))
        _, c1 = _draining(d)
        given = d(ApprovalGiven, call_id=c1, approved=approved, by="Chii")
        assert (given.events, commands(given, RunTool), commands(given, CallModel)) == ((), [], [])
        turn = d.machine.state.active_turn
        assert turn is not None
        assert list(turn.awaiting_approval) == [c1]

    def test_the_turn_waits_on_for_the_next_start(self) -> None:
        """The drained result is recorded, and the turn only waits for the approval: it waits
        on (as a stop leaves such a turn); the next start takes a decision given then."""
        d = Driver(attrs.evolve(SETTINGS, tools=(TOOL, GUARDED)))
        c0, c1 = _draining(d)
        d(ApprovalGiven, call_id=c1, approved=True, by="Chii")
        done = d(ToolDone, call_id=c0, outcome=ToolOutcome(content="42"))
        assert kinds(done) == ["MessageAdded"]
        assert commands(done, RunTool) == []
        assert d.machine.run is None
        d.machine = SessionMachine.load(d.machine.state)
        assert d(ApprovalGiven, call_id=c1, approved=True).events == ()  # not loaded yet
        d.now = 1.0
        d(Loaded)
        ran = d(ApprovalGiven, call_id=c1, approved=True, by="Chii")
        assert [c.call_id for c in commands(ran, RunTool)] == [c1]

    @given(
        decisions=st.lists(st.tuples(st.sampled_from(["c1", "c2"]), st.booleans()), max_size=6),
        done_at=st.integers(min_value=0, max_value=6),
    )
    def test_no_decision_runs_anything_until_the_stop_ends(
        self, decisions: list[tuple[str, bool]], done_at: int
    ) -> None:
        """Any decisions on the two waiting calls, before or after the drained result: none
        is stored, no tool runs, no model is called; both calls still wait."""
        d = Driver(attrs.evolve(SETTINGS, tools=(TOOL, GUARDED)))
        c0, c1, c2 = test_machine.TestRecovery._calling(d, "lookup", "guarded", "guarded")
        assert d(Stopping, draining={c0}).events == ()
        steps = [(call_id, approved) for call_id, approved in decisions]
        for i in range(len(steps) + 1):
            if i == min(done_at, len(steps)):
                d(ToolDone, call_id=c0, outcome=ToolOutcome(content="42"))
            if i == len(steps):
                break
            call_id, approved = steps[i]
            decision = d(ApprovalGiven, call_id=call_id, approved=approved, by="Chii")
            assert not any(isinstance(e, ApprovalDecided) for e in decision.events)
            assert commands(decision, RunTool) == commands(decision, CallModel) == []
        turn = d.machine.state.active_turn
        assert turn is not None
        assert sorted(turn.awaiting_approval) == [c1, c2]
