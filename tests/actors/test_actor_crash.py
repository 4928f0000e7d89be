"""A session actor that crashes on a told message (a tell whose handling raises, so pykka
stops the actor and calls ``on_failure``, not ``on_stop``): what was queued behind the
message, and what is put after, is not lost, and whoever waits on the session is told.

The crash is a ``CancelAsk`` whose interrupt cannot be written (the store refuses the
write). Its write is held, from events, until the next ask is queued behind it.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from harness import WAIT, RuntimeFactory, make_runtime

from actors import Runtime, ScriptedModel, SessionGone, Settings, call, reply, tool
from actors._session import SessionActor
from runtime import StoreError
from runtime._script import hang
from runtime.store import MemoryStore

__all__ = ["make_runtime"]


class HeldFailingStore(MemoryStore):
    """A memory store whose next append, once ``armed``, says it began (``entered``),
    waits for ``go`` and then refuses the write (a full disk); later appends write."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False
        self.entered = threading.Event()
        self.go = threading.Event()

    def append(self, events: Any) -> Any:
        if self.armed:
            self.armed = False
            self.entered.set()
            assert self.go.wait(WAIT)
            raise StoreError("Cannot write: database or disk is full (injected).")
        return super().append(events)


def _first_hangs(called: threading.Event) -> ScriptedModel:
    """The model's first call never ends (``called`` is set once it is made: the step that
    made it has written all it writes); every later call answers."""
    calls: list[Any] = []

    def script(request: Any) -> Any:
        calls.append(request)
        called.set()
        return hang() if len(calls) == 1 else reply("answered")

    return ScriptedModel(script)


class TestASessionActorThatCrashesOnATell:
    def test_an_ask_queued_behind_the_crash_is_answered_by_the_next_actor(
        self, make_runtime: RuntimeFactory
    ) -> None:
        """An ask told while the actor handled the message it crashed on was dropped
        with the crashed actor's inbox (pykka empties it, dropping tells): its caller
        waited out its whole timeout, a stream for ever."""
        store = HeldFailingStore()
        called = threading.Event()
        rt = make_runtime(model=_first_hangs(called), store=store)
        first = rt._start_ask("s", "one", {}, None, what="ask")
        assert called.wait(WAIT)
        store.armed = True
        rt._cancel_ask("s", first)  # its interrupt's write is held, then refused
        assert store.entered.wait(WAIT)
        second = rt._start_ask("s", "two", {}, None, what="ask")  # queued behind it
        store.go.set()
        assert second.wait(WAIT), "the ask queued behind the crash was lost"
        assert second.result().input.content == "two"

    def test_a_wait_for_the_session_to_be_idle_is_told(
        self, make_runtime: RuntimeFactory, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A ``wait_idle`` waiting on the crashed actor was never told: its caller waited
        out its whole timeout. It is failed with ``SessionGone``, as when the session
        cannot go on after a failed write."""
        store = HeldFailingStore()
        called, registered = threading.Event(), threading.Event()
        when_idle = SessionActor.when_idle

        def noted(actor: SessionActor, settled: bool = False) -> Any:
            future = when_idle(actor, settled)
            registered.set()
            return future

        monkeypatch.setattr(SessionActor, "when_idle", noted)
        rt = make_runtime(model=_first_hangs(called), store=store)
        first = rt._start_ask("s", "one", {}, None, what="ask")
        assert called.wait(WAIT)
        raised: list[BaseException] = []

        def wait_idle() -> None:
            try:
                rt.wait_idle("s", timeout=WAIT)
            except BaseException as exc:  # judged below
                raised.append(exc)

        waiting = threading.Thread(target=wait_idle)
        waiting.start()
        assert registered.wait(WAIT)
        store.armed = True
        store.go.set()
        rt._cancel_ask("s", first)  # its interrupt's write is refused: the actor crashes
        waiting.join(WAIT * 2)
        assert [type(exc) for exc in raised] == [SessionGone]


class FailingStore(MemoryStore):
    """A memory store that refuses every write while ``failing`` is set (a full disk)."""

    failing = False

    def append(self, events: Any) -> Any:
        if self.failing:
            raise StoreError("Cannot write: database or disk is full (injected).")
        return super().append(events)


class TestASessionThatCannotGoOnDuringAStopsDrain:
    def test_the_stop_does_not_wait_for_it_until_its_deadline(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A stop waits for a running sync tool call; its result cannot be written, nor
        can the turn be failed, so the session gives up. The stop waited on for the
        session's drain until its whole time for the drain was out, then said tool calls
        still ran (none did)."""
        store = FailingStore()
        started, release, draining = threading.Event(), threading.Event(), threading.Event()

        @tool
        def slow() -> str:
            """Take a while."""
            started.set()
            assert release.wait(WAIT)
            return "done"

        drain = SessionActor.drain

        def noted(actor: SessionActor, skip: str | None = None) -> Any:
            future = drain(actor, skip)
            draining.set()
            return future

        monkeypatch.setattr(SessionActor, "drain", noted)
        calls: list[Any] = []
        model = ScriptedModel(
            lambda r: calls.append(r) or (call("slow", {}) if len(calls) == 1 else reply("Done."))
        )
        rt = Runtime(model=model, store=store, tools=[slow],
                     settings=Settings(passivate_after=None)).start()  # fmt: skip
        rt.send("s", "go")
        assert started.wait(WAIT)
        stopper = threading.Thread(target=rt.stop, kwargs={"timeout": WAIT * 6}, daemon=True)
        stopper.start()
        assert draining.wait(WAIT)
        store.failing = True
        release.set()
        stopper.join(WAIT)
        assert not stopper.is_alive(), "the stop waited for a session that gave up"
