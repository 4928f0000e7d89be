"""Runtime.stop racing start() on another thread, and a step of the stop that fails.
Each is decided from events (the start held at a known point), never from sleeps."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from actors import Runtime, ScriptedModel, reply

WAIT = 60.0
"""Seconds a thread may take before the test fails (a hang guard, not a judge)."""


class _HeldModel(ScriptedModel):
    """A model whose ``name`` (read by ``start`` after its store and effects threads are
    up, before it routes anything) holds the start until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__([reply("Hi!")])
        self.reading, self.release = threading.Event(), threading.Event()

    @property
    def name(self) -> str:  # type: ignore[override]
        self.reading.set()
        assert self.release.wait(WAIT)
        return "held"


class _Signalled(threading.Event):
    """An event that tells ``waiting`` when someone begins to wait on it."""

    def __init__(self, waiting: threading.Event) -> None:
        super().__init__()
        self.waiting = waiting

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.set()
        return super().wait(timeout)


def _threads_of(rt: Runtime) -> dict[str, bool]:
    effects, store = rt._effects, rt._store
    return {
        "effects": effects is not None and effects.alive,
        "store": store is not None and store._thread.is_alive(),
    }


class TestStopDuringStart:
    def test_a_stop_from_another_thread_while_start_runs_leaves_the_runtime_stopped(
        self, tmp_path: Path
    ) -> None:
        """stop() called while start() is between starting its threads and routing: once
        both return the runtime is stopped and its threads are gone (the stop ran beside the
        start, which then set the runtime running again on a stopped store and effects loop).
        """
        model = _HeldModel()
        rt = Runtime(model=model, store=str(tmp_path / "amber.db"))
        reached = threading.Event()  # the stop waits for the start, or has returned
        rt._started = _Signalled(reached)  # type: ignore[attr-defined]
        errors: list[BaseException] = []

        def start() -> None:
            try:
                rt.start()
            except BaseException as exc:
                errors.append(exc)

        def stop() -> None:
            rt.stop(timeout=WAIT)
            reached.set()

        starter = threading.Thread(target=start)
        starter.start()
        try:
            assert model.reading.wait(WAIT)
            stopper = threading.Thread(target=stop)
            stopper.start()
            assert reached.wait(WAIT)
        finally:
            model.release.set()
        starter.join(WAIT)
        stopper.join(WAIT)
        try:
            assert not starter.is_alive()
            assert not stopper.is_alive()
            assert not rt.running
            assert _threads_of(rt) == {"effects": False, "store": False}
        finally:
            rt.stop(timeout=5.0)
        assert all(type(e).__name__ == "RuntimeStopped" for e in errors), errors


class TestAStepOfTheStopFails:
    def test_the_steps_after_it_run_and_the_store_is_let_go(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The store's close raising in stop(): the error reaches the caller, but the stop
        goes on (the store file is let go: another runtime starts on it in this process), and
        a second stop returns. The store's lock was kept, and a second stop, waiting on the
        first, returned at once with it still held."""
        db = str(tmp_path / "amber.db")
        rt = Runtime(model=ScriptedModel([reply("Hi!")]), store=db).start()
        store = rt._store
        assert store is not None

        def close() -> Any:
            raise OSError("the disk went away")

        real_close = store._store.close
        monkeypatch.setattr(store._store, "close", close)
        try:
            with pytest.raises(OSError, match="the disk went away"):
                rt.stop(timeout=WAIT)
            rt.stop(timeout=WAIT)
            assert not rt.running
            assert _threads_of(rt) == {"effects": False, "store": False}
            with Runtime(model=ScriptedModel([reply("Hi!")]), store=db) as again:
                assert again.running
        finally:
            # The connection its close did not close: left to the GC, Python 3.13 warns
            # (ResourceWarning, an unraisable error in whichever later test collects it).
            real_close()
