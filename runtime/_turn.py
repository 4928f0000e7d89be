"""Turns: one claim of pending input, the work done for it, and how it ended."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from datetime import datetime

import attrs
from pyrsistent import PMap as PMapABC
from pyrsistent import PVector as PVectorABC
from pyrsistent import pmap, pvector
from pyrsistent.typing import PMap, PVector

from ._checks import EVENT_CHECKS as _check
from ._checks import to_milliseconds
from ._json import FrozenJSON, freeze_metrics
from ._repr import value_repr

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


def _ids(value: Iterable[str]) -> PVector[str]:
    return value if isinstance(value, PVectorABC) else pvector(value)


def _calls(value: Mapping[str, str]) -> PMap[str, str]:
    return value if isinstance(value, PMapABC) else pmap(value)


@attrs.frozen(kw_only=True)
class Turn:
    """One turn of a session, active or ended."""

    __repr__ = value_repr

    id: str = attrs.field(validator=_check.non_empty_str)
    """Unique within the session."""
    status: TurnStatus = attrs.field(converter=TurnStatus)
    """Active, or how it ended."""
    started_at: datetime = attrs.field(validator=_check.aware)
    """Wall-clock start (from the ``TurnStarted`` event)."""
    started_seq: int = attrs.field(validator=_check.count)
    """Seq of its ``TurnStarted`` event."""
    input_ids: PVector[str] = attrs.field(
        factory=pvector, converter=_ids, validator=_check.str_items
    )
    """Ids of the inputs it claimed, in session order."""
    open_calls: PMap[str, str] = attrs.field(
        factory=pmap, converter=_calls, validator=_check.str_map
    )
    """Its tool calls still waiting for a result: tool call id -> message id."""
    ended_at: datetime | None = attrs.field(
        default=None, validator=attrs.validators.optional(_check.aware)
    )
    """Wall-clock end, once ended."""
    ended_seq: int | None = attrs.field(default=None, validator=_check.optional_count)
    """Seq of the event that ended it."""
    reason: str | None = attrs.field(default=None, validator=_check.optional_string)
    """Why it ended (interrupts, errors, recovery)."""
    metrics: PMap[str, FrozenJSON] = attrs.field(factory=pmap, converter=freeze_metrics)
    """Turn metrics, as the runner reported them."""
    duration_ms: float | None = attrs.field(
        default=None, converter=to_milliseconds, validator=_check.milliseconds
    )
    """Monotonic duration, as the runner measured it."""
    runner: str | None = None
    """The runner (one runtime's incarnation) that started it, if it said: a turn found
    active whose runner is gone is recovered at once."""
    awaiting_approval: PMap[str, str] = attrs.field(factory=pmap, converter=_calls)
    """Its tool calls waiting for a person to approve or deny them: call id -> message id
    (a subset of ``open_calls``)."""

    @property
    def is_active(self) -> bool:
        """True while the turn runs."""
        return self.status is TurnStatus.ACTIVE
