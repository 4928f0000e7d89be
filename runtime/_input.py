"""User input and its validation (seed 001 "User Input").

Input is checked before it becomes a message: a rejected input raises
``InvalidInput`` and nothing is stored. Empty text is allowed only when an
attachment or a browser element comes with it; attachments and browser
elements are bounded in count and size.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

import attrs
from pyrsistent import pvector
from pyrsistent.typing import PMap, PVector

from ._article import type_named
from ._category import Category, new_message
from ._errors import InvalidArgument, InvalidInput, InvalidMessage
from ._json import FrozenJSON, freeze_map
from ._message import Attachment, BrowserElement, Message, wrong_item
from ._storable import MAX_SESSION_ID_CHARS, session_id_problem, text_problem

__all__ = ["InputLimits", "UserInput", "check_session_id", "validate_input"]


def check_session_id(session_id: object) -> str:
    """``session_id`` if a session can have it; ``InvalidInput`` saying why not otherwise.

    A session id is a str of 1 to 256 characters of valid Unicode with no
    control characters (it keys store rows and is printed on terminals), and
    not blank: ``" "`` is refused as ``""`` is. (Stores and events still take a
    blank id, so a session stored before this rule stays readable.)

    Raises:
        InvalidInput: naming what is wrong with it; nothing was stored.
    """
    problem = session_id_problem(session_id)
    if problem is None and not str(session_id).strip():
        problem = "it is blank (only white space)"
    if problem is not None:
        raise InvalidInput(
            f"Session id {_shown(session_id)} cannot be used: {problem}. A session id is 1 to "
            f"{MAX_SESSION_ID_CHARS} characters of valid Unicode without control characters, "
            "not only white space (like 'chat-42')."
        )
    return session_id  # type: ignore[return-value]


def _shown(value: object) -> str:
    try:
        text = repr(value)
    except Exception:  # a repr that fails must not hide the real problem
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= 80 else text[:79] + "…"


def _text_field(name: str, *, optional: bool = False) -> Any:
    """An attrs validator: ``UserInput.<name>`` is a str (or None) of valid Unicode."""

    def check(_: object, __: attrs.Attribute[Any], value: object) -> None:
        if value is None and optional:
            return
        if not isinstance(value, str):
            wanted = "a str or None" if optional else "a str"
            raise InvalidInput(
                f"Input {name} must be {wanted} (got {_shown(value)} that is {type_named(value)})."
            )
        problem = text_problem(value)
        if problem is not None:
            raise InvalidInput(
                f"Input {name} must be valid Unicode text (got {problem}); lone surrogates "
                "cannot be stored. Decode bytes with errors='replace' before sending them."
            )

    return check


def _items(name: str) -> Any:
    """An attrs converter: a list (or any iterable but text) of items, as a pvector."""

    def convert(value: object) -> PVector[Any]:
        if value is None:
            return pvector()
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
            raise InvalidInput(
                f"Input {name} must be a list (got {_shown(value)} that is {type_named(value)})."
            )
        return pvector(value)

    return convert


def _attachments(value: object) -> PVector[Attachment]:
    return _items("attachments")(value)  # type: ignore[no-any-return]


def _browser_elements(value: object) -> PVector[BrowserElement]:
    return _items("browser_elements")(value)  # type: ignore[no-any-return]


def _metadata(value: object) -> PMap[str, FrozenJSON]:
    try:
        return freeze_map(value, path="$.metadata")
    except InvalidArgument as exc:
        raise InvalidInput(f"User input cannot become a message: {exc}") from None


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

    text: str = attrs.field(default="", validator=_text_field("text"))
    """The typed text (may be empty with an attachment or browser element)."""
    sender: str = attrs.field(default="user", validator=_text_field("sender"))
    """Display name of the person."""
    command: str | None = attrs.field(default=None, validator=_text_field("command", optional=True))
    """A slash command the adapter recognised (``compact``), if any."""
    attachments: PVector[Attachment] = attrs.field(factory=pvector, converter=_attachments)
    """Attached files (references into the artifact store)."""
    browser_elements: PVector[BrowserElement] = attrs.field(
        factory=pvector, converter=_browser_elements
    )
    """Selected page elements."""
    chatbot_id: str = attrs.field(default="", validator=_text_field("chatbot_id"))
    """Platform the input came from."""
    channel_id: str = attrs.field(default="", validator=_text_field("channel_id"))
    """Channel or thread on that platform."""
    metadata: PMap[str, FrozenJSON] = attrs.field(factory=dict, converter=_metadata)
    """Platform extras (``discord_message_id`` …), JSON-like, frozen."""

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
        check_session_id(session_id)
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


def _check_text(name: str, value: object) -> None:
    _text_field(name)(None, None, value)


def _check_types(name: str, items: Iterable[object], kind: type) -> None:
    for i, item in enumerate(items):
        if not isinstance(item, kind):
            raise InvalidInput(wrong_item(f"{name}[{i}]", kind, item, _shown(item)))


def validate_input(user_input: UserInput, limits: InputLimits | None = None) -> UserInput:
    """Check ``user_input`` against ``limits`` and return it unchanged.

    Raises:
        InvalidInput: saying which rule failed, what was got, and what to do.
    """
    if not isinstance(user_input, UserInput):
        raise InvalidInput(
            f"validate_input() takes a UserInput (got {_shown(user_input)} that is "
            f"{type_named(user_input)}); build one with UserInput(text=...)."
        )
    limits = limits or InputLimits()
    # A UserInput checks its fields when built; these catch one built around that.
    for name in ("text", "sender", "chatbot_id", "channel_id"):
        _check_text(name, getattr(user_input, name))
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
