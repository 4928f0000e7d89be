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

import functools
from datetime import datetime
from typing import Any, TypeVar

import attrs
from pyrsistent import pmap, pvector

from .._codec import from_data
from .._errors import DecodeError
from .._json import freeze_map
from .._message import Attachment, BrowserElement, Message, MessageType, Role, Status, ToolCall
from .._turn import Turn, TurnStatus

__all__ = [
    "MESSAGE_FIELDS",
    "TURN_FIELDS",
    "decode_message",
    "decode_message_row",
    "decode_turn",
    "decode_turn_row",
]

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
# The slots' own descriptors, in field order: setting through them skips the
# name lookup object.__setattr__ makes on every call.
_MESSAGE_SETTERS = tuple(Message.__dict__[field.name].__set__ for field in attrs.fields(Message))
_TOOL_CALL_SETTERS = tuple(
    ToolCall.__dict__[field.name].__set__ for field in attrs.fields(ToolCall)
)


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


def _optional_int(value: object) -> int | None:
    if value is not None and type(value) is not int:
        raise _Slow
    return value


def _tool_call(value: object) -> ToolCall | None:
    if value is None:
        return None
    if type(value) is not dict or value.keys() != _TOOL_CALL_KEYS:
        raise _Slow
    id_, name, index = value["id"], value["name"], value["index"]
    if (
        type(id_) is not str
        or not id_
        or type(name) is not str
        or not name
        or type(index) is not int
        or index < 0
    ):
        raise _Slow
    call = object.__new__(ToolCall)
    for setter, item in zip(
        _TOOL_CALL_SETTERS, (id_, name, _json_map(value["arguments"]), index), strict=True
    ):
        setter(call, item)
    return call


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
    if not value:
        return _EMPTY_MAP
    try:
        # Flat metadata repeats a lot ({"tool_name": "sh"}); a frozen map is a
        # value, so equal ones can share one object. The key carries each
        # value's type: True == 1 and 1.0 == 1, but they must not share.
        key = tuple((k, type(v), v) for k, v in value.items())
        return _frozen_flat(key)
    except TypeError:  # a nested list or dict is unhashable: freeze it fully
        return freeze_map(value)


@functools.lru_cache(maxsize=1024)
def _frozen_flat(key: tuple[tuple[str, type, Any], ...]) -> Any:
    return freeze_map({k: v for k, _, v in key})


def _items(value: object, kind: type[T]) -> Any:
    if type(value) is not list:
        raise _Slow
    # Rare in practice: let the codec build them.
    return pvector(from_data(item, kind) for item in value) if value else _EMPTY_VECTOR


def _message_from_row(row: list[Any]) -> Message:
    """A message from its values in ``Message`` field order."""
    (id_, session_id, role, type_, status, created_at, content, sender, parent_id, turn_id,
     chatbot_id, channel_id, tool_call, tool_call_id, is_error, error_type, attachments,
     browser_elements, metadata, event_seq, active) = row  # fmt: skip
    # The field validators' checks, inline: this runs once per message of
    # every snapshot read, and a call per field was most of its cost.
    if (
        type(id_) is not str
        or not id_
        or type(session_id) is not str
        or not session_id
        or type(content) is not str
        or type(sender) is not str
        or type(chatbot_id) is not str
        or type(channel_id) is not str
        or type(is_error) is not bool
        or type(active) is not bool
        or (parent_id is not None and type(parent_id) is not str)
        or (turn_id is not None and type(turn_id) is not str)
        or (tool_call_id is not None and type(tool_call_id) is not str)
        or (error_type is not None and type(error_type) is not str)
        or (event_seq is not None and (type(event_seq) is not int or event_seq < 0))
    ):
        raise _Slow
    values = (
        id_,
        session_id,
        _ROLES[role],
        _TYPES[type_],
        _STATUSES[status],
        _time(created_at),
        content,
        sender,
        parent_id,
        turn_id,
        chatbot_id,
        channel_id,
        _tool_call(tool_call),
        tool_call_id,
        is_error,
        error_type,
        _items(attachments, Attachment),
        _items(browser_elements, BrowserElement),
        _json_map(metadata),
        event_seq,
        active,
    )
    message = object.__new__(Message)
    for setter, value in zip(_MESSAGE_SETTERS, values, strict=True):
        setter(message, value)
    # The cross-field checks are the class's own.
    message.__attrs_post_init__()
    return message


def _turn_from_row(row: list[Any]) -> Turn:
    """A turn from its values in ``Turn`` field order."""
    (id_, status, started_at, started_seq, input_ids, open_calls, ended_at, ended_seq, reason,
     metrics, duration) = row  # fmt: skip
    if type(input_ids) is not list or type(open_calls) is not dict:
        raise _Slow
    for item in input_ids:
        _str(item)
    for key, item in open_calls.items():
        _str(key)
        _str(item)
    if duration is not None:
        if type(duration) is not float and type(duration) is not int:
            raise _Slow
        duration = float(duration)
    turn = object.__new__(Turn)
    _set(turn, "id", _str(id_))
    _set(turn, "status", _TURN_STATUSES[status])
    _set(turn, "started_at", _time(started_at))
    _set(turn, "started_seq", _int(started_seq))
    _set(turn, "input_ids", pvector(input_ids) if input_ids else _EMPTY_VECTOR)
    _set(turn, "open_calls", pmap(open_calls) if open_calls else _EMPTY_MAP)
    _set(turn, "ended_at", _optional_time(ended_at))
    _set(turn, "ended_seq", _optional_int(ended_seq))
    _set(turn, "reason", _optional_str(reason))
    _set(turn, "metrics", _json_map(metrics))
    _set(turn, "duration_ms", duration)
    return turn


def _fast_message(data: object) -> Message:
    if type(data) is not dict or data.keys() != _MESSAGE_KEYS:
        raise _Slow
    return _message_from_row([data[name] for name in _MESSAGE_FIELDS])


def _fast_turn(data: object) -> Turn:
    if type(data) is not dict or data.keys() != _TURN_KEYS:
        raise _Slow
    return _turn_from_row([data[name] for name in _TURN_FIELDS])


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


MESSAGE_FIELDS: list[str] = list(_MESSAGE_FIELDS)
"""The order of a message's values in a snapshot row."""
TURN_FIELDS: list[str] = list(_TURN_FIELDS)
"""The order of a turn's values in a snapshot row."""


def _from_row(
    fields: list[str], row: object, fast: Any, known: list[str], decode: Any, kind: str
) -> Any:
    if fields == known and type(row) is list and len(row) == len(known):
        try:
            return fast(row)
        except Exception:  # any doubt: the codec gives the answer and the error text
            pass
    if type(row) is not list or len(row) != len(fields):
        raise DecodeError(
            f"Cannot decode {kind} from JSON: expected a row of {len(fields)} values "
            f"({', '.join(fields)}), got {row!r:.80}."
        )
    return decode(dict(zip(fields, row, strict=True)))


def decode_message_row(fields: list[str], row: object) -> Message:
    """Decode one message stored as a row of values in the order of ``fields``.

    Exactly as ``from_data(dict(zip(fields, row)), Message)`` would.

    Raises:
        DecodeError: as the codec does, naming the bad field's path.
    """
    known = MESSAGE_FIELDS if FAST_MESSAGES else []
    result: Message = _from_row(fields, row, _message_from_row, known, decode_message, "Message")
    return result


def decode_turn_row(fields: list[str], row: object) -> Turn:
    """Decode one turn stored as a row of values in the order of ``fields``.

    Raises:
        DecodeError: as the codec does, naming the bad field's path.
    """
    known = TURN_FIELDS if FAST_TURNS else []
    result: Turn = _from_row(fields, row, _turn_from_row, known, decode_turn, "Turn")
    return result
