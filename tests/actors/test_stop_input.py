"""What a session does with a call that reaches it while the runtime stops.

A caller that looked the session's actor up before the router closed (a ``send``,
``approve`` or ``interrupt`` racing ``Runtime.stop``) has its call queued behind
the drain. Such a call stepped the turn machine as if the runtime ran: an input
interrupted the drained turn (its sync call, which then ended, was recorded
plainly interrupted instead of with its result), and an approval started a new
tool run during the stop. It is now refused with ``RuntimeStopped`` before
anything is stored.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from stop_support import WAIT, Said

from actors import Runtime, RuntimeStopped, ScriptedModel, Settings, call, calls, reply, tool
from actors._drafts import user_draft
from runtime import InputLimits, OrphanRecovered, Status


@pytest.fixture
def draining() -> Iterator[Said]:
    """Set once a session's drain waits for a sync tool call (its actor is in the drain:
    a call queued to it now is handled during the stop)."""
    said = Said("waits for tool calls")
    amber = logging.getLogger("amber")
    amber.addHandler(said)
    amber.setLevel(logging.INFO)
    yield said
    amber.removeHandler(said)
    amber.setLevel(logging.NOTSET)


def _during_drain(rt: Runtime, said: Said, release: threading.Event, act: Callable[[], Any]) -> Any:
    """Stop ``rt`` on a thread; once its drain waits, call ``act`` (the racing call), then
    release the tool; returns what ``act`` returned or raised."""
    stopper = threading.Thread(target=rt.stop, kwargs={"timeout": WAIT})
    stopper.start()
    try:
        assert said.event.wait(WAIT)
        try:
            outcome: Any = act()
        except Exception as exc:
            outcome = exc
    finally:
        release.set()
        stopper.join(WAIT)
    assert not stopper.is_alive()
    return outcome


class TestInputDuringTheDrain:
    def test_a_send_queued_behind_the_drain_is_refused_and_the_call_keeps_its_result(
        self, tmp_path: Path, draining: Said
    ) -> None:
        db = tmp_path / "amber.db"
        started, release = threading.Event(), threading.Event()

        @tool
        def deploy() -> str:
            """Deploy."""
            started.set()
            assert release.wait(WAIT)
            return "deployed"

        settings = Settings(passivate_after=None)
        rt = Runtime(model=ScriptedModel([call("deploy")]), store=db, tools=[deploy],
                     settings=settings)  # fmt: skip
        rt.start()
        try:
            rt.send("s", "deploy")
            assert started.wait(WAIT)
            proxy = rt.router.live("s")  # looked up before the stop, as a racing send did
            draft = user_draft("send", "s", "hello?", {}, rt.clock, InputLimits())
            outcome = _during_drain(
                rt, draining, release, lambda: proxy.add_input(draft).get(timeout=WAIT)
            )
        finally:
            release.set()
            rt.stop()
        assert isinstance(outcome, RuntimeStopped), outcome
        with Runtime(model=ScriptedModel([reply("ok")]), store=db) as second:
            timeline = second.timeline("s")
        head = timeline.head
        assert "hello?" not in [m.content for m in head]  # refused: nothing stored
        (cut,) = [m for m in head if m.tool_call is not None]
        assert cut.status is not Status.INTERRUPTED
        (result,) = [m for m in head if m.tool_call_id == cut.tool_call.id]  # type: ignore[union-attr]
        assert result.content == "deployed"
        (recovered,) = [e for e in timeline.events() if isinstance(e, OrphanRecovered)]
        assert recovered.reason == "the runtime stopped during the turn; it restarts on next load"

    def test_an_approval_queued_behind_the_drain_starts_no_tool_run(
        self, tmp_path: Path, draining: Said
    ) -> None:
        db = tmp_path / "amber.db"
        started, release = threading.Event(), threading.Event()
        deleted: list[str] = []

        @tool
        def deploy() -> str:
            """Deploy."""
            started.set()
            assert release.wait(WAIT)
            return "deployed"

        @tool(approval=True)
        def delete_file(path: str) -> str:
            """Delete a file.

            Args:
                path: The file.
            """
            deleted.append(path)
            return f"deleted {path}"

        model = ScriptedModel([calls([("deploy", {}), ("delete_file", {"path": "/tmp/x"})])])
        settings = Settings(passivate_after=None)
        rt = Runtime(model=model, store=db, tools=[deploy, delete_file], settings=settings)
        rt.start()
        try:
            rt.send("s", "deploy, then delete")
            assert started.wait(WAIT)
            (waiting,) = rt.pending_approvals("s")
            assert waiting.tool_call is not None
            call_id = waiting.tool_call.id
            proxy = rt.router.live("s")
            outcome = _during_drain(
                rt, draining, release,
                lambda: proxy.decide(call_id, True, None, None).get(timeout=WAIT),
            )  # fmt: skip
        finally:
            release.set()
            rt.stop()
        assert isinstance(outcome, RuntimeStopped), outcome
        assert deleted == []  # no tool run started during the stop
        with Runtime(model=ScriptedModel([reply("ok")]), store=db,
                     tools=[deploy, delete_file], resume="none") as second:  # fmt: skip
            assert [m.id for m in second.pending_approvals("s")] == [waiting.id]
