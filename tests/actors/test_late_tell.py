"""A message put in a session actor's inbox in the instant after pykka found the actor
alive, and after the actor stopped: it passivated, was dropped or reloaded, or the runtime
stopped, between pykka's liveness check (``ActorRef.tell``, ``ActorRef.ask``) and its put.

The stopping actor's ``on_stop`` hands what was queued to the session's next actor; a
message put after that landed in an inbox nobody takes from again. An ``ask`` (or
``stream``) told there was never stored nor answered: its caller waited out its whole
timeout (a stream for ever). A call (``send``, ``interrupt``) waited out ``ask_timeout``
and raised ``pykka.Timeout``. The stopped actor's inbox now refuses it: a tell raises
``ActorDeadError`` (the router tells the session's next actor), a call is answered with
it (the router calls the next actor).

Each window is opened from events: the asking thread's put is held, on its first put
into the actor's inbox, until the actor has stopped (its ``on_stop`` has run, or its
whole loop ended), never by sleeps.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from actors import Reply, Runtime, RuntimeStopped, ScriptedModel, Settings, reply
from actors._session import SessionActor
from runtime import Status

WAIT = 60.0
"""Seconds an answer may take before the test fails (a hang guard, not a judge)."""

WINDOWS = ["passivated-on_stop", "passivated-ended", "dropped-ended", "reloaded-ended"]
"""How the actor stopped while the put was held (it passivated, was dropped, or was
reloaded: a new actor runs the session), and when the put lands: after its ``on_stop``
(before pykka empties the inbox a last time) or after its loop ended."""


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


class LateWindow:
    """The asking thread's next put into the session's inbox is held until the actor
    stopped (how: ``window``), then made. ``check`` judges what the put left behind."""

    def __init__(self, rt: Runtime, session_id: str, window: str, monkeypatch: Any) -> None:
        self.rt, self.session_id, self.window = rt, session_id, window
        proxy = rt.router.live(session_id)
        assert proxy is not None
        self.ref = ref = proxy.actor_ref
        self.seq = proxy.state_now().get(timeout=WAIT).seq
        self.on_stop_done = threading.Event()
        self.ended = threading.Event()
        self.put_done = threading.Event()
        self.asker = threading.get_ident()
        self.armed = True
        on_stop, teardown = SessionActor.on_stop, SessionActor._actor_loop_teardown

        def held_on_stop(actor: SessionActor) -> None:
            on_stop(actor)
            if actor.actor_ref is ref:
                self.on_stop_done.set()
                if window.endswith("on_stop"):  # the put lands before pykka's last look
                    assert self.put_done.wait(WAIT)

        def noted_teardown(actor: SessionActor) -> None:
            teardown(actor)
            if actor.actor_ref is ref:
                self.ended.set()

        monkeypatch.setattr(SessionActor, "on_stop", held_on_stop)
        monkeypatch.setattr(SessionActor, "_actor_loop_teardown", noted_teardown)
        put = ref.actor_inbox.put

        def held_put(item: Any, block: bool = True, timeout: float | None = None) -> None:
            if not self.armed or threading.get_ident() != self.asker:
                return put(item, block, timeout)
            self.armed = False  # pykka found the actor alive: it stops before the put
            self.stop_actor()
            try:
                return put(item, block, timeout)
            finally:
                self.put_done.set()

        monkeypatch.setattr(ref.actor_inbox, "put", held_put)

    def stop_actor(self) -> None:
        router, sid = self.rt.router, self.session_id
        if self.window.startswith("passivated"):
            router._passivate(sid, self.ref, self.seq)
        elif self.window.startswith("dropped"):
            router.drop(sid, timeout=WAIT)
        elif self.window.startswith("reloaded"):
            router.reload(sid)
        else:
            self.rt.stop(timeout=WAIT)
        stopped = self.on_stop_done if self.window.endswith("on_stop") else self.ended
        assert stopped.wait(WAIT), "the actor did not stop"

    def check(self) -> None:
        """The put was not left with the stopped actor: nothing is in its inbox once its
        loop ended, and the session's next actor runs (it took the message)."""
        assert not self.armed, "the window was not opened"
        assert self.ended.wait(WAIT), "the stopped actor's loop did not end"
        assert self.ref.actor_inbox.empty(), "the message sits in the stopped actor's inbox"
        live = self.rt.router.live(self.session_id)
        assert live is not None, "the message went with the stopped actor; nothing runs it"
        assert live.actor_ref is not self.ref


def checked_asks(rt: Runtime, window: LateWindow, monkeypatch: Any) -> None:
    """Check the window as soon as an ask or stream has told its input (before it waits)."""
    start = rt._start_ask

    def start_and_check(*args: Any, **kwargs: Any) -> Any:
        waiter = start(*args, **kwargs)
        window.check()
        return waiter

    monkeypatch.setattr(rt, "_start_ask", start_and_check)


def answered_once(rt: Runtime, text: str, model: ScriptedModel) -> None:
    state = rt.wait_idle("s", timeout=WAIT)
    (asked,) = [m for m in state if m.content == text]
    assert asked.status is Status.PROCESSED
    assert [m.content for m in state][-1] == "again"
    assert model.calls_made == 2


@pytest.mark.parametrize("window", WINDOWS)
class TestAPutAfterTheStop:
    def test_an_ask_is_answered(
        self, runtime: Callable[..., Runtime], window: str, monkeypatch: Any
    ) -> None:
        """The ask goes on to the session's next actor, which stores it once and answers."""
        model = ScriptedModel([reply("hi"), reply("again")])
        rt = runtime(model=model)
        rt.send("s", "first")
        rt.wait_idle("s", timeout=WAIT)
        checked_asks(rt, LateWindow(rt, "s", window, monkeypatch), monkeypatch)
        answer = rt.ask("s", "second", timeout=WAIT)
        assert answer.text == "again"
        answered_once(rt, "second", model)

    def test_a_stream_is_answered(
        self, runtime: Callable[..., Runtime], window: str, monkeypatch: Any
    ) -> None:
        """``stream`` tells its input as ``ask`` does: it too ends with the reply."""
        model = ScriptedModel([reply("hi"), reply("again")])
        rt = runtime(model=model)
        rt.send("s", "first")
        rt.wait_idle("s", timeout=WAIT)
        checked_asks(rt, LateWindow(rt, "s", window, monkeypatch), monkeypatch)

        async def main() -> list[Any]:
            with trio.fail_after(WAIT):  # a hang guard: the window is judged in _start_ask
                return [event async for event in rt.stream("s", "second")]

        events = trio.run(main)
        assert isinstance(events[-1], Reply)
        assert events[-1].text == "again"
        answered_once(rt, "second", model)

    def test_a_send_is_answered(
        self, runtime: Callable[..., Runtime], window: str, monkeypatch: Any
    ) -> None:
        """A call put after the stop is refused, not left unanswered (its caller waited
        ``ask_timeout`` and got ``pykka.Timeout``): it goes on to the next actor."""
        model = ScriptedModel([reply("hi"), reply("again")])
        rt = runtime(model=model)
        rt.send("s", "first")
        rt.wait_idle("s", timeout=WAIT)
        late = LateWindow(rt, "s", window, monkeypatch)
        sent = rt.send("s", "second")
        late.check()
        assert sent.content == "second"
        answered_once(rt, "second", model)


class TestAPutAfterTheRuntimeStopped:
    def test_an_ask_fails_at_once(self, runtime: Callable[..., Runtime], monkeypatch: Any) -> None:
        """The runtime stopped between the liveness check and the put: the ask raises
        ``RuntimeStopped`` at once (it waited out its timeout)."""
        rt = runtime(model=ScriptedModel([reply("hi")]))
        rt.send("s", "first")
        rt.wait_idle("s", timeout=WAIT)
        late = LateWindow(rt, "s", "stopped-ended", monkeypatch)
        start = rt._start_ask

        def start_or_fail(*args: Any, **kwargs: Any) -> Any:
            waiter = start(*args, **kwargs)
            assert late.ref.actor_inbox.empty(), "the ask sits in the stopped actor's inbox"
            return waiter

        monkeypatch.setattr(rt, "_start_ask", start_or_fail)
        with pytest.raises(
            RuntimeStopped, match=r"^The runtime is stopped; make a new Runtime to go on\.$"
        ):
            rt.ask("s", "second", timeout=WAIT)

    def test_an_interrupt_finds_nothing_running(
        self, runtime: Callable[..., Runtime], monkeypatch: Any
    ) -> None:
        """``interrupt`` of a session that passivated meanwhile: False at once (it waited
        ``ask_timeout`` and raised ``pykka.Timeout``)."""
        rt = runtime(model=ScriptedModel([reply("hi")]))
        rt.send("s", "first")
        rt.wait_idle("s", timeout=WAIT)
        late = LateWindow(rt, "s", "passivated-ended", monkeypatch)
        assert rt.interrupt("s") is False
        assert not late.armed, "the window was not opened"
