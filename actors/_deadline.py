"""The deadline of a ``Runtime.stop(timeout=…)``: every step waits for what is left of it.

The drain (the sync tool calls a stop waits for) ends ``RESERVE`` seconds before the
deadline (half the timeout, if that is less), so that the sessions can still record
the stop once it gave up; every later wait gets what is left, and the store's close
at least ``STORE_FLOOR`` seconds, so that what was stored is written and the file
let go however late the close comes.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["RESERVE", "STORE_FLOOR", "Deadline"]

RESERVE = 1.0
"""Seconds of a stop's timeout the drain leaves to the steps after it (at most half)."""

STORE_FLOOR = 1.0
"""Seconds the store's close is given even past the deadline."""


class Deadline:
    """``timeout`` seconds from now on ``monotonic``; ``left()`` is what remains."""

    def __init__(self, timeout: float, monotonic: Callable[[], float]) -> None:
        self.timeout = timeout
        self._monotonic = monotonic
        self.end = monotonic() + timeout
        self.drain_end = self.end - min(RESERVE, timeout / 2)

    def left(self, floor: float = 0.0) -> float:
        """Seconds to the deadline (0 once past it), or ``floor`` if that is more."""
        return max(floor, self.end - self._monotonic(), 0.0)

    def drain_left(self) -> float:
        """Seconds the drain may still wait for tool calls (0 once its time is out)."""
        return max(self.drain_end - self._monotonic(), 0.0)
