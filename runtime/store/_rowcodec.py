"""A message's row of JSON values (``MESSAGE_FIELDS`` order) without the general codec.

Event bodies and snapshot chunks store each message as a row of its values.
The codec's ``to_data`` (cattrs) takes ~40 µs per message; most messages
have no tool call, attachments, browser elements or metadata, and their row
is their slots as they are (enums are ``str``, times their ISO text): ~2 µs.
Any message with one of those goes through the codec. A property test pins
that both give the same row. If ``Message`` gains a field this module does
not know (``FAST_MESSAGES``), every message goes through the codec.
"""

from __future__ import annotations

from typing import Any

from .._codec import to_data
from .._message import Message
from ._fast import FAST_MESSAGES, MESSAGE_FIELDS

__all__ = ["message_values"]


def message_values(message: Message) -> list[Any]:
    """``[to_data(message)[name] for name in MESSAGE_FIELDS]``, sooner."""
    m = message
    if (
        FAST_MESSAGES
        and m.tool_call is None
        and not m.attachments
        and not m.browser_elements
        and not m.metadata
    ):
        return [
            m.id, m.session_id, m.role, m.type, m.status, m.created_at.isoformat(), m.content,
            m.sender, m.parent_id, m.turn_id, m.chatbot_id, m.channel_id, None, m.tool_call_id,
            m.is_error, m.error_type, [], [], {}, m.event_seq, m.active,
        ]  # fmt: skip
    data = to_data(message)
    return [data[name] for name in MESSAGE_FIELDS]
