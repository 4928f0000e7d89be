"""A model response's parts: as streamed, as stored on messages, and read back in order.

``ReasoningSegment``, ``TextSegment`` and ``CallSegment`` are the parts of a
``ModelResponse`` in the order the model produced them.

A response becomes up to three kinds of messages: a thought (its reasoning
parts), a reply text (its text parts) and one tool call per call. Three
metadata keys let the model's view put them back together exactly:

``model_call``
    ``"<turn id>#<call index>"``, the audit row's source key, on every
    message made from one response. Messages stored before it existed are
    grouped by adjacency instead (a response's outputs were added together,
    before any of their results).
``model_provider``
    The API that produced the response (``anthropic``, ``gemini``,
    ``openai``, ``openai-responses`` …): the only API its signatures are
    sent back to.
``model_parts``
    A list, one entry per response part the message holds, in order:
    ``pos`` (the part's position in the response), ``chars`` (for thoughts
    and text: the part's length in ``content``; the parts' texts are joined
    by ``join_texts``), and only when the provider gave them:
    ``signature`` (Anthropic thinking signature or redacted-thinking data,
    Gemini thought signature, OpenAI Responses encrypted reasoning),
    ``redacted`` (true for Anthropic ``redacted_thinking``) and ``item_id``
    (OpenAI Responses item id). Written only when the response is not the
    plain "reasoning, text, then calls" with no provider data.

Reading is defensive: metadata that does not add up (hand-edited, from an
older Amber) is read as one plain part, never an error.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from ._category import Category
from ._message import Message

__all__ = [
    "MODEL_CALL",
    "MODEL_PARTS",
    "MODEL_PROVIDER",
    "CallSegment",
    "ReasoningSegment",
    "ResponseMetadata",
    "ResponsePart",
    "StoredPart",
    "TextSegment",
    "default_rank",
    "join_texts",
    "response_metadata",
    "stored_parts",
]

MODEL_CALL = "model_call"
"""Metadata key: the source key of the model call that produced a message."""
MODEL_PROVIDER = "model_provider"
"""Metadata key: the API that produced a message."""
MODEL_PARTS = "model_parts"
"""Metadata key: the response parts a message holds (see the module docstring)."""


@attrs.frozen(kw_only=True)
class ReasoningSegment:
    """One reasoning block of a response."""

    text: str
    """Its text (empty for a redacted block or a bare signature)."""
    signature: str | None = None
    """Opaque data the provider needs back unchanged (see ``ReasoningDelta.signature``)."""
    redacted: bool = False
    """True for a block the provider withheld (its data is ``signature``)."""
    item_id: str | None = None
    """The provider's item id (OpenAI Responses)."""


@attrs.frozen(kw_only=True)
class TextSegment:
    """One run of reply text of a response."""

    text: str
    """Its text (may be empty when it only carries a signature)."""
    signature: str | None = None
    """The provider's signature on it (Gemini)."""
    item_id: str | None = None
    """The provider's item id (OpenAI Responses)."""


@attrs.frozen(kw_only=True)
class CallSegment:
    """Where a tool call sits among the response's parts."""

    index: int
    """The call (``AssembledCall.index``)."""
    signature: str | None = None
    """The provider's signature on the call (Gemini)."""
    item_id: str | None = None
    """The provider's item id (OpenAI Responses ``fc_…``)."""


ResponsePart = ReasoningSegment | TextSegment | CallSegment
"""One part of a response, in the model's order."""

REASONING_JOIN = "\n\n"


def join_texts(positions: list[int], texts: list[str], *, reasoning: bool) -> str:
    """The texts of a response's parts of one kind, joined for people.

    Reasoning blocks are joined by a blank line; runs of text are joined as
    they are when they follow each other and by a blank line when another
    part (a tool call) came between them. Empty texts add nothing.
    ``positions`` are the parts' positions in the response.
    """
    out: list[str] = []
    previous: int | None = None
    for position, text in zip(positions, texts, strict=True):
        if text:
            if out:
                out.append(
                    REASONING_JOIN
                    if reasoning or previous is None or position != previous + 1
                    else ""
                )
            out.append(text)
            previous = position
        elif previous is not None and position == previous + 1:
            previous = position  # an empty part between two texts keeps them adjacent
    return "".join(out)


_DEFAULT_RANK = {Category.THOUGHT: 0, Category.REPLY: 1, Category.TOOL_CALL: 2}


def default_rank(category: Category, index: int) -> tuple[int, int]:
    """The rank of a response part stored without ``model_parts``: reasoning, text, then
    calls by ``index`` (ranks of stored positions are never negative, so these sort first)."""
    return (-3 + _DEFAULT_RANK.get(category, 1), index)


@attrs.frozen(kw_only=True)
class ResponseMetadata:
    """Metadata for the messages of one response (merge it into theirs)."""

    thought: dict[str, Any]
    """For the thought message."""
    text: dict[str, Any]
    """For the reply text message."""
    calls: dict[int, dict[str, Any]]
    """For each tool call message, by call index."""


def _opaque(entry: dict[str, Any], part: ResponsePart) -> bool:
    found = False
    if part.signature is not None:
        entry["signature"] = part.signature
        found = True
    if isinstance(part, ReasoningSegment) and part.redacted:
        entry["redacted"] = True
        found = True
    if part.item_id is not None:
        entry["item_id"] = part.item_id
        found = True
    return found


def response_metadata(
    parts: Iterable[ResponsePart], *, provider: str | None = None, source_key: str | None = None
) -> ResponseMetadata:
    """The metadata that stores ``parts`` (a response's, or a cut-short one's) on its messages.

    Args:
        parts: ``ModelResponse.parts`` or ``StreamAssembler.parts()``.
        provider: the API that produced them (``ModelResponse.provider``).
        source_key: the model call's audit key, stored as ``model_call``.
    """
    thought: list[dict[str, Any]] = []
    text: list[dict[str, Any]] = []
    calls: dict[int, dict[str, Any]] = {}
    opaque = False
    ranks: list[tuple[int, int]] = []
    for position, part in enumerate(parts):
        entry: dict[str, Any] = {"pos": position}
        if isinstance(part, CallSegment):
            calls[part.index] = entry
            ranks.append((2, part.index))
        else:
            entry["chars"] = len(part.text)
            if isinstance(part, ReasoningSegment):
                thought.append(entry)
                ranks.append((0, 0))
            else:
                text.append(entry)
                ranks.append((1, 0))
        opaque = _opaque(entry, part) or opaque
    plain = (
        not opaque
        and len(thought) <= 1
        and len(text) <= 1
        and ranks == sorted(ranks)
        and all(e["chars"] for e in thought + text)
    )
    common: dict[str, Any] = {}
    if source_key is not None:
        common[MODEL_CALL] = source_key
    if provider is not None:
        common[MODEL_PROVIDER] = provider

    def meta(entries: list[dict[str, Any]]) -> dict[str, Any]:
        return dict(common) if plain else {**common, MODEL_PARTS: entries}

    return ResponseMetadata(
        thought=meta(thought) if thought else {},
        text=meta(text) if text else {},
        calls={index: meta([entry]) for index, entry in calls.items()},
    )


@attrs.frozen(kw_only=True)
class StoredPart:
    """One response part read back from a stored message."""

    rank: tuple[int, int]
    """Where it goes among its response's parts (its stored position, or the default order)."""
    text: str
    """Its text (empty for a tool call)."""
    signature: str | None = None
    """The provider's opaque data, if any."""
    redacted: bool = False
    """True for a withheld reasoning block."""
    item_id: str | None = None
    """The provider's item id, if any."""
    provider: str | None = None
    """The API that produced it (``model_provider``), if known."""


def _string(entry: Any, key: str) -> str | None:
    value = entry.get(key)
    return value if isinstance(value, str) else None


def _position(entry: Any) -> int | None:
    value = entry.get("pos") if hasattr(entry, "get") else None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def stored_parts(message: Message, category: Category) -> list[StoredPart]:
    """The response parts ``message`` holds, each ranked for sorting.

    With ``model_parts`` the rank is the stored position; without it (or
    when it does not add up) the message is one part ranked in the default
    order: reasoning, text, then calls by index. A thought stored with a
    bare ``metadata["signature"]`` (before ``model_parts``) keeps it.
    """
    metadata = message.metadata
    provider = metadata.get(MODEL_PROVIDER) if metadata else None
    provider = provider if isinstance(provider, str) else None
    entries = metadata.get(MODEL_PARTS) if metadata else None
    decoded = _decode(message, category, entries, provider) if entries is not None else None
    if decoded is not None:
        return decoded
    index = message.tool_call.index if message.tool_call is not None else 0
    signature = None
    if category is Category.THOUGHT and metadata:
        signature = _string(metadata, "signature")
    return [
        StoredPart(
            rank=default_rank(category, index),
            text="" if category is Category.TOOL_CALL else message.content,
            signature=signature,
            provider=provider,
        )
    ]


def _decode(
    message: Message, category: Category, entries: Any, provider: str | None
) -> list[StoredPart] | None:
    if not isinstance(entries, Iterable) or isinstance(entries, (str, bytes)):
        return None
    entries = list(entries)
    found = [_position(e) for e in entries]
    if not entries or None in found:
        return None
    positions = [p for p in found if p is not None]
    if category is Category.TOOL_CALL:
        if len(entries) != 1:
            return None
        entry = entries[0]
        return [
            StoredPart(
                rank=(positions[0], 0),
                text="",
                signature=_string(entry, "signature"),
                item_id=_string(entry, "item_id"),
                provider=provider,
            )
        ]
    lengths = [e.get("chars") for e in entries]
    if any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in lengths):
        return None
    reasoning = category is Category.THOUGHT
    texts = _split(message.content, positions, lengths, reasoning=reasoning)
    if texts is None:
        return None
    return [
        StoredPart(
            rank=(position, 0),
            text=text,
            signature=_string(entry, "signature"),
            redacted=reasoning and entry.get("redacted") is True,
            item_id=_string(entry, "item_id"),
            provider=provider,
        )
        for position, text, entry in zip(positions, texts, entries, strict=True)
    ]


def _split(
    content: str, positions: list[int], lengths: list[int], *, reasoning: bool
) -> list[str] | None:
    """Cut ``content`` back into the parts ``join_texts`` joined; None when it does not fit."""
    texts: list[str] = []
    at = 0
    previous: int | None = None
    for position, length in zip(positions, lengths, strict=True):
        if length:
            if texts and any(texts):
                adjacent = previous is not None and position == previous + 1
                separator = "" if adjacent and not reasoning else "\n\n"
                if not content.startswith(separator, at):
                    return None
                at += len(separator)
            texts.append(content[at : at + length])
            at += length
            previous = position
        else:
            texts.append("")
            if previous is not None and position == previous + 1:
                previous = position
    if at != len(content) or join_texts(positions, texts, reasoning=reasoning) != content:
        return None
    return texts
