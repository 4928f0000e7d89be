"""Settled plain blocks kept as they are stored, and spelled straight from their messages.

A cold view of a long session used to build about fourteen view objects per turn
(a ``ViewMessage``, a tuple of parts and the parts), keep them all in the view's
settled prefix, and then spell them as provider dicts: most of its time, and most
of the objects that outlive the young collections, so most of the collector's
work (docs/performance-views.md). Most settled blocks are *compact*: plain
(``runtime/_plain_block.py``: model outputs without metadata or attachments, in
stored order) and nothing in them that needs more than text (no attachments or
browser elements on inputs, no reasoning the model would get back). A
``ViewPrefix`` keeps such a block as the ``Block`` itself; the provider views
spell it from its messages (``spell``), and its view messages are built only
when ``ModelView.messages`` or ``ViewPrefix.messages`` is read (``materialize``,
which is ``plain_block``).

Both are read off one walk of the block (``records``): the view messages the
block gives, each as a small tuple that dies young: ``(USER, text)``,
``(ASSISTANT, texts, calls)`` or ``(TOOL, call_id, name, text, is_error)``.
Property tests pin every provider's spelling of compact blocks equal to its
spelling of the built view messages, over random sessions
(``tests/runtime/test_compact.py``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from operator import attrgetter
from typing import Any

from ._category import _NO_METADATA, INPUT_CATEGORIES, Category
from ._clean import (
    _EMPTY_USER_TEXT,
    _NOTICES,
    _SPOKEN_AS_USER,
    NOTIFICATION_PREFIX,
    BlockBuilder,
    result_text,
    synthesized_text,
)
from ._history import Block
from ._json import canonical
from ._message import Message
from ._plain_block import plain_block
from ._view import (
    ReasoningPart,
    Segment,
    TextPart,
    ViewMessage,
    ViewPrefix,
    ViewRole,
    arguments_json,
)
from ._window import START_NOTE

__all__ = ["compact", "first_role", "materialize", "prefix_last_role", "records", "spell"]

_USER = ViewRole.USER
_ASSISTANT = ViewRole.ASSISTANT
_TOOL = ViewRole.TOOL
_call_index = attrgetter("tool_call.index")
_CALL = Category.TOOL_CALL
_REPLY = Category.REPLY
_THOUGHT = Category.THOUGHT
_RESULT = Category.TOOL_RESULT
_QUESTION = Category.USER_QUESTION
_NOTIFICATION = Category.NOTIFICATION

Record = tuple[Any, ...]
"""``(USER, text)``, ``(ASSISTANT, texts, calls)`` or ``(TOOL, call_id, name, text, is_error)``."""


def compact(block: Block, current: str | None) -> bool:
    """Whether ``block`` can be kept as it is and spelled from its messages (module
    docstring): ``plain_block`` takes it, and its view is text, calls and results only."""
    if not block.stored_order and len(block.messages) > 1:
        return False
    for message, category in zip(block.messages, block.categories, strict=True):
        if category is _RESULT or category is _NOTIFICATION:
            continue
        if category is _CALL or category is _REPLY or category is _THOUGHT:
            metadata = message.metadata
            if (
                (metadata is not _NO_METADATA and metadata)
                or message.attachments
                or (category is not _CALL and message.tool_call is not None)
                or (current is not None and message.turn_id == current)
            ):
                return False
        elif category in _SPOKEN_AS_USER:
            if message.attachments or message.browser_elements:
                return False
        else:  # an assistant text of its own (``BlockBuilder.one``): as stored only
            metadata = message.metadata
            if (metadata is not _NO_METADATA and metadata) or message.attachments:
                return False
    return True


def _user_text(message: Message, category: Category) -> str:
    """``BlockBuilder.user``'s text for a message without attachments or browser elements."""
    content = message.content
    text = content if (content and not content.isspace()) else _EMPTY_USER_TEXT
    return NOTIFICATION_PREFIX + text if category in _NOTICES else text


def records(block: Block, limit: int | None) -> Iterator[Record]:
    """The view messages of a compact block, in order, as records (module docstring);
    an assistant record's calls are the call messages, by index."""
    results: dict[str, Message] = {}
    items: list[Any] = []
    group: list[Message] | None = None  # the outputs of one response
    for message, category in zip(block.messages, block.categories, strict=True):
        if category is _CALL or category is _REPLY:
            if group is None:
                group = []
                items.append(group)
            group.append(message)
        elif category is _THOUGHT:
            continue  # a thought of a finished turn: never sent, and it parts no response
        elif category is _RESULT:
            results[message.tool_call_id or ""] = message
            group = None
        elif category in INPUT_CATEGORIES:  # first: phasing put them first
            content = message.content
            if category is _QUESTION and content and not content.isspace():
                yield (_USER, content)  # ``_user_text``'s common case
            else:
                yield (_USER, _user_text(message, category))
        else:
            group = None
            items.append((message, category))
    for item in items:
        if type(item) is list:
            texts: list[str] = []
            calls: list[Message] = []
            last: int | None = -1  # the index of the last call, while they come in order
            for message in item:
                tool = message.tool_call
                if tool is not None:
                    calls.append(message)
                    if last is not None:
                        index = tool.index
                        last = index if index >= last else None
                else:
                    content = message.content
                    if content and not content.isspace():
                        texts.append(content)
            if not calls:
                if texts:
                    yield (_ASSISTANT, texts, calls)
                continue
            if last is None:  # out of index order (in order, a stable sort moves nothing)
                calls.sort(key=_call_index)  # stable: calls of one index stay in stored order
            yield (_ASSISTANT, texts, calls)
            for call in calls:
                tool = call.tool_call
                assert tool is not None
                call_id = tool.id
                result = results.pop(call_id, None)
                if result is None:
                    text = synthesized_text(call, tool.name, None)
                    yield (_TOOL, call_id, tool.name, text, True)
                    continue
                text = result.content
                if not (
                    text
                    and (limit is None or len(text) <= limit)
                    and not result.is_error
                    and not result.attachments
                    and not text.isspace()
                ):  # else a plain result: its text as it is
                    text, _ = result_text(result, limit)
                yield (_TOOL, call_id, tool.name, text, result.is_error)
        else:
            message, category = item
            if category is _NOTIFICATION:
                continue
            if category in _SPOKEN_AS_USER:
                yield (_USER, _user_text(message, category))
                continue
            content = message.content
            if content and not content.isspace():
                yield (_ASSISTANT, [content], [])


def first_role(segments: tuple[Segment, ...]) -> ViewRole | None:
    """The role of the first view message of ``segments`` (None if they give none)."""
    for segment in segments:
        if type(segment) is Block:
            for record in records(segment, None):
                return record[0]  # type: ignore[no-any-return]
        elif segment:
            return segment[0].role  # type: ignore[no-any-return]
    return None


def _last_role(segments: tuple[Segment, ...]) -> ViewRole | None:
    for segment in reversed(segments):
        if type(segment) is Block:
            role: ViewRole | None = None
            for record in records(segment, None):
                role = record[0]
            if role is not None:
                return role
        elif segment:
            return segment[-1].role  # type: ignore[no-any-return]
    return None


def prefix_last_role(prefix: ViewPrefix) -> ViewRole | None:
    """The role of the last message of ``prefix`` (its messages are not built for it)."""
    if prefix.built is not None:
        return prefix.built[-1].role if prefix.built else None
    role = _last_role(prefix.segments)
    if role is None and prefix.note:
        return _USER
    return role


def materialize(
    segments: tuple[Segment, ...], limit: int | None, note: bool
) -> tuple[ViewMessage, ...]:
    """The view messages of ``segments``, the start note first if ``note``."""
    out: list[ViewMessage] = []
    if note:
        out.append(ViewMessage(role=_USER, parts=(TextPart(text=START_NOTE),)))
    builder: BlockBuilder | None = None
    for segment in segments:
        if type(segment) is Block:
            if builder is None:
                builder = BlockBuilder.detached(limit)
            made = plain_block(builder, segment)
            assert made is not None  # a compact block is plain
            out.extend(made)
        else:
            out.extend(segment)
    return tuple(out)


# Spelling: each provider's body (``runtime/_providers.py``) applied to the records, as
# it reads the view messages they stand for. Entries are appended to ``out`` with the
# body's own merging, so blocks spelled one after another give what spelling their views
# at once gives: no record is reasoning, the only part a run reads across messages.


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
    for record in records(block, limit):
        role = record[0]
        if role is _USER:
            out.append({"role": "user", "content": record[1]})
        elif role is _TOOL:
            out.append({"role": "tool", "tool_call_id": record[1], "content": record[3]})
        else:
            texts, calls = record[1], record[2]
            entry: dict[str, Any] = {
                "role": "assistant",
                "content": "".join(texts) if texts else None,
            }
            if calls:
                made = []
                for call in calls:
                    tool = call.tool_call
                    function = {"name": tool.name, "arguments": arguments_json(tool.arguments)}
                    made.append({"id": tool.id, "type": "function", "function": function})
                entry["tool_calls"] = made
            _openai_add(out, entry)


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


_ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
_ANTHROPIC_MATCH = _ANTHROPIC_ID.match


def anthropic_id(call_id: str) -> str:
    """Anthropic wants tool ids matching ``[a-zA-Z0-9_-]+``; others are hashed, stably."""
    if _ANTHROPIC_MATCH(call_id):
        return call_id
    return "toolu_" + hashlib.sha256(call_id.encode()).hexdigest()[:24]


def _anthropic(out: list[dict[str, Any]], block: Block, limit: int | None) -> None:
    # ``_add`` inlined for the user's side, the most frequent: ``items`` is the content of
    # the last entry when that entry is the user's.
    items: list[Any] | None = out[-1]["content"] if out and out[-1]["role"] == "user" else None
    for record in records(block, limit):
        role = record[0]
        if role is _USER:
            made: dict[str, Any] = {"type": "text", "text": record[1]}
        elif role is _TOOL:
            call_id = record[1]
            made = {
                "type": "tool_result",
                "tool_use_id": call_id if _ANTHROPIC_MATCH(call_id) else anthropic_id(call_id),
                "content": record[3],
            }
            if record[4]:
                made["is_error"] = True
        else:
            texts, calls = record[1], record[2]
            blocks: list[dict[str, Any]] = (
                [{"type": "text", "text": "".join(texts)}] if texts else []
            )
            for call in calls:
                tool = call.tool_call
                call_id = tool.id
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call_id if _ANTHROPIC_MATCH(call_id) else anthropic_id(call_id),
                        "name": tool.name,
                        "input": canonical(tool.arguments),
                    }
                )
            _add(out, "assistant", "content", blocks)
            items = None
            continue
        if items is None:
            items = [made]
            out.append({"role": "user", "content": items})
        else:
            items.append(made)


def _gemini(out: list[dict[str, Any]], block: Block, limit: int | None) -> None:
    # ``_add`` inlined for the user's side, as in ``_anthropic``.
    items: list[Any] | None = out[-1]["parts"] if out and out[-1]["role"] == "user" else None
    for record in records(block, limit):
        role = record[0]
        if role is _USER:
            made: dict[str, Any] = {"text": record[1]}
        elif role is _TOOL:
            response = {"error" if record[4] else "output": record[3]}
            made = {"function_response": {"name": record[2], "response": response}}
        else:
            parts: list[dict[str, Any]] = [{"text": text} for text in record[1]]
            for message in record[2]:
                tool = message.tool_call
                call = {"name": tool.name, "args": canonical(tool.arguments)}
                parts.append({"function_call": call})
            _add(out, "model", "parts", parts)
            items = None
            continue
        if items is None:
            items = [made]
            out.append({"role": "user", "parts": items})
        else:
            items.append(made)


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
        join(out, body((ViewMessage(role=_USER, parts=(TextPart(text=START_NOTE),)),)))
    for segment in segments:
        if type(segment) is Block:
            speller(out, segment, limit)
        elif segment:
            join(out, body(segment))
    return out
