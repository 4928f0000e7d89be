"""``Runtime.stop(timeout=…)`` is a deadline for the whole stop.

Each step (the drain, the sessions, the tool and adapter actors, the effects loop,
the store) was given the full timeout, so a stop could take that many times it;
a second ``stop`` waiting on one under way waited for all of it. The steps now
share one deadline, read on the runtime's ``monotonic`` clock (a fake one here:
the test moves it while the drain waits), and a second stop waits at most its own
timeout.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from stop_support import WAIT, Said

from actors import (
    Runtime,
    ScriptedModel,
    Settings,
    StopTimeout,
    call,
    tool,
)
from actors._deadline import RESERVE, STORE_FLOOR
from actors._effects import Effects
from actors._storage import StoreThread


@pytest.fixture
def draining() -> Iterator[Said]:
    """Set once a session's drain waits for a sync tool call."""
    said = Said("waits for tool calls")
    amber = logging.getLogger("amber")
    amber.addHandler(said)
    amber.setLevel(logging.INFO)
    yield said
    amber.removeHandler(said)
    amber.setLevel(logging.NOTSET)


class _Held:
    """A runtime whose session runs a sync tool call that waits for ``release``."""

    def __init__(self, db: Path, now: list[float] | None = None) -> None:
        self.started, self.release = threading.Event(), threading.Event()
        started, release = self.started, self.release

        @tool
        def deploy() -> str:
            """Deploy."""
            started.set()
            assert release.wait(WAIT)
            return "deployed"

        clock: dict[str, Any] = {} if now is None else {"monotonic": lambda: now[0]}
        self.rt = Runtime(
            model=ScriptedModel([call("deploy")]), store=db, tools=[deploy],
            settings=Settings(passivate_after=None), **clock,
        )  # fmt: skip
        self.rt.start()
        self.rt.send("s", "deploy")
        assert self.started.wait(WAIT)


class TestOneDeadline:
    def test_the_steps_after_the_drain_get_what_is_left_and_the_store_its_floor(
        self, tmp_path: Path, draining: Said, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The drain used most of stop(timeout=10) (the fake clock moved 9.5 s while it
        waited): the effects loop gets the 0.5 s left, the store its floor. Each got 10 s."""
        given: dict[str, float] = {}
        effects_stop, store_stop = Effects.stop, StoreThread.stop

        def spy_effects(self: Effects, *, timeout: float = 10.0) -> None:
            given["effects"] = timeout
            effects_stop(self, timeout=timeout)

        def spy_store(self: StoreThread, *, timeout: float = 30.0, close: bool = True) -> None:
            given["store"] = timeout
            store_stop(self, timeout=timeout, close=close)

        monkeypatch.setattr(Effects, "stop", spy_effects)
        monkeypatch.setattr(StoreThread, "stop", spy_store)
        now = [1000.0]
        held = _Held(tmp_path / "amber.db", now)
        stopper = threading.Thread(target=held.rt.stop, kwargs={"timeout": 10.0})
        try:
            stopper.start()
            assert draining.event.wait(WAIT)
            now[0] += 10.0 - RESERVE / 2  # the drain waited until just before its end
            held.release.set()
            stopper.join(WAIT)
            assert not stopper.is_alive()
        finally:
            held.release.set()
            held.rt.stop()
        assert given["effects"] == pytest.approx(RESERVE / 2)
        assert given["store"] == STORE_FLOOR

    def test_a_second_stop_waits_at_most_its_own_timeout(
        self, tmp_path: Path, draining: Said
    ) -> None:
        """A stop(timeout=0.01) while another stop drains raises StopTimeout without
        waiting for the drain (it waited until the first stop ended)."""
        held = _Held(tmp_path / "amber.db")
        first = threading.Thread(target=held.rt.stop, kwargs={"timeout": WAIT})
        outcome: list[BaseException | None] = []
        answered = threading.Event()

        def second() -> None:
            try:
                held.rt.stop(timeout=0.01)
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)
            answered.set()

        try:
            first.start()
            assert draining.event.wait(WAIT)
            threading.Thread(target=second).start()
            assert answered.wait(WAIT)  # before the first stop's drain ends
            assert not held.release.is_set()
        finally:
            held.release.set()
            first.join(WAIT)
        assert not first.is_alive()
        (error,) = outcome
        assert isinstance(error, StopTimeout), error
        assert isinstance(error, TimeoutError)
        assert "0.01 s" in str(error)
        held.rt.stop(timeout=0.01)  # the first one ended: returns at once
