"""What the turn machine is told: a closed set of frozen inputs, each with its own time.

Every input carries ``at`` (wall-clock time, stamped on the events it leads
to) and ``mono`` (monotonic seconds, for durations), taken where the thing
happened: a chunk is stamped by the effect that received it, not by the
actor that reads it later. ``step`` reads no clock: the same inputs give the
same events in any process, and a simulator can feed it simulated time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

import attrs
from pyrsistent import pvector
from pyrsistent.typing import PVector

from ._category import Category, category_of
from ._chunks import ModelRetry
from ._message import Attachment, BrowserElement, Message, Status
from ._outcome import ToolOutcome
from ._stream import Chunk

__all__ = [
    "ApprovalGiven",
    "Delivered",
    "Draft",
    "Input",
    "InputArrived",
    "Interrupt",
    "Loaded",
    "ModelChunk",
    "ModelEnded",
    "OutputPosted",
    "Resume",
    "RunnerFailed",
    "Stopping",
    "TimerFired",
    "ToolDone",
]


def _attachments(value: Iterable[Attachment]) -> PVector[Attachment]:
    return pvector(value)


def _ids(value: Iterable[str]) -> frozenset[str]:
    return frozenset(value)


def _elements(value: Iterable[BrowserElement]) -> PVector[BrowserElement]:
    return pvector(value)


@attrs.frozen(kw_only=True)
class Draft:
    """A message from outside a turn, before it has an id and a seq (the machine gives both)."""

    category: Category
    """An input category (user question, cron prompt, compaction request, alert) or a
    notification."""
    content: str = ""
    """Its text."""
    sender: str | None = None
    """Who sent it (the person's display name; fixed senders are filled in)."""
    chatbot_id: str = ""
    """Platform it came from or goes to."""
    channel_id: str = ""
    """Channel or thread on that platform."""
    attachments: PVector[Attachment] = attrs.field(factory=pvector, converter=_attachments)
    """Attached files (references into the artifact store)."""
    browser_elements: PVector[BrowserElement] = attrs.field(factory=pvector, converter=_elements)
    """Selected page elements."""
    metadata: Mapping[str, Any] = attrs.field(factory=dict)
    """Extras, JSON-like (frozen when the message is built)."""

    @classmethod
    def of(cls, message: Message) -> Draft:
        """The draft of ``message`` (one built only to check the input: the machine gives
        the real one its id, seq and time)."""
        category = category_of(message)
        flag = category.spec.flag
        return cls(
            category=category,
            content=message.content,
            sender=message.sender,
            chatbot_id=message.chatbot_id,
            channel_id=message.channel_id,
            attachments=message.attachments,
            browser_elements=message.browser_elements,
            metadata={k: v for k, v in message.metadata.items() if k != flag},
        )


@attrs.frozen(kw_only=True)
class Input:
    """Fields every input has. Use a subclass."""

    at: datetime
    """Wall-clock time it happened (stamped on the events it leads to)."""
    mono: float
    """Monotonic seconds when it happened (durations are differences of these)."""


@attrs.frozen(kw_only=True)
class InputArrived(Input):
    """A person's message, a cron prompt, a compaction request or an alert: it starts a turn,
    interrupting the running one."""

    draft: Draft
    """The input, validated."""


@attrs.frozen(kw_only=True)
class OutputPosted(Input):
    """A notification for the user that needs no turn (delivered, never sent to the model)."""

    draft: Draft
    """The notification."""


@attrs.frozen(kw_only=True)
class Resume(Input):
    """Start a turn if input waits and none runs (the machine asks for it after new input)."""


@attrs.frozen(kw_only=True)
class ModelChunk(Input):
    """A chunk of the model call ``run_id``."""

    run_id: str
    """The model run it belongs to (chunks of cancelled runs are ignored)."""
    chunk: Chunk
    """The chunk."""


@attrs.frozen(kw_only=True)
class ModelEnded(Input):
    """The model call ``run_id`` ended: its stream finished, or it failed."""

    run_id: str
    """The model run."""
    error: str | None = None
    """Why it failed (``ModelFailure: rate limited``); None when the stream finished."""
    error_type: str | None = None
    """The failure's class name (``ModelStreamBroken``, ``ContextLengthError`` …), if known;
    for a subclass of a classified model error, that error's (``model_error_type``). The
    user's notice names it (``model_error_notice``)."""
    retries: tuple[ModelRetry, ...] = ()
    """Attempts the provider refused before the call failed (a ``ModelError``'s ``retries``)."""


@attrs.frozen(kw_only=True)
class ToolDone(Input):
    """A tool call finished (its outcome may be an error)."""

    call_id: str
    """The tool call id."""
    outcome: ToolOutcome
    """What the tool gave back."""


@attrs.frozen(kw_only=True)
class Interrupt(Input):
    """Interrupt the running turn (a user's cancel, an embedding program's)."""

    reason: str = "interrupted by the user"
    """Why, for people."""
    input_id: str | None = None
    """Only the turn that claims this input (a caller that stopped waiting for its
    answer), once no other input it claims is wanted (each one's caller gave up too); one
    not claimed yet ends interrupted as soon as a turn claims it alone."""


@attrs.frozen(kw_only=True)
class ApprovalGiven(Input):
    """A person approved or denied a tool call that waits for approval."""

    call_id: str
    """The tool call."""
    approved: bool
    """True: it runs. False: the model gets an error result saying it was denied, and why."""
    reason: str | None = None
    """Why (a denial's reason, shown to the model)."""
    by: str | None = None
    """Who decided, if known."""


@attrs.frozen(kw_only=True)
class TimerFired(Input):
    """A timer the machine set (``SetTimer``) fired."""

    name: str
    """The timer's name (``idle``, ``orphan``, ``model:<run id>``)."""


@attrs.frozen(kw_only=True)
class Delivered(Input):
    """An adapter sent or absorbed a message."""

    message_id: str
    """The message."""
    expected: Status
    """The status the adapter saw (the change is a compare-and-set on it)."""


def _results(value: Iterable[tuple[ToolDone, float]]) -> tuple[tuple[ToolDone, float], ...]:
    return tuple(value)


def _runs(value: Iterable[tuple[str, float]]) -> tuple[tuple[str, float], ...]:
    return tuple(value)


@attrs.frozen(kw_only=True)
class Loaded(Input):
    """The session was (re)loaded from the store: recover what a dead runner left."""

    runner_gone: bool = False
    """True when the runner of an active turn is known to be dead (its turn is recovered
    at once instead of after ``recover_after``)."""
    foreign_write: bool = False
    """True when this runner reloads the session because another process wrote to it
    (input, or a decision stored for it) while its turn ran: the turn it ran is recovered
    at once, and its reason says so."""
    results: tuple[tuple[ToolDone, float], ...] = attrs.field(default=(), converter=_results)
    """Tool results this runner held when it reloaded (the write of one met another
    process's), each with the monotonic start of its run: each answers its call before
    the turn is recovered, so a call that ran is not marked as one that may have run."""
    draining: tuple[tuple[str, float], ...] | None = attrs.field(
        default=None, converter=attrs.converters.optional(_runs)
    )
    """Set when this runner reloads while a stop waits for its turn's tool runs
    (``Stopping.draining``): the runs it still waits for, each with its monotonic start.
    The reloaded turn waits on for them as the stop did (no turn starts, no model is
    called, input stored meanwhile waits for the next start), records their results as
    they come, and is given back once the last is in. None: no stop waits."""
    cancelled: frozenset[str] = attrs.field(default=frozenset(), converter=_ids)
    """Inputs whose caller gave up, as this runner's machine held them when it reloaded
    (``SessionMachine.cancelled``): they stay given up. Ids no input waits for and the
    active turn does not claim are dropped."""


@attrs.frozen(kw_only=True)
class Stopping(Input):
    """The runtime stops: a running turn gives its input back to pending.

    With ``draining``, the turn's tool runs of those ids run on (the shell cannot
    cancel them: sync tools, in their threads) while every other run is cancelled; their
    results are recorded as they come, and once the last is in the turn gives its input
    back (or, if it then only waits for a person's approval, waits on). A later
    ``Stopping`` without ``draining`` ends the wait: what still runs is recorded
    interrupted, and the turn's reason says it may have run.
    """

    draining: frozenset[str] = attrs.field(default=frozenset(), converter=_ids)
    """Tool call ids whose runs the stop waits for."""


@attrs.frozen(kw_only=True)
class RunnerFailed(Input):
    """The shell failed handling an input (a store that cannot write, say): fail the turn."""

    reason: str
    """What failed."""
