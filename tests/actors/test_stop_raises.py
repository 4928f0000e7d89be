"""A session actor whose ``on_stop`` raises before its inbox is closed (closing its timers
raised something unexpected): what was queued in its inbox, and what is put after, is
not lost.

pykka logs the error and empties the inbox a last time, dropping tells: an ``ask`` queued
there was never stored nor answered (its caller waited out its whole timeout, a stream
for ever). The inbox was left open: a message put after the stop landed where nobody
takes from again. The inbox is now closed and handed on whatever raises.

The raise is injected in ``SessionActor._close`` as ``on_stop`` calls it; the windows are
opened from events (the asking thread's put is held), never by sleeps.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import pytest
from test_late_tell import WAIT, LateWindow, answered_once, checked_asks, runtime

from actors import Runtime, ScriptedModel, reply
from actors._session import SessionActor

__all__ = ["runtime"]


def close_raises(monkeypatch: Any, ref: Any, before: Callable[[], None] = lambda: None) -> None:
    """``_close`` raises when the stopping actor of ``ref`` calls it from ``on_stop`` (pykka
    has marked it stopped), after ``before``."""
    close = SessionActor._close

    def raising_close(actor: SessionActor) -> None:
        if actor.actor_ref is ref and actor.actor_stopped.is_set():
            before()
            raise RuntimeError("Cannot cancel the timers (injected).")
        close(actor)

    monkeypatch.setattr(SessionActor, "_close", raising_close)


class QueuedWhileStopping:
    """The asking thread's next put into the session's inbox is held until the actor is
    passivated and its ``on_stop`` is closing; the put lands in the inbox, then the close
    raises. ``check`` judges what became of the queued message."""

    def __init__(self, rt: Runtime, session_id: str, monkeypatch: Any) -> None:
        self.rt, self.session_id = rt, session_id
        proxy = rt.router.live(session_id)
        assert proxy is not None
        self.ref = ref = proxy.actor_ref
        seq = proxy.state_now().get(timeout=WAIT).seq
        closing, put_done, self.ended = threading.Event(), threading.Event(), threading.Event()
        asker = threading.get_ident()
        self.armed = True
        close_raises(monkeypatch, ref, lambda: (closing.set(), put_done.wait(WAIT)))
        teardown = SessionActor._actor_loop_teardown

        def noted_teardown(actor: SessionActor) -> None:
            teardown(actor)
            if actor.actor_ref is ref:
                self.ended.set()

        monkeypatch.setattr(SessionActor, "_actor_loop_teardown", noted_teardown)
        put = ref.actor_inbox.put

        def held_put(item: Any, block: bool = True, timeout: float | None = None) -> None:
            if not self.armed or threading.get_ident() != asker:
                return put(item, block, timeout)
            self.armed = False
            rt.router._passivate(session_id, ref, seq)
            assert closing.wait(WAIT), "the actor's on_stop did not close it"
            try:
                return put(item, block, timeout)
            finally:
                put_done.set()

        monkeypatch.setattr(ref.actor_inbox, "put", held_put)

    def check(self) -> None:
        """Nothing is left in the stopped actor's inbox; the session's next actor runs."""
        assert not self.armed, "the window was not opened"
        assert self.ended.wait(WAIT), "the stopped actor's loop did not end"
        assert self.ref.actor_inbox.empty(), "the message sits in the stopped actor's inbox"
        live = self.rt.router.live(self.session_id)
        assert live is not None, "the message went with the stopped actor; nothing runs it"
        assert live.actor_ref is not self.ref


class TestAnOnStopThatRaises:
    def test_an_ask_queued_as_it_stops_is_answered(
        self,
        runtime: Callable[..., Runtime],
        monkeypatch: Any,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        """The ask queued before the raise was dropped with the inbox; it goes on to the
        session's next actor now, and the error is logged once."""
        model = ScriptedModel([reply("hi"), reply("again")])
        rt = runtime(model=model)
        rt.send("s", "first")
        rt.wait_idle("s", timeout=WAIT)
        checked_asks(rt, QueuedWhileStopping(rt, "s", monkeypatch), monkeypatch)
        with caplog.at_level(logging.ERROR):
            answer = rt.ask("s", "second", timeout=WAIT)
        assert answer.text == "again"
        answered_once(rt, "second", model)
        logged = [r for r in caplog.records if "Cannot cancel the timers" in str(r.exc_info)]
        assert len(logged) == 1, caplog.text

    @pytest.mark.parametrize("window", ["passivated-ended", "dropped-ended", "reloaded-ended"])
    def test_an_ask_put_after_the_stop_is_answered(
        self, runtime: Callable[..., Runtime], window: str, monkeypatch: Any
    ) -> None:
        """The inbox was left open: the ask put after the stop sat there unanswered."""
        model = ScriptedModel([reply("hi"), reply("again")])
        rt = runtime(model=model)
        rt.send("s", "first")
        rt.wait_idle("s", timeout=WAIT)
        late = LateWindow(rt, "s", window, monkeypatch)
        close_raises(monkeypatch, late.ref)
        checked_asks(rt, late, monkeypatch)
        answer = rt.ask("s", "second", timeout=WAIT)
        assert answer.text == "again"
        answered_once(rt, "second", model)
