"""What a model is asked, and what its stream folds into (DESIGN §7).

A model (``actors.Model``) is anything with an async ``stream(request)`` that
yields the chunks of ``_chunks`` (re-exported here). An exception raised by
the stream is a model failure. ``Assembly`` (``_assembly``) folds the chunks
into a ``ModelResponse``; the turn loop forwards the deltas live and stores
only the assembled result.

The response keeps the model's order in ``parts``: its reasoning blocks,
text and tool calls, each with the opaque provider data that must go back
unchanged (signatures, encrypted reasoning, item ids). ``text`` and
``reasoning`` are the parts' texts joined for people (``join_texts``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import attrs
import orjson
from pyrsistent import pvector
from pyrsistent.typing import PVector

from ._chunks import (
    Chunk,
    MessageFinish,
    MessageStart,
    ModelRetry,
    ReasoningDelta,
    RequestSent,
    TextDelta,
    ToolCallDelta,
)
from ._clean import DEFAULT_MAX_RESULT_CHARS
from ._message import Usage
from ._parts import ResponsePart
from ._state import SessionState
from ._view import ModelView
from ._window import Window

__all__ = [
    "AssembledCall",
    "Chunk",
    "MessageFinish",
    "MessageStart",
    "ModelRequest",
    "ModelResponse",
    "ModelRetry",
    "ReasoningDelta",
    "RequestSent",
    "TextDelta",
    "ToolCallDelta",
    "ToolSpec",
]

_EMPTY_PIECES: PVector[str] = pvector()


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
        if _LONG_NUMBER.search(text) is not None:
            # orjson reads an integer beyond 64 bits as a float, silently rounded: read such
            # text again exactly (it is strict JSON: orjson took it), and the ToolCall's
            # check refuses the integer in words the model can act on.
            value = json.loads(text)
        if not isinstance(value, dict):
            raise ValueError(
                f"The arguments of tool call {self.id!r} to {self.name!r} must be a JSON object "
                f"(got {type(value).__name__} {_excerpt(self.arguments_json)!r})."
            )
        return value


_LONG_NUMBER = re.compile(r"\d{19}")
"""Nineteen digits in a row: perhaps an integer beyond 64 bits (2**63 has nineteen)."""


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
