"""Shared pieces for actor tests: a recording adapter, a runtime factory, waiting helpers.

(Not named conftest.py: ``tests/runtime`` imports its own ``conftest`` by name.)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from actors import Adapter, Delta, Runtime, Settings, Update
from runtime import ChannelKind, Message, Presentation

WAIT = 10.0
"""Seconds any test waits for an actor before failing."""


class Recorder(Adapter):
    """A CLI-kind adapter that records what it renders and delivers everything it may."""

    kind = ChannelKind.CLI

    def __init__(self, *, platform: str = "test", log: list[Any] | None = None) -> None:
        super().__init__(platform=platform)
        self.log: list[Any] = log if log is not None else []

    def render(self, update: Update, presentation: Presentation) -> None:
        self.log.append(("render", update.message.id, update.message.status))

    def changed(self, update: Update, presentation: Presentation) -> None:
        self.log.append(("changed", update.message.id, update.previous, update.message.status))

    def on_delta(self, delta: Delta) -> None:
        self.log.append(("delta", delta.kind, delta.text))


class Signal:
    """A thread-safe flag to wait on (set from an actor, a tool or a subscriber)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.value: Any = None

    def set(self, value: Any = None) -> None:
        self.value = value
        self._event.set()

    def wait(self, timeout: float = WAIT) -> Any:
        assert self._event.wait(timeout), f"not signalled within {timeout} s"
        return self.value

    @property
    def is_set(self) -> bool:
        return self._event.is_set()


def when(predicate: Callable[[Update | Delta], bool]) -> tuple[Signal, Callable[[Any], None]]:
    """A signal and a subscriber callback that sets it the first time ``predicate`` holds."""
    signal = Signal()

    def callback(item: Any) -> None:
        if not signal.is_set and predicate(item):
            signal.set(item)

    return signal, callback


RuntimeFactory = Callable[..., Runtime]


@pytest.fixture
def make_runtime(tmp_path: Path) -> Iterator[RuntimeFactory]:
    """Build started runtimes (SQLite in tmp_path unless store= is given); all stopped at the end."""
    made: list[Runtime] = []

    def make(**kwargs: Any) -> Runtime:
        kwargs.setdefault("store", tmp_path / "amber.db")
        kwargs.setdefault("settings", Settings(passivate_after=None))
        runtime = Runtime(**kwargs).start()
        made.append(runtime)
        return runtime

    yield make
    for runtime in reversed(made):
        runtime.stop()


def shape(messages: list[Message]) -> list[tuple[str, str, str, str | None, str]]:
    """(role, type, sender, parent id, status) of each message."""
    return [(m.role, m.type, m.sender, m.parent_id, m.status) for m in messages]
