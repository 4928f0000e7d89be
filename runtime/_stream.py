"""What a model streams, and what it is asked: chunks, requests and their assembly (DESIGN §7).

A model (``actors.Model``) is anything with an async ``stream(request)`` that
yields chunks:
``MessageStart`` (with the provider's message id, if it has one),
``TextDelta`` and ``ReasoningDelta`` pieces, ``ToolCallDelta`` fragments keyed
by tool index (id, name and pieces of the argument JSON), and
``MessageFinish`` with the usage. An exception raised by the stream is a model
failure. ``StreamAssembler`` folds the chunks into a ``ModelResponse``; the
session actor forwards the deltas live and stores only the assembled result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import orjson
from pyrsistent import pmap, pvector
from pyrsistent.typing import PMap, PVector

from ._errors import StreamError
from ._message import Usage
from ._replace import replace
from ._state import SessionState
from ._view import ModelView

__all__ = [
    "AssembledCall",
    "Assembly",
    "Chunk",
    "MessageFinish",
    "MessageStart",
    "ModelRequest",
    "ModelResponse",
    "ReasoningDelta",
    "StreamAssembler",
    "TextDelta",
    "ToolCallDelta",
    "ToolSpec",
]

_EMPTY_PIECES: PVector[str] = pvector()


@attrs.frozen(kw_only=True)
class MessageStart:
    """A model message begins."""

    id: str | None = None
    """The provider's message id; None when it gives none."""


@attrs.frozen(kw_only=True)
class TextDelta:
    """A piece of reply text."""

    text: str
    """The piece."""


@attrs.frozen(kw_only=True)
class ReasoningDelta:
    """A piece of the model's reasoning."""

    text: str
    """The piece."""


@attrs.frozen(kw_only=True)
class ToolCallDelta:
    """A fragment of one tool call; fragments with the same ``index`` make one call."""

    index: int
    """The call's position in the message (0, 1, …)."""
    id: str | None = None
    """The call id (usually in the first fragment only)."""
    name: str | None = None
    """The tool name (usually in the first fragment only)."""
    arguments: str = ""
    """The next piece of the argument JSON."""


@attrs.frozen(kw_only=True)
class MessageFinish:
    """The model message ends."""

    usage: Usage | None = None
    """Tokens the call used, if the provider reports them."""
    stop_reason: str | None = None
    """Why the provider stopped (``end_turn``, ``tool_use``, ``length`` …)."""


Chunk = MessageStart | TextDelta | ReasoningDelta | ToolCallDelta | MessageFinish
"""Anything a model stream yields."""


@attrs.frozen(kw_only=True)
class ToolSpec:
    """What the model is told about one tool."""

    name: str
    """The name the model calls it by."""
    description: str
    """What it does, for the model."""
    parameters: Mapping[str, Any]
    """JSON schema of its arguments (an object schema)."""
    needs_approval: bool = False
    """True: each call waits for a person to approve it before it runs (the model is not
    told; ``ApprovalRequested`` records the wait)."""


@attrs.frozen(kw_only=True)
class ModelRequest:
    """One model call of a turn."""

    session_id: str
    """The session."""
    turn_id: str
    """The turn the call belongs to."""
    call_index: int
    """0 for the turn's first call, 1 for the call after its tool results, …"""
    state: SessionState
    """The session state the view was built from."""
    view: ModelView
    """The model's view of that state (``clean_history``)."""
    tools: tuple[ToolSpec, ...] = ()
    """The tools the model may call."""
    system: str | None = None
    """The system prompt."""


@attrs.frozen(kw_only=True)
class AssembledCall:
    """One tool call, assembled from its fragments."""

    index: int
    """Its position in the message."""
    id: str
    """Its call id (made up from the message id and index if the stream gave none)."""
    name: str
    """The tool asked for."""
    arguments_json: str
    """The argument JSON as the model wrote it."""

    def arguments(self) -> dict[str, Any]:
        """The parsed arguments.

        Raises:
            ValueError: the JSON does not parse or is not an object; the
                message says so in words the model can act on.
        """
        text = self.arguments_json.strip() or "{}"
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise ValueError(
                f"The arguments of tool call {self.id!r} to {self.name!r} are not valid JSON "
                f"({exc}); got {_excerpt(self.arguments_json)!r}. Send one JSON object."
            ) from None
        if not isinstance(value, dict):
            raise ValueError(
                f"The arguments of tool call {self.id!r} to {self.name!r} must be a JSON object "
                f"(got {type(value).__name__} {_excerpt(self.arguments_json)!r})."
            )
        return value


def _excerpt(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


@attrs.frozen(kw_only=True)
class ModelResponse:
    """A whole model message."""

    id: str | None
    """The provider's message id, if it gave one."""
    text: str
    """The reply text."""
    reasoning: str
    """The reasoning."""
    tool_calls: tuple[AssembledCall, ...]
    """The tool calls, by index."""
    usage: Usage | None
    """Tokens used, if reported."""
    stop_reason: str | None
    """Why the provider stopped."""
    finished: bool
    """True when the stream sent ``MessageFinish``."""

    @property
    def is_empty(self) -> bool:
        """True when the model said nothing: no text, no reasoning, no tool call."""
        return not self.text.strip() and not self.reasoning.strip() and not self.tool_calls


@attrs.frozen(kw_only=True)
class _CallParts:
    """One tool call's fragments so far."""

    id: str | None = None
    name: str | None = None
    pieces: PVector[str] = _EMPTY_PIECES


@attrs.frozen(kw_only=True)
class Assembly:
    """A model message assembled from its chunks so far, as a persistent value.

    ``feed`` returns a new assembly and leaves this one as it was, so the turn
    machine can keep it in its (frozen) state. ``text`` and ``reasoning`` show
    what has streamed so far (what an interrupt keeps); ``response`` builds
    the whole message.
    """

    id: str | None = None
    """The provider's message id, once ``MessageStart`` gave one."""
    text_pieces: PVector[str] = _EMPTY_PIECES
    """Reply text, piece by piece."""
    reasoning_pieces: PVector[str] = _EMPTY_PIECES
    """Reasoning, piece by piece."""
    calls: PMap[int, _CallParts] = attrs.field(factory=pmap)
    """Tool-call fragments by index."""
    usage: Usage | None = None
    """Usage, once ``MessageFinish`` gave it."""
    stop_reason: str | None = None
    """Why the provider stopped, once it said."""
    started: bool = False
    """True once ``MessageStart`` came."""
    finished: bool = False
    """True once ``MessageFinish`` came."""

    @property
    def text(self) -> str:
        """Reply text so far."""
        return "".join(self.text_pieces)

    @property
    def reasoning(self) -> str:
        """Reasoning so far."""
        return "".join(self.reasoning_pieces)

    def feed(self, chunk: Chunk) -> Assembly:
        """This assembly with the next chunk taken in.

        Raises:
            StreamError: ``chunk`` is not a chunk, or a tool-call fragment
                contradicts an earlier one.
        """
        if isinstance(chunk, TextDelta):
            return replace(self, text_pieces=self.text_pieces.append(chunk.text))
        if isinstance(chunk, ReasoningDelta):
            return replace(self, reasoning_pieces=self.reasoning_pieces.append(chunk.text))
        if isinstance(chunk, ToolCallDelta):
            return replace(self, calls=self.calls.set(chunk.index, self._call(chunk)))
        if isinstance(chunk, MessageStart):
            return replace(self, started=True, id=self.id if chunk.id is None else chunk.id)
        if isinstance(chunk, MessageFinish):
            return replace(self, finished=True, usage=chunk.usage, stop_reason=chunk.stop_reason)
        raise StreamError(
            f"A model stream must yield MessageStart, TextDelta, ReasoningDelta, "
            f"ToolCallDelta or MessageFinish chunks (got {chunk!r} that is a "
            f"{type(chunk).__name__!r})."
        )

    def _call(self, chunk: ToolCallDelta) -> _CallParts:
        index = chunk.index
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise StreamError(f"ToolCallDelta.index must be a non-negative int (got {index!r}).")
        parts = self.calls.get(index) or _CallParts()
        changes: dict[str, Any] = {}
        for value, what in ((chunk.id, "id"), (chunk.name, "name")):
            if value is None or value == "":
                continue
            held = getattr(parts, what)
            if held is not None and held != value:
                raise StreamError(
                    f"Tool call fragment {index} changes its {what} from {held!r} to {value!r}; "
                    f"a call's {what} is sent once."
                )
            changes[what] = value
        if chunk.arguments:
            changes["pieces"] = parts.pieces.append(chunk.arguments)
        return replace(parts, **changes) if changes else parts

    def response(self, *, fallback_id: str) -> ModelResponse:
        """The message as assembled so far.

        ``fallback_id`` stands in for the provider's message id in the ids of
        tool calls that came without one (``<id>_call_<index>``).

        Raises:
            StreamError: a tool call never got a name.
        """
        calls = []
        for index in sorted(self.calls):
            parts = self.calls[index]
            if not parts.name:
                raise StreamError(
                    f"Tool call {index} of model message {self.id or fallback_id!r} has "
                    "no name; the model must name the tool it calls."
                )
            calls.append(
                AssembledCall(
                    index=index,
                    id=parts.id or f"{self.id or fallback_id}_call_{index}",
                    name=parts.name,
                    arguments_json="".join(parts.pieces),
                )
            )
        return ModelResponse(
            id=self.id,
            text=self.text,
            reasoning=self.reasoning,
            tool_calls=tuple(calls),
            usage=self.usage,
            stop_reason=self.stop_reason,
            finished=self.finished,
        )


class StreamAssembler:
    """Folds a model's chunks into a ``ModelResponse`` (a mutable ``Assembly``).

    ``feed`` takes chunks in order; ``text`` and ``reasoning`` show what has
    streamed so far (what an interrupt keeps); ``response`` builds the result.
    """

    def __init__(self, *, fallback_id: str) -> None:
        self._fallback_id = fallback_id
        self.assembly = Assembly()
        """What was assembled so far."""

    @property
    def id(self) -> str | None:
        """The provider's message id, if it gave one."""
        return self.assembly.id

    @property
    def text(self) -> str:
        """Reply text so far."""
        return self.assembly.text

    @property
    def reasoning(self) -> str:
        """Reasoning so far."""
        return self.assembly.reasoning

    @property
    def usage(self) -> Usage | None:
        """Usage, once the stream reported it."""
        return self.assembly.usage

    @property
    def stop_reason(self) -> str | None:
        """Why the provider stopped, once it said."""
        return self.assembly.stop_reason

    @property
    def started(self) -> bool:
        """True once ``MessageStart`` came."""
        return self.assembly.started

    @property
    def finished(self) -> bool:
        """True once ``MessageFinish`` came."""
        return self.assembly.finished

    def feed(self, chunk: Chunk) -> None:
        """Take the next chunk.

        Raises:
            StreamError: ``chunk`` is not a chunk, or a tool-call fragment
                contradicts an earlier one.
        """
        self.assembly = self.assembly.feed(chunk)

    def response(self) -> ModelResponse:
        """The message as assembled so far.

        Raises:
            StreamError: a tool call never got a name.
        """
        return self.assembly.response(fallback_id=self._fallback_id)
