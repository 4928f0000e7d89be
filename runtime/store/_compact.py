"""Compact event bodies: what a store row holds for an event (DESIGN §13).

The codec's JSON of an event (``to_json``) writes every field, defaults
included, names every field of every message, and repeats what the row
already says: a message of 200 characters took a 666-byte body. A body in
the compact format (the second format of event bodies) is a JSON object
that leaves out

- ``kind``, ``session_id`` and ``seq``: the row's own columns;
- every field of the event (and of each turn in it) whose value is its
  default, compared by JSON type and value (``0.0`` is not ``0``);

and writes

- ``at`` in UTC as whole microseconds since 1970 (an integer; another offset
  keeps its ISO text);
- each message as a row of values in ``Message`` field order (as snapshot
  chunks do), without the defaults that end it, with ``0`` for a
  ``session_id`` that is the event's and a ``created_at`` that is its ``at``,
  and its role, type and status as their index in ``_CODES``;
- a ``message_added`` event (the most common) as one array: ``at`` followed
  by its message's row.

Decoding puts them back and builds the event with the strict decoders: the
fast one of ``_fast`` for messages, the codec for the rest, whose answer on
anything the fast path doubts is final. A body with a ``kind`` is in the
first format (the full canonical JSON, which older stores hold) and is read
as before, so a store can mix both. A property test checks
``decode_body(kind, session_id, seq, encode_body(e)) == e`` for every event.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any

import attrs
import orjson

from .._audit import AuditCall
from .._codec import from_data, to_data
from .._errors import DecodeError
from .._events import (
    EVENT_TYPES,
    Event,
    MessageAdded,
    ModelCallFinished,
    ModelCallStarted,
    StatusChanged,
    TurnEnded,
    TurnStarted,
)
from .._message import Message, Usage
from .._turn import Turn
from ._fast import MESSAGE_FIELDS, decode_message_row
from ._rowcodec import message_values

__all__ = ["decode_body", "encode_body"]

_ROW_FIELDS = ("kind", "session_id", "seq")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_SAME = 0
"""In a message row: the event's session id, or its ``at`` (never a valid value there)."""
_SESSION, _CREATED = MESSAGE_FIELDS.index("session_id"), MESSAGE_FIELDS.index("created_at")
_MESSAGE_LISTS = ("messages", "partial")
_MESSAGE_ONES = ("message", "notice")
_CODES: dict[int, tuple[str, ...]] = {
    MESSAGE_FIELDS.index("role"): ("user", "assistant", "tool", "system"),
    MESSAGE_FIELDS.index("type"): ("text", "thought", "tool_call", "tool_result"),
    MESSAGE_FIELDS.index("status"): (
        "pending_agent", "processing", "processed", "interrupted",
        "error", "pending", "responded", "delivered",
    ),
}  # fmt: skip
"""Part of the format: a message row writes these fields as their index here (a value
added to the enums later is written as its text; never reorder or remove one)."""
_INDEX = {
    field: {value: code for code, value in enumerate(values)} for field, values in _CODES.items()
}


@functools.cache
def _defaults(cls: type) -> dict[str, Any]:
    """Each defaulted field of ``cls`` with its default as JSON data (none if it has none)."""
    found: dict[str, Any] = {}
    for field in attrs.fields(cls):
        default = field.default
        if default is attrs.NOTHING:
            continue
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            if default.takes_self:
                continue
            default = default.factory()
        if isinstance(default, Mapping) and not default:
            found[field.name] = {}
        elif isinstance(default, Sequence) and not isinstance(default, str):
            if not default:
                found[field.name] = []
        elif default is None or isinstance(default, (str, int, float, Enum)):
            found[field.name] = orjson.loads(orjson.dumps(to_data(default)))
    return found


@functools.cache
def _message_tail() -> list[Any]:
    """Each message field's default (or a marker that it has none), in field order."""
    defaults = _defaults(Message)
    return [defaults.get(name, _NONE) for name in MESSAGE_FIELDS]


_NONE = object()


def _is_default(value: Any, default: Any) -> bool:
    return type(value) is type(default) and value == default


def _omit_defaults(data: dict[str, Any], cls: type) -> dict[str, Any]:
    defaults = _defaults(cls)
    return {
        name: value
        for name, value in data.items()
        if name not in defaults or not _is_default(value, defaults[name])
    }


def _message_row(row: list[Any], session_id: str, at: str) -> list[Any]:
    """A message's full row, compacted (see the module docstring)."""
    if row[_SESSION] == session_id:
        row[_SESSION] = _SAME
    if row[_CREATED] == at:
        row[_CREATED] = _SAME
    for field, codes in _INDEX.items():
        code = codes.get(row[field])
        if code is not None:
            row[field] = code
    tail = _message_tail()
    end = len(row)
    while end and _is_default(row[end - 1], tail[end - 1]):
        end -= 1
    return row[:end]


def _data_row(data: dict[str, Any], session_id: str, at: str) -> list[Any]:
    return _message_row([data[name] for name in MESSAGE_FIELDS], session_id, at)


def encode_body(event: Event) -> bytes:
    """The compact JSON body of ``event`` (deterministic: the same event, the same bytes)."""
    if type(event) is MessageAdded:  # the common event, without the codec's to_data
        text = event.at.isoformat()
        stamp: int | str = text
        utc = event.at.utcoffset()
        if utc is not None and not utc:
            stamp = (event.at - _EPOCH) // _MICROSECOND
        row = _message_row(message_values(event.message), event.session_id, text)
        return orjson.dumps([stamp, *row])
    # A fork's messages (45,000 at the head of a long session) without the codec: each
    # message's row as snapshot chunks take it (``message_values``, some 20 times sooner).
    lists = {name: value for name in _MESSAGE_LISTS if (value := getattr(event, name, None))}
    emptied: dict[str, Any] = dict.fromkeys(lists, ())
    data: dict[str, Any] = to_data(attrs.evolve(event, **emptied))
    at: str = data["at"]
    session_id = event.session_id
    for name, items in lists.items():  # in place: the keys keep the fields' order
        data[name] = [_message_row(message_values(item), session_id, at) for item in items]
    for name in _ROW_FIELDS:
        del data[name]
    data = _omit_defaults(data, type(event))
    offset = event.at.utcoffset()
    if offset is not None and not offset:
        data["at"] = (event.at - _EPOCH) // _MICROSECOND
    for name in _MESSAGE_ONES:
        message = data.get(name)
        if type(message) is dict:
            data[name] = _data_row(message, session_id, at)
    turns = data.get("turns")
    if type(turns) is list:
        data["turns"] = [_omit_defaults(turn, Turn) for turn in turns]
    return orjson.dumps(data)


def _message_values(row: object, session_id: str, at: str) -> list[Any]:
    """A message row with its defaults and the event's session and time put back."""
    if type(row) is not list or not 0 < len(row) <= len(MESSAGE_FIELDS):
        raise DecodeError(
            f"Cannot decode Message from JSON: expected a row of up to {len(MESSAGE_FIELDS)} "
            f"values ({', '.join(MESSAGE_FIELDS)}), got {row!r:.80}."
        )
    full = row + _message_tail()[len(row) :]
    if any(value is _NONE for value in full):
        raise DecodeError(
            f"Cannot decode Message from JSON: the row {row!r:.80} ends before its required fields."
        )
    if type(full[_SESSION]) is int and full[_SESSION] == _SAME:
        full[_SESSION] = session_id
    if type(full[_CREATED]) is int and full[_CREATED] == _SAME:
        full[_CREATED] = at
    for field, values in _CODES.items():
        code = full[field]
        if type(code) is int:
            if not 0 <= code < len(values):
                raise DecodeError(
                    f"Cannot decode Message from JSON: {MESSAGE_FIELDS[field]} code {code} is "
                    f"not one of 0 to {len(values) - 1} @ $.{MESSAGE_FIELDS[field]}."
                )
            full[field] = values[code]
    return full


def _at(value: object) -> tuple[datetime, str] | None:
    if type(value) is int:
        try:
            stamp = _EPOCH + value * _MICROSECOND
        except OverflowError:
            return None
        return stamp, stamp.isoformat()
    if type(value) is str:
        try:
            stamp = datetime.fromisoformat(value)
        except ValueError:
            return None
        return (stamp, value) if stamp.tzinfo is not None else None
    return None


def decode_body(kind: str, session_id: str, seq: int, body: bytes) -> Event:
    """The event a stored body holds, in either format (see the module docstring).

    Args:
        kind: the row's ``kind``.
        session_id: the row's session.
        seq: the row's seq.
        body: the body as stored.

    Raises:
        DecodeError: the body is not JSON or not such an event, naming the field's path.
    """
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"Cannot decode Event: not valid JSON ({exc}).") from None
    if type(data) is list and kind == "message_added" and data:
        data = {"at": data[0], "message": data[1:]}
    if type(data) is not dict or "kind" in data:
        return from_data(data, Event)  # the first format: the codec's full JSON
    if kind not in EVENT_TYPES:
        raise DecodeError(f"Cannot decode Event from JSON: unknown event kind {kind!r}.")
    at = _at(data.get("at"))
    if at is None:
        raise DecodeError(
            "Cannot decode Event from JSON: at must be microseconds since 1970 (UTC) or an ISO "
            f"8601 time with an offset, got {data.get('at')!r:.80} @ $.at."
        )
    stamp, text = at
    if kind == "message_added" and data.keys() == _ADDED_KEYS:
        values = _message_values(data["message"], session_id, text)
        message = decode_message_row(MESSAGE_FIELDS, values)
        return MessageAdded(session_id=session_id, seq=seq, at=stamp, message=message)
    simple = _SIMPLE.get(kind)
    if (
        simple is not None
        and data.keys() - _AT <= simple[1]
        and all(type(value) is str for name, value in data.items() if name != "at")
    ):  # common events of text fields only: their constructor checks them all
        try:
            return simple[0](  # type: ignore[no-any-return]
                session_id=session_id,
                seq=seq,
                at=stamp,
                **{name: value for name, value in data.items() if name != "at"},
            )
        except (TypeError, ValueError):
            pass  # the codec names the problem
    if kind == "turn_ended" and _plain_turn_end(data):
        try:
            return TurnEnded(session_id=session_id, seq=seq, at=stamp, **_without_at(data))
        except (TypeError, ValueError):
            pass  # the codec names the problem (InvalidArgument is both)
    if kind in _MODEL_CALLS:
        made = _model_call(kind, session_id, seq, stamp, data)
        if made is not None:
            return made
    full: dict[str, Any] = {"kind": kind, "session_id": session_id, "seq": seq}
    full.update(data)
    full["at"] = text
    for name in _MESSAGE_ONES:
        if full.get(name) is not None:
            full[name] = _message_data(full[name], session_id, text)
    for name in _MESSAGE_LISTS:
        items = full.get(name)
        if type(items) is list:
            full[name] = [_message_data(item, session_id, text) for item in items]
    return from_data(full, Event)


def _without_at(data: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in data.items() if name != "at"}


def _plain_turn_end(data: dict[str, Any]) -> bool:
    """A ``turn_ended`` body whose fields the constructor checks as the codec does: text
    ``turn_id``, ``outcome`` and ``reason``, an object of ``metrics`` (frozen and checked by
    its converter), a finite float ``duration_ms``, no ``partial`` (messages: the codec)."""
    if not data.keys() - _AT <= _TURN_END_KEYS:
        return False
    for name, value in data.items():
        if name == "metrics":
            if type(value) is not dict:
                return False
        elif name == "duration_ms":
            if type(value) is not float or not math.isfinite(value):
                return False
        elif name != "at" and type(value) is not str:
            return False
    return True


def _model_call(
    kind: str, session_id: str, seq: int, stamp: datetime, data: dict[str, Any]
) -> Event | None:
    """A model call's body of plain fields built by its constructor, which checks them as the
    codec does: text, a ``sequence`` int, finite floats, a ``usage`` of counts and
    ``tool_calls`` of text (what the runtime stores for every call). None for anything else
    (a request, a start time, retries, a null, a value of another type): the codec decodes
    it, or names the problem."""
    fields: dict[str, Any] = {}
    started = kind == "model_call_started"
    for name, value in data.items():
        if name == "at":
            continue
        if name in (_STARTED_TEXT if started else _FINISHED_TEXT):
            if type(value) is not str:
                return None
        elif started and name == "sequence":
            if type(value) is not int:
                return None
        elif started:
            return None
        elif name in ("duration_ms", "cost_usd"):
            if type(value) is not float:
                return None
        elif name == "usage":
            if type(value) is not dict or not value.keys() <= _USAGE_KEYS:
                return None
            if not all(type(count) is int for count in value.values()):
                return None
        elif name == "tool_calls":
            if type(value) is not list or not all(map(_plain_call, value)):
                return None
        else:
            return None
        fields[name] = value
    try:
        if started:
            return ModelCallStarted(session_id=session_id, seq=seq, at=stamp, **fields)
        if "usage" in fields:
            fields["usage"] = Usage(**fields["usage"])
        if "tool_calls" in fields:
            fields["tool_calls"] = [AuditCall(**call) for call in fields["tool_calls"]]
        return ModelCallFinished(session_id=session_id, seq=seq, at=stamp, **fields)
    except (TypeError, ValueError):
        return None  # the codec names the problem (InvalidEvent and InvalidMessage are both)


def _plain_call(call: object) -> bool:
    """A tool call of a model call's body: an object of text fields of ``AuditCall``."""
    return (
        type(call) is dict
        and call.keys() <= _CALL_KEYS
        and all(type(value) is str for value in call.values())
    )


def _message_data(row: object, session_id: str, at: str) -> dict[str, Any]:
    return dict(zip(MESSAGE_FIELDS, _message_values(row, session_id, at), strict=True))


_ADDED_KEYS = frozenset({"at", "message"})
_TURN_END_KEYS = frozenset({"turn_id", "outcome", "reason", "metrics", "duration_ms"})
_AT = frozenset({"at"})
_SIMPLE: dict[str, tuple[Any, frozenset[str]]] = {
    "status_changed": (StatusChanged, frozenset({"message_id", "expected", "status"})),
    "turn_started": (TurnStarted, frozenset({"turn_id", "runner"})),
}
"""Kinds whose fields are all text checked by their constructor (``runner`` is ``str | None``:
only a text one takes this path)."""
_MODEL_CALLS = frozenset({"model_call_started", "model_call_finished"})
_STARTED_TEXT = frozenset({"operation_id", "source_key", "turn_id", "role", "model"})
_FINISHED_TEXT = frozenset(
    {"operation_id", "status", "content", "reasoning", "stop_reason", "error", "source_key",
     "response_model"}
)  # fmt: skip
_USAGE_KEYS = frozenset(attrs.fields_dict(Usage))
_CALL_KEYS = frozenset(attrs.fields_dict(AuditCall))
