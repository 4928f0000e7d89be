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
import trio
from stop_support import WAIT, Said, tool_results

from actors import Runtime, ScriptedModel, Settings, call, reply, tool
from runtime import ModelRequest, OrphanRecovered, Status, ToolResultPart


def _model() -> ScriptedModel:
    """Deletes the file unless the view shows the deletion's result already."""
    return ScriptedModel(
        lambda r: reply("Done.") if tool_results(r) else call("delete_file", {"path": "/tmp/x"})
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
        said = Said("waits for tool calls")
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


class TestTheDrainCutsTheOtherRuns:
    def test_an_async_call_of_another_session_is_cancelled_at_once_and_no_model_is_called(
        self, tmp_path: Path
    ) -> None:
        """While the stop waits for session a's sync call, session b (no sync call running)
        has its async call cancelled at once, as for a in the same stop (docs/runtime.md).
        It ran on through the drain: its result came in, and b called the model again while
        the runtime stopped."""
        db = tmp_path / "amber.db"
        draining = threading.Event()  # the stop waits for a's call
        decided = threading.Event()  # b's call was cancelled, or b called the model again
        a_started, b_started, b_cancelled = threading.Event(), threading.Event(), threading.Event()
        b_calls: list[int] = []

        @tool
        def deploy() -> str:
            """Deploy."""
            a_started.set()
            assert decided.wait(WAIT)
            # And a's drain waits for this call: b's cancel must not end it before the stop
            # reached a (b may be drained first, and a's result would then beat a's drain).
            assert draining.wait(WAIT)
            return "deployed"

        @tool
        async def fetch() -> str:
            """Fetch."""
            b_started.set()
            done = False
            try:
                await trio.to_thread.run_sync(draining.wait, WAIT, abandon_on_cancel=True)
                done = True
            finally:
                if not done:
                    b_cancelled.set()
                    decided.set()
            return "fetched"

        def answer(request: ModelRequest) -> Any:
            if request.session_id == "a":
                return reply("Done.") if tool_results(request) else call("deploy")
            b_calls.append(len(tool_results(request)))
            if tool_results(request):
                decided.set()
                return reply("Done.")
            return call("fetch")

        settings = Settings(passivate_after=None)
        rt = Runtime(
            model=ScriptedModel(answer), store=db, tools=[deploy, fetch], settings=settings
        )
        rt.start()
        said = Said("waits for tool calls")
        logging.getLogger("amber").addHandler(said)
        try:
            rt.send("b", "fetch")
            rt.send("a", "deploy")
            # Both calls run: a's thread waits for the decision, b's for the drain.
            assert a_started.wait(WAIT)
            assert b_started.wait(WAIT)
            logging.getLogger("amber").setLevel(logging.INFO)
            stopper = threading.Thread(target=rt.stop, kwargs={"timeout": WAIT})
            stopper.start()
            assert said.event.wait(WAIT)
            draining.set()
            stopper.join(WAIT)
            assert not stopper.is_alive()
        finally:
            decided.set()
            draining.set()
            logging.getLogger("amber").removeHandler(said)
            logging.getLogger("amber").setLevel(logging.NOTSET)
            rt.stop()
        assert b_calls == [0]  # the model was not called again for b
        assert b_cancelled.is_set()

    def test_a_sync_tool_that_stops_the_runtime_is_not_waited_for(self, tmp_path: Path) -> None:
        """stop() called by a sync tool (a "quit" tool) does not wait for that very call,
        which can only end once the stop returns: the stop goes on at once (it waited out its
        whole timeout for it, 30 s by default), and the call is recorded cut, may have run."""
        db = tmp_path / "amber.db"
        done = threading.Event()
        warned = Said("tool calls still ran")
        box: dict[str, Runtime] = {}

        @tool
        def quit_bot() -> str:
            """Quit."""
            box["rt"].stop(timeout=WAIT)
            done.set()
            return "bye"

        rt = Runtime(model=ScriptedModel([call("quit_bot")]), store=db, tools=[quit_bot])
        box["rt"] = rt
        logging.getLogger("amber").addHandler(warned)
        try:
            rt.start()
            rt.send("s", "quit")
            assert done.wait(WAIT)
        finally:
            logging.getLogger("amber").removeHandler(warned)
            rt.stop()
        assert not warned.event.is_set()  # the drain did not run out its time for it
        with Runtime(model=ScriptedModel([reply("ok")]), store=db) as second:
            timeline = second.timeline("s")
        (recovered,) = [e for e in timeline.events() if isinstance(e, OrphanRecovered)]
        assert recovered.reason is not None
        assert "(quit_bot) still ran; it may have run" in recovered.reason
