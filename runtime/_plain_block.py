"""The view of a *plain* block in one pass: ``BlockBuilder.block``'s fast path.

Most blocks of a long session are plain: their model outputs (thoughts,
replies, tool calls) carry no metadata (no provider data, no ``model_call``
key, nothing interrupted) and no attachments, and phasing did not reorder
the block. Its inputs, results and other messages may be anything: the
builder's own methods build those. For such a block the rules of
``clean_history`` for a response reduce to a few cases: each
stored output is at most one part in the default rank (reasoning, text, then
calls by index), and a model response is the run of outputs stored together.
``plain_block`` builds that view without reading the messages back as
``StoredPart``s, ranking and sorting every part; any other block gets None and
takes the general path. A Hypothesis property test pins the two equal over
random sessions (``tests/runtime/test_view_fast_paths.py``).
"""

from __future__ import annotations

from operator import itemgetter
from typing import TYPE_CHECKING

from ._category import INPUT_CATEGORIES, Category
from ._history import Block
from ._json import freeze_map
from ._message import Message
from ._view import (
    ToolUsePart,
    ViewMessage,
    ViewPart,
    ViewRole,
    trusted_reasoning,
    trusted_text,
    trusted_tool_result,
    trusted_tool_use,
    trusted_view_message,
)

if TYPE_CHECKING:
    from ._clean import BlockBuilder

__all__ = ["plain_block"]

_OUTPUTS = frozenset({Category.THOUGHT, Category.REPLY, Category.TOOL_CALL})
_NO_METADATA = freeze_map(None)
"""The empty metadata most messages share: a cheaper test than its length (a Python call)."""


_ASSISTANT = ViewRole.ASSISTANT
_TOOL = ViewRole.TOOL
_index = itemgetter(0)
"""The call index of a ``(index, message, part)`` entry (a C function: no Python call)."""


def plain_block(builder: BlockBuilder, block: Block) -> list[ViewMessage] | None:
    """``builder.block(block)`` if ``block`` is plain (module docstring), else None.

    Only the model's outputs need to be plain: inputs, results and the other messages
    are built by the builder's own methods, which take any message.
    """
    if not block.stored_order and len(block.messages) > 1:
        return None
    inputs: list[tuple[Message, Category]] = []
    results: dict[str, Message] = {}
    items: list[tuple[Message, Category] | list[tuple[Message, Category]]] = []
    group: list[tuple[Message, Category]] | None = None  # the outputs of one response
    for message, category in zip(block.messages, block.categories, strict=True):
        if category in _OUTPUTS:
            metadata = message.metadata
            if (
                (metadata is not _NO_METADATA and metadata)
                or message.attachments
                or (message.tool_call is not None and category is not Category.TOOL_CALL)
            ):
                return None
            if group is None:
                group = []
                items.append(group)
            group.append((message, category))
        elif category is Category.TOOL_RESULT:
            results[message.tool_call_id or ""] = message
            group = None
        elif category in INPUT_CATEGORIES:  # first: phasing put them first, in stored order
            inputs.append((message, category))
        else:
            group = None
            items.append((message, category))
    # Built only now that the block is known to be plain: an input's images are loaded once.
    out = [builder.user(message, category) for message, category in inputs]
    for item in items:
        if type(item) is list:
            _response(builder, item, results, out)
        else:
            made = builder.one(*item)
            if made is not None:
                out.append(made)
    return out


def _response(
    builder: BlockBuilder,
    members: list[tuple[Message, Category]],
    results: dict[str, Message],
    out: list[ViewMessage],
) -> None:
    """``BlockBuilder.response`` for plain outputs, appended to ``out``."""
    if len(members) == 1 and members[0][1] is Category.REPLY:
        # ``builder.one`` of a reply without metadata (so not interrupted) or attachments.
        reply = members[0][0]
        content = reply.content
        if content and not content.isspace():
            part = trusted_text(content)
            out.append(
                trusted_view_message(
                    _ASSISTANT, (part,), reply.id, (), reply.turn_id, reply.event_seq
                )
            )
        return
    current = builder.current
    ids: list[str] = []
    parts: list[ViewPart] = []  # thoughts, then text, then calls by index
    texts: list[ViewPart] = []
    uses: list[tuple[int, Message, ToolUsePart]] = []
    for message, category in members:
        ids.append(message.id)
        if category is Category.TOOL_CALL:
            tool = message.tool_call
            assert tool is not None
            use = trusted_tool_use(tool.id, tool.name, tool.arguments)
            uses.append((tool.index, message, use))
        elif category is Category.THOUGHT:  # sent only in the current turn
            if message.turn_id is not None and message.turn_id == current:
                content = message.content
                if content and not content.isspace():
                    parts.append(trusted_reasoning(content))
        else:
            content = message.content
            if content and not content.isspace():
                texts.append(trusted_text(content))
    if texts:
        parts.extend(texts)
    if uses:
        if len(uses) > 1:
            uses.sort(key=_index)  # stable: calls of one index stay in stored order
        parts.extend([use for _, _, use in uses])
    if not parts:
        return
    first = members[0][0]
    out.append(
        trusted_view_message(
            ViewRole.ASSISTANT, tuple(parts), first.id, tuple(ids), first.turn_id, first.event_seq
        )
    )
    limit = builder.max_result_chars
    for _, call, use in uses:
        result = results.pop(use.call_id, None)
        if result is None:
            out.append(builder.synthesized(call, use.call_id, use.name))
            continue
        text = result.content
        if (
            text
            and (limit is None or len(text) <= limit)
            and not result.is_error
            and not result.attachments
            and not text.isspace()
        ):  # ``builder.result`` of a plain result: its text as it is
            answer = trusted_tool_result(use.call_id, use.name, text, False, False, False)
            out.append(
                trusted_view_message(
                    _TOOL, (answer,), result.id, (), result.turn_id, result.event_seq
                )
            )
        else:
            out.append(builder.result(result, use.name))
