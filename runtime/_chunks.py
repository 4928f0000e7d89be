"""The chunks a model streams (DESIGN §7): the protocol between a ``Model`` and the runtime.

A stream is, in order:

- ``RequestSent`` (provider models only): what was sent — the provider, the
  model, the parameters and a digest of the payload, so the audit row can
  rebuild it later (``rebuild_request``);
- ``ModelRetry`` for each attempt the provider refused before the stream
  opened (a 429 or a 5xx), with the wait before the next one;
- ``MessageStart`` with the provider's message id (and its model and API);
- ``ReasoningDelta``, ``TextDelta`` and ``ToolCallDelta`` pieces in the order
  the model produced them;
- ``MessageFinish`` with the usage and the stop reason.

Provider data that must go back to the provider unchanged rides on the
deltas: ``signature`` (Anthropic's thinking signature or redacted-thinking
data, Gemini's thought signature on any part, OpenAI Responses' encrypted
reasoning content), ``item_id`` (OpenAI Responses' output item ids), and
``part`` (the provider's block index: a new value starts a new part, so two
thinking blocks stay two). ``StreamAssembler`` folds all of it into a
``ModelResponse`` whose ``parts`` keep the model's order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from ._article import type_named
from ._json import FrozenJSON, freeze_map
from ._message import Usage
from ._retry import ModelRetry

__all__ = [
    "Chunk",
    "MessageFinish",
    "MessageStart",
    "ModelRetry",
    "ReasoningDelta",
    "RequestSent",
    "TextDelta",
    "ToolCallDelta",
]


@attrs.frozen(kw_only=True)
class RequestSent:
    """What a provider model sent for this call (its first chunk)."""

    provider: str
    """The API's name in Amber: ``openai``, ``openai-responses``, ``anthropic``, ``gemini``
    (or a custom model's own)."""
    model: str
    """The model asked for."""
    params: Mapping[str, FrozenJSON] = attrs.field(factory=dict, converter=freeze_map)
    """Provider-native parameters merged into the payload (``temperature``, ``max_tokens`` …)."""
    payload_digest: str = ""
    """sha256 of the payload's canonical JSON (``request_digest``): a replay that rebuilds the
    same digest rebuilt the same request."""
    base_url: str | None = None
    """Where it was sent, when not the provider's default endpoint."""


@attrs.frozen(kw_only=True)
class MessageStart:
    """A model message begins."""

    id: str | None = None
    """The provider's message id; None when it gives none."""
    model: str | None = None
    """The model that answers, as the provider names it (often a dated snapshot)."""
    provider: str | None = None
    """The API that streams it (as ``RequestSent.provider``): whose signatures these are."""


@attrs.frozen(kw_only=True)
class TextDelta:
    """A piece of reply text."""

    text: str
    """The piece."""
    part: int | None = None
    """The provider's block index, if it numbers them; a new value starts a new text part."""
    signature: str | None = None
    """An opaque signature the provider put on this text part (Gemini), sent back with it."""
    item_id: str | None = None
    """The provider's id of the output item holding the text (OpenAI Responses)."""


@attrs.frozen(kw_only=True)
class ReasoningDelta:
    """A piece of the model's reasoning, or the opaque data that must go back with it."""

    text: str = ""
    """The piece (empty for a delta that only carries a signature)."""
    part: int | None = None
    """The provider's block index; a new value starts a new reasoning part."""
    signature: str | None = None
    """Opaque data to send back unchanged: Anthropic's thinking signature (or a redacted
    block's data), Gemini's thought signature, OpenAI Responses' encrypted content."""
    redacted: bool = False
    """True for a block whose reasoning the provider withheld (Anthropic ``redacted_thinking``;
    ``signature`` holds its data)."""
    item_id: str | None = None
    """The provider's id of the reasoning item (OpenAI Responses)."""


@attrs.frozen(kw_only=True)
class ToolCallDelta:
    """A fragment of one tool call; fragments with the same ``index`` make one call."""

    index: int
    """The call's position among the message's calls (0, 1, …)."""
    id: str | None = None
    """The call id (usually in the first fragment only)."""
    name: str | None = None
    """The tool name (usually in the first fragment only)."""
    arguments: str = ""
    """The next piece of the argument JSON."""
    signature: str | None = None
    """An opaque signature on the call (Gemini's thought signature), sent back with it."""
    item_id: str | None = None
    """The provider's id of the output item (OpenAI Responses ``fc_…``)."""


@attrs.frozen(kw_only=True)
class MessageFinish:
    """The model message ends."""

    usage: Usage | None = None
    """Tokens the call used, if the provider reports them."""
    stop_reason: str | None = None
    """Why the provider stopped (``end_turn``, ``tool_use``, ``length`` …), in its words."""


Chunk = (
    MessageStart
    | TextDelta
    | ReasoningDelta
    | ToolCallDelta
    | MessageFinish
    | RequestSent
    | ModelRetry
)
"""Anything a model stream yields."""


def describe_chunk(chunk: Any) -> str:
    """A short name for an unexpected value in a stream (for error messages)."""
    return f"{chunk!r} that is {type_named(chunk)}"
