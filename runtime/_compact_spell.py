"""Compact blocks spelled as each provider's dicts, straight from their messages.

Each provider's speller applies its body (``runtime/_providers.py``) to the view
messages of a compact block (``runtime/_compact.py``) without building them: one pass
over the block (``scan``) gives its user texts and responses in order and its results
by call id, and the speller writes each as the dicts its body writes for the view
messages they stand for. Entries are appended to ``out`` with the body's own merging of
neighbours, so blocks spelled one after another give what spelling their views at once
gives: no view message of a compact block is reasoning, the only part a run reads across
messages.

The spellers read the records' steps inline (``records`` is the same walk as tuples,
which the spellers used to take one at a time: a generator resume, a tuple and a role
test per view message). Property tests pin every provider's spelling of compact blocks
equal to its body over the built view messages, over random sessions
(``tests/runtime/test_compact.py``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any

from ._compact import answer, materialize, scan
from ._history import Block
from ._json import canonical
from ._view import ReasoningPart, Segment, TextPart, ViewMessage, ViewRole, arguments_json
from ._window import START_NOTE

__all__ = ["SPELLERS", "anthropic_id", "spell"]

_ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
_ANTHROPIC_MATCH = _ANTHROPIC_ID.match


def anthropic_id(call_id: str) -> str:
    """Anthropic wants tool ids matching ``[a-zA-Z0-9_-]+``; others are hashed, stably."""
    if _ANTHROPIC_MATCH(call_id):
        return call_id
    return "toolu_" + hashlib.sha256(call_id.encode()).hexdigest()[:24]


def _openai_add(out: list[dict[str, Any]], entry: dict[str, Any]) -> None:
    """Append an assistant entry; one that follows an assistant entry joins it (the body
    makes one entry of a run of assistant messages)."""
    if out and out[-1]["role"] == "assistant":
        last = out[-1]
        first, second = last["content"], entry["content"]
        content = first if second is None else second if first is None else f"{first}\n\n{second}"
        merged: dict[str, Any] = {"role": "assistant", "content": content}
        calls = last.get("tool_calls", []) + entry.get("tool_calls", [])
        if calls:
            merged["tool_calls"] = calls
        out[-1] = merged
    else:
        out.append(entry)


def _openai(out: list[dict[str, Any]], block: Block, limit: int | None) -> None:
    items, results = scan(block)
    for item in items:
        if isinstance(item, str):
            out.append({"role": "user", "content": item})
            continue
        texts, calls = item
        if not calls:
            if texts:
                _openai_add(out, {"role": "assistant", "content": "".join(texts)})
            continue
        made = []
        for call in calls:
            tool: Any = call.tool_call  # a call message: never None
            function = {"name": tool.name, "arguments": arguments_json(tool.arguments)}
            made.append({"id": tool.id, "type": "function", "function": function})
        content = "".join(texts) if texts else None
        _openai_add(out, {"role": "assistant", "content": content, "tool_calls": made})
        for call in calls:
            call_id = call.tool_call.id  # type: ignore[union-attr]
            text, _ = answer(call, results, limit)
            out.append({"role": "tool", "tool_call_id": call_id, "content": text})


def _openai_join(out: list[dict[str, Any]], entries: list[dict[str, Any]]) -> None:
    if entries and entries[0]["role"] == "assistant":
        _openai_add(out, entries[0])
        out.extend(entries[1:])
    else:
        out.extend(entries)


def _add(out: list[dict[str, Any]], role: str, key: str, items: list[Any]) -> None:
    """``_providers._merge``: same-role neighbours are one entry."""
    if out and out[-1]["role"] == role:
        out[-1][key].extend(items)
    else:
        out.append({"role": role, key: items})


def _anthropic(out: list[dict[str, Any]], block: Block, limit: int | None) -> None:
    items, results = scan(block)
    # ``_add`` inlined for the user's side, the most frequent: ``user`` is the content of
    # the last entry when that entry is the user's.
    user: list[Any] | None = out[-1]["content"] if out and out[-1]["role"] == "user" else None
    for item in items:
        if isinstance(item, str):
            made: dict[str, Any] = {"type": "text", "text": item}
            if user is None:
                user = [made]
                out.append({"role": "user", "content": user})
            else:
                user.append(made)
            continue
        texts, calls = item
        if not calls:
            if texts:
                _add(out, "assistant", "content", [{"type": "text", "text": "".join(texts)}])
                user = None
            continue
        blocks: list[dict[str, Any]] = [{"type": "text", "text": "".join(texts)}] if texts else []
        user = []
        for call in calls:
            tool: Any = call.tool_call  # a call message: never None
            call_id = tool.id
            use_id = call_id if _ANTHROPIC_MATCH(call_id) else anthropic_id(call_id)
            blocks.append(
                {
                    "type": "tool_use",
                    "id": use_id,
                    "name": tool.name,
                    "input": canonical(tool.arguments),
                }
            )
            text, is_error = answer(call, results, limit)
            made = {"type": "tool_result", "tool_use_id": use_id, "content": text}
            if is_error:
                made["is_error"] = True
            user.append(made)
        _add(out, "assistant", "content", blocks)
        out.append({"role": "user", "content": user})


def _gemini(out: list[dict[str, Any]], block: Block, limit: int | None) -> None:
    items, results = scan(block)
    # ``_add`` inlined for the user's side, as in ``_anthropic``.
    user: list[Any] | None = out[-1]["parts"] if out and out[-1]["role"] == "user" else None
    for item in items:
        if isinstance(item, str):
            made: dict[str, Any] = {"text": item}
            if user is None:
                user = [made]
                out.append({"role": "user", "parts": user})
            else:
                user.append(made)
            continue
        texts, calls = item
        if not calls:
            if texts:
                _add(out, "model", "parts", [{"text": text} for text in texts])
                user = None
            continue
        parts: list[dict[str, Any]] = [{"text": text} for text in texts] if texts else []
        user = []
        for call in calls:
            tool: Any = call.tool_call  # a call message: never None
            name = tool.name
            parts.append({"function_call": {"name": name, "args": canonical(tool.arguments)}})
            text, is_error = answer(call, results, limit)
            response = {"error" if is_error else "output": text}
            user.append({"function_response": {"name": name, "response": response}})
        _add(out, "model", "parts", parts)
        out.append({"role": "user", "parts": user})


def _merged_join(key: str) -> Callable[[list[dict[str, Any]], list[dict[str, Any]]], None]:
    def join(out: list[dict[str, Any]], entries: list[dict[str, Any]]) -> None:
        if entries and out and out[-1]["role"] == entries[0]["role"]:
            out[-1][key].extend(entries[0][key])
            out.extend(entries[1:])
        else:
            out.extend(entries)

    return join


Speller = Callable[[list[dict[str, Any]], Block, int | None], None]
Joiner = Callable[[list[dict[str, Any]], list[dict[str, Any]]], None]
SPELLERS: dict[str, tuple[Speller, Joiner]] = {
    "openai": (_openai, _openai_join),
    "anthropic": (_anthropic, _merged_join("content")),
    "gemini": (_gemini, _merged_join("parts")),
}
"""Provider key (``spelled``'s) -> how it spells a compact block and joins a spelled list."""


def _reasoning(segment: tuple[ViewMessage, ...]) -> bool:
    """Whether a part of ``segment`` is reasoning or blank text (which a run may spell as
    nothing, so its spelled list would not end on its last message's role)."""
    for message in segment:
        for part in message.parts:
            kind = type(part)
            if kind is ReasoningPart:
                return True
            if kind is TextPart:
                text = part.text  # type: ignore[union-attr]
                if not text or text.isspace():
                    return True
    return False


def spell(
    segments: tuple[Segment, ...],
    limit: int | None,
    note: bool,
    key: str,
    body: Callable[[tuple[ViewMessage, ...]], list[dict[str, Any]]],
) -> list[dict[str, Any]]:
    """``body(materialize(segments, limit, note))``, compact blocks spelled from their
    messages when the provider ``key`` can (a fresh list, its entries fresh too)."""
    found = SPELLERS.get(key)
    if found is None or any(
        type(segment) is not Block and _reasoning(segment) for segment in segments
    ):
        # Reasoning is read across the messages of a run: spell the whole view at once.
        return body(materialize(segments, limit, note))
    speller, join = found
    out: list[dict[str, Any]] = []
    if note:
        join(out, body((ViewMessage(role=ViewRole.USER, parts=(TextPart(text=START_NOTE),)),)))
    for segment in segments:
        if type(segment) is Block:
            speller(out, segment, limit)
        elif segment:
            join(out, body(segment))
    return out
