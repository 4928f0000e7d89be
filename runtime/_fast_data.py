"""The codec's data of the values a state holds many of, built from their slots.

Events and a state's audit rows too, when each field is of a type this module
knows (by its declared type: text, numbers, enums, times, maps, messages, a
model call's usage and tool calls); the others (a fork's imported branch, a
call's request record or retries) go through cattrs.

A state holds tens of thousands of messages and thousands of turns, and
cattrs' generated hooks take ~40 µs for each message. A ``Message``, ``Turn``
or ``ToolCall`` was checked when it was built, so its data is its slots as
they are: enums kept (they are ``str``), times as ISO text, maps in the
codec's canonical form (``canonical``), vectors as lists. The codec uses these
for a state's messages and turns; a message with attachments or browser
elements (rare) is left to cattrs (``None``). Property tests pin that both
give the same data. If a class gains a field this module does not know, it
turns itself off and everything goes through cattrs.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import attrs

from ._audit import AuditCall, AuditRow
from ._events import EVENT_TYPES, Event
from ._json import canonical
from ._message import Message, ToolCall, Usage
from ._turn import Turn

__all__ = ["FAST_DATA", "audit_data", "event_data", "message_data", "turn_data"]

_KNOWN = {
    Message: (
        "id", "session_id", "role", "type", "status", "created_at", "content", "sender",
        "parent_id", "turn_id", "chatbot_id", "channel_id", "tool_call", "tool_call_id",
        "is_error", "error_type", "attachments", "browser_elements", "metadata", "event_seq",
        "active",
    ),
    ToolCall: ("id", "name", "arguments", "index"),
    Turn: (
        "id", "status", "started_at", "started_seq", "input_ids", "open_calls", "ended_at",
        "ended_seq", "reason", "metrics", "duration_ms", "runner", "awaiting_approval",
    ),
    Usage: (
        "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
        "reasoning_tokens",
    ),
    AuditCall: ("id", "name", "arguments_json"),
}  # fmt: skip
FAST_DATA = all(tuple(f.name for f in attrs.fields(cls)) == known for cls, known in _KNOWN.items())
"""False when a class's fields changed and this module was not taught them."""


def _map(value: Any) -> Any:
    """``canonical(value)``; most maps here are empty, and sorting an empty pmap is not free."""
    return canonical(value) if value else {}


def message_data(m: Message) -> dict[str, Any] | None:
    """``to_data(m)``, or ``None`` when the message is for cattrs (attachments, elements)."""
    if not FAST_DATA or m.attachments or m.browser_elements:
        return None
    call = m.tool_call
    return {
        "id": m.id, "session_id": m.session_id, "role": m.role, "type": m.type,
        "status": m.status, "created_at": m.created_at.isoformat(), "content": m.content,
        "sender": m.sender, "parent_id": m.parent_id, "turn_id": m.turn_id,
        "chatbot_id": m.chatbot_id, "channel_id": m.channel_id,
        "tool_call": None if call is None else {
            "id": call.id, "name": call.name, "arguments": _map(call.arguments),
            "index": call.index,
        },
        "tool_call_id": m.tool_call_id, "is_error": m.is_error, "error_type": m.error_type,
        "attachments": [], "browser_elements": [], "metadata": _map(m.metadata),
        "event_seq": m.event_seq, "active": m.active,
    }  # fmt: skip


def turn_data(t: Turn) -> dict[str, Any] | None:
    """``to_data(t)``, or ``None`` when this module is turned off."""
    if not FAST_DATA:
        return None
    return {
        "id": t.id, "status": t.status, "started_at": t.started_at.isoformat(),
        "started_seq": t.started_seq, "input_ids": list(t.input_ids),
        "open_calls": _map(t.open_calls),
        "ended_at": None if t.ended_at is None else t.ended_at.isoformat(),
        "ended_seq": t.ended_seq, "reason": t.reason, "metrics": _map(t.metrics),
        "duration_ms": t.duration_ms, "runner": t.runner,
        "awaiting_approval": _map(t.awaiting_approval),
    }  # fmt: skip


def _same(value: Any) -> Any:
    return value


def _time(value: datetime) -> str:
    return value.isoformat()


def _message(value: Message) -> dict[str, Any]:
    data = message_data(value)
    if data is None:
        raise _ForCattrs
    return data


def _optional_message(value: Message | None) -> dict[str, Any] | None:
    return None if value is None else _message(value)


def _messages(value: Any) -> list[dict[str, Any]]:
    return [_message(m) for m in value]


def _optional_time(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _usage(value: Usage | None) -> dict[str, int] | None:
    if value is None:
        return None
    return {
        "input_tokens": value.input_tokens, "output_tokens": value.output_tokens,
        "cache_read_tokens": value.cache_read_tokens,
        "cache_write_tokens": value.cache_write_tokens,
        "reasoning_tokens": value.reasoning_tokens,
    }  # fmt: skip


def _calls(value: Any) -> list[dict[str, str]]:
    return [{"id": c.id, "name": c.name, "arguments_json": c.arguments_json} for c in value]


def _none_else_cattrs(value: Any) -> Any:
    """A field left to cattrs unless it is empty (a call's request record, its retries)."""
    if value:
        raise _ForCattrs
    return None if value is None else []


class _ForCattrs(Exception):
    """A value of the event is for cattrs (a message with attachments)."""


_BY_TYPE: dict[str, Callable[[Any], Any]] = {
    "str": _same, "int": _same, "bool": _same, "str | None": _same, "float | None": _same,
    "Status": _same, "TurnOutcome": _same, "datetime": _time,
    "PMap[str, FrozenJSON]": _map, "Message": _message, "PVector[Message]": _messages,
    "Message | None": _optional_message, "AuditStatus": _same, "int | None": _same,
    "datetime | None": _optional_time, "Usage | None": _usage, "PVector[AuditCall]": _calls,
    "RequestRecord | None": _none_else_cattrs, "PVector[ModelRetry]": _none_else_cattrs,
}  # fmt: skip
"""How each declared field type is written (as cattrs writes it: enums kept, they are str)."""


_Plan = tuple[tuple[str, Callable[[Any], Any]], ...] | None


def _plan_of(cls: type) -> _Plan:
    """Each field of ``cls`` with its writer, or ``None`` if a field's type is not known."""
    fields = []
    for field in attrs.fields(cls):
        write = _BY_TYPE.get(field.type) if isinstance(field.type, str) else None
        if write is None:
            return None
        fields.append((field.name, write))
    return tuple(fields)


# Made on import, while each field's type is the text it was declared as: cattrs, once it
# has made a class's hooks, leaves the types resolved (classes, not text), and a plan made
# then would be None (every value of the class through cattrs, in a process that ever used
# it, such as the runtime's or a test run's).
_PLANS: dict[type, _Plan] = {cls: _plan_of(cls) for cls in (*EVENT_TYPES.values(), AuditRow)}


def _event_plan(cls: type) -> _Plan:
    """The plan of ``cls`` (an event class or ``AuditRow``; any other is planned now)."""
    if cls not in _PLANS:
        _PLANS[cls] = _plan_of(cls)
    return _PLANS[cls]


def event_data(event: Event) -> dict[str, Any] | None:
    """``to_data(event)``, or ``None`` when the event is for cattrs (see the module docstring)."""
    plan = _event_plan(type(event)) if FAST_DATA else None
    if plan is None:
        return None
    data: dict[str, Any] = {"kind": event.kind}
    try:
        for name, write in plan:
            data[name] = write(getattr(event, name))
    except _ForCattrs:
        return None
    return data


def audit_data(row: AuditRow) -> dict[str, Any] | None:
    """``to_data(row)`` for a state's audit row, or ``None`` when it is for cattrs."""
    plan = _event_plan(AuditRow) if FAST_DATA else None
    if plan is None:
        return None
    try:
        return {name: write(getattr(row, name)) for name, write in plan}
    except _ForCattrs:
        return None
