"""Fast, strict decoding of the messages and turns a snapshot holds.

Rehydrating a session decodes every message it has, and the codec's general
path (cattrs, then the attrs ``__init__`` with its converters) costs about
50 µs per message: for a snapshot that is a quarter of replaying the whole
log. Here each item is checked for exactly what the codec accepts (the same
keys, JSON types, enum values, UTC offsets, then the classes' own validators
and cross-field checks) and built without the converters' second pass.

It is an optimisation, never a second opinion: anything the fast path does
not accept goes to the codec, whose answer (a value, or a ``DecodeError``
naming the field) is final. Tests pin that both agree on valid and mutated
input. If ``Message`` or ``Turn`` gains a field this module does not know,
the fast path turns itself off.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypeVar

import attrs
from pyrsistent import pmap, pvector

from .._codec import from_data
from .._json import freeze_map
from .._message import Attachment, BrowserElement, Message, MessageType, Role, Status, ToolCall
from .._turn import Turn, TurnStatus

__all__ = ["decode_message", "decode_turn"]

T = TypeVar("T")

_MESSAGE_FIELDS = tuple(f.name for f in attrs.fields(Message))
_TURN_FIELDS = tuple(f.name for f in attrs.fields(Turn))
_KNOWN_MESSAGE_FIELDS = (
    "id", "session_id", "role", "type", "status", "created_at", "content", "sender",
    "parent_id", "turn_id", "chatbot_id", "channel_id", "tool_call", "tool_call_id",
    "is_error", "error_type", "attachments", "browser_elements", "metadata", "event_seq",
    "active",
)  # fmt: skip
_KNOWN_TURN_FIELDS = (
    "id", "status", "started_at", "started_seq", "input_ids", "open_calls", "ended_at",
    "ended_seq", "reason", "metrics", "duration_ms",
)  # fmt: skip
FAST_MESSAGES = _MESSAGE_FIELDS == _KNOWN_MESSAGE_FIELDS
"""False when ``Message``'s fields changed and this module was not taught them."""
FAST_TURNS = _TURN_FIELDS == _KNOWN_TURN_FIELDS
"""False when ``Turn``'s fields changed and this module was not taught them."""
_MESSAGE_KEYS = frozenset(_MESSAGE_FIELDS)
_TOOL_CALL_KEYS = frozenset(f.name for f in attrs.fields(ToolCall))
_TURN_KEYS = frozenset(_TURN_FIELDS)
_ROLES = {member.value: member for member in Role}
_TYPES = {member.value: member for member in MessageType}
_STATUSES = {member.value: member for member in Status}
_TURN_STATUSES = {member.value: member for member in TurnStatus}
_EMPTY_VECTOR: Any = pvector()
_EMPTY_MAP: Any = pmap()
_set = object.__setattr__


class _Slow(Exception):
    """The fast path declines; the codec decides."""


def _str(value: object) -> str:
    if type(value) is not str:
        raise _Slow
    return value


def _optional_str(value: object) -> str | None:
    if value is not None and type(value) is not str:
        raise _Slow
    return value


def _int(value: object) -> int:
    if type(value) is not int:
        raise _Slow
    return value


def _name(value: object) -> str:
    if type(value) is not str or not value:
        raise _Slow
    return value


def _optional_count(value: object) -> int | None:
    if value is not None and (type(value) is not int or value < 0):
        raise _Slow
    return value


def _optional_int(value: object) -> int | None:
    if value is not None and type(value) is not int:
        raise _Slow
    return value


def _bool(value: object) -> bool:
    if type(value) is not bool:
        raise _Slow
    return value


def _tool_call(value: object) -> ToolCall | None:
    if value is None:
        return None
    if type(value) is not dict or value.keys() != _TOOL_CALL_KEYS:
        raise _Slow
    arguments = value["arguments"]
    if type(arguments) is not dict or type(value["index"]) is not int:
        raise _Slow
    # ToolCall's own validators check the ids and the index.
    return ToolCall(
        id=_str(value["id"]), name=_str(value["name"]), arguments=arguments, index=value["index"]
    )


def _time(value: object) -> datetime:
    if type(value) is not str:
        raise _Slow
    parsed = datetime.fromisoformat(value)
    if parsed.utcoffset() is None:
        raise _Slow
    return parsed


def _optional_time(value: object) -> datetime | None:
    return None if value is None else _time(value)


def _json_map(value: object) -> Any:
    if type(value) is not dict:
        raise _Slow
    return freeze_map(value) if value else _EMPTY_MAP


def _items(value: object, kind: type[T]) -> Any:
    if type(value) is not list:
        raise _Slow
    # Rare in practice: let the codec build them.
    return pvector(from_data(item, kind) for item in value) if value else _EMPTY_VECTOR


def _fast_message(data: object) -> Message:
    if type(data) is not dict or data.keys() != _MESSAGE_KEYS:
        raise _Slow
    values = (
        _name(data["id"]),
        _name(data["session_id"]),
        _ROLES[data["role"]],
        _TYPES[data["type"]],
        _STATUSES[data["status"]],
        _time(data["created_at"]),
        _str(data["content"]),
        _str(data["sender"]),
        _optional_str(data["parent_id"]),
        _optional_str(data["turn_id"]),
        _str(data["chatbot_id"]),
        _str(data["channel_id"]),
        _tool_call(data["tool_call"]),
        _optional_str(data["tool_call_id"]),
        _bool(data["is_error"]),
        _optional_str(data["error_type"]),
        _items(data["attachments"], Attachment),
        _items(data["browser_elements"], BrowserElement),
        _json_map(data["metadata"]),
        _optional_count(data["event_seq"]),
        _bool(data["active"]),
    )
    message = object.__new__(Message)
    for name, value in zip(_MESSAGE_FIELDS, values, strict=True):
        _set(message, name, value)
    # The field validators' checks were made above, value by value; the
    # cross-field checks are the class's own.
    message.__attrs_post_init__()
    return message


def _fast_turn(data: object) -> Turn:
    if type(data) is not dict or data.keys() != _TURN_KEYS:
        raise _Slow
    input_ids = data["input_ids"]
    open_calls = data["open_calls"]
    if type(input_ids) is not list or type(open_calls) is not dict:
        raise _Slow
    for item in input_ids:
        _str(item)
    for key, item in open_calls.items():
        _str(key)
        _str(item)
    duration = data["duration_ms"]
    if duration is not None:
        if type(duration) is not float and type(duration) is not int:
            raise _Slow
        duration = float(duration)
    values = (
        _str(data["id"]),
        _TURN_STATUSES[data["status"]],
        _time(data["started_at"]),
        _int(data["started_seq"]),
        pvector(input_ids) if input_ids else _EMPTY_VECTOR,
        pmap(open_calls) if open_calls else _EMPTY_MAP,
        _optional_time(data["ended_at"]),
        _optional_int(data["ended_seq"]),
        _optional_str(data["reason"]),
        _json_map(data["metrics"]),
        duration,
    )
    turn = object.__new__(Turn)
    for name, value in zip(_TURN_FIELDS, values, strict=True):
        _set(turn, name, value)
    return turn


def decode_message(data: object) -> Message:
    """Decode one message, exactly as ``from_data(data, Message)`` would.

    Raises:
        DecodeError: as the codec does, naming the bad field's path.
    """
    if FAST_MESSAGES:
        try:
            return _fast_message(data)
        except Exception:  # any doubt: the codec gives the answer and the error text
            pass
    return from_data(data, Message)


def decode_turn(data: object) -> Turn:
    """Decode one turn, exactly as ``from_data(data, Turn)`` would.

    Raises:
        DecodeError: as the codec does, naming the bad field's path.
    """
    if FAST_TURNS:
        try:
            return _fast_turn(data)
        except Exception:  # any doubt: the codec gives the answer and the error text
            pass
    return from_data(data, Turn)
