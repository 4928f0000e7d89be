"""Events: every change to a session, as a frozen value (DESIGN §4).

Each event carries what the reducer needs and nothing it must invent: the
session id, its seq (the session's next, gapless), the wall-clock time ``at``,
ids, and monotonic durations measured by whoever ran the work. ``apply`` reads
no clock and makes no id.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar

import attrs
from pyrsistent import pvector
from pyrsistent.typing import PMap, PVector

from ._article import article, type_named
from ._audit import AuditCall, AuditStatus, audit_calls, audit_retries
from ._checks import EVENT_CHECKS as _check
from ._checks import to_milliseconds
from ._errors import InvalidEvent
from ._json import FrozenJSON, freeze_metadata, freeze_metrics
from ._message import Message, Status, Usage
from ._replace import slot_setter
from ._repr import value_repr
from ._request import RequestRecord
from ._retry import ModelRetry
from ._state import new_vector
from ._storable import MAX_SEQ, shown
from ._turn import Turn

__all__ = [
    "EVENT_TYPES",
    "ApprovalDecided",
    "ApprovalRequested",
    "BranchImported",
    "Event",
    "MessageAdded",
    "MetadataUpdated",
    "ModelCallFinished",
    "ModelCallStarted",
    "OrphanRecovered",
    "RolledBack",
    "StatusChanged",
    "TurnEnded",
    "TurnOutcome",
    "TurnStarted",
    "reports_error",
]


def _seq(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is int and 0 <= value <= MAX_SEQ:
        return  # the common case, checked fast
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidEvent(
            f"{type(instance).__name__}.{attribute.name} must be a non-negative int "
            f"(got {shown(value)} that is {type_named(value)})."
        )
    if value > MAX_SEQ:
        raise InvalidEvent(
            f"{type(instance).__name__}.{attribute.name} must be a non-negative int below 2**63 "
            f"(got {shown(value)}); a store keeps seqs in signed 64-bit columns."
        )


def _positive(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is int and 0 < value <= MAX_SEQ:
        return  # the common case, checked fast
    _seq(instance, attribute, value)
    if value == 0:
        raise InvalidEvent(
            f"{type(instance).__name__}.{attribute.name} must be at least 1 (got 0); "
            "a session's first event has seq 1."
        )


def _duration(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise InvalidEvent(
            f"{type(instance).__name__}.{attribute.name} must be a non-negative number of "
            f"milliseconds or None (got {shown(value)}); measure it with time.monotonic()."
        )


def _dollars(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    # Finite: JSON holds no infinity (it was stored as null, and read back as no cost).
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 0 <= value < float("inf")
    ):
        raise InvalidEvent(
            f"{type(instance).__name__}.{attribute.name} must be a finite, non-negative number "
            f"of US dollars or None (got {shown(value)})."
        )


def _instance(kind: type) -> Any:
    def check(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if type(value) is not kind and not isinstance(value, kind):
            raise InvalidEvent(
                f"{type(instance).__name__}.{attribute.name} must be {article(kind.__name__)} "
                f"(got {shown(value)} that is {type_named(value)})."
            )

    return check


def _optional_message(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not isinstance(value, Message):
        raise InvalidEvent(
            f"{type(instance).__name__}.{attribute.name} must be a Message or None "
            f"(got {shown(value)} that is {type_named(value)})."
        )


@attrs.frozen
class Checked:
    """Items the runtime checked already (a state's own vector): taken as they are.

    Only ``Timeline.fork`` makes these, from a state ``apply`` built; never wrap caller
    input.
    """

    __repr__ = value_repr

    items: Any
    """The sequence, shared, not copied."""


def _messages(value: object) -> PVector[Message]:
    if type(value) is Checked:
        return value.items  # type: ignore[no-any-return]
    # A pure-Python vector, like a state's: equal vectors hash equal whichever made them.
    items: PVector[Any] = new_vector(value)  # type: ignore[arg-type]
    for i, item in enumerate(items):
        if not isinstance(item, Message):
            raise InvalidEvent(
                f"messages[{i}] must be a Message (got {shown(item)} that is {type_named(item)})."
            )
    return items


def _turns(value: object) -> Sequence[Turn]:
    if type(value) is Checked:
        return value.items  # type: ignore[no-any-return]
    items: PVector[Any] = new_vector(value)  # type: ignore[arg-type]
    for i, item in enumerate(items):
        if not isinstance(item, Turn):
            raise InvalidEvent(
                f"turns[{i}] must be a Turn (got {shown(item)} that is {type_named(item)})."
            )
    return items


@attrs.frozen(kw_only=True)
class Event:
    """Fields every event has. Use a subclass; ``kind`` names it in JSON."""

    kind: ClassVar[str] = "event"

    __repr__ = value_repr

    session_id: str = attrs.field(validator=_check.session_id)
    """The session it changes."""
    seq: int = attrs.field(validator=_positive)
    """Its place in the session's log: the previous event's seq plus one."""
    at: datetime = attrs.field(validator=_check.aware)
    """Wall-clock time it happened (display and recovery age; never ordering)."""


@attrs.frozen(kw_only=True, init=False)
class MessageAdded(Event):
    """A message joins the session in its category's initial status."""

    kind: ClassVar[str] = "message_added"

    __repr__ = value_repr

    message: Message = attrs.field(validator=_instance(Message))
    """The message; its ``event_seq`` is stamped with this event's seq if None."""

    def __init__(self, *, session_id: str, seq: int, at: datetime, message: Message) -> None:
        # Every step makes one: the fields are told valid at a glance when the event
        # repeats what its message holds (a Message checked its session id and time when
        # it was built, with the same checks), else attrs' __init__ runs each validator.
        # A property test pins both paths equal.
        if (
            type(message) is Message
            and (
                session_id is message.session_id
                or (
                    type(session_id) is str
                    and type(message.session_id) is str
                    and session_id == message.session_id
                )
            )
            and type(seq) is int
            and 0 < seq <= MAX_SEQ
            and (at is message.created_at or (type(at) is datetime and at.tzinfo is UTC))
        ):
            _set_session_id(self, session_id)
            _set_seq(self, seq)
            _set_at(self, at)
            _set_message(self, message)
        else:
            self.__attrs_init__(session_id=session_id, seq=seq, at=at, message=message)


_set_session_id, _set_seq, _set_at, _set_message = (
    slot_setter(MessageAdded, name) for name in ("session_id", "seq", "at", "message")
)


@attrs.frozen(kw_only=True)
class StatusChanged(Event):
    """Compare-and-set of one message's status (deliveries)."""

    kind: ClassVar[str] = "status_changed"

    __repr__ = value_repr

    message_id: str = attrs.field(validator=_check.non_empty_str)
    """The message to change."""
    expected: Status = attrs.field(converter=Status)
    """The status it must have now, or the change is rejected."""
    status: Status = attrs.field(converter=Status)
    """The status it gets."""


@attrs.frozen(kw_only=True)
class MetadataUpdated(Event):
    """Keys set in one message's metadata (a platform message id, say)."""

    kind: ClassVar[str] = "metadata_updated"

    __repr__ = value_repr

    message_id: str = attrs.field(validator=_check.non_empty_str)
    """The message to change."""
    metadata: PMap[str, FrozenJSON] = attrs.field(converter=freeze_metadata)
    """Keys to set (merged over the existing ones)."""


@attrs.frozen(kw_only=True)
class TurnStarted(Event):
    """A turn begins and claims every pending input of the session."""

    kind: ClassVar[str] = "turn_started"

    __repr__ = value_repr

    turn_id: str = attrs.field(validator=_check.non_empty_str)
    """The new turn's id (unique in the session)."""
    runner: str | None = None
    """The runner (one runtime's incarnation) that starts it, recorded with the turn."""


class TurnOutcome(enum.StrEnum):
    """How a turn ended; its claimed inputs take this status."""

    PROCESSED = "processed"
    """The turn finished with a reply."""
    INTERRUPTED = "interrupted"
    """New input or a user cancelled it."""
    ERROR = "error"
    """The model or the runtime failed."""


@attrs.frozen(kw_only=True)
class TurnEnded(Event):
    """The active turn ends; its inputs and unanswered tool calls are settled.

    On ``interrupted``, the turn's unanswered tool calls become interrupted.
    ``partial`` holds output cut short (reasoning or reply text streamed so
    far): it is kept, marked ``metadata["interrupted"] = True``. ``notice``, the
    crash notice of a failed turn, is added after it.
    """

    kind: ClassVar[str] = "turn_ended"

    __repr__ = value_repr

    turn_id: str = attrs.field(validator=_check.non_empty_str)
    """The turn that ends (must be the active one)."""
    outcome: TurnOutcome = attrs.field(converter=TurnOutcome)
    """How it ended."""
    reason: str | None = attrs.field(default=None, validator=_check.optional_string)
    """Why, for people (``interrupted by msg_7``, the model's error)."""
    metrics: PMap[str, FrozenJSON] = attrs.field(factory=dict, converter=freeze_metrics)
    """Turn metrics (tool calls, tokens, time …)."""
    duration_ms: float | None = attrs.field(
        default=None, converter=to_milliseconds, validator=_check.milliseconds
    )
    """Monotonic duration of the turn, measured by the runner."""
    partial: PVector[Message] = attrs.field(factory=pvector, converter=_messages)
    """Output cut short by an interrupt or error: thoughts and replies of this turn."""
    notice: Message | None = attrs.field(default=None, validator=_optional_message)
    """The crash notice telling the user the turn failed (a ``crash_notice`` of this turn),
    added after ``partial``: what streamed before the failure comes first. (Logs written
    before this field added the notice with a ``MessageAdded`` before the turn's end.)"""


@attrs.frozen(kw_only=True)
class OrphanRecovered(Event):
    """A turn whose runner died (or stopped) is abandoned; its inputs go back to pending.

    With ``calls_interrupted`` its tool calls that have no result become
    interrupted, as an interrupted turn's do, and the recovered turn lists no
    open call.
    """

    kind: ClassVar[str] = "orphan_recovered"

    __repr__ = value_repr

    turn_id: str = attrs.field(validator=_check.non_empty_str)
    """The abandoned turn (must be the active one)."""
    reason: str | None = attrs.field(default=None, validator=_check.optional_string)
    """Why (``processing for 412 s after restart``)."""
    calls_interrupted: bool = attrs.field(default=False, validator=_check.boolean)
    """True when the turn's unanswered tool calls become interrupted (a channel edits their
    ⏳ lines to ⏹). Every recovery of this Amber sets it; logs written before this field
    left those calls as they were, still listed open, and replay so."""


@attrs.frozen(kw_only=True)
class BranchImported(Event):
    """A new session starts from another session's state (a fork).

    Must be the first event of an empty session. Messages keep their ids and
    payloads. A message of another session keeps its ``session_id`` and
    ``event_seq`` (its provenance: the session and event that added it) when
    this event has seq 1, as every fork's has; a message of this session, or any
    message of an import at a later seq, gets this event's seq (and this
    session's id).
    """

    kind: ClassVar[str] = "branch_imported"

    __repr__ = value_repr

    source_session_id: str = attrs.field(validator=_check.session_id)
    """The session it was forked from."""
    source_seq: int = attrs.field(validator=_seq)
    """The source's seq it was forked at."""
    messages: PVector[Message] = attrs.field(factory=new_vector, converter=_messages)
    """The source's messages at that seq, as they are there (a fork shares the source's
    vector; stores written before forks shared it hold them rewritten to this session)."""
    turns: Sequence[Turn] = attrs.field(factory=new_vector, converter=_turns)
    """The source's turns at that seq, in start order (a fork's is a read-only view of the
    source's turns)."""


@attrs.frozen(kw_only=True)
class RolledBack(Event):
    """Messages added after the seq it rolls back to become inactive; payloads are kept."""

    kind: ClassVar[str] = "rolled_back"

    __repr__ = value_repr

    to_seq: int = attrs.field(validator=_seq)
    """The last seq whose messages stay active."""
    reason: str | None = attrs.field(default=None, validator=_check.optional_string)
    """Why, for people."""


def _finish_status(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value not in (AuditStatus.COMPLETED, AuditStatus.FAILED):
        raise InvalidEvent(
            f"ModelCallFinished.status must be completed or failed (got {shown(value)}); a call is "
            "interrupted or abandoned by the TurnEnded or OrphanRecovered that ends its turn."
        )


def _optional_usage(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not isinstance(value, Usage):
        raise InvalidEvent(
            f"{type(instance).__name__}.{attribute.name} must be a Usage or None "
            f"(got {shown(value)})."
        )


@attrs.frozen(kw_only=True)
class ModelCallStarted(Event):
    """A model call started: its audit row opens, with the status running.

    Starting again with the same ``source_key``, operation id and sequence
    changes nothing; the same key with another operation id or sequence is
    rejected (``AuditConflict``), and so is an operation id that another call
    of the same turn and role has (ids are unique per turn and role: a
    provider may reuse its message ids in later turns).
    """

    kind: ClassVar[str] = "model_call_started"

    __repr__ = value_repr

    operation_id: str = attrs.field(validator=_check.non_empty_str)
    """The provider's message id, or the runtime's model-run id."""
    source_key: str = attrs.field(validator=_check.non_empty_str)
    """The runtime's key for the call (``<turn id>#<call index>``)."""
    turn_id: str = attrs.field(validator=_check.non_empty_str)
    """The active turn making the call."""
    sequence: int = attrs.field(validator=_positive)
    """The session's next call number (the last row's plus one)."""
    role: str = attrs.field(default="assistant", validator=_check.non_empty_str)
    """Who calls."""
    model: str | None = attrs.field(default=None, validator=_check.optional_string)
    """The model's name, if known."""
    request: RequestRecord | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(attrs.validators.instance_of(RequestRecord)),
    )
    """What the request was built from, if the model reported it."""
    started_at: datetime | None = attrs.field(
        default=None, validator=attrs.validators.optional(_check.aware)
    )
    """When the call started, if before this event (the row's ``started_at``; else ``at``):
    a call cut off before its stream's first chunk is opened by the event that ends its
    turn, and this is the time of the step that called the model."""

    def __attrs_post_init__(self) -> None:
        if self.started_at is not None and self.started_at > self.at:
            raise InvalidEvent(
                f"ModelCallStarted seq {self.seq}: started_at {self.started_at.isoformat()} is "
                f"after the event's at {self.at.isoformat()}; a call starts before the event "
                "that opens its row, or leave started_at None."
            )


@attrs.frozen(kw_only=True)
class ModelCallFinished(Event):
    """A model call ended, completed or failed, with what it said and what it cost."""

    kind: ClassVar[str] = "model_call_finished"

    __repr__ = value_repr

    operation_id: str = attrs.field(validator=_check.non_empty_str)
    """The call's operation id."""
    status: AuditStatus = attrs.field(converter=AuditStatus, validator=_finish_status)
    """``completed`` or ``failed``."""
    duration_ms: float | None = attrs.field(
        default=None, converter=to_milliseconds, validator=_check.milliseconds
    )
    """Monotonic duration, measured where the call ran."""
    usage: Usage | None = attrs.field(default=None, validator=_optional_usage)
    """Tokens used, as reported."""
    content: str = attrs.field(default="", validator=_check.string)
    """The text the model wrote."""
    reasoning: str = attrs.field(default="", validator=_check.string)
    """The reasoning it wrote."""
    tool_calls: PVector[AuditCall] = attrs.field(factory=pvector, converter=audit_calls)
    """The tool calls it asked for, as written."""
    stop_reason: str | None = attrs.field(default=None, validator=_check.optional_string)
    """Why the provider stopped."""
    error: str | None = attrs.field(default=None, validator=_check.optional_string)
    """Why it failed."""
    source_key: str | None = attrs.field(default=None, validator=_check.optional_string)
    """The call's source key (its row); None (events stored before it existed) finds the
    running row of the active turn with ``operation_id``."""
    response_model: str | None = None
    """The model that answered, as the provider named it."""
    retries: PVector[ModelRetry] = attrs.field(factory=pvector, converter=audit_retries)
    """Attempts the provider refused before the call streamed."""
    cost_usd: float | None = attrs.field(default=None, validator=_dollars)
    """What the call cost in US dollars, if known."""


@attrs.frozen(kw_only=True)
class ApprovalRequested(Event):
    """A tool call of the active turn waits for a person's approval before it runs."""

    kind: ClassVar[str] = "approval_requested"

    __repr__ = value_repr

    turn_id: str = attrs.field(validator=_check.non_empty_str)
    """The active turn."""
    call_id: str = attrs.field(validator=_check.non_empty_str)
    """The tool call (an open call of the turn)."""


@attrs.frozen(kw_only=True)
class ApprovalDecided(Event):
    """A person approved or denied a tool call that waited (or its time ran out)."""

    kind: ClassVar[str] = "approval_decided"

    __repr__ = value_repr

    turn_id: str = attrs.field(validator=_check.non_empty_str)
    """The active turn."""
    call_id: str = attrs.field(validator=_check.non_empty_str)
    """The tool call; it must wait for approval."""
    approved: bool = attrs.field(validator=_check.boolean)
    """True: it runs. False: it is answered with an error result saying why."""
    reason: str | None = attrs.field(default=None, validator=_check.optional_string)
    """Why (a denial's reason, for the model and for people)."""
    by: str | None = attrs.field(default=None, validator=_check.optional_string)
    """Who decided, if known (a person's name, ``timeout``)."""


EVENT_TYPES: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (
        MessageAdded,
        StatusChanged,
        MetadataUpdated,
        TurnStarted,
        TurnEnded,
        OrphanRecovered,
        BranchImported,
        RolledBack,
        ModelCallStarted,
        ModelCallFinished,
        ApprovalRequested,
        ApprovalDecided,
    )
}
"""Every event class by its ``kind``."""


def reports_error(event: Event) -> bool:
    """Whether ``event`` reports an error: a turn that ended in error, a failed model call,
    or a tool result that is an error (what ``amber inspect`` and the web viewer mark)."""
    if isinstance(event, MessageAdded):
        return event.message.is_error
    if isinstance(event, TurnEnded):
        return event.outcome is TurnOutcome.ERROR
    if isinstance(event, ModelCallFinished):
        return event.status is AuditStatus.FAILED
    return False
