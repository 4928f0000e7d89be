"""Router.close stops every session actor even when one does not stop in time (issue 15).

pykka's actor threads are not daemon threads: an actor left running keeps the
process from exiting. A session actor that timed out used to raise
``pykka.Timeout`` out of ``Router.close`` (and so out of ``Runtime.stop``)
before the other actors and threads were stopped.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pykka
import pytest

from actors import FakePlatform, Runtime, ScriptedModel, SilentChannelAdapter, reply
from actors._router import Router, _Live
from actors._session import SessionActor
from runtime import Status

WAIT = 60.0
"""Seconds an actor answer may take before the test fails (a hang guard, not a judge)."""


class _Done:
    def get(self, timeout: float | None = None) -> None:
        return None


class _Drained:
    def get(self, timeout: float | None = None) -> _Done:
        return _Done()


class _Proxy:
    def drain(self) -> _Drained:
        return _Drained()

    def shutdown(self) -> _Done:
        return _Done()


class _Ref:
    def __init__(self, stuck: bool) -> None:
        self.stuck = stuck
        self.stopped = False

    def stop(self, block: bool = True, timeout: float | None = None) -> Any:
        if self.stuck:
            raise pykka.Timeout("the actor did not stop")
        self.stopped = True
        return True


def test_a_stuck_session_does_not_stop_the_others_from_stopping() -> None:
    router = Router()
    stuck, fine = _Ref(stuck=True), _Ref(stuck=False)
    router._live["a"] = _Live(ref=stuck, proxy=_Proxy())  # type: ignore[arg-type]
    router._live["b"] = _Live(ref=fine, proxy=_Proxy())  # type: ignore[arg-type]
    router.close("stopped", timeout=0.01)  # no pykka.Timeout escapes
    assert fine.stopped
    assert router._live == {}


class _HeldPlatform(FakePlatform):
    """A platform whose first send waits for ``release`` (a reply being delivered)."""

    def __init__(self) -> None:
        super().__init__("wechat")
        self.entered = threading.Event()
        self.release = threading.Event()

    def send(self, channel_id: str, text: str) -> str:
        if not self.entered.is_set():
            self.entered.set()
            assert self.release.wait(WAIT), "the test never released the send"
        return super().send(channel_id, text)


class TestStopDrainsAdapters:
    def test_a_reply_sent_while_stopping_is_recorded_delivered(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A reply an adapter was sending when stop() was called is stored delivered, so
        a runtime started again on the store does not send it a second time."""
        store = tmp_path / "amber.db"
        held = _HeldPlatform()
        shutdown = SessionActor.shutdown

        def shutdown_then_release(actor: SessionActor) -> None:
            shutdown(actor)  # the session has stopped; only now may the send finish
            held.release.set()

        monkeypatch.setattr(SessionActor, "shutdown", shutdown_then_release)
        rt = Runtime(
            model=ScriptedModel([reply("Hi!")]),
            store=str(store),
            adapters=[SilentChannelAdapter.start(client=held)],
        ).start()
        try:
            rt.send("s1", "hello", chatbot_id="wechat", channel_id="c1")
            assert held.entered.wait(WAIT)
        finally:
            rt.stop(timeout=WAIT)
        monkeypatch.undo()
        assert held.transcript("c1") == ["Hi!"]

        again = FakePlatform("wechat")
        with Runtime(
            model=ScriptedModel([]),
            store=str(store),
            adapters=[SilentChannelAdapter.start(client=again)],
            resume="all",
        ) as rt2:
            state = rt2.wait_idle("s1", timeout=WAIT)
        replies = [m for m in state.messages if m.content == "Hi!"]
        assert [m.status for m in replies] == [Status.DELIVERED]
        assert again.sent == ()


class TestReloadRacingClose:
    """A reload (the keeper's, for a session changed elsewhere) that meets the router's close
    between stopping the old actor and loading the new one: close wins, quietly."""

    def test_close_after_the_drop_wins(self, tmp_path: Path) -> None:
        """The router starts closing (its drain still under way) right after the reload
        stopped the old actor: the reload loads nothing and raises nothing, and no
        session actor is left once close returns."""
        rt = Runtime(model=ScriptedModel([reply("Hi!")]), store=str(tmp_path / "a.db")).start()
        router = rt.router
        rt.send("s", "hello", sender="Chii")
        rt.wait_idle("s", timeout=WAIT)
        draining, drained = threading.Event(), threading.Event()

        def drain(timeout: float) -> None:
            draining.set()
            assert drained.wait(WAIT), "the test never let the drain end"

        closing = threading.Thread(
            target=lambda: router.close("stopped by the test", timeout=WAIT, drain=drain)
        )
        drop = router.drop

        def drop_then_close(session_id: str, **options: Any) -> None:
            drop(session_id, **options)
            closing.start()
            assert draining.wait(WAIT), "close did not reach its drain"

        router.drop = drop_then_close  # type: ignore[method-assign]
        try:
            router.reload("s")  # no RuntimeStopped: the close won
            assert router.live_sessions() == []
        finally:
            drained.set()
            closing.join(WAIT)
            rt.stop(timeout=WAIT)
        assert pykka.ActorRegistry.get_by_class(SessionActor) == []

    def test_close_waits_for_a_drop_under_way(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A session being dropped (the keeper stops it: lost lease, reload) when close
        begins is not in close's table any more; close still returns only once its actor
        has stopped, so nothing of the session runs after the runtime stopped."""
        rt = Runtime(model=ScriptedModel([reply("Hi!")]), store=str(tmp_path / "a.db")).start()
        router = rt.router
        rt.send("s", "hello", sender="Chii")
        rt.wait_idle("s", timeout=WAIT)
        entered, release = threading.Event(), threading.Event()
        shutdown = SessionActor.shutdown

        def held_shutdown(actor: SessionActor, **options: Any) -> None:
            entered.set()
            assert release.wait(WAIT), "the test never released the shutdown"
            shutdown(actor, **options)

        monkeypatch.setattr(SessionActor, "shutdown", held_shutdown)
        ref = router._live["s"].ref
        dropping = threading.Thread(target=lambda: router.drop("s"))
        dropping.start()
        try:
            assert entered.wait(WAIT), "the drop did not reach the shutdown"
            router.close("stopped by the test", timeout=WAIT, drain=lambda t: release.set())
            assert not ref.is_alive()
        finally:
            release.set()
            dropping.join(WAIT)
            rt.stop(timeout=WAIT)
