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

from ._errors import StreamError
from ._message import Usage
from ._state import SessionState
from ._view import ModelView

__all__ = [
    "AssembledCall",
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


class StreamAssembler:
    """Folds a model's chunks into a ``ModelResponse``.

    ``feed`` takes chunks in order; ``text`` and ``reasoning`` show what has
    streamed so far (what an interrupt keeps); ``response`` builds the result.
    """

    def __init__(self, *, fallback_id: str) -> None:
        self._fallback_id = fallback_id
        self.id: str | None = None
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, list[Any]] = {}  # index -> [id, name, [pieces]]
        self.usage: Usage | None = None
        self.stop_reason: str | None = None
        self.finished = False
        self.started = False

    @property
    def text(self) -> str:
        """Reply text so far."""
        return "".join(self._text)

    @property
    def reasoning(self) -> str:
        """Reasoning so far."""
        return "".join(self._reasoning)

    def feed(self, chunk: Chunk) -> None:
        """Take the next chunk.

        Raises:
            StreamError: ``chunk`` is not a chunk, or a tool-call fragment
                contradicts an earlier one.
        """
        if isinstance(chunk, TextDelta):
            self._text.append(chunk.text)
        elif isinstance(chunk, ReasoningDelta):
            self._reasoning.append(chunk.text)
        elif isinstance(chunk, ToolCallDelta):
            self._call(chunk)
        elif isinstance(chunk, MessageStart):
            self.started = True
            if chunk.id is not None:
                self.id = chunk.id
        elif isinstance(chunk, MessageFinish):
            self.finished = True
            self.usage = chunk.usage
            self.stop_reason = chunk.stop_reason
        else:
            raise StreamError(
                f"A model stream must yield MessageStart, TextDelta, ReasoningDelta, "
                f"ToolCallDelta or MessageFinish chunks (got {chunk!r} that is a "
                f"{type(chunk).__name__!r})."
            )

    def _call(self, chunk: ToolCallDelta) -> None:
        if isinstance(chunk.index, bool) or not isinstance(chunk.index, int) or chunk.index < 0:
            raise StreamError(
                f"ToolCallDelta.index must be a non-negative int (got {chunk.index!r})."
            )
        entry = self._calls.setdefault(chunk.index, [None, None, []])
        for slot, value, what in ((0, chunk.id, "id"), (1, chunk.name, "name")):
            if value is None or value == "":
                continue
            if entry[slot] is not None and entry[slot] != value:
                raise StreamError(
                    f"Tool call fragment {chunk.index} changes its {what} from {entry[slot]!r} "
                    f"to {value!r}; a call's {what} is sent once."
                )
            entry[slot] = value
        if chunk.arguments:
            entry[2].append(chunk.arguments)

    def response(self) -> ModelResponse:
        """The message as assembled so far.

        Raises:
            StreamError: a tool call never got a name.
        """
        calls = []
        for index in sorted(self._calls):
            call_id, name, pieces = self._calls[index]
            if not name:
                raise StreamError(
                    f"Tool call {index} of model message {self.id or self._fallback_id!r} has "
                    "no name; the model must name the tool it calls."
                )
            calls.append(
                AssembledCall(
                    index=index,
                    id=call_id or f"{self.id or self._fallback_id}_call_{index}",
                    name=name,
                    arguments_json="".join(pieces),
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
