"""Runtime.stop when a step of it fails: the steps after it still run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from actors import Runtime, ScriptedModel, reply

WAIT = 60.0
"""Seconds a thread may take before the test fails (a hang guard, not a judge)."""


def _threads_of(rt: Runtime) -> dict[str, bool]:
    effects, store = rt._effects, rt._store
    return {
        "effects": effects is not None and effects.alive,
        "store": store is not None and store._thread.is_alive(),
    }


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

        monkeypatch.setattr(store._store, "close", close)
        with pytest.raises(OSError, match="the disk went away"):
            rt.stop(timeout=WAIT)
        rt.stop(timeout=WAIT)
        assert not rt.running
        assert _threads_of(rt) == {"effects": False, "store": False}
        with Runtime(model=ScriptedModel([reply("Hi!")]), store=db) as again:
            assert again.running
