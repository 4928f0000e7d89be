"""Lossless JSON for messages, events, turns and states. Never pickle.

``to_json`` / ``from_json`` (bytes) and ``to_data`` / ``from_data`` (plain
dicts and lists) cover every value a store keeps. Decoding is strict: unknown
keys, missing fields, wrong types and unknown event kinds raise
``DecodeError`` naming the path of the bad field (``$.message.status``).

Encoded events carry their ``kind`` first; states carry their messages and
turns, and every index is derived again on decode.

The general path is a cattrs converter (``runtime._converter``), imported on
first need: ``to_data`` builds the common values (plain values, times, events
of plain fields, messages, turns, states without audit rows) from their slots
(``runtime._fast_data``), which property tests pin equal to cattrs' output.
"""

from __future__ import annotations

import enum
import types
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from ._article import type_named
from ._audit import AuditRow
from ._errors import DecodeError, InvalidArgument
from ._events import Event
from ._fast_data import audit_data, event_data, message_data, turn_data
from ._message import Message
from ._state import SessionState
from ._turn import Turn

if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["from_data", "from_json", "to_data", "to_json"]

T = TypeVar("T")

_PLAIN = frozenset({str, int, float, bool, type(None)})
"""Types cattrs passes through as they are."""


def _general() -> ModuleType:
    """The cattrs converter's module, imported on first use (see the module docstring)."""
    from . import _converter

    return _converter


def _message_data(m: Message) -> dict[str, Any]:
    fast = message_data(m)
    return fast if fast is not None else _general().unstructure(m)


def _turn_data(t: Turn) -> dict[str, Any]:
    fast = turn_data(t)
    return fast if fast is not None else _general().unstructure(t)


def _audit_data(row: AuditRow) -> dict[str, Any]:
    fast = audit_data(row)
    return fast if fast is not None else _general().unstructure(row)


def _state_data(state: SessionState) -> dict[str, Any]:
    """``to_data(state)``: messages, turns and audit rows from their slots (``_fast_data``)."""
    calls = state.model_calls()
    return {
        "session_id": state.session_id,
        "seq": state.seq,
        "updated_at": None if state.updated_at is None else state.updated_at.isoformat(),
        "messages": [_message_data(m) for m in state.messages],
        "turns": [_turn_data(t) for t in state.turn_list()],
        "audit": [_audit_data(r) for r in calls] if calls else [],
    }


def to_data(value: Any) -> Any:
    """``value`` (a message, event, turn or state) as plain JSON-ready data."""
    kind = type(value)
    fast: Any = None
    if kind in _PLAIN or isinstance(value, enum.Enum):
        return value
    if kind is datetime:
        return value.isoformat()
    if kind is SessionState:
        fast = _state_data(value)
    elif kind is Message:
        fast = message_data(value)
    elif kind is Turn:
        fast = turn_data(value)
    elif isinstance(value, Event):
        fast = event_data(value)
    return fast if fast is not None else _general().unstructure(value)


_TYPES = (type, types.GenericAlias)
"""A class or a generic alias (``list[Message]``): what ``kind`` is, never plain data."""


def _type_name(kind: object) -> str:
    """``Message``, ``list[Message]``: a type as it is written in code."""
    if isinstance(kind, types.GenericAlias):
        return f"{_type_name(kind.__origin__)}[{', '.join(_type_name(a) for a in kind.__args__)}]"
    return kind.__name__ if isinstance(kind, type) else repr(kind)


def _check_order(function: str, data: object, kind: object, names: str) -> None:
    """Refuse a call with its two arguments swapped: the type first, the data second."""
    if isinstance(data, _TYPES) and not isinstance(kind, _TYPES):
        raise InvalidArgument(
            f"{function}() takes the data first and the type to decode into second: "
            f"{function}({names}, {_type_name(data)}); got the type {_type_name(data)} first "
            f"and {type_named(kind)} second."
        )


def from_data(data: object, kind: type[T]) -> T:
    """Decode plain data into a ``kind`` (``Message``, ``Event``, ``SessionState`` …).

    Raises:
        DecodeError: naming the path of each bad field and what was expected.
        InvalidArgument: the arguments are swapped (``from_data(Event, data)``).
    """
    if isinstance(data, _TYPES):  # only then: this runs for every decoded value
        _check_order("from_data", data, kind, "data")
    structure = _general().structure
    return structure(data, kind)  # type: ignore[no-any-return]


def to_json(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON bytes, canonical.

    Fields in their declared order (an event's ``kind`` first), map keys
    sorted, no whitespace: equal values built in any way give the same bytes,
    so stored rows can be hashed and compared.

    Raises:
        InvalidArgument: the value holds something JSON cannot carry (only
            possible for a value built around its own checks).
    """
    try:
        return orjson.dumps(to_data(value))
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise InvalidArgument(
            f"Cannot encode {type(value).__name__} as JSON: {exc}. Build values through their "
            "constructors, which refuse what cannot be stored."
        ) from None


def from_json(raw: bytes | str, kind: type[T]) -> T:
    """Decode JSON bytes or text into a ``kind``.

    Raises:
        DecodeError: the text is not JSON (or not UTF-8, or nested deeper than
            1,024 levels), or not a valid ``kind``.
        InvalidArgument: the arguments are swapped (``from_json(Event, raw)``).
    """
    if isinstance(raw, _TYPES):
        _check_order("from_json", raw, kind, "raw")
    if not isinstance(raw, (bytes, str)):
        raise DecodeError(
            f"Cannot decode {kind.__name__}: expected JSON bytes or text, got {type(raw).__name__}."
        )
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"Cannot decode {kind.__name__}: not valid JSON ({exc}).") from None
    return from_data(data, kind)
