"""What a session tells the outside world: ``Update`` for messages, ``Delta`` for live pieces.

The turn machine decides both (``Announce`` and ``Stream`` commands); the
runtime's gateway fans them out to adapters and subscribers. An ``Update``
says a message joined a session or changed status; a ``Delta`` is a live
piece of a streaming model message and is never stored.
"""

from __future__ import annotations

import enum

import attrs

from ._category import category_of
from ._message import Message, Status

__all__ = ["Delta", "DeltaKind", "Update", "awaits_delivery"]

_UNDELIVERED = frozenset({Status.PENDING, Status.RESPONDED})


def awaits_delivery(message: Message) -> bool:
    """True when ``message`` waits for an adapter to deliver it (nudges stay ``responded``)."""
    return message.status in _UNDELIVERED and Status.DELIVERED in category_of(message).spec.finals


@attrs.frozen(kw_only=True)
class Update:
    """A message that joined a session or changed status."""

    session_id: str
    """The session."""
    seq: int
    """The seq of the event that made the change."""
    message: Message
    """The message as it is after the change."""
    previous: Status | None = None
    """Its status before the change; None for a message that just joined."""

    @property
    def is_new(self) -> bool:
        """True when the message just joined the session."""
        return self.previous is None


class DeltaKind(enum.StrEnum):
    """What a live piece of a model message is."""

    TEXT = "text"
    """Reply text."""
    REASONING = "reasoning"
    """Reasoning."""
    TOOL_CALL = "tool_call"
    """A fragment of a tool call (its name, or a piece of its arguments)."""


@attrs.frozen(kw_only=True)
class Delta:
    """A live piece of a streaming model message; never stored."""

    session_id: str
    """The session."""
    turn_id: str
    """The turn streaming it."""
    stream_id: str
    """Id of the model message being streamed (the same for all its pieces)."""
    kind: DeltaKind
    """Text, reasoning or a tool-call fragment."""
    text: str
    """The piece (for a tool call: a piece of its argument JSON)."""
    chatbot_id: str = ""
    """Platform of the turn's input (who should show it)."""
    channel_id: str = ""
    """Channel of the turn's input."""
    index: int | None = None
    """Tool index, for tool-call fragments."""
    name: str | None = None
    """Tool name, when the fragment carries it."""
