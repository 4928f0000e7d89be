"""A reload during a stop's drain (``Loaded.draining``): the turn waits on for its runs.

The write of a drained call's result met another process's (input stored for the
session meanwhile): the runner reloads the head and tells the machine which runs the
stop still waits for. Before, the reload recovered the turn at once (the other runs
marked may-have-run, their results dropped) and started a new turn in the stop.
"""

from __future__ import annotations

import attrs

from runtime import (
    CallModel,
    Category,
    Draft,
    InputArrived,
    Loaded,
    MessageAdded,
    OrphanRecovered,
    SessionMachine,
    Stopping,
    ToolDone,
    ToolOutcome,
    TurnStarted,
)
from runtime._clean import MAY_HAVE_RUN
from runtime._shutdown import RESTARTS
from tests.runtime import test_machine
from tests.runtime.test_machine import SHARED, Driver, commands, kinds


def _draining_with_a_foreign_input(d: Driver) -> ToolDone:
    """c1 and c2 drain for a stop; another process stores input; c1 ends, and the write of
    its result meets that input: the runner reloads the head (returns c1's result)."""
    test_machine.TestReloadAfterAForeignWrite()._calling(d)
    assert d(Stopping, draining={"c1", "c2"}).events == ()
    d.now = 2.0
    done = ToolDone(call_id="c1", outcome=ToolOutcome(content="42"), **d.stamp())
    d.machine = SessionMachine.load(d.machine.state)
    draft = Draft(category=Category.USER_QUESTION, content="and then?", sender="Chii")
    d(InputArrived, draft=draft)  # stored by the other process
    d.machine = SessionMachine.load(d.machine.state)
    d.now = 3.0
    return done


class TestAReloadDuringTheDrain:
    def test_records_the_held_result_and_waits_for_the_other_run(self) -> None:
        """The held result is recorded; c2 is still waited for (not marked); no turn starts
        and no model is called; the input stored meanwhile waits."""
        d = Driver(SHARED)
        done = _draining_with_a_foreign_input(d)
        reloaded = d(Loaded, foreign_write=True, results=[(done, 0.5)], draining=[("c2", 0.5)])
        assert kinds(reloaded) == ["MessageAdded"]
        added = reloaded.events[0]
        assert isinstance(added, MessageAdded)
        assert (added.message.tool_call_id, added.message.content) == ("c1", "42")
        assert commands(reloaded, CallModel) == []
        run = d.machine.run
        assert run is not None
        assert (dict(run.tools), run.stopping) == ({"c2": 0.5}, frozenset())

    def test_the_last_result_gives_the_turn_back_as_a_drained_stop(self) -> None:
        """c2's result, when it comes, is recorded, and the turn is given back with no call
        interrupted; nothing starts after it."""
        d = Driver(SHARED)
        done = _draining_with_a_foreign_input(d)
        d(Loaded, foreign_write=True, results=[(done, 0.5)], draining=[("c2", 0.5)])
        d.now = 4.0
        last = d(ToolDone, call_id="c2", outcome=ToolOutcome(content="43"))
        assert kinds(last) == ["MessageAdded", "OrphanRecovered"]
        recovered = last.events[1]
        assert isinstance(recovered, OrphanRecovered)
        assert recovered.reason == RESTARTS
        assert commands(last, CallModel) == []
        assert d.machine.run is None
        state = d.machine.state
        assert [
            MAY_HAVE_RUN in state.message(state.tool_calls[c]).metadata for c in ("c1", "c2")
        ] == [False, False]
        assert len(state.queued) == 2  # the turn's input and the new one wait for the next start

    def test_the_stops_end_marks_the_run_still_draining(self) -> None:
        """The stop's end (``Stopping`` without ``draining``) finds c2 still running: it is
        marked may-have-run and named, as in a stop without the reload."""
        d = Driver(SHARED)
        done = _draining_with_a_foreign_input(d)
        d(Loaded, foreign_write=True, results=[(done, 0.5)], draining=[("c2", 0.5)])
        ended = d(Stopping)
        assert kinds(ended) == ["MetadataUpdated", "OrphanRecovered"]
        recovered = ended.events[1]
        assert isinstance(recovered, OrphanRecovered)
        assert recovered.reason is not None
        assert recovered.reason.startswith("the runtime stopped while tool call c2 (lookup)")

    def test_with_nothing_left_to_drain_the_turn_is_given_back_at_once(self) -> None:
        """The held result was the last the stop waited for: the turn is given back in the
        reload's decision; no turn starts."""
        d = Driver(SHARED)
        test_machine.TestReloadAfterAForeignWrite()._calling(d)
        d(ToolDone, call_id="c2", outcome=ToolOutcome(content="43"))
        d(Stopping, draining={"c1"})
        done = ToolDone(call_id="c1", outcome=ToolOutcome(content="42"), **d.stamp())
        d.machine = SessionMachine.load(d.machine.state)
        reloaded = d(Loaded, foreign_write=True, results=[(done, 0.0)], draining=[])
        assert kinds(reloaded) == ["MessageAdded", "OrphanRecovered"]
        recovered = reloaded.events[1]
        assert isinstance(recovered, OrphanRecovered)
        assert recovered.reason == RESTARTS
        assert not any(isinstance(e, TurnStarted) for e in reloaded.events)
        assert d.machine.run is None

    def test_a_call_the_stop_cut_is_still_named_at_its_end(self) -> None:
        """A call the stop cut (not drained) has no result in the head: the reloaded run
        counts it among the cut ones, and the turn's reason names it."""
        d = Driver(SHARED)
        test_machine.TestReloadAfterAForeignWrite()._calling(d)
        d(Stopping, draining={"c1"})  # c2 cut
        done = ToolDone(call_id="c1", outcome=ToolOutcome(content="42"), **d.stamp())
        d.machine = SessionMachine.load(d.machine.state)
        reloaded = d(Loaded, foreign_write=True, results=[(done, 0.0)], draining=[])
        assert kinds(reloaded) == ["MessageAdded", "MetadataUpdated", "OrphanRecovered"]
        recovered = reloaded.events[2]
        assert isinstance(recovered, OrphanRecovered)
        assert recovered.reason is not None
        assert recovered.reason.startswith("the runtime stopped while tool call c2 (lookup)")

    def test_a_turn_another_runner_took_is_left_alone(self) -> None:
        """The head's active turn is not this runner's: nothing is decided for it here."""
        d = Driver(SHARED)
        done = _draining_with_a_foreign_input(d)
        other = Driver(attrs.evolve(SHARED, runner="runner_c"))
        other.machine = d.machine
        reloaded = other(Loaded, foreign_write=True, results=[(done, 0.5)], draining=[("c2", 0.5)])
        assert kinds(reloaded) == ["MessageAdded"]
        assert other.machine.run is None
