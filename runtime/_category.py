"""Message categories (DESIGN §2): what a message is, from its fields.

A category fixes a message's role, type, usual sender, initial status and
final statuses. ``category_of`` reads it back from a message; ``new_message``
builds a message of a category with those fields filled in.

Categories that share role and type are told apart by a metadata flag
(``is_cronjob``, ``is_compaction``, ``is_nudge``, ``is_crash_notice``,
``is_system_prompt``) or, for notifications, by the ``Notification`` sender.

One deliberate widening of DESIGN §2's table: cron prompts, compaction
requests and background alerts may end ``interrupted`` or ``error`` as well as
``processed``. A turn claims every pending input at once, so when a user
question and a cron prompt share a turn that is interrupted, both must end in
the same terminal status; ``processed`` would claim work that never finished.
"""

from __future__ import annotations

import enum
from datetime import UTC, datetime
from typing import Any, NoReturn

import attrs
from pyrsistent.typing import PMap

from ._json import FrozenJSON, freeze_map, freeze_metadata
from ._message import Message, MessageType, Role, Status, core_at_a_glance
from ._replace import replacer
from ._repr import value_repr

__all__ = [
    "AGENT_SENDER",
    "INPUT_CATEGORIES",
    "Category",
    "CategorySpec",
    "category_of",
    "new_message",
]

AGENT_SENDER = "Amber"
"""Default display name of the agent (a reply's ``sender``)."""

_INPUT_FINALS = frozenset({Status.PROCESSED, Status.INTERRUPTED, Status.ERROR})


@attrs.frozen(kw_only=True)
class CategorySpec:
    """The fixed fields of one message category."""

    __repr__ = value_repr

    role: Role
    """Role of every message of the category."""
    type: MessageType
    """Type of every message of the category."""
    sender: str | None
    """Sender it always has, or None when the caller names it (a user, a tool, the agent)."""
    flag: str | None
    """Metadata key set to True that marks the category, if role and type are shared."""
    initial: Status
    """Status it is added with."""
    finals: frozenset[Status]
    """Statuses it ends in once settled (DESIGN §2)."""
    stored: bool = True
    """False for the system prompt, which is virtual and never enters history."""


class Category(enum.Enum):
    """The message categories of DESIGN §2."""

    USER_QUESTION = CategorySpec(
        role=Role.USER, type=MessageType.TEXT, sender=None, flag=None,
        initial=Status.PENDING_AGENT, finals=_INPUT_FINALS,
    )  # fmt: skip
    """A person's input from a channel."""
    CRON_PROMPT = CategorySpec(
        role=Role.USER, type=MessageType.TEXT, sender="Cronjob", flag="is_cronjob",
        initial=Status.PENDING_AGENT, finals=_INPUT_FINALS,
    )  # fmt: skip
    """A prompt a scheduled job posts."""
    COMPACTION_REQUEST = CategorySpec(
        role=Role.USER, type=MessageType.TEXT, sender="System", flag="is_compaction",
        initial=Status.PENDING_AGENT, finals=_INPUT_FINALS,
    )  # fmt: skip
    """The virtual question posted when the user asks to compact history."""
    BACKGROUND_ALERT = CategorySpec(
        role=Role.SYSTEM, type=MessageType.TEXT, sender="System", flag=None,
        initial=Status.PENDING_AGENT, finals=_INPUT_FINALS,
    )  # fmt: skip
    """A wake-up posted when background work finishes; the model sees it as a user turn."""
    THOUGHT = CategorySpec(
        role=Role.ASSISTANT, type=MessageType.THOUGHT, sender=None, flag=None,
        initial=Status.RESPONDED, finals=frozenset({Status.DELIVERED}),
    )  # fmt: skip
    """The model's reasoning."""
    TOOL_CALL = CategorySpec(
        role=Role.TOOL, type=MessageType.TOOL_CALL, sender=None, flag=None,
        initial=Status.RESPONDED,
        finals=frozenset({Status.DELIVERED, Status.INTERRUPTED}),
    )  # fmt: skip
    """A tool call the model asked for."""
    TOOL_RESULT = CategorySpec(
        role=Role.TOOL, type=MessageType.TOOL_RESULT, sender=None, flag=None,
        initial=Status.RESPONDED, finals=frozenset({Status.DELIVERED}),
    )  # fmt: skip
    """What a tool returned (sender: the tool's name)."""
    REPLY = CategorySpec(
        role=Role.ASSISTANT, type=MessageType.TEXT, sender=None, flag=None,
        initial=Status.PENDING, finals=frozenset({Status.DELIVERED}),
    )  # fmt: skip
    """The agent's text for the user."""
    NOTIFICATION = CategorySpec(
        role=Role.ASSISTANT, type=MessageType.TEXT, sender="Notification", flag=None,
        initial=Status.PENDING, finals=frozenset({Status.DELIVERED}),
    )  # fmt: skip
    """A light notice for the user, never sent to the model."""
    CRASH_NOTICE = CategorySpec(
        role=Role.ASSISTANT, type=MessageType.TEXT, sender=None, flag="is_crash_notice",
        initial=Status.PENDING, finals=frozenset({Status.DELIVERED}),
    )  # fmt: skip
    """The notice a failed turn leaves for the user."""
    NUDGE = CategorySpec(
        role=Role.SYSTEM, type=MessageType.TEXT, sender="System", flag="is_nudge",
        initial=Status.RESPONDED, finals=frozenset({Status.RESPONDED}),
    )  # fmt: skip
    """The self-healing prompt added after an empty model response."""
    SYSTEM_PROMPT = CategorySpec(
        role=Role.SYSTEM, type=MessageType.TEXT, sender="System", flag="is_system_prompt",
        initial=Status.RESPONDED, finals=frozenset({Status.RESPONDED}), stored=False,
    )  # fmt: skip
    """The system instructions: virtual, passed to projections, never stored."""

    # Members are singletons compared by identity: hashing by identity (C) instead of
    # Enum's hash of the name (Python) speeds every set and dict lookup of a category.
    __hash__ = object.__hash__

    def __init__(self, spec: CategorySpec) -> None:
        # Kept as plain attributes: Enum's ``value`` is a descriptor, read on every message.
        self._spec = spec
        self._input = spec.initial is Status.PENDING_AGENT

    @property
    def spec(self) -> CategorySpec:
        """The category's fixed fields."""
        return self._spec

    @property
    def label(self) -> str:
        """Lower-case words for error messages (``tool result``)."""
        return self.name.lower().replace("_", " ")

    @property
    def is_input(self) -> bool:
        """True for the categories that wait for a turn (initial ``pending_agent``)."""
        return self._input


INPUT_CATEGORIES = frozenset(c for c in Category if c.is_input)
"""Categories a turn claims: user questions, cron prompts, compaction requests, alerts."""

_FLAGGED = {
    (spec.role, spec.type): [
        c for c in Category if (c.spec.role, c.spec.type) == (spec.role, spec.type) and c.spec.flag
    ]
    for spec in (c.spec for c in Category)
}


_NO_METADATA = freeze_map(None)


def category_of(message: Message) -> Category:
    """Return the category of ``message`` (DESIGN §2).

    Flags are checked first, then the ``Notification`` sender, then the
    role/type default. Role/type pairs are checked when the message is built,
    so every message has a category.
    """
    role, type_ = message.role, message.type
    metadata = message.metadata
    if metadata is not _NO_METADATA and metadata:  # most share the empty map: skip its len()
        for category in _FLAGGED[(role, type_)]:
            flag = category.spec.flag or ""
            # ``in`` first: a pmap's ``get`` of a missing key raises and catches a KeyError.
            if flag in metadata and metadata[flag] is True:
                return category
    return _DEFAULT[(role, type_, message.sender == "Notification")]


_DEFAULT: dict[tuple[Role, MessageType, bool], Category] = {}
for _category in Category:
    _spec = _category.spec
    if _spec.flag is None:
        _notification = _spec.sender == "Notification"
        _DEFAULT[(_spec.role, _spec.type, _notification)] = _category
        if not _notification:
            _DEFAULT.setdefault((_spec.role, _spec.type, True), _category)


def new_message(
    category: Category,
    *,
    id: str,
    session_id: str,
    created_at: datetime,
    content: str = "",
    sender: str | None = None,
    metadata: Any = None,
    **fields: Any,
) -> Message:
    """Build a message of ``category`` in its initial status.

    Role, type, status, the fixed sender and the category's metadata flag are
    filled in; ``sender`` defaults to ``AGENT_SENDER`` for agent output and
    must be given for user questions and tool results.

    Raises:
        InvalidMessage: the fields contradict the category.
    """
    spec = category._spec
    if spec.sender is not None:
        if sender is not None and sender != spec.sender:
            from ._errors import InvalidMessage  # local: keeps the import graph flat

            raise InvalidMessage(
                f"A {category.label} is always sent by {spec.sender!r} (got sender {sender!r})."
            )
        sender = spec.sender
    elif sender is None:
        if category in _NEEDS_SENDER:
            from ._errors import InvalidMessage

            who = (
                "the user's display name"
                if category is Category.USER_QUESTION
                else "the tool's name"
            )
            raise InvalidMessage(f"A {category.label} needs a sender: pass {who} as sender=.")
        sender = AGENT_SENDER
    if metadata is None and not fields and category in _TEXT_CATEGORIES:
        # The common case: a text message of plain fields, built by the trusted path
        # (it checks the caller's values itself; a property test pins it to Message).
        message = _text_message(
            id,
            session_id,
            spec.role,
            spec.type,
            spec.initial,
            created_at,
            content,
            sender,
            _FLAG_METADATA[category],
        )
        # Role, type and metadata are the category's own here: only a sender can make the
        # message read back as another category (a reply sent by "Notification"), and only
        # for the categories in _READ_BY_SENDER (or a sender that is not a plain str).
        if (category in _READ_BY_SENDER or type(sender) is not str) and category_of(
            message
        ) is not category:
            _misread(message, category)
        return message
    meta = metadata
    if spec.flag is not None:
        meta = dict(metadata or {})
        meta[spec.flag] = True
    message = Message(
        id=id,
        session_id=session_id,
        role=spec.role,
        type=spec.type,
        status=spec.initial,
        created_at=created_at,
        content=content,
        sender=sender,
        metadata=meta,
        **fields,
    )
    if category_of(message) is not category:
        _misread(message, category)
    return message


def _misread(message: Message, category: Category) -> NoReturn:
    from ._errors import InvalidMessage

    raise InvalidMessage(
        f"Message {message.id!r} was built as a {category.label} but reads back as a "
        f"{category_of(message).label}; check its sender and metadata flags."
    )


_TOOL_CATEGORIES = frozenset(
    c for c in Category if c.spec.type in (MessageType.TOOL_CALL, MessageType.TOOL_RESULT)
)
_TEXT_CATEGORIES = frozenset(Category) - _TOOL_CATEGORIES
"""The categories ``new_message`` builds by its trusted path when given no other fields."""
_NEEDS_SENDER = frozenset({Category.USER_QUESTION, Category.TOOL_RESULT})
"""Categories whose sender the caller must name (a person, a tool)."""
_FLAG_METADATA = {
    c: freeze_metadata(None if c.spec.flag is None else {c.spec.flag: True}) for c in Category
}
"""The metadata ``new_message`` gives a category when the caller gives none (frozen once)."""


_TEMPLATE = Message(
    id="template",
    session_id="template",
    role=Role.USER,
    type=MessageType.TEXT,
    status=Status.PENDING_AGENT,
    created_at=datetime(2000, 1, 1, tzinfo=UTC),
)
_from_template = replacer(
    Message, "id", "session_id", "role", "type", "status", "created_at", "content", "sender",
    "metadata",
)  # fmt: skip


def _text_message(
    id: object,
    session_id: object,
    role: Role,
    type_: MessageType,
    status: Status,
    created_at: object,
    content: object,
    sender: object,
    metadata: PMap[str, FrozenJSON],
) -> Message:
    """``Message(...)`` of these fields, every other field at its default, sooner.

    For ``new_message``, which vouches for what it made itself: ``role`` and
    ``type_`` are members of a pair some category uses, ``type_`` is text or
    thought (no tool call, no tool result), ``status`` is a member and
    ``metadata`` is frozen. The caller's values (id, session id, time,
    content, sender) are checked here as ``Message`` checks them; anything
    not accepted at a glance is built by ``Message`` itself, which raises the
    same errors as ever. A property test pins both paths equal.
    """
    if core_at_a_glance(id, session_id, created_at, content, sender):
        return _from_template(
            _TEMPLATE, id, session_id, role, type_, status, created_at, content, sender, metadata
        )
    return Message(
        id=id,  # type: ignore[arg-type]
        session_id=session_id,  # type: ignore[arg-type]
        role=role,
        type=type_,
        status=status,
        created_at=created_at,  # type: ignore[arg-type]
        content=content,  # type: ignore[arg-type]
        sender=sender,  # type: ignore[arg-type]
        metadata=metadata,
    )


def _read_by_sender(category: Category) -> bool:
    """Whether a message of ``category`` built by the trusted path (its role, type and flag
    metadata) reads back as another category for some sender: ``category_of`` looks at
    nothing else of such a message but ``sender == "Notification"``, so both answers are
    tried."""
    spec = category.spec
    at, metadata = _TEMPLATE.created_at, _FLAG_METADATA[category]
    built = (
        _text_message("m", "s", spec.role, spec.type, spec.initial, at, "", sender, metadata)
        for sender in ("", "Notification")
    )
    return any(category_of(message) is not category for message in built)


_READ_BY_SENDER = frozenset(c for c in _TEXT_CATEGORIES if _read_by_sender(c))
"""The text categories whose messages ``new_message`` reads back (see ``_read_by_sender``)."""
