"""Lossless JSON for messages, events, turns and states. Never pickle.

``to_json`` / ``from_json`` (bytes) and ``to_data`` / ``from_data`` (plain
dicts and lists) cover every value a store keeps. Decoding is strict: unknown
keys, missing fields, wrong types and unknown event kinds raise
``DecodeError`` naming the path of the bad field (``$.message.status``).

Encoded events carry their ``kind`` first; states carry their messages and
turns, and every index is derived again on decode.
"""

from __future__ import annotations

import enum
import re
import typing
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import attrs
import cattrs
import orjson
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn
from pyrsistent import pvector
from pyrsistent import typing as ptyping

from ._audit import AuditRow
from ._errors import DecodeError
from ._events import EVENT_TYPES, Event, TurnOutcome
from ._json import freeze, freeze_map, thaw
from ._message import (
    Attachment,
    BrowserElement,
    Message,
    MessageType,
    Role,
    Status,
    ToolCall,
    Usage,
)
from ._state import SessionState, build_state, check_consistent
from ._turn import Turn, TurnStatus

__all__ = ["from_data", "from_json", "to_data", "to_json"]

T = TypeVar("T")

_converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)


def _strict_int(value: object, _: type) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an int, got {value!r}")
    return value


def _strict_str(value: object, _: type) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a str, got {value!r}")
    return value


def _strict_bool(value: object, _: type) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected true or false, got {value!r}")
    return value


def _strict_float(value: object, _: type) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected a number, got {value!r}")
    return float(value)


# cattrs' defaults coerce ("1" -> 1, 1 -> "1"); a store row must decode exactly.
def _strict_enum(value: object, kind: type[enum.Enum]) -> enum.Enum:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {value!r}")
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(repr(m.value) for m in kind)
        raise ValueError(
            f"{value!r} is not a {kind.__name__} (expected one of {allowed})"
        ) from None


# cattrs' defaults coerce ("1" -> 1, 1 -> "1"); a store row must decode exactly.
# The enums are registered too, or the ``str`` hook would catch them (StrEnum).
_converter.register_structure_hook(int, _strict_int)
_converter.register_structure_hook(str, _strict_str)
_converter.register_structure_hook(bool, _strict_bool)
_converter.register_structure_hook(float, _strict_float)
for _enum_type in (Role, MessageType, Status, TurnStatus, TurnOutcome):
    _converter.register_structure_hook(_enum_type, _strict_enum)


def _structure_datetime(value: object, _: type) -> datetime:
    if not isinstance(value, str):
        raise TypeError(f"expected an ISO 8601 string with a UTC offset, got {value!r}")
    parsed = datetime.fromisoformat(value)
    if parsed.utcoffset() is None:
        raise ValueError(f"expected a UTC offset in {value!r} (like +00:00)")
    return parsed


_converter.register_unstructure_hook(datetime, datetime.isoformat)
_converter.register_structure_hook(datetime, _structure_datetime)


def _origin_is(kind: object) -> Callable[[Any], bool]:
    return lambda t: typing.get_origin(t) is kind


_converter.register_unstructure_hook_func(_origin_is(ptyping.PMap), thaw)
_converter.register_structure_hook_func(
    _origin_is(ptyping.PMap), lambda value, _: freeze_map(value)
)


def _unstructure_vector(value: Any) -> list[Any]:
    return [_converter.unstructure(item) for item in value]


def _structure_vector(value: object, kind: Any) -> Any:
    if not isinstance(value, list):
        raise TypeError(f"expected a list, got {value!r}")
    (item_type,) = typing.get_args(kind) or (Any,)
    if item_type is Any:
        return freeze(value)
    return pvector(_converter.structure(item, item_type) for item in value)


_converter.register_unstructure_hook_func(_origin_is(ptyping.PVector), _unstructure_vector)
_converter.register_structure_hook_func(_origin_is(ptyping.PVector), _structure_vector)

for _cls in (ToolCall, Attachment, BrowserElement, Usage, Message, Turn):
    _converter.register_unstructure_hook(
        _cls, make_dict_unstructure_fn(_cls, _converter, _cattrs_omit_if_default=False)
    )
    _converter.register_structure_hook(
        _cls, make_dict_structure_fn(_cls, _converter, _cattrs_forbid_extra_keys=True)
    )

_EVENT_STRUCTURE = {
    kind: make_dict_structure_fn(cls, _converter, _cattrs_forbid_extra_keys=True)
    for kind, cls in EVENT_TYPES.items()
}
_EVENT_UNSTRUCTURE = {
    cls: make_dict_unstructure_fn(cls, _converter) for cls in EVENT_TYPES.values()
}


def _unstructure_event(event: Event) -> dict[str, Any]:
    data = _EVENT_UNSTRUCTURE[type(event)](event)
    return {"kind": event.kind, **data}


def _structure_event(value: object, wanted: type[Event]) -> Event:
    if not isinstance(value, dict):
        raise TypeError(f"expected an object with a 'kind', got {value!r}")
    data = dict(value)
    kind = data.pop("kind", None)
    structure = _EVENT_STRUCTURE.get(kind)
    if structure is None:
        raise ValueError(
            f"unknown event kind {kind!r}; expected one of {', '.join(sorted(EVENT_TYPES))}"
        )
    cls = EVENT_TYPES[kind]
    if not issubclass(cls, wanted):
        raise ValueError(f"expected a {wanted.kind!r} event, got kind {kind!r}")
    return structure(data, cls)


_converter.register_unstructure_hook_func(
    lambda t: isinstance(t, type) and issubclass(t, Event), _unstructure_event
)
_converter.register_structure_hook_func(
    lambda t: isinstance(t, type) and issubclass(t, Event), _structure_event
)


def _unstructure_state(state: SessionState) -> dict[str, Any]:
    return {
        "session_id": state.session_id,
        "seq": state.seq,
        "updated_at": None if state.updated_at is None else state.updated_at.isoformat(),
        "messages": [_converter.unstructure(m, Message) for m in state.messages],
        "turns": [_converter.unstructure(t, Turn) for t in state.turn_list()],
        "audit": [_converter.unstructure(r, AuditRow) for r in state.model_calls()],
    }


@attrs.frozen(kw_only=True)
class _StateData:
    """The stored parts of a ``SessionState``; indexes are derived on decode."""

    session_id: str
    seq: int
    updated_at: datetime | None
    messages: list[Message]
    turns: list[Turn]
    audit: list[AuditRow] = attrs.field(factory=list)


_structure_state_data = make_dict_structure_fn(
    _StateData, _converter, _cattrs_forbid_extra_keys=True
)


def _structure_state(value: object, _: type) -> SessionState:
    if not isinstance(value, dict):
        raise TypeError(f"expected a state object, got {value!r}")
    data = _structure_state_data(value, _StateData)
    state = build_state(
        session_id=data.session_id,
        seq=data.seq,
        updated_at=data.updated_at,
        messages=data.messages,
        turns=data.turns,
        audit=data.audit,
    )
    problems = check_consistent(state)
    if problems:
        raise ValueError(f"inconsistent session state: {'; '.join(problems)}")
    return state


_converter.register_unstructure_hook(SessionState, _unstructure_state)
_converter.register_structure_hook(SessionState, _structure_state)


def to_data(value: Any) -> Any:
    """``value`` (a message, event, turn or state) as plain JSON-ready data."""
    return _converter.unstructure(value)


def from_data(data: object, kind: type[T]) -> T:
    """Decode plain data into a ``kind`` (``Message``, ``Event``, ``SessionState`` …).

    Raises:
        DecodeError: naming the path of each bad field and what was expected.
    """
    try:
        return _converter.structure(data, kind)
    except Exception as exc:  # cattrs groups errors; report them all by path
        raise DecodeError(
            f"Cannot decode {getattr(kind, '__name__', kind)} from JSON: {_explain(exc)}."
        ) from exc


def _explain(exc: BaseException) -> str:
    if isinstance(exc, (cattrs.ClassValidationError, cattrs.IterableValidationError)):
        lines = cattrs.transform_error(exc, path="$", format_exception=_format)
        return "; ".join(_field_path(line) for line in lines)
    return _field_path(f"{str(exc).rstrip('.')} @ $")


_OWN_CHECK = re.compile(r"^(?P<cls>[A-Z]\w*)\.(?P<field>\w+) must .* @ (?P<path>\$\S*)$", re.S)


def _field_path(line: str) -> str:
    """Point a class's own field check (raised from ``__init__``) at the field's path."""
    match = _OWN_CHECK.match(line)
    if match is None:
        return line
    return f"{line[: match.start('path')]}{match['path']}.{match['field']}".replace("$.$", "$")


def _format(exc: BaseException, _type: Any) -> str:
    if isinstance(exc, KeyError):
        return "required field missing"
    if isinstance(exc, cattrs.ForbiddenExtraKeysError):
        return f"unknown field(s) {sorted(exc.extra_fields)}"
    return str(exc).rstrip(".") or type(exc).__name__


def to_json(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON bytes."""
    return orjson.dumps(to_data(value))


def from_json(raw: bytes | str, kind: type[T]) -> T:
    """Decode JSON bytes or text into a ``kind``.

    Raises:
        DecodeError: the text is not JSON, or not a valid ``kind``.
    """
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"Cannot decode {kind.__name__}: not valid JSON ({exc}).") from None
    return from_data(data, kind)
