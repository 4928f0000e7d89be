"""The message model: frozen ``Message`` snapshots and their parts.

A ``Message`` is a frozen attrs value. JSON-like fields (metadata, tool
arguments) are frozen into pyrsistent collections on the way in, so a message
can be shared between actors, states and threads without copying. A change to
a message (its status, say) is a new message built with ``attrs.evolve``; the
old one is untouched.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

import attrs
from pyrsistent import PVector as PVectorABC
from pyrsistent import pvector
from pyrsistent.typing import PMap, PVector

from ._article import article, type_named
from ._checks import MESSAGE_CHECKS as _check
from ._errors import InvalidMessage
from ._json import FrozenJSON, freeze_arguments, freeze_metadata
from ._repr import value_repr
from ._storable import MAX_SEQ, MAX_SESSION_ID_CHARS, shown

_E = TypeVar("_E", bound=enum.Enum)
_T = TypeVar("_T")

__all__ = [
    "Attachment",
    "BrowserElement",
    "Message",
    "MessageType",
    "Role",
    "Status",
    "ToolCall",
    "Usage",
]


class Role(enum.StrEnum):
    """Which kind of party produced a message."""

    USER = "user"
    """A person, a cron trigger, or a system-made prompt that starts a turn."""
    ASSISTANT = "assistant"
    """The agent: replies, thoughts, notifications, crash notices."""
    TOOL = "tool"
    """A tool call the agent asked for, or the result a tool returned."""
    SYSTEM = "system"
    """The runtime itself: background alerts, empty-response nudges, the system prompt."""


class MessageType(enum.StrEnum):
    """The shape of a message's payload."""

    TEXT = "text"
    """Plain text for the model or the user."""
    THOUGHT = "thought"
    """Reasoning the model produced before acting."""
    TOOL_CALL = "tool_call"
    """A structured request to run a tool (``Message.tool_call`` is set)."""
    TOOL_RESULT = "tool_result"
    """What a tool returned (``Message.tool_call_id`` is set)."""


class Status(enum.StrEnum):
    """Where a message is in its lifecycle (DESIGN §3)."""

    PENDING_AGENT = "pending_agent"
    """Accepted input waiting for a turn to claim it."""
    PROCESSING = "processing"
    """Claimed by the active turn."""
    PROCESSED = "processed"
    """Its turn ended normally (terminal)."""
    INTERRUPTED = "interrupted"
    """Its turn was interrupted, or a tool call was left unanswered by it (terminal)."""
    ERROR = "error"
    """Its turn failed (terminal)."""
    PENDING = "pending"
    """Outbound text waiting for an adapter to send it."""
    RESPONDED = "responded"
    """An intermediate (thought, tool call, tool result) recorded; not yet rendered."""
    DELIVERED = "delivered"
    """An adapter sent, rendered or silently absorbed it."""


def _to_enum(kind: type[_E], value: object) -> _E:
    if type(value) is kind:  # the common case, and the fast one
        return value
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(repr(m.value) for m in kind)
        raise InvalidMessage(
            f"{kind.__name__} must be one of {allowed} (got {shown(value)})."
        ) from None


def _role(value: object) -> Role:
    return value if type(value) is Role else _to_enum(Role, value)


def _type(value: object) -> MessageType:
    return value if type(value) is MessageType else _to_enum(MessageType, value)


def _status(value: object) -> Status:
    return value if type(value) is Status else _to_enum(Status, value)


@attrs.frozen(kw_only=True)
class ToolCall:
    """A structured request to run one tool."""

    __repr__ = value_repr

    id: str = attrs.field(validator=_check.non_empty_str)
    """The provider's call id; a tool result names it in ``tool_call_id``."""
    name: str = attrs.field(validator=_check.non_empty_str)
    """The tool to run."""
    arguments: PMap[str, FrozenJSON] = attrs.field(factory=dict, converter=freeze_arguments)
    """Parsed JSON arguments, frozen."""
    index: int = attrs.field(default=0, validator=_check.count)
    """Position of this call among the calls of one model response."""


@attrs.frozen(kw_only=True)
class Attachment:
    """A file the user attached. The bytes live in an artifact store, never here."""

    __repr__ = value_repr

    id: str = attrs.field(validator=_check.non_empty_str)
    """Artifact-store key."""
    name: str = attrs.field(validator=_check.non_empty_str)
    """File name as the user gave it (``data.csv``)."""
    kind: str = attrs.field(default="file", validator=_check.non_empty_str)
    """``image``, ``file``, ``audio`` … (images are sent to models as image parts)."""
    media_type: str = attrs.field(
        default="application/octet-stream", validator=_check.non_empty_str
    )
    """MIME type (``image/png``)."""
    size: int = attrs.field(default=0, validator=_check.count)
    """Size in bytes."""
    width: int | None = attrs.field(default=None, validator=_check.optional_count)
    """Pixel width, for images."""
    height: int | None = attrs.field(default=None, validator=_check.optional_count)
    """Pixel height, for images."""
    sha256: str | None = attrs.field(default=None, validator=_check.optional_string)
    """Hex digest of the bytes, to check the artifact store."""


ATTACHMENT_HINT = (
    "An Attachment refers to bytes kept in an artifact store: Attachment(id=<their key "
    "there>, name='photo.png', kind='image', media_type='image/png'); only id and name are "
    "required."
)
"""How to make an ``Attachment``: the end of each error about one made wrongly."""


def _explained(init: Callable[..., None]) -> Callable[..., None]:
    """``Attachment``'s attrs ``__init__``, whose bare ``TypeError`` (a missing, unknown or
    positional argument: ``Attachment("a.png")``) also says how to make one."""

    @functools.wraps(init)
    def __init__(self: Attachment, *args: Any, **kwargs: Any) -> None:
        try:
            init(self, *args, **kwargs)
        except TypeError as exc:
            if type(exc) is not TypeError:  # a validator's own error says what it wants
                raise
            why = str(exc).removeprefix("Attachment.__init__() ")
            raise TypeError(
                f"Attachment() takes keyword arguments only ({why}). {ATTACHMENT_HINT} The "
                "others: size (bytes), width, height (pixels) and sha256 (hex digest)."
            ) from None

    return __init__


# setattr: mypy keeps checking calls against the attrs signature.
setattr(Attachment, "__init__", _explained(Attachment.__init__))  # noqa: B010


def wrong_item(where: str, kind: type, item: object, got: str) -> str:
    """The error for ``item`` at ``where`` (``attachments[0]``) that is not a ``kind``;
    ``got`` is how the item is shown."""
    text = f"{where} must be {article(kind.__name__)} (got {got} that is {type_named(item)})"
    if kind is not Attachment:
        return f"{text}."
    if isinstance(item, Mapping):
        text += "; for a dict of its fields, write Attachment(**fields)"
    return f"{text}. {ATTACHMENT_HINT}"


@attrs.frozen(kw_only=True)
class BrowserElement:
    """A page element the user selected. Always untrusted page data."""

    __repr__ = value_repr

    url: str = attrs.field(validator=_check.non_empty_str)
    """The page's URL."""
    title: str = attrs.field(default="", validator=_check.string)
    """The page's title."""
    tag: str = attrs.field(default="", validator=_check.string)
    """The element's tag name (``div``)."""
    selector: str = attrs.field(default="", validator=_check.string)
    """A CSS selector that finds the element."""
    text: str = attrs.field(default="", validator=_check.string)
    """The element's visible text."""
    html: str = attrs.field(default="", validator=_check.string)
    """The element's outer HTML, size-limited by input validation."""

    @property
    def size(self) -> int:
        """Characters this element carries (what input limits count)."""
        return sum(
            len(s) for s in (self.url, self.title, self.tag, self.selector, self.text, self.html)
        )


@attrs.frozen(kw_only=True)
class Usage:
    """Token usage reported by a model call, counted the same way for every provider.

    ``input_tokens`` is the whole prompt; the cache counts are parts of it
    (Anthropic reports them beside its ``input_tokens``: the provider models
    add them up). ``reasoning_tokens`` is a part of ``output_tokens`` (Gemini
    reports thoughts beside its candidates: they are added up too).
    """

    __repr__ = value_repr

    input_tokens: int = attrs.field(default=0, validator=_check.count)
    """Prompt tokens, cached ones included."""
    output_tokens: int = attrs.field(default=0, validator=_check.count)
    """Completion tokens, reasoning included."""
    cache_read_tokens: int = attrs.field(default=0, validator=_check.count)
    """Prompt tokens served from the provider's cache (part of ``input_tokens``)."""
    cache_write_tokens: int = attrs.field(default=0, validator=_check.count)
    """Prompt tokens written to the provider's cache (part of ``input_tokens``; Anthropic bills
    them above the input price)."""
    reasoning_tokens: int = attrs.field(default=0, validator=_check.count)
    """Output tokens the model spent reasoning (part of ``output_tokens``)."""

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    @property
    def uncached_input_tokens(self) -> int:
        """Prompt tokens billed at the full input price (not read from or written to a cache)."""
        return max(0, self.input_tokens - self.cache_read_tokens - self.cache_write_tokens)


_ROLE_TYPES = frozenset(
    {
        (Role.USER, MessageType.TEXT),
        (Role.SYSTEM, MessageType.TEXT),
        (Role.ASSISTANT, MessageType.TEXT),
        (Role.ASSISTANT, MessageType.THOUGHT),
        (Role.TOOL, MessageType.TOOL_CALL),
        (Role.TOOL, MessageType.TOOL_RESULT),
    }
)


_NO_ITEMS: PVector[object] = pvector()


def _vector_of(kind: type[_T], field: str, value: object) -> PVector[_T]:
    if value is None or value is _NO_ITEMS or (type(value) in (tuple, list) and not value):
        return _NO_ITEMS  # type: ignore[return-value]
    if not isinstance(value, Iterable) or isinstance(value, (str, bytes)):
        raise InvalidMessage(f"Message.{field} must be a list (got {shown(value)}).")
    items = list(value)
    for i, item in enumerate(items):
        if not isinstance(item, kind):
            raise InvalidMessage(wrong_item(f"Message.{field}[{i}]", kind, item, shown(item)))
    if isinstance(value, PVectorABC):
        return value
    return pvector(items)


def _attachments(value: object) -> PVector[Attachment]:
    if value is _NO_ITEMS:  # the default, and the common case
        return _NO_ITEMS  # type: ignore[return-value]
    return _vector_of(Attachment, "attachments", value)


def _browser_elements(value: object) -> PVector[BrowserElement]:
    if value is _NO_ITEMS:
        return _NO_ITEMS  # type: ignore[return-value]
    return _vector_of(BrowserElement, "browser_elements", value)


@attrs.frozen(kw_only=True)
class Message:
    """One immutable message of a session (DESIGN §2).

    Build messages with ``new_message`` (which fills role, type, sender and
    initial status from a ``Category``) or directly; either way the fields are
    checked against each other and JSON-like fields are frozen.
    """

    __repr__ = value_repr

    id: str = attrs.field()
    """Stable id (``msg_…``), given by the caller, never by the reducer."""
    session_id: str = attrs.field()
    """The session this message belongs to."""
    role: Role = attrs.field(converter=_role)
    """Who produced it."""
    type: MessageType = attrs.field(converter=_type)
    """The payload's shape."""
    status: Status = attrs.field(converter=_status)
    """Where it is in its lifecycle."""
    created_at: datetime = attrs.field()
    """Wall-clock time it was created, from the event that added it."""
    content: str = attrs.field(default="")
    """Text (for a tool call: a human-readable rendering of the call)."""
    sender: str = attrs.field(default="")
    """Display sender: a user, the agent, ``Cronjob``, ``System``, ``Notification``, a tool."""
    parent_id: str | None = attrs.field(default=None)
    """The user message a turn output answers, or the tool call a result answers."""
    turn_id: str | None = attrs.field(default=None)
    """The turn that produced or consumed it; None until a turn claims an input."""
    chatbot_id: str = attrs.field(default="")
    """The platform (``cli``, ``discord`` …)."""
    channel_id: str = attrs.field(default="")
    """The platform's channel or thread."""
    tool_call: ToolCall | None = attrs.field(default=None)
    """The call, for ``tool_call`` messages."""
    tool_call_id: str | None = attrs.field(default=None)
    """The call a ``tool_result`` answers."""
    is_error: bool = attrs.field(default=False)
    """True when a tool result reports a failure."""
    error_type: str | None = attrs.field(default=None)
    """The failure's kind (``timeout``, ``ValueError`` …) for an error result."""
    attachments: PVector[Attachment] = attrs.field(default=_NO_ITEMS, converter=_attachments)
    """Files attached to it (references, never bytes)."""
    browser_elements: PVector[BrowserElement] = attrs.field(
        default=_NO_ITEMS, converter=_browser_elements
    )
    """Page elements the user selected (untrusted)."""
    metadata: PMap[str, FrozenJSON] = attrs.field(factory=dict, converter=freeze_metadata)
    """Frozen JSON-like extras (``is_cronjob``, ``turn_metrics``, ``tool_name`` …)."""
    event_seq: int | None = attrs.field(default=None)
    """Seq of the event that added it to its session (set by the reducer if None)."""
    active: bool = attrs.field(default=True)
    """False once rolled back; the payload is never rewritten."""

    def __attrs_post_init__(self) -> None:
        if not _at_a_glance(self):
            check_fields(self)
        if (self.role, self.type) not in _ROLE_TYPES:
            allowed = ", ".join(sorted(f"{r}/{t}" for r, t in _ROLE_TYPES))
            raise InvalidMessage(
                f"Message {self.id!r} has role/type {self.role}/{self.type}, which no message "
                f"category uses; expected one of {allowed}."
            )
        if (self.type is MessageType.TOOL_CALL) != (self.tool_call is not None):
            raise InvalidMessage(
                f"Message {self.id!r} of type {self.type} must "
                + (
                    "carry a ToolCall in tool_call."
                    if self.tool_call is None
                    else "not carry a tool_call."
                )
            )
        if (self.type is MessageType.TOOL_RESULT) != (self.tool_call_id is not None):
            raise InvalidMessage(
                f"Message {self.id!r} of type {self.type} must "
                + (
                    "name the call it answers in tool_call_id."
                    if self.tool_call_id is None
                    else "not carry a tool_call_id."
                )
            )
        if (
            self.is_error or self.error_type is not None
        ) and self.type is not MessageType.TOOL_RESULT:
            raise InvalidMessage(
                f"Message {self.id!r} of type {self.type} cannot carry is_error or error_type; "
                "only tool results report tool failures."
            )


_FIELD_CHECKS: dict[str, Callable[[Any, attrs.Attribute[Any], Any], None]] = {
    "id": _check.non_empty_str,
    "session_id": _check.session_id,
    "created_at": _check.aware,
    "content": _check.string,
    "sender": _check.string,
    "parent_id": _check.optional_string,
    "turn_id": _check.optional_string,
    "chatbot_id": _check.string,
    "channel_id": _check.string,
    "tool_call": attrs.validators.optional(attrs.validators.instance_of(ToolCall)),
    "tool_call_id": _check.optional_string,
    "is_error": attrs.validators.instance_of(bool),
    "error_type": _check.optional_string,
    "event_seq": _check.optional_count,
    "active": attrs.validators.instance_of(bool),
}
_VALIDATORS = tuple(
    (field, _FIELD_CHECKS[field.name])
    for field in attrs.fields(Message)
    if field.name in _FIELD_CHECKS
)


def core_at_a_glance(
    id_: object, session_id: object, created_at: object, content: object, sender: object
) -> bool:
    """True when the fields every message sets (id, session, time, content, sender) hold
    values their validators accept, told in one expression; False is no verdict (the
    validators then say what is wrong). Shared by ``Message`` and ``new_message``'s
    trusted path."""
    return (
        type(id_) is str
        and id_ != ""
        and id_.isascii()
        and type(session_id) is str
        and 0 < len(session_id) <= MAX_SESSION_ID_CHARS
        and session_id.isascii()
        and session_id.isprintable()
        and type(created_at) is datetime
        and (created_at.tzinfo is UTC or created_at.utcoffset() is not None)
        and type(content) is str
        and content.isascii()
        and type(sender) is str
        and sender.isascii()
    )


def _at_a_glance(message: Message) -> bool:
    """True when every checked field of ``message`` holds a value its validator accepts,
    told in one expression (a validator call per field was most of the cost of
    building a message). False is no verdict: ``check_fields`` then runs the
    validators one by one, in field order, and raises the error. A property test
    pins that both accept the same values.
    """
    id_, session_id, created_at = message.id, message.session_id, message.created_at
    parent_id, turn_id, tool_call_id = message.parent_id, message.turn_id, message.tool_call_id
    error_type, event_seq, tool_call = message.error_type, message.event_seq, message.tool_call
    content, sender, chatbot_id, channel_id = (
        message.content,
        message.sender,
        message.chatbot_id,
        message.channel_id,
    )
    return (
        core_at_a_glance(id_, session_id, created_at, content, sender)
        and (parent_id is None or (type(parent_id) is str and parent_id.isascii()))
        and (turn_id is None or (type(turn_id) is str and turn_id.isascii()))
        and type(chatbot_id) is str
        and chatbot_id.isascii()
        and type(channel_id) is str
        and channel_id.isascii()
        and (tool_call is None or type(tool_call) is ToolCall)
        and (tool_call_id is None or (type(tool_call_id) is str and tool_call_id.isascii()))
        and (message.is_error is False or message.is_error is True)
        and (error_type is None or (type(error_type) is str and error_type.isascii()))
        and (event_seq is None or (type(event_seq) is int and 0 <= event_seq <= MAX_SEQ))
        and (message.active is True or message.active is False)
    )


def check_fields(message: Message) -> None:
    """Run each field validator of ``message``, in field order (the general path of
    ``Message.__attrs_post_init__``'s one-expression check).

    Raises:
        InvalidMessage: a field holds a value it must not (the first such field).
        TypeError: ``tool_call``, ``is_error`` or ``active`` has the wrong type.
    """
    for field, check in _VALIDATORS:
        check(message, field, getattr(message, field.name))
