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
spell it from its messages (``spell``, ``runtime/_compact_spell.py``), and its
view messages are built only when ``ModelView.messages`` or ``ViewPrefix.messages``
is read (``materialize``, which is ``plain_block``).

The spellers read one pass over the block (``scan``): its user texts and responses
in order, and its results by call id. ``records`` gives the same view messages as
small tuples: ``(USER, text)``, ``(ASSISTANT, texts, calls)`` or ``(TOOL, call_id,
name, text, is_error)``. Property tests pin every provider's spelling of compact
blocks equal to its spelling of the built view messages, over random sessions
(``tests/runtime/test_compact.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
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
from ._message import _NO_ITEMS, Message
from ._plain_block import plain_block
from ._view import (
    Segment,
    TextPart,
    ViewMessage,
    ViewPrefix,
    ViewRole,
)
from ._window import START_NOTE

__all__ = [
    "Group",
    "answer",
    "compact",
    "first_role",
    "materialize",
    "prefix_last_role",
    "records",
    "scan",
]

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
    if block.bare and block.turn_id != current:
        # The walk found no metadata, attachments or browser elements, and none of its
        # messages is the running turn's; a model output carries a tool call only if it
        # is a call (``Message`` checks that its type says so).
        return True
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


Group = tuple[list[str], list[Message]]
"""One response of a compact block: its non-blank reply texts and its call messages, by index."""


def scan(block: Block) -> tuple[list[str | Group], dict[str, Message]]:
    """One pass over a compact block: its view messages in order, each a user text (a
    ``str``) or a response (a ``Group``, which gives an assistant message when it has texts
    or calls, then a tool message per call), and the block's results by call id.

    A compact block is in phased order (``compact``): its inputs come first, as ``records``
    gives them."""
    results: dict[str, Message] = {}
    items: list[str | Group] = []
    group: Group | None = None  # the outputs of one response
    last = -1  # the index of the last call, to tell whether they come in index order
    ordered = True
    for message, category in zip(block.messages, block.categories, strict=True):
        if category is _CALL:
            if group is None:
                group = ([], [])
                items.append(group)
            group[1].append(message)
            index = message.tool_call.index  # type: ignore[union-attr]
            if index < last:
                ordered = False
            last = index
        elif category is _REPLY:
            if group is None:
                group = ([], [])
                items.append(group)
            content = message.content
            if content and not content.isspace():
                group[0].append(content)
        elif category is _THOUGHT:
            continue  # a thought of a finished turn: never sent, and it parts no response
        elif category is _RESULT:
            results[message.tool_call_id or ""] = message
            group = None
        elif category in INPUT_CATEGORIES:  # first: phasing put them first
            content = message.content
            if category is _QUESTION and content and not content.isspace():
                items.append(content)  # ``_user_text``'s common case
            else:
                items.append(_user_text(message, category))
        else:
            group = None
            if category is _NOTIFICATION:
                continue
            if category in _SPOKEN_AS_USER:
                items.append(_user_text(message, category))
                continue
            content = message.content
            if content and not content.isspace():
                items.append(([content], []))
    if not ordered:  # (in order, a stable sort moves nothing)
        for item in items:
            if not isinstance(item, str):
                item[1].sort(key=_call_index)  # stable: calls of one index stay in stored order
    return items, results


def answer(call: Message, results: dict[str, Message], limit: int | None) -> tuple[str, bool]:
    """The text and error flag of the tool message that answers ``call`` (its result, taken
    out of ``results``, or the one the view makes up when it has none)."""
    tool = call.tool_call
    assert tool is not None
    result = results.pop(tool.id, None)
    if result is None:
        return synthesized_text(call, tool.name, None), True
    text = result.content
    if not (
        text
        and (limit is None or len(text) <= limit)
        and not result.is_error
        and result.attachments is _NO_ITEMS
        and not text.isspace()
    ):  # else a plain result: its text as it is
        text, _ = result_text(result, limit)
    return text, result.is_error


def records(block: Block, limit: int | None) -> Iterator[Record]:
    """The view messages of a compact block, in order, as records (module docstring);
    an assistant record's calls are the call messages, by index."""
    items, results = scan(block)
    for item in items:
        if isinstance(item, str):
            yield (_USER, item)
            continue
        texts, calls = item
        if calls:
            yield (_ASSISTANT, texts, calls)
            for call in calls:
                tool = call.tool_call
                assert tool is not None
                text, is_error = answer(call, results, limit)
                yield (_TOOL, tool.id, tool.name, text, is_error)
        elif texts:
            yield (_ASSISTANT, texts, calls)


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
