"""Ids and wall-clock time for events: the actors make them, the core never does."""

from __future__ import annotations

import itertools
import secrets
import threading
from collections.abc import Callable
from datetime import UTC, datetime

__all__ = ["Clock", "IdFactory", "SequentialIds", "random_ids", "utc_now"]

IdFactory = Callable[[str], str]
"""Makes a new id with a prefix (``msg``, ``turn`` …): ``ids("msg") -> "msg_…"``."""

Clock = Callable[[], datetime]
"""Returns the current timezone-aware wall-clock time."""


def random_ids(prefix: str) -> str:
    """A random id (80 bits): ``msg_5f0c…``; the default."""
    return f"{prefix}_{secrets.token_hex(10)}"


def utc_now() -> datetime:
    """The current time in UTC; the default clock."""
    return datetime.now(UTC)


class SequentialIds:
    """Deterministic ids, numbered per prefix (``msg_000001``): for tests and demos.

    Thread-safe. ``namespace`` goes between prefix and number, so two runtimes
    writing one store can keep apart (``msg_a_000001``).
    """

    def __init__(self, namespace: str = "") -> None:
        self._namespace = f"{namespace}_" if namespace else ""
        self._counters: dict[str, itertools.count[int]] = {}
        self._lock = threading.Lock()

    def __call__(self, prefix: str) -> str:
        with self._lock:
            counter = self._counters.setdefault(prefix, itertools.count(1))
            number = next(counter)
        return f"{prefix}_{self._namespace}{number:06d}"
