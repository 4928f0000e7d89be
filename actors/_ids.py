"""Wall-clock time for events: the actors read it, the core never does.

Ids are not made here: the turn machine derives them from each session's
seq (``runtime.step``), so they are the same in every process.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

__all__ = ["Clock", "utc_now"]

Clock = Callable[[], datetime]
"""Returns the current timezone-aware wall-clock time."""


def utc_now() -> datetime:
    """The current time in UTC; the default clock."""
    return datetime.now(UTC)
