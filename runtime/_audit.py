"""Model-call audit rows (DESIGN §8, seed 003): every model call as an ordered fact.

A row is opened by ``ModelCallStarted`` when the model's message starts and
completed by ``ModelCallFinished`` with what it said and what it cost; a turn
that ends closes its rows that are still running (``failed`` on error,
``interrupted`` on interrupt, ``abandoned`` when the turn succeeded or its
runner died without a finish). Rows live beside the messages, never among
them: history, the model's views and message counts do not see them.
``model_calls(state)`` lists a session's rows in sequence order.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any

import attrs
from pyrsistent import pvector
from pyrsistent.typing import PVector

from ._article import type_named
from ._checks import EVENT_CHECKS as _check
from ._checks import to_milliseconds
from ._errors import InvalidEvent
from ._message import Usage
from ._repr import value_repr
from ._request import RequestRecord
from ._retry import ModelRetry
from ._storable import shown

__all__ = [
    "AUDIT_CLOSED_BY",
    "AuditCall",
    "AuditRow",
    "AuditStatus",
    "audit_retries",
    "model_calls",
    "operation_key",
]


class AuditStatus(enum.StrEnum):
    """Where a model call is."""

    RUNNING = "running"
    """Started; the model is streaming."""
    COMPLETED = "completed"
    """The model finished its message."""
    FAILED = "failed"
    """The call failed (a provider error, a timeout, a broken stream), or its turn did."""
    INTERRUPTED = "interrupted"
    """Its turn was interrupted while it ran."""
    ABANDONED = "abandoned"
    """Its turn ended (or its runner died) without the call finishing."""

    @property
    def is_terminal(self) -> bool:
        """True for every status but ``running``."""
        return self is not AuditStatus.RUNNING


AUDIT_CLOSED_BY = {
    "error": AuditStatus.FAILED,
    "interrupted": AuditStatus.INTERRUPTED,
    "processed": AuditStatus.ABANDONED,
    "recovered": AuditStatus.ABANDONED,
}
"""How a turn's end closes its running rows, by turn outcome (``recovered``: the runner died)."""


@attrs.frozen(kw_only=True)
class AuditCall:
    """A tool call as the model wrote it (arguments as raw JSON text)."""

    __repr__ = value_repr

    id: str = attrs.field(validator=_check.non_empty_str)
    """The call id."""
    name: str = attrs.field(validator=_check.non_empty_str)
    """The tool asked for."""
    arguments_json: str = attrs.field(default="", validator=_check.string)
    """The arguments exactly as streamed (may be malformed JSON)."""


def audit_calls(value: Any) -> PVector[AuditCall]:
    """``value`` as a pvector of ``AuditCall`` (the converter of events and rows)."""
    items: PVector[Any] = pvector(value)
    for i, item in enumerate(items):
        if not isinstance(item, AuditCall):
            raise InvalidEvent(
                f"tool_calls[{i}] must be an AuditCall (got {shown(item)} that is "
                f"{type_named(item)})."
            )
    return items


def audit_retries(value: Any) -> PVector[ModelRetry]:
    """``value`` as a pvector of ``ModelRetry`` (the converter of events and rows)."""
    items: PVector[Any] = pvector(value)
    for i, item in enumerate(items):
        if not isinstance(item, ModelRetry):
            raise InvalidEvent(
                f"retries[{i}] must be a ModelRetry (got {shown(item)} that is {type_named(item)})."
            )
    return items


def _non_negative(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise InvalidEvent(
            f"{type(instance).__name__}.{attribute.name} must be a non-negative number of "
            f"milliseconds or None (got {shown(value)}); measure it with time.monotonic()."
        )


def _non_negative_cost(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 0 <= value < float("inf")
    ):
        raise InvalidEvent(
            f"{type(instance).__name__}.{attribute.name} must be a finite, non-negative number "
            f"of US dollars or None (got {shown(value)}); compute it with call_cost()."
        )


@attrs.frozen(kw_only=True)
class AuditRow:
    """One model call of a session."""

    __repr__ = value_repr

    operation_id: str = attrs.field(validator=_check.non_empty_str)
    """The provider's message id, or the runtime's model-run id when it gives none (unique per
    turn and role: a provider may reuse its ids across turns)."""
    source_key: str = attrs.field(validator=_check.non_empty_str)
    """The runtime's key for the call (``<turn id>#<call index>``), unique in the session: the
    row's key; a repeated start with the same key is the same call."""
    turn_id: str = attrs.field(validator=_check.non_empty_str)
    """The turn that made the call."""
    role: str = attrs.field(validator=_check.non_empty_str)
    """Who called: ``assistant`` for the agent's turns."""
    sequence: int = attrs.field(validator=_check.count)
    """Order of the call in the session: 1, 2, 3 … with no gap."""
    status: AuditStatus = attrs.field(converter=AuditStatus)
    """Running, or how it ended."""
    started_at: datetime = attrs.field(validator=_check.aware)
    """Wall clock at start (display only)."""
    started_seq: int = attrs.field(validator=_check.count)
    """Seq of the event that opened it."""
    model: str | None = attrs.field(default=None, validator=_check.optional_string)
    """The model's name, if the runtime knows it."""
    finished_at: datetime | None = attrs.field(
        default=None, validator=attrs.validators.optional(_check.aware)
    )
    """Wall clock at the end (display only)."""
    ended_seq: int | None = attrs.field(default=None, validator=_check.optional_count)
    """Seq of the event that closed it."""
    duration_ms: float | None = attrs.field(
        default=None, converter=to_milliseconds, validator=_check.milliseconds
    )
    """Monotonic duration measured where the call ran; None when its turn closed it."""
    usage: Usage | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(Usage))
    )
    """Tokens the call used, as reported."""
    content: str = attrs.field(default="", validator=_check.string)
    """The text the model wrote."""
    reasoning: str = attrs.field(default="", validator=_check.string)
    """The reasoning the model wrote."""
    tool_calls: PVector[AuditCall] = attrs.field(factory=pvector, converter=audit_calls)
    """The tool calls the model asked for, as written."""
    stop_reason: str | None = attrs.field(default=None, validator=_check.optional_string)
    """Why the provider stopped."""
    error: str | None = attrs.field(default=None, validator=_check.optional_string)
    """Why it failed or was closed."""
    request: RequestRecord | None = None
    """What the request was built from (``rebuild_request`` turns it back into the payload);
    None for models that do not report it (``ScriptedModel``)."""
    response_model: str | None = None
    """The model that answered, as the provider named it (often a dated snapshot)."""
    retries: PVector[ModelRetry] = attrs.field(factory=pvector, converter=audit_retries)
    """Attempts the provider refused before the call streamed (429s, 5xx), in order."""
    cost_usd: float | None = attrs.field(default=None, validator=_non_negative_cost)
    """What the call cost in US dollars by the price table in use when it finished; None when
    the usage or the model's price is unknown."""


def operation_key(turn_id: str, role: str, operation_id: str) -> str:
    """The key of ``SessionState.audit_ops``: operation ids are unique per turn and role."""
    return f"{turn_id}\x1f{role}\x1f{operation_id}"


def model_calls(state: Any, turn_id: str | None = None) -> tuple[AuditRow, ...]:
    """The session's model calls in sequence order (only ``turn_id``'s, if given)."""
    rows = state.audit.values()
    if turn_id is not None:
        rows = [row for row in rows if row.turn_id == turn_id]
    return tuple(sorted(rows, key=lambda row: row.sequence))
