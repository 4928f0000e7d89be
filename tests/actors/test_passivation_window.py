"""A call routed to a session's actor just as it passivates or is dropped: the router has
handed out the old actor, which gets the call after it closed (agreed to passivate, or
shut down) or after it stopped. The input must be answered (the call goes on to the
session's next actor), never stored by the old actor and left pending.

Two guards hold it: a closed actor's ``_step`` refuses every input before storing it
(``ActorDeadError``), and pykka refuses a call to a stopped one (or answers it with
``ActorDeadError`` from its inbox); ``Router.call`` then forgets the old actor and makes
the session's next one, which stores the input and answers it. An ``ask`` or ``stream`` is
told, not called: the closed actor hands it to the session's next actor (``reroute``), and
a tell to a stopped actor raises ``ActorDeadError``, on which ``Router.tell`` tells the
next actor; if the runtime stopped meanwhile, the ask fails with ``RuntimeStopped``.

Each window is opened from events: the router's lookup for the call is held while the
session passivates or is dropped (and, for the closed window, while the old actor's stop
is held back), never by sleeps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pykka
import pytest
import trio

from actors import Reply, Runtime, RuntimeStopped, ScriptedModel, Settings, call, reply, tool
from runtime import Category, Status

WAIT = 60.0
"""Seconds a call may take before the test fails (a hang guard, not a judge)."""

WINDOWS = [
    "passivated-closed", "passivated-stopped", "dropped-closed", "dropped-stopped",
    "reloaded-closed", "reloaded-stopped",
]  # fmt: skip
"""How the old actor gets the call: it passivated, was dropped, or was reloaded (the router
put the session's next actor in its place), and it is closed but not yet stopped (its
stop held back), or stopped (after ``on_stop``)."""


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Callable[..., Runtime]]:
    made: list[Runtime] = []

    def make(**kwargs: Any) -> Runtime:
        rt = Runtime(store=tmp_path / "amber.db", settings=Settings(passivate_after=None),
                     **kwargs).start()  # fmt: skip
        made.append(rt)
        return rt

    yield make
    for rt in reversed(made):
        rt.stop()


def open_window(rt: Runtime, session_id: str, window: str, monkeypatch: Any) -> list[Any]:
    """The next lookup of ``session_id`` hands out its live actor, which passivates or is
    dropped before the call reaches it. Returns a list the old entry is put in."""
    router = rt.router
    lookup = router._entry
    old: list[Any] = []
    held: list[Any] = []
    stop = pykka.ActorRef.stop

    def held_stop(ref: Any, *args: Any, **kwargs: Any) -> Any:
        if old and ref is old[0].ref and window.endswith("closed"):
            held.append(ref)  # stopped once the call is done (see ``release``)
            return None
        return stop(ref, *args, **kwargs)

    def entry(sid: str, **kwargs: Any) -> Any:
        got = lookup(sid, **kwargs)
        if sid != session_id or old:
            return got
        old.append(got)
        monkeypatch.setattr(pykka.ActorRef, "stop", held_stop)
        if window.startswith("passivated"):
            seq = got.proxy.state_now().get(timeout=WAIT).seq
            router._passivate(session_id, got.ref, seq)
        elif window.startswith("dropped"):
            router.drop(session_id, timeout=WAIT)
        elif window.startswith("reloaded"):
            router.reload(session_id)
        else:
            rt.stop(timeout=WAIT)
        replaced = window.startswith("reloaded")
        assert (router.live(session_id) is not None) is replaced, "the table was not changed"
        assert router.live(session_id) is not got.proxy
        if window.endswith("stopped"):
            assert got.ref.actor_stopped.wait(WAIT)
        else:
            assert got.ref.is_alive(), "the old actor stopped: its stop was not held back"
            assert held, "the old actor was not asked to stop"
        return got

    monkeypatch.setattr(router, "_entry", entry)
    return old


def release(rt: Runtime, old: list[Any], monkeypatch: Any) -> None:
    """Stop the old actor (its held-back stop) and check that the call went on to a new
    one: the session is live again without another call loading it (a ``wait_idle`` would
    load it, and recover an input the old actor left, hiding the loss)."""
    monkeypatch.undo()
    (entry,) = old
    entry.ref.stop(block=True, timeout=WAIT)
    live = rt.router.live("s")
    assert live is not None, "the call was taken by the old actor; nothing answers it"
    assert live is not entry.proxy


@pytest.mark.parametrize("window", WINDOWS)
class TestInputInTheWindow:
    def test_an_ask_is_answered(
        self, runtime: Callable[..., Runtime], window: str, monkeypatch: Any
    ) -> None:
        """An ask is told, not called: the closed actor, or the stopped one's ``on_stop``,
        hands it to the session's next actor (a tell to a dead actor goes there at once),
        which stores it once and answers it."""
        model = ScriptedModel([reply("hi"), reply("again")])
        rt = runtime(model=model)
        rt.send("s", "first")
        rt.wait_idle("s", timeout=WAIT)
        old = open_window(rt, "s", window, monkeypatch)
        answer = rt.ask("s", "second", timeout=WAIT)
        release(rt, old, monkeypatch)
        assert answer.text == "again"
        state = rt.wait_idle("s", timeout=WAIT)
        assert [m.status for m in state if m.content == "second"] == [Status.PROCESSED]
        assert model.calls_made == 2

    def test_a_stream_is_answered(
        self, runtime: Callable[..., Runtime], window: str, monkeypatch: Any
    ) -> None:
        """``stream`` tells its input as ``ask`` does: it too ends with the reply."""
        model = ScriptedModel([reply("hi"), reply("again")])
        rt = runtime(model=model)
        rt.send("s", "first")
        rt.wait_idle("s", timeout=WAIT)
        old = open_window(rt, "s", window, monkeypatch)

        async def main() -> list[Any]:
            with trio.fail_after(WAIT):  # a hang guard, not a judge
                return [event async for event in rt.stream("s", "second")]

        events = trio.run(main)
        release(rt, old, monkeypatch)
        assert isinstance(events[-1], Reply)
        assert events[-1].text == "again"
        state = rt.wait_idle("s", timeout=WAIT)
        assert [m.status for m in state if m.content == "second"] == [Status.PROCESSED]

    def test_a_send_is_answered(
        self, runtime: Callable[..., Runtime], window: str, monkeypatch: Any
    ) -> None:
        model = ScriptedModel([reply("hi"), reply("again")])
        rt = runtime(model=model)
        rt.send("s", "first")
        rt.wait_idle("s", timeout=WAIT)
        old = open_window(rt, "s", window, monkeypatch)
        sent = rt.send("s", "second")
        release(rt, old, monkeypatch)
        state = rt.wait_idle("s", timeout=WAIT)
        assert state.message(sent.id).status is Status.PROCESSED
        assert [m.content for m in state][-1] == "again"
        assert model.calls_made == 2

    def test_a_cron_prompt_is_answered(
        self, runtime: Callable[..., Runtime], window: str, monkeypatch: Any
    ) -> None:
        model = ScriptedModel([reply("hi"), reply("woke")])
        rt = runtime(model=model)
        rt.send("s", "first")
        rt.wait_idle("s", timeout=WAIT)
        old = open_window(rt, "s", window, monkeypatch)
        posted = rt.post("s", Category.CRON_PROMPT, "wake up")
        release(rt, old, monkeypatch)
        state = rt.wait_idle("s", timeout=WAIT)
        assert state.message(posted.id).status is Status.PROCESSED
        assert [m.content for m in state][-1] == "woke"

    def test_a_notification_is_delivered_once(
        self, runtime: Callable[..., Runtime], window: str, monkeypatch: Any
    ) -> None:
        rt = runtime(model=ScriptedModel([reply("hi")]))
        rt.send("s", "first")
        rt.wait_idle("s", timeout=WAIT)
        old = open_window(rt, "s", window, monkeypatch)
        note = rt.post("s", Category.NOTIFICATION, "backup finished")
        release(rt, old, monkeypatch)
        state = rt.wait_idle("s", timeout=WAIT)
        assert [m.id for m in state if m.content == "backup finished"] == [note.id]

    def test_an_approval_runs_the_call(
        self, runtime: Callable[..., Runtime], window: str, monkeypatch: Any
    ) -> None:
        ran: list[str] = []

        @tool(approval=True)
        def delete_file(path: str) -> str:
            """Delete a file.

            Args:
                path: The file.
            """
            ran.append(path)
            return f"deleted {path}"

        model = ScriptedModel([call("delete_file", {"path": "/tmp/x"}), reply("Done.")])
        rt = runtime(model=model, tools=[delete_file])
        sent = rt.send("s", "delete /tmp/x")
        rt.wait_idle("s", timeout=WAIT)  # returns while the call waits for a person
        (waiting,) = rt.pending_approvals("s")
        assert waiting.tool_call is not None
        old = open_window(rt, "s", window, monkeypatch)
        rt.approve("s", waiting.tool_call.id)
        release(rt, old, monkeypatch)
        state = rt.wait_idle("s", timeout=WAIT)
        assert ran == ["/tmp/x"]
        assert state.active_turn is None
        assert state.message(sent.id).status is Status.PROCESSED
        assert [m.content for m in state][-1] == "Done."


@pytest.mark.parametrize("window", ["runtime-closed", "runtime-stopped"])
def test_an_ask_fails_at_once_when_the_runtime_stops(
    runtime: Callable[..., Runtime], window: str, monkeypatch: Any
) -> None:
    """The runtime stops between the ask's lookup and its tell: the closed actor hands the
    ask on, or the tell finds the actor dead, and the router, closed, fails it with
    ``RuntimeStopped`` (not a wait for the ask's timeout)."""
    rt = runtime(model=ScriptedModel([reply("hi")]))
    rt.send("s", "first")
    rt.wait_idle("s", timeout=WAIT)
    old = open_window(rt, "s", window, monkeypatch)
    with pytest.raises(RuntimeStopped, match=r"^The runtime is stopped; make a new Runtime"):
        rt.ask("s", "second", timeout=WAIT)
    monkeypatch.undo()
    old[0].ref.stop(block=True, timeout=WAIT)
