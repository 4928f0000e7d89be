"""On random traffic (interrupts, new input, approvals, crashes, stops with and without a
drain), a tool call is marked ``may_have_run`` exactly when it was handed to its tool and
its turn ended without its result.

The simulator's shell sees every ``RunTool`` the machine decides; a call it never saw
(it waited for approval, was denied, or its approval was never given) must not read
"may have run", and one it saw that has no result once its turn is over must (its side
effect may have happened: the model is told to check before calling it again). A marked
call never gets a result stored later (the late report of a cancelled run is dropped),
and the model's view answers every call: a marked one with the "may have run" text.
"""

from __future__ import annotations

import sys
from typing import Any

import attrs
from hypothesis import settings
from hypothesis.stateful import invariant

from runtime import RunTool, TurnStatus, clean_history
from runtime._clean import MAY_HAVE_RUN
from runtime.testing import SimulationMachine, fake_tools

_TEXT = "it may have run, in part or in full"
_TOOLS = {"ok", "slow", "hang", "guarded"}


class HandedMachine(SimulationMachine):
    """The kit's machine, with the calls each session handed to its tools recorded; a tool
    that never returns keeps a call running until something cuts its turn."""

    tools = tuple(t for t in fake_tools(hang=True) if t.name in _TOOLS)
    interrupt_stuck = True
    # Calls wait for a person until one decides (or the turn ends): no timer denies them.
    settings = attrs.evolve(SimulationMachine.settings, approval_timeout=None)

    def __init__(self) -> None:
        super().__init__()
        self.handed: dict[str, set[str]] = {}
        run_tool = self.sim._run_tool

        def recording(session_id: str, command: RunTool) -> None:
            self.handed.setdefault(session_id, set()).add(command.call_id)
            run_tool(session_id, command)

        self.sim._run_tool = recording  # type: ignore[method-assign]

    @invariant()
    def marked_exactly_when_handed_and_cut(self) -> None:
        """Every call: marked iff handed and its turn ended with no result for it."""
        for session_id in self.sessions:
            if session_id not in self.sim.store:
                continue
            state = self.sim.head(session_id)
            handed = self.handed.get(session_id, set())
            active = state.active_turn_id
            for call_id, message_id in state.tool_calls.items():
                call = state.message(message_id)
                marked = call.metadata.get(MAY_HAVE_RUN) is True
                answered = call_id in state.tool_results
                over = call.turn_id != active
                where = f"session {session_id} call {call_id} ({call.tool_call and call.tool_call.name})"
                if marked:
                    assert call_id in handed, f"{where} is marked but was never handed to its tool"
                    assert not answered, f"{where} is marked and has a result"
                elif over and not answered:
                    assert call_id not in handed, (
                        f"{where} was handed to its tool, its turn is over with no result, "
                        "and it is not marked may_have_run"
                    )

    def teardown(self) -> None:
        """Settle (a person gives up on turns stuck on ``hang``), then check once more: the
        interrupts of the end cut calls too."""
        failed = sys.exc_info()[1] is not None
        super().teardown()
        if not failed:
            self.marked_exactly_when_handed_and_cut()
            self.the_view_says_so()

    @invariant()
    def the_view_says_so(self) -> None:
        """The view's made-up result of a call says it may have run iff the call is marked."""
        for session_id in self.sessions:
            if session_id not in self.sim.store:
                continue
            state = self.sim.head(session_id)
            texts: dict[str, Any] = {
                part.call_id: part.text
                for message in clean_history(state, max_result_chars=None).messages
                for part in message.parts
                if getattr(part, "synthesized", False)
            }
            for call_id, text in texts.items():
                call = state.message(state.tool_calls[call_id])
                turn = state.turn(call.turn_id or "")
                if turn is None or turn.status is TurnStatus.ACTIVE:
                    continue
                assert (_TEXT in text) == (call.metadata.get(MAY_HAVE_RUN) is True), (
                    session_id,
                    call_id,
                    text,
                )


HandedMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=30)
TestHanded = HandedMachine.TestCase
