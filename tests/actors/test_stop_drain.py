"""Runtime.stop() drains the sync tool calls already running before it records the stop.

A sync tool runs in a worker thread that cannot be cancelled: it runs on after a
stop. Before the drain, a stop recorded such a call interrupted at once
(``OrphanRecovered.calls_interrupted``) and dropped the result the thread then
produced; after a restart the model, told the call was interrupted, called it
again, and once the person approved again the tool ran twice.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import pytest

from actors import Runtime, ScriptedModel, Settings, call, reply, tool
from runtime import ModelRequest, OrphanRecovered, Status, ToolResultPart

WAIT = 60.0
"""Seconds an actor answer may take before the test fails (a hang guard, not a judge)."""


class _Said(logging.Handler):
    """Sets ``event`` when a record whose message contains ``text`` is logged (or someone
    else sets it)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
        self.event = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.event.set()


def _results(request: ModelRequest) -> list[str]:
    return [
        part.text
        for message in request.view.messages
        for part in message.parts
        if isinstance(part, ToolResultPart) and not part.synthesized
    ]


def _model() -> ScriptedModel:
    """Deletes the file unless the view shows the deletion's result already."""
    return ScriptedModel(
        lambda r: reply("Done.") if _results(r) else call("delete_file", {"path": "/tmp/x"})
    )


class TestStopDrainsSyncToolCalls:
    def test_a_call_that_ends_during_the_drain_is_recorded_and_never_run_again(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """stop() while an approved sync call runs waits for it: its result is stored as a
        normal tool result, the call is not interrupted, and after a restart the model reads
        the result and the tool does not run a second time."""
        db = tmp_path / "amber.db"
        ran: list[str] = []
        started, release, finished = threading.Event(), threading.Event(), threading.Event()

        @tool(approval=True)
        def delete_file(path: str) -> str:
            """Delete a file.

            Args:
                path: The file.
            """
            started.set()
            assert release.wait(WAIT)
            ran.append(path)
            finished.set()
            return f"deleted {path}"

        settings = Settings(passivate_after=None)
        first = Runtime(model=_model(), store=db, tools=[delete_file], settings=settings)
        first.start()
        first.send("s", "delete /tmp/x")
        first.wait_idle("s", timeout=WAIT)  # the call waits for a person
        (waiting,) = first.pending_approvals("s")
        assert waiting.tool_call is not None
        call_id = waiting.tool_call.id
        first.approve("s", call_id)
        assert started.wait(WAIT)

        caplog.set_level(logging.INFO, logger="amber")
        said = _Said("waits for tool calls")
        logging.getLogger("amber").addHandler(said)

        def stop() -> None:
            first.stop(timeout=WAIT)
            said.event.set()

        stopper = threading.Thread(target=stop)
        try:
            stopper.start()
            # The stop is draining (or, without the drain, it has returned already).
            assert said.event.wait(WAIT)
            release.set()
            assert finished.wait(WAIT)
            stopper.join(WAIT)
            assert not stopper.is_alive()
        finally:
            release.set()
            logging.getLogger("amber").removeHandler(said)

        second = Runtime(model=_model(), store=db, tools=[delete_file], settings=settings)
        with second:
            state = second.wait_idle("s", timeout=WAIT)
            for message in second.pending_approvals("s"):  # the person approves it again
                assert message.tool_call is not None
                second.approve("s", message.tool_call.id)
                state = second.wait_idle("s", timeout=WAIT)
            timeline = second.timeline("s")
        assert ran == ["/tmp/x"]
        assert state.message(waiting.id).status is not Status.INTERRUPTED
        (result,) = [m for m in state if m.tool_call_id == call_id]
        assert result.content == "deleted /tmp/x"
        assert [m.content for m in state][-1] == "Done."
        (recovered,) = [e for e in timeline.events() if isinstance(e, OrphanRecovered)]
        assert recovered.seq > timeline.head.message(result.id).event_seq

    def test_a_call_still_running_after_the_stop_timeout_says_it_may_have_run(
        self, tmp_path: Path
    ) -> None:
        """A sync call that outlives the stop's timeout is recorded interrupted; the
        recovered turn's reason names it and says it may have run, and so does the result
        the next model reads for it."""
        db = tmp_path / "amber.db"
        started, release = threading.Event(), threading.Event()

        @tool
        def deploy() -> str:
            """Deploy."""
            started.set()
            assert release.wait(WAIT)
            return "deployed"

        rt = Runtime(model=ScriptedModel([call("deploy")]), store=db, tools=[deploy]).start()
        try:
            rt.send("s", "deploy")
            assert started.wait(WAIT)
            rt.stop(timeout=1.0)  # the call outlives it
        finally:
            release.set()
            rt.stop()
        seen: list[str] = []

        def answer(request: ModelRequest) -> Any:
            seen.extend(
                part.text
                for message in request.view.messages
                for part in message.parts
                if isinstance(part, ToolResultPart)
            )
            return reply("ok")

        with Runtime(model=ScriptedModel(answer), store=db) as second:
            second.wait_idle("s", timeout=WAIT)
            timeline = second.timeline("s")
        (recovered,) = [e for e in timeline.events() if isinstance(e, OrphanRecovered)]
        assert recovered.reason is not None
        assert recovered.reason.startswith("the runtime stopped while tool call ")
        assert "(deploy) still ran; it may have run, so check before" in recovered.reason
        (cut,) = [m for m in timeline.head if m.tool_call is not None]
        assert cut.status is Status.INTERRUPTED
        assert seen == [  # what the next runtime's model reads for it
            "[Interrupted: the call to deploy was still running when its turn was cut off, and "
            "its result was lost; it may have run, in part or in full. Check before calling "
            "it again.]"
        ]
