"""An interrupt while a tool runs: the call was handed to its tool and may have run.

A sync tool cannot be cancelled (its worker thread is abandoned and runs on to the
end), and a cancelled async tool may have done part of its work; either way the
call has no result. Before, the model read that it "ended before it returned a
result" and could call it again, so the side effect happened twice. Now the turn's
end marks such a call ``may_have_run`` in its batch (``runtime/_handed.py``), as a
stop and a crash recovery do.
"""

from __future__ import annotations

import attrs

from runtime import (
    Interrupt,
    MessageFinish,
    MessageStart,
    MetadataUpdated,
    ModelEnded,
    RunTool,
    Status,
    Stopping,
    ToolCallDelta,
    ToolDone,
    ToolOutcome,
    ToolResultPart,
    ToolSpec,
    TurnEnded,
    clean_history,
)
from runtime._clean import MAY_HAVE_RUN
from tests.runtime.test_machine import SETTINGS, TOOL, Driver, kinds

GUARDED = ToolSpec(
    name="guarded",
    description="Needs a person.",
    parameters={"type": "object"},
    needs_approval=True,
)
MAY_HAVE_RUN_TEXT = (
    "[Interrupted: the call to lookup was still running when its turn was cut off, and its "
    "result was lost; it may have run, in part or in full. Check before calling it again.]"
)


def _calling(d: Driver, *names: str) -> list[str]:
    """A turn whose model called ``names`` (ids c0, c1, …), each running unless it waits for
    a person."""
    call = d.started()
    deltas = [
        ToolCallDelta(index=i, id=f"c{i}", name=name, arguments="{}")
        for i, name in enumerate(names)
    ]
    d.stream(call.run_id, MessageStart(), *deltas, MessageFinish())
    ran = [c for c in d(ModelEnded, run_id=call.run_id).commands if isinstance(c, RunTool)]
    assert [c.name for c in ran] == [name for name in names if name != "guarded"]
    return [f"c{i}" for i in range(len(names))]


def _results(d: Driver) -> dict[str, str]:
    return {
        part.call_id: part.text
        for message in clean_history(d.machine.state).messages
        for part in message.parts
        if isinstance(part, ToolResultPart)
    }


class TestInterruptMidTool:
    def test_an_interrupt_marks_the_running_call_in_its_batch(self) -> None:
        """``Interrupt`` while a call runs: ``MetadataUpdated`` (``may_have_run``) before the
        ``TurnEnded``, whose reason names the call; the view's result says it may have run."""
        d = Driver()
        (c0,) = _calling(d, "lookup")
        ended = d(Interrupt)
        assert kinds(ended) == ["MetadataUpdated", "TurnEnded"]
        marked, turn_end = ended.events
        assert isinstance(marked, MetadataUpdated)
        assert dict(marked.metadata) == {MAY_HAVE_RUN: True}
        assert isinstance(turn_end, TurnEnded)
        assert turn_end.reason == (
            "interrupted by the user; tool call c0 (lookup) had started; it may have run, "
            "so check before running it again"
        )
        state = d.machine.state
        assert state.message(state.tool_calls[c0]).status is Status.INTERRUPTED
        assert d(ToolDone, call_id=c0, outcome=ToolOutcome(content="late")).events == ()
        assert _results(d) == {c0: MAY_HAVE_RUN_TEXT}

    def test_new_input_marks_the_running_call(self) -> None:
        """New input interrupting the turn marks it likewise."""
        d = Driver()
        (c0,) = _calling(d, "lookup")
        ended = d.send("stop that")
        assert kinds(ended) == ["MessageAdded", "MetadataUpdated", "TurnEnded"]
        assert _results(d) == {c0: MAY_HAVE_RUN_TEXT}

    def test_a_call_waiting_for_approval_never_started(self) -> None:
        """Of two calls, the one waiting for a person reads as before; the running one (and
        only it) is marked."""
        d = Driver(attrs.evolve(SETTINGS, tools=(TOOL, GUARDED)))
        c0, c1 = _calling(d, "lookup", "guarded")
        ended = d(Interrupt)
        (marked,) = [e for e in ended.events if isinstance(e, MetadataUpdated)]
        assert marked.message_id == d.machine.state.tool_calls[c0]
        assert _results(d) == {
            c0: MAY_HAVE_RUN_TEXT,
            c1: "[Interrupted: the call to guarded ended before it returned a result.]",
        }

    def test_a_call_that_returned_is_not_marked(self) -> None:
        """A call whose result came in is left alone: only the one still running is marked."""
        d = Driver(attrs.evolve(SETTINGS, tools=(TOOL, attrs.evolve(TOOL, name="fetch"))))
        c0, c1 = _calling(d, "lookup", "fetch")
        d(ToolDone, call_id=c0, outcome=ToolOutcome(content="42"))
        ended = d(Interrupt)
        (marked,) = [e for e in ended.events if isinstance(e, MetadataUpdated)]
        assert marked.message_id == d.machine.state.tool_calls[c1]
        assert _results(d)[c0] == "42"

    def test_an_interrupt_with_no_tool_running_stores_no_marking(self) -> None:
        """An interrupt while the model streams ends the turn as before."""
        d = Driver()
        d.started()
        assert kinds(d(Interrupt)) == ["TurnEnded"]

    def test_an_interrupt_during_a_draining_stop_marks_what_the_stop_cut_too(self) -> None:
        """A stop waits for ``c0`` and cancelled ``c1``; an interrupt then ends the turn: both
        were handed to their tools, and both are marked."""
        d = Driver(attrs.evolve(SETTINGS, tools=(TOOL, attrs.evolve(TOOL, name="fetch"))))
        c0, c1 = _calling(d, "lookup", "fetch")
        d(Stopping, draining={c0})
        ended = d(Interrupt)
        assert kinds(ended) == ["MetadataUpdated", "MetadataUpdated", "TurnEnded"]
        turn_end = ended.events[-1]
        assert isinstance(turn_end, TurnEnded)
        assert turn_end.reason == (
            "interrupted by the user; tool calls c0 (lookup), c1 (fetch) had started; they "
            "may have run, so check before running them again"
        )
        assert set(_results(d)) == {c0, c1}
