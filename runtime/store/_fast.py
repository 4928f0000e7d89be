"""Fast, strict decoding of the messages and turns a snapshot holds.

Rehydrating a session decodes every message it has, and the codec's general
path (cattrs, then the attrs ``__init__`` with its converters) costs about
50 µs per message: for a snapshot that is a quarter of replaying the whole
log. Here each item is checked for exactly what the codec accepts (the same
keys, JSON types, enum values, UTC offsets, the fields' validators and
``Message``'s cross-field rules, all inline) and built by ``_build``'s slot
builders, without ``__init__``: ~4 µs per message. A chunk's rows are
decoded in one go (``decode_message_rows``); if any row is in doubt, the
caller decodes them one by one, which names the bad row.

Its input is JSON parsed by orjson, whose strings are always valid Unicode
(orjson refuses lone surrogates, a test pins it), so it does not look for
them; the codec does, for data from anywhere else.

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
import orjson
from pyrsistent import pmap, pvector

from .._codec import from_data
from .._errors import DecodeError
from .._json import freeze_map
from .._message import (
    _ROLE_TYPES,  # the rule Message.__attrs_post_init__ checks
    Attachment,
    BrowserElement,
    Message,
    MessageType,
    Role,
    Status,
    ToolCall,
)
from .._storable import MAX_SEQ, session_id_problem
from .._turn import Turn, TurnStatus
from ._build import slot_builder

__all__ = [
    "MESSAGE_FIELDS",
    "TURN_FIELDS",
    "decode_message",
    "decode_message_row",
    "decode_message_rows",
    "decode_turn",
    "decode_turn_row",
    "decode_turn_rows",
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
    "ended_seq", "reason", "metrics", "duration_ms", "runner", "awaiting_approval",
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
_TOOL_CALL = MessageType.TOOL_CALL
_TOOL_RESULT = MessageType.TOOL_RESULT
_EMPTY_VECTOR: Any = pvector()
_EMPTY_MAP: Any = pmap()
_fromisoformat = datetime.fromisoformat
_dumps = orjson.dumps


_new_message = slot_builder(Message)
_new_tool_call = slot_builder(ToolCall)
_new_turn = slot_builder(Turn)


_MAX_SEQ = MAX_SEQ
_FLOAT_INT = 2**53
_INF = float("inf")


@functools.lru_cache(maxsize=256)
def _good_session_id(value: str) -> bool:
    # A snapshot's messages share one session id: checked once, then a cache hit.
    return session_id_problem(value) is None


class _Slow(Exception):
    """The fast path declines; the codec decides."""


def _tool_call(value: dict[str, Any]) -> ToolCall:
    # Four keys, and these four (a KeyError otherwise): exactly ToolCall's fields.
    if type(value) is not dict or len(value) != len(_TOOL_CALL_KEYS):
        raise _Slow
    id_, name, arguments, index = value["id"], value["name"], value["arguments"], value["index"]
    if (
        type(id_) is not str
        or not id_
        or type(name) is not str
        or not name
        or type(index) is not int
        or not 0 <= index <= _MAX_SEQ
    ):
        raise _Slow
    return _new_tool_call(id_, name, _json_map(arguments), index)


def _json_map(value: object) -> Any:
    if type(value) is not dict:
        raise _Slow
    return _frozen_json(_dumps(value)) if value else _EMPTY_MAP


@functools.lru_cache(maxsize=1024)
def _frozen_json(text: bytes) -> Any:
    # Metadata and arguments repeat a lot ({"tool_name": "sh"}); a frozen map
    # is a value, so equal ones can share one object. Keyed by the JSON
    # text, which tells True, 1 and 1.0 apart (equal in Python, not in a map
    # that must encode back the same); the map is frozen from the text.
    return freeze_map(orjson.loads(text))


def _items(value: object, kind: type[T]) -> Any:
    if type(value) is not list:
        raise _Slow
    # Rare in practice: let the codec build them.
    return pvector(from_data(item, kind) for item in value) if value else _EMPTY_VECTOR


def _message_from_row(row: object) -> Message:
    """A message from its values in ``Message`` field order."""
    if type(row) is not list:
        raise _Slow
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
        or (
            event_seq is not None and (type(event_seq) is not int or not 0 <= event_seq <= _MAX_SEQ)
        )
        or type(created_at) is not str
        or not _good_session_id(session_id)
    ):
        raise _Slow
    created = _fromisoformat(created_at)
    # fromisoformat gives a fixed-offset tzinfo or none: the codec's
    # utcoffset() check, without a call.
    if created.tzinfo is None:
        raise _Slow
    role, kind = _ROLES[role], _TYPES[type_]
    # Message.__attrs_post_init__'s cross-field rules, inline (the call was a
    # fifth of the cost); tests pin that both accept the same rows.
    if (
        (role, kind) not in _ROLE_TYPES
        or (kind is _TOOL_CALL) is (tool_call is None)
        or (kind is _TOOL_RESULT) is (tool_call_id is None)
        or ((is_error or error_type is not None) and kind is not _TOOL_RESULT)
    ):
        raise _Slow
    return _new_message(
        id_,
        session_id,
        role,
        kind,
        _STATUSES[status],
        created,
        content,
        sender,
        parent_id,
        turn_id,
        chatbot_id,
        channel_id,
        None if tool_call is None else _tool_call(tool_call),
        tool_call_id,
        is_error,
        error_type,
        _EMPTY_VECTOR if attachments == [] else _items(attachments, Attachment),
        _EMPTY_VECTOR if browser_elements == [] else _items(browser_elements, BrowserElement),
        _EMPTY_MAP if metadata == {} else _json_map(metadata),
        event_seq,
        active,
    )


def _turn_from_row(row: object) -> Turn:
    """A turn from its values in ``Turn`` field order."""
    if type(row) is not list:
        raise _Slow
    if len(row) != len(_KNOWN_TURN_FIELDS):
        raise _Slow
    (id_, status, started_at, started_seq, input_ids, open_calls, ended_at, ended_seq, reason,
     metrics, duration, runner, awaiting) = row  # fmt: skip
    if (
        type(id_) is not str
        or not id_
        or type(started_seq) is not int
        or not 0 <= started_seq <= _MAX_SEQ
        or (
            ended_seq is not None and (type(ended_seq) is not int or not 0 <= ended_seq <= _MAX_SEQ)
        )
        or (reason is not None and type(reason) is not str)
        or type(input_ids) is not list
        or type(open_calls) is not dict
        or type(started_at) is not str
        or (ended_at is not None and type(ended_at) is not str)
        or (runner is not None and type(runner) is not str)
        or type(awaiting) is not dict
    ):
        raise _Slow
    started = _fromisoformat(started_at)
    ended = None if ended_at is None else _fromisoformat(ended_at)
    if started.tzinfo is None or (ended is not None and ended.tzinfo is None):
        raise _Slow
    for item in input_ids:
        if type(item) is not str:
            raise _Slow
    if open_calls or awaiting:  # most turns ended with neither
        for key, item in (*open_calls.items(), *awaiting.items()):
            if type(key) is not str or type(item) is not str:
                raise _Slow
    if duration is not None:
        if type(duration) is int and 0 <= duration <= _FLOAT_INT:
            duration = float(duration)
        elif type(duration) is not float or not 0 <= duration < _INF:
            raise _Slow
    return _new_turn(
        id_,
        _TURN_STATUSES[status],
        started,
        started_seq,
        pvector(input_ids) if input_ids else _EMPTY_VECTOR,
        pmap(open_calls) if open_calls else _EMPTY_MAP,
        ended,
        ended_seq,
        reason,
        _json_map(metrics),
        duration,
        runner,
        pmap(awaiting) if awaiting else _EMPTY_MAP,
    )


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


def _rows(fields: list[str], rows: list[object], fast: Any, known: list[str]) -> Any:
    if fields != known:
        return None
    try:
        return [fast(row) for row in rows]
    except Exception:  # any doubt: the row-by-row path decides
        return None


def decode_message_rows(fields: list[str], rows: list[object]) -> list[Message] | None:
    """The messages of a chunk's rows, all at once, or None if any row needs more care.

    The values are those ``decode_message_row`` gives; None means "decode row by
    row", which gives the same values and, for a bad row, the codec's error.
    """
    result: list[Message] | None = _rows(
        fields, rows, _message_from_row, MESSAGE_FIELDS if FAST_MESSAGES else []
    )
    return result


def decode_turn_rows(fields: list[str], rows: list[object]) -> list[Turn] | None:
    """The turns of a chunk's rows, all at once, or None (see ``decode_message_rows``)."""
    result: list[Turn] | None = _rows(
        fields, rows, _turn_from_row, TURN_FIELDS if FAST_TURNS else []
    )
    return result
