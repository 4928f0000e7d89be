"""Turns: one claim of pending input, the work done for it, and how it ended."""

from __future__ import annotations

import enum
from datetime import datetime

import attrs
from pyrsistent import pmap, pvector
from pyrsistent.typing import PMap, PVector

from ._json import FrozenJSON, freeze_map

__all__ = ["Turn", "TurnStatus"]


class TurnStatus(enum.StrEnum):
    """Where a turn is."""

    ACTIVE = "active"
    """Running: its inputs are processing."""
    PROCESSED = "processed"
    """Ended normally."""
    INTERRUPTED = "interrupted"
    """Ended by an interrupt."""
    ERROR = "error"
    """Ended by a failure."""
    RECOVERED = "recovered"
    """Abandoned after its runner died; its inputs went back to pending."""


@attrs.frozen(kw_only=True)
class Turn:
    """One turn of a session, active or ended."""

    id: str
    """Unique within the session."""
    status: TurnStatus = attrs.field(converter=TurnStatus)
    """Active, or how it ended."""
    started_at: datetime
    """Wall-clock start (from the ``TurnStarted`` event)."""
    started_seq: int
    """Seq of its ``TurnStarted`` event."""
    input_ids: PVector[str] = attrs.field(factory=pvector, converter=pvector)
    """Ids of the inputs it claimed, in session order."""
    open_calls: PMap[str, str] = attrs.field(factory=pmap, converter=pmap)
    """Its tool calls still waiting for a result: tool call id -> message id."""
    ended_at: datetime | None = None
    """Wall-clock end, once ended."""
    ended_seq: int | None = None
    """Seq of the event that ended it."""
    reason: str | None = None
    """Why it ended (interrupts, errors, recovery)."""
    metrics: PMap[str, FrozenJSON] = attrs.field(
        factory=pmap, converter=lambda v: freeze_map(v, path="$.metrics")
    )
    """Turn metrics, as the runner reported them."""
    duration_ms: float | None = None
    """Monotonic duration, as the runner measured it."""

    @property
    def is_active(self) -> bool:
        """True while the turn runs."""
        return self.status is TurnStatus.ACTIVE
