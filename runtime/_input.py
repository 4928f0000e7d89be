"""User input and its validation (seed 001 "User Input").

Input is checked before it becomes a message: a rejected input raises
``InvalidInput`` and nothing is stored. Empty text is allowed only when an
attachment or a browser element comes with it; attachments and browser
elements are bounded in count and size.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import attrs
from pyrsistent import pvector
from pyrsistent.typing import PVector

from ._category import Category, new_message
from ._errors import InvalidInput, InvalidMessage
from ._message import Attachment, BrowserElement, Message, article

__all__ = ["InputLimits", "UserInput", "validate_input"]


@attrs.frozen(kw_only=True)
class InputLimits:
    """Bounds on one user input. The defaults suit a chat channel."""

    max_text_chars: int = 100_000
    """Longest text accepted."""
    max_attachments: int = 10
    """Most attachments on one input."""
    max_attachment_bytes: int = 20 * 1024 * 1024
    """Largest single attachment."""
    max_browser_elements: int = 5
    """Most browser elements on one input."""
    max_browser_chars: int = 50_000
    """Most characters across all browser elements (URL, text and HTML included)."""


@attrs.frozen(kw_only=True)
class UserInput:
    """What a person handed to an adapter, before it is a message."""

    text: str = ""
    """The typed text (may be empty with an attachment or browser element)."""
    sender: str = "user"
    """Display name of the person."""
    command: str | None = None
    """A slash command the adapter recognised (``compact``), if any."""
    attachments: PVector[Attachment] = attrs.field(factory=pvector, converter=pvector)
    """Attached files (references into the artifact store)."""
    browser_elements: PVector[BrowserElement] = attrs.field(factory=pvector, converter=pvector)
    """Selected page elements."""
    chatbot_id: str = ""
    """Platform the input came from."""
    channel_id: str = ""
    """Channel or thread on that platform."""
    metadata: Any = attrs.field(factory=dict)
    """Platform extras (``discord_message_id`` …), JSON-like."""

    def to_message(
        self,
        *,
        id: str,
        session_id: str,
        created_at: datetime,
        limits: InputLimits | None = None,
    ) -> Message:
        """Validate against ``limits`` and build the pending user question.

        Raises:
            InvalidInput: the input breaks a rule; nothing was built.
        """
        validate_input(self, limits)
        try:
            return new_message(
                Category.USER_QUESTION,
                id=id,
                session_id=session_id,
                created_at=created_at,
                content=self.text,
                sender=self.sender,
                chatbot_id=self.chatbot_id,
                channel_id=self.channel_id,
                attachments=self.attachments,
                browser_elements=self.browser_elements,
                metadata=self.metadata,
            )
        except (InvalidMessage, TypeError, ValueError) as exc:
            raise InvalidInput(f"User input cannot become a message: {exc}") from None


def _check_types(name: str, items: Iterable[object], kind: type) -> None:
    for i, item in enumerate(items):
        if not isinstance(item, kind):
            raise InvalidInput(
                f"{name}[{i}] must be {article(kind.__name__)} (got {item!r} that is a "
                f"{type(item).__name__!r})."
            )


def validate_input(user_input: UserInput, limits: InputLimits | None = None) -> UserInput:
    """Check ``user_input`` against ``limits`` and return it unchanged.

    Raises:
        InvalidInput: saying which rule failed, what was got, and what to do.
    """
    limits = limits or InputLimits()
    if not isinstance(user_input.text, str):
        raise InvalidInput(
            f"Input text must be a str (got {user_input.text!r} that is a "
            f"{type(user_input.text).__name__!r})."
        )
    _check_types("attachments", user_input.attachments, Attachment)
    _check_types("browser_elements", user_input.browser_elements, BrowserElement)
    if not user_input.sender:
        raise InvalidInput("Input needs a sender (the person's display name); got an empty one.")
    if (
        not user_input.text.strip()
        and not user_input.attachments
        and not user_input.browser_elements
    ):
        raise InvalidInput(
            "Input text is empty and nothing is attached; send some text, an attachment "
            "or a browser element."
        )
    if len(user_input.text) > limits.max_text_chars:
        raise InvalidInput(
            f"Input text has {len(user_input.text)} characters, more than the limit of "
            f"{limits.max_text_chars}; shorten it or send it as an attachment."
        )
    if len(user_input.attachments) > limits.max_attachments:
        raise InvalidInput(
            f"Input has {len(user_input.attachments)} attachments, more than the limit of "
            f"{limits.max_attachments}; send them in several messages."
        )
    for attachment in user_input.attachments:
        if attachment.size > limits.max_attachment_bytes:
            raise InvalidInput(
                f"Attachment {attachment.name!r} is {attachment.size} bytes, more than the "
                f"limit of {limits.max_attachment_bytes}; compress or split it."
            )
    if len(user_input.browser_elements) > limits.max_browser_elements:
        raise InvalidInput(
            f"Input has {len(user_input.browser_elements)} browser elements, more than the "
            f"limit of {limits.max_browser_elements}; select fewer elements."
        )
    total = sum(element.size for element in user_input.browser_elements)
    if total > limits.max_browser_chars:
        raise InvalidInput(
            f"Browser elements carry {total} characters in all, more than the limit of "
            f"{limits.max_browser_chars}; select smaller elements."
        )
    return user_input
