"""Folding a model's chunks into its response (DESIGN §7).

``Assembly`` folds the chunks of ``_chunks`` into a ``ModelResponse`` as a
persistent value the turn machine keeps in its state; ``StreamAssembler`` is
its mutable wrapper. The response keeps the model's order in ``parts``, each
with the opaque provider data that must go back unchanged.
"""

from __future__ import annotations

from typing import Any

import attrs
from pyrsistent import pmap, pvector
from pyrsistent.typing import PMap, PVector

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
from ._errors import StreamError
from ._message import Usage
from ._parts import CallSegment, ReasoningSegment, ResponsePart, TextSegment, join_texts
from ._replace import replace
from ._stream import AssembledCall, ModelResponse

__all__ = ["Assembly", "StreamAssembler"]

_EMPTY_PIECES: PVector[str] = pvector()
_REASONING, _TEXT, _CALL = 0, 1, 2


@attrs.frozen(kw_only=True)
class _Part:
    """One part being assembled: a run of reasoning or text pieces, or where a call sits.

    A reasoning or text part owns the pieces of its kind from ``start`` up to
    the next part of that kind (``Assembly.text_pieces`` or
    ``reasoning_pieces``), so a piece that continues the open part is one
    append, with no copy of the part.
    """

    kind: int
    """``_REASONING``, ``_TEXT`` or ``_CALL``."""
    key: int | None = None
    """The provider's block index (a new one starts a new part)."""
    item_id: str | None = None
    """The provider's item id."""
    signature: str | None = None
    """Opaque data to send back with it."""
    redacted: bool = False
    """A withheld reasoning block."""
    start: int = 0
    """For reasoning and text: where its pieces start in the assembly's pieces of its kind."""
    index: int = 0
    """For a call: the call's index."""


@attrs.frozen(kw_only=True)
class _CallParts:
    """One tool call's fragments so far."""

    id: str | None = None
    name: str | None = None
    pieces: PVector[str] = _EMPTY_PIECES
    position: int = 0
    """Where the call sits in ``Assembly.parts``."""


_EMPTY_PARTS: PVector[_Part] = pvector()


@attrs.frozen(kw_only=True)
class Assembly:
    """A model message assembled from its chunks so far, as a persistent value.

    ``feed`` returns a new assembly and leaves this one as it was, so the turn
    machine can keep it in its (frozen) state. ``text`` and ``reasoning`` show
    what has streamed so far (what an interrupt keeps); ``parts()`` the parts
    in the model's order; ``response`` builds the whole message.
    """

    id: str | None = None
    """The provider's message id, once ``MessageStart`` gave one."""
    text_pieces: PVector[str] = _EMPTY_PIECES
    """Reply text, piece by piece (all text parts)."""
    reasoning_pieces: PVector[str] = _EMPTY_PIECES
    """Reasoning, piece by piece (all reasoning parts)."""
    parts: PVector[_Part] = _EMPTY_PARTS
    """Reasoning, text and calls in the order they began."""
    open: int = -1
    """The position in ``parts`` of the reasoning or text part chunks go on to; -1: none."""
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
    model: str | None = None
    """The model that answers, once ``MessageStart`` named it."""
    provider: str | None = None
    """The API that streams it (``MessageStart`` or ``RequestSent``)."""
    request: RequestSent | None = None
    """What was sent, if the model reported it."""
    retries: PVector[ModelRetry] = attrs.field(factory=pvector)
    """Attempts the provider refused before the stream opened."""

    @property
    def text(self) -> str:
        """Reply text so far (its parts joined by ``join_texts``)."""
        return self._joined(_TEXT)

    @property
    def reasoning(self) -> str:
        """Reasoning so far (its parts joined by ``join_texts``)."""
        return self._joined(_REASONING)

    def _texts(self, kind: int) -> tuple[list[int], list[str]]:
        """Positions and texts of the parts of ``kind``, in order."""
        pieces = self.reasoning_pieces if kind == _REASONING else self.text_pieces
        positions = [p for p, part in enumerate(self.parts) if part.kind == kind]
        texts = []
        for number, position in enumerate(positions):
            start = self.parts[position].start
            end = (
                self.parts[positions[number + 1]].start
                if number + 1 < len(positions)
                else len(pieces)
            )
            texts.append("".join(pieces[start:end]))
        return positions, texts

    def _joined(self, kind: int) -> str:
        positions, texts = self._texts(kind)
        if len(texts) == 1:
            return texts[0]
        return join_texts(positions, texts, reasoning=kind == _REASONING)

    def feed(self, chunk: Chunk) -> Assembly:
        """This assembly with the next chunk taken in.

        Raises:
            StreamError: ``chunk`` is not a chunk, or a tool-call fragment
                contradicts an earlier one.
        """
        kind = type(chunk)
        if kind is TextDelta:
            return self._piece(_TEXT, chunk)  # type: ignore[arg-type]
        if kind is ReasoningDelta:
            return self._piece(_REASONING, chunk)  # type: ignore[arg-type]
        if kind is ToolCallDelta:
            return self._call(chunk)  # type: ignore[arg-type]
        if kind is MessageStart:
            assert isinstance(chunk, MessageStart)
            return replace(
                self,
                started=True,
                id=self.id if chunk.id is None else chunk.id,
                model=chunk.model or self.model,
                provider=chunk.provider or self.provider,
            )
        if kind is MessageFinish:
            assert isinstance(chunk, MessageFinish)
            return replace(self, finished=True, usage=chunk.usage, stop_reason=chunk.stop_reason)
        if kind is RequestSent:
            assert isinstance(chunk, RequestSent)
            return replace(self, request=chunk, provider=self.provider or chunk.provider)
        if kind is ModelRetry:
            assert isinstance(chunk, ModelRetry)
            return replace(self, retries=self.retries.append(chunk))
        raise StreamError(
            "A model stream must yield MessageStart, TextDelta, ReasoningDelta, ToolCallDelta, "
            f"MessageFinish, RequestSent or ModelRetry chunks (got {describe_chunk(chunk)})."
        )

    def _piece(self, kind: int, chunk: TextDelta | ReasoningDelta) -> Assembly:
        reasoning = kind == _REASONING
        text = chunk.text
        if type(text) is not str:  # joined with the others when read: a TypeError then
            name = "ReasoningDelta" if reasoning else "TextDelta"
            raise StreamError(f"{name}.text must be a str (got {describe_chunk(text)}).")
        pieces = self.reasoning_pieces if reasoning else self.text_pieces
        parts = self.parts
        position = self.open
        current = parts[position] if position != -1 else None
        redacted = reasoning and chunk.redacted  # type: ignore[union-attr]
        if (
            current is None
            or current.kind != kind
            or (chunk.part is not None and chunk.part != current.key)
            or (chunk.item_id is not None and chunk.item_id != current.item_id)
            or (chunk.signature is not None and current.signature is not None)
            or redacted
            or current.redacted
        ):
            current = _Part(
                kind=kind,
                key=chunk.part,
                item_id=chunk.item_id,
                redacted=redacted,
                signature=chunk.signature,
                start=len(pieces),
            )
            parts = parts.append(current)
            position = len(parts) - 1
        elif chunk.signature is not None:
            parts = parts.set(position, replace(current, signature=chunk.signature))
        if text:
            pieces = pieces.append(text)
        elif parts is self.parts:
            return self  # nothing new: an empty piece of the open part
        if reasoning:
            return replace(self, parts=parts, open=position, reasoning_pieces=pieces)
        return replace(self, parts=parts, open=position, text_pieces=pieces)

    def _call(self, chunk: ToolCallDelta) -> Assembly:
        index = chunk.index
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise StreamError(f"ToolCallDelta.index must be a non-negative int (got {index!r}).")
        if type(chunk.arguments) is not str:  # joined when the call is read: a TypeError then
            raise StreamError(
                f"ToolCallDelta.arguments must be a str (got {describe_chunk(chunk.arguments)})."
            )
        parts = self.parts
        call = self.calls.get(index)
        opened = self.open
        if call is None:
            call = _CallParts(position=len(parts))
            parts = parts.append(_Part(kind=_CALL, index=index))
            opened = -1  # text after a call is a new text part
        changes: dict[str, Any] = {}
        for value, what in ((chunk.id, "id"), (chunk.name, "name")):
            if value is None or value == "":
                continue
            if type(value) is not str:
                raise StreamError(
                    f"ToolCallDelta.{what} must be a str or None (got {describe_chunk(value)})."
                )
            held = getattr(call, what)
            if held is not None and held != value:
                raise StreamError(
                    f"Tool call fragment {index} changes its {what} from {held!r} to {value!r}; "
                    f"a call's {what} is sent once."
                )
            changes[what] = value
        if chunk.arguments:
            changes["pieces"] = call.pieces.append(chunk.arguments)
        if changes:
            call = replace(call, **changes)
        if chunk.signature is not None or chunk.item_id is not None:
            part = parts[call.position]
            parts = parts.set(
                call.position,
                replace(
                    part,
                    signature=chunk.signature if chunk.signature is not None else part.signature,
                    item_id=chunk.item_id if chunk.item_id is not None else part.item_id,
                ),
            )
        return replace(self, parts=parts, open=opened, calls=self.calls.set(index, call))

    def segments(self) -> tuple[ResponsePart, ...]:
        """The parts so far, in the model's order."""
        texts = dict(zip(*self._texts(_TEXT), strict=True))
        thoughts = dict(zip(*self._texts(_REASONING), strict=True))
        out: list[ResponsePart] = []
        for position, part in enumerate(self.parts):
            if part.kind == _CALL:
                out.append(
                    CallSegment(index=part.index, signature=part.signature, item_id=part.item_id)
                )
            elif part.kind == _REASONING:
                out.append(
                    ReasoningSegment(
                        text=thoughts[position],
                        signature=part.signature,
                        redacted=part.redacted,
                        item_id=part.item_id,
                    )
                )
            else:
                out.append(
                    TextSegment(
                        text=texts[position], signature=part.signature, item_id=part.item_id
                    )
                )
        return tuple(out)

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
            parts=self.segments(),
            model=self.model,
            provider=self.provider,
            request=self.request,
            retries=tuple(self.retries),
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

    def parts(self) -> tuple[ResponsePart, ...]:
        """The parts so far, in the model's order."""
        return self.assembly.segments()

    def response(self) -> ModelResponse:
        """The message as assembled so far.

        Raises:
            StreamError: a tool call never got a name.
        """
        return self.assembly.response(fallback_id=self._fallback_id)
