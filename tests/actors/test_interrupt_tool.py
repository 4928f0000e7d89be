"""Runtime.interrupt() while a sync tool runs: the call may have run, and the model is told so.

A sync tool runs in a worker thread that cannot be cancelled: an interrupt abandons
the thread, which runs on to the end, so the tool's side effect happens. Before, the
log and the model's view said the call "ended before it returned a result", and the
model called the tool again: the side effect happened twice.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from actors import Runtime, ScriptedModel, Settings, call, reply, tool
from runtime import Status, ToolResultPart, TurnStatus

WAIT = 60.0
"""Seconds an actor answer may take before the test fails (a hang guard, not a judge)."""


class TestInterruptMidSyncTool:
    def test_the_next_model_call_reads_that_the_call_may_have_run(self, tmp_path: Path) -> None:
        """The user interrupts while ``pay`` blocks in its thread; the thread then finishes
        (it pays). The next turn's model reads that the call may have run, and the turn
        that was interrupted says so in its reason."""
        paid: list[int] = []
        started, release, finished = threading.Event(), threading.Event(), threading.Event()

        @tool
        def pay(amount: int) -> str:
            """Pay an amount.

            Args:
                amount: How much.
            """
            started.set()
            assert release.wait(WAIT)
            paid.append(amount)
            finished.set()
            return f"paid {amount}"

        seen: list[str] = []

        def model(request: Any) -> Any:
            results = [
                part.text
                for message in request.view.messages
                for part in message.parts
                if isinstance(part, ToolResultPart)
            ]
            if not results:
                return call("pay", {"amount": 5})
            seen.extend(results)
            return reply("I will check the payments first.")

        settings = Settings(passivate_after=None)
        with Runtime(
            model=ScriptedModel(model), store=tmp_path / "amber.db", tools=[pay], settings=settings
        ) as rt:
            rt.send("s", "pay 5")
            try:
                assert started.wait(WAIT)
                assert rt.interrupt("s")
                interrupted = rt.wait_idle("s", timeout=WAIT)
            finally:
                release.set()
            assert finished.wait(WAIT)  # the abandoned thread ran on: it paid
            rt.send("s", "did it work?")
            state = rt.wait_idle("s", timeout=WAIT)
        assert paid == [5]
        (cut,) = [m for m in interrupted if m.tool_call is not None]
        assert cut.status is Status.INTERRUPTED
        assert cut.metadata["may_have_run"] is True
        assert seen == [
            "[Interrupted: the call to pay was still running when its turn was cut off, and its "
            "result was lost; it may have run, in part or in full. Check before calling it "
            "again.]"
        ]
        first = state.turn_list()[0]
        assert first.status is TurnStatus.INTERRUPTED
        assert cut.tool_call is not None
        assert first.reason == (
            f"interrupted by the user; tool call {cut.tool_call.id} (pay) had started; it may "
            "have run, so check before running it again"
        )
        assert [m.content for m in state][-1] == "I will check the payments first."
