"""What a model is asked, and what its stream folds into (DESIGN §7).

A model (``actors.Model``) is anything with an async ``stream(request)`` that
yields the chunks of ``_chunks``. An exception raised by the stream is a model
failure. ``StreamAssembler`` folds the chunks into a ``ModelResponse``; the
turn loop forwards the deltas live and stores only the assembled result.

The response keeps the model's order in ``parts``: its reasoning blocks,
text and tool calls, each with the opaque provider data that must go back
unchanged (signatures, encrypted reasoning, item ids). ``text`` and
``reasoning`` are the parts' texts joined for people (``join_texts``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import orjson

from ._chunks import (
    Chunk,
    MessageFinish,
    MessageStart,
    ModelRetry,
    ReasoningDelta,
    RequestSent,
    TextDelta,
    ToolCallDelta,
    describe_chunk,
)
from ._clean import DEFAULT_MAX_RESULT_CHARS
from ._errors import StreamError
from ._message import Usage
from ._parts import CallSegment, ReasoningSegment, ResponsePart, TextSegment, join_texts
from ._state import SessionState
from ._view import ModelView
from ._window import Window

__all__ = [
    "AssembledCall",
    "ModelRequest",
    "ModelResponse",
    "StreamAssembler",
    "ToolSpec",
]


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
    window: Window | None = None
    """The window the view was built with (recorded so the request can be rebuilt)."""
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS
    """The excerpt length the view was built with (recorded likewise)."""


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
    """The reply text (the text parts joined by ``join_texts``)."""
    reasoning: str
    """The reasoning (the reasoning parts joined by ``join_texts``)."""
    tool_calls: tuple[AssembledCall, ...]
    """The tool calls, by index."""
    usage: Usage | None
    """Tokens used, if reported."""
    stop_reason: str | None
    """Why the provider stopped."""
    finished: bool
    """True when the stream sent ``MessageFinish``."""
    parts: tuple[ResponsePart, ...] = ()
    """Reasoning, text and calls in the order the model produced them."""
    model: str | None = None
    """The model that answered, as the provider named it."""
    provider: str | None = None
    """The API that answered (whose signatures ``parts`` carry)."""
    request: RequestSent | None = None
    """What was sent, when the model reported it."""
    retries: tuple[ModelRetry, ...] = ()
    """Attempts the provider refused before this one streamed."""

    @property
    def is_empty(self) -> bool:
        """True when the model said nothing: no text, no reasoning, no tool call."""
        return not self.text.strip() and not self.reasoning.strip() and not self.tool_calls


class _Open:
    """A reasoning or text part being assembled."""

    __slots__ = ("item_id", "key", "pieces", "reasoning", "redacted", "signature")

    def __init__(
        self, reasoning: bool, key: int | None, item_id: str | None, redacted: bool = False
    ) -> None:
        self.reasoning = reasoning
        self.key = key
        self.item_id = item_id
        self.redacted = redacted
        self.signature: str | None = None
        self.pieces: list[str] = []


class StreamAssembler:
    """Folds a model's chunks into a ``ModelResponse``.

    ``feed`` takes chunks in order; ``text`` and ``reasoning`` show what has
    streamed so far (what an interrupt keeps); ``response`` builds the result.
    """

    def __init__(self, *, fallback_id: str) -> None:
        self._fallback_id = fallback_id
        self.id: str | None = None
        self.model: str | None = None
        self.provider: str | None = None
        self.request: RequestSent | None = None
        self.retries: list[ModelRetry] = []
        self._parts: list[_Open | list[Any]] = []  # open parts, or [index, signature, item_id]
        self._open: _Open | None = None
        self._calls: dict[int, list[Any]] = {}  # index -> [id, name, [pieces], call part]
        self.usage: Usage | None = None
        self.stop_reason: str | None = None
        self.finished = False
        self.started = False

    @property
    def text(self) -> str:
        """Reply text so far."""
        return self._joined(reasoning=False)

    @property
    def reasoning(self) -> str:
        """Reasoning so far."""
        return self._joined(reasoning=True)

    def _joined(self, *, reasoning: bool) -> str:
        positions: list[int] = []
        texts: list[str] = []
        for position, part in enumerate(self._parts):
            if isinstance(part, _Open) and part.reasoning is reasoning:
                positions.append(position)
                texts.append("".join(part.pieces))
        return join_texts(positions, texts, reasoning=reasoning)

    def feed(self, chunk: Chunk) -> None:
        """Take the next chunk.

        Raises:
            StreamError: ``chunk`` is not a chunk, or a tool-call fragment
                contradicts an earlier one.
        """
        kind = type(chunk)
        if kind is TextDelta:
            self._piece(False, chunk)  # type: ignore[arg-type]
        elif kind is ReasoningDelta:
            self._piece(True, chunk)  # type: ignore[arg-type]
        elif kind is ToolCallDelta:
            self._call(chunk)  # type: ignore[arg-type]
        elif kind is MessageStart:
            assert isinstance(chunk, MessageStart)
            self.started = True
            if chunk.id is not None:
                self.id = chunk.id
            self.model = chunk.model or self.model
            self.provider = chunk.provider or self.provider
        elif kind is MessageFinish:
            assert isinstance(chunk, MessageFinish)
            self.finished = True
            self.usage = chunk.usage
            self.stop_reason = chunk.stop_reason
        elif kind is RequestSent:
            assert isinstance(chunk, RequestSent)
            self.request = chunk
            self.provider = self.provider or chunk.provider
        elif kind is ModelRetry:
            assert isinstance(chunk, ModelRetry)
            self.retries.append(chunk)
        else:
            raise StreamError(
                "A model stream must yield MessageStart, TextDelta, ReasoningDelta, "
                "ToolCallDelta, MessageFinish, RequestSent or ModelRetry chunks (got "
                f"{describe_chunk(chunk)})."
            )

    def _piece(self, reasoning: bool, chunk: TextDelta | ReasoningDelta) -> None:
        current = self._open
        redacted = reasoning and chunk.redacted  # type: ignore[union-attr]
        if (
            current is None
            or current.reasoning is not reasoning
            or (chunk.part is not None and chunk.part != current.key)
            or (chunk.item_id is not None and chunk.item_id != current.item_id)
            or (chunk.signature is not None and current.signature is not None)
            or redacted
            or current.redacted
        ):
            current = _Open(reasoning, chunk.part, chunk.item_id, redacted)
            self._parts.append(current)
            self._open = current
        if chunk.text:
            current.pieces.append(chunk.text)
        if chunk.signature is not None:
            current.signature = chunk.signature

    def _call(self, chunk: ToolCallDelta) -> None:
        if isinstance(chunk.index, bool) or not isinstance(chunk.index, int) or chunk.index < 0:
            raise StreamError(
                f"ToolCallDelta.index must be a non-negative int (got {chunk.index!r})."
            )
        entry = self._calls.get(chunk.index)
        if entry is None:
            part = [chunk.index, None, None]
            entry = self._calls[chunk.index] = [None, None, [], part]
            self._parts.append(part)
            self._open = None  # text after a call is a new text part
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
        if chunk.signature is not None:
            entry[3][1] = chunk.signature
        if chunk.item_id is not None:
            entry[3][2] = chunk.item_id

    def parts(self) -> tuple[ResponsePart, ...]:
        """The parts so far, in the model's order."""
        out: list[ResponsePart] = []
        for part in self._parts:
            if isinstance(part, _Open):
                text = "".join(part.pieces)
                if part.reasoning:
                    out.append(
                        ReasoningSegment(
                            text=text,
                            signature=part.signature,
                            redacted=part.redacted,
                            item_id=part.item_id,
                        )
                    )
                else:
                    out.append(
                        TextSegment(text=text, signature=part.signature, item_id=part.item_id)
                    )
            else:
                out.append(CallSegment(index=part[0], signature=part[1], item_id=part[2]))
        return tuple(out)

    def response(self) -> ModelResponse:
        """The message as assembled so far.

        Raises:
            StreamError: a tool call never got a name.
        """
        calls = []
        for index in sorted(self._calls):
            call_id, name, pieces, _ = self._calls[index]
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
            parts=self.parts(),
            model=self.model,
            provider=self.provider,
            request=self.request,
            retries=tuple(self.retries),
        )
