"""``Window``: how much history the model's view keeps, by tokens and by messages.

The window keeps the newest history that fits both budgets. It cuts only
between units the model needs whole: a user message alone, or a run of the
assistant's output with the tool results that answer it, so a tool call is
never kept without its result (or the reverse). The current turn (the active
one, or else the latest) and everything after it are always kept, even when
they alone exceed the budget. What is left out is older history, never a hole
in the middle; the note that says so counts in the budget.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import attrs

from ._article import type_named
from ._errors import ProjectionError
from ._history import Block
from ._state import SessionState, added_seq
from ._turn import Turn
from ._view import ImagePart, ModelView, TextPart, ToolUsePart, ViewMessage, ViewRole

__all__ = [
    "START_NOTE",
    "CurrentTurn",
    "TokenCounter",
    "Window",
    "approx_tokens",
    "assemble",
    "cost",
    "is_call",
    "units",
]

START_NOTE = "[Start of the conversation]"
"""Put first when the view would start with the assistant."""
_OMITTED_NOTE = (
    "[Earlier conversation omitted from this view; the messages below start at event seq {seq}.]"
)

TokenCounter = Callable[[str], int]
"""Counts the tokens of a text (``lambda s: len(encoding.encode(s))`` with tiktoken)."""


def approx_tokens(text: str) -> int:
    """A rough token count: one token per four characters, rounded up.

    Close enough for English and code with the common BPE tokenizers; plug a
    real tokenizer into ``Window.count_tokens`` when the budget is tight.
    """
    return (len(text) + 3) // 4


def _budget(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ProjectionError(
            f"Window.{attribute.name} must be a non-negative int or None for no limit "
            f"(got {value!r} that is {type_named(value)})."
        )


def _count(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ProjectionError(
            f"Window.{attribute.name} must be a non-negative int "
            f"(got {value!r} that is {type_named(value)})."
        )


def _callable(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not callable(value):
        raise ProjectionError(
            f"Window.count_tokens must be a function from str to int (got {value!r} that is "
            f"{type_named(value)}); pass e.g. approx_tokens."
        )


@attrs.frozen(kw_only=True)
class Window:
    """Budgets for the model's view; None means no limit on that axis."""

    max_tokens: int | None = attrs.field(default=None, validator=_budget)
    """Most tokens the view may hold (estimated with ``count_tokens``)."""
    max_messages: int | None = attrs.field(default=None, validator=_budget)
    """Most view messages it may hold (about one per stored message)."""
    count_tokens: TokenCounter = attrs.field(default=approx_tokens, validator=_callable)
    """Counts a text's tokens; the default is ``approx_tokens``."""
    message_tokens: int = attrs.field(default=4, validator=_count)
    """Tokens added per message for the role and framing."""
    image_tokens: int = attrs.field(default=1_600, validator=_count)
    """Tokens counted per image (providers bill roughly 1-2k for a typical photo)."""

    def tokens_of(self, text: str) -> int:
        """Tokens of ``text`` by ``count_tokens``, checked.

        Raises:
            ProjectionError: the counter returned something other than a
                non-negative int.
        """
        n = self.count_tokens(text)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ProjectionError(
                f"Window.count_tokens must return a non-negative int (got {n!r} that is "
                f"{type_named(n)} for a text of {len(text)} characters)."
            )
        return n


class CurrentTurn:
    """Which blocks a window must keep: the current turn's, and everything newer.

    The current turn is the active one, or else the latest. Its inputs may sit
    in an older block (a recovered turn claimed them first), so it is done
    only once its own block and all of its inputs have gone by.
    """

    def __init__(self, state: SessionState) -> None:
        self.state = state
        self.turn_id = state.active_turn_id
        self.waiting: set[str] | None = None
        if self.turn_id is not None:
            self.waiting = self.inputs(self.turn_id)

    def _turn(self, turn_id: str) -> Turn:
        turn = self.state.turn(turn_id)
        assert turn is not None, turn_id  # the current turn exists in its own state
        return turn

    def inputs(self, turn_id: str) -> set[str]:
        found = (self.state.get(i) for i in self._turn(turn_id).input_ids)
        return {m.id for m in found if m is not None and m.active}

    def protects(self, block: Block) -> bool:
        """Whether ``block`` (the next one, newest first) must be kept."""
        if self.waiting is None:
            if block.turn_id is None:
                return True  # newer than any turn
            self.turn_id = block.turn_id
            self.waiting = self.inputs(block.turn_id)
        keep = bool(self.waiting) or block.turn_id == self.turn_id
        self.waiting.difference_update(m.id for m in block.messages)
        return keep


def units(messages: list[ViewMessage]) -> list[list[ViewMessage]]:
    """Split a block's view messages where a window may cut: before any message but a result.

    A model response is one assistant message holding its calls, so a unit is
    that message and the results that answer it.
    """
    units: list[list[ViewMessage]] = []
    for message in messages:
        if units and message.role is ViewRole.TOOL:
            units[-1].append(message)
        else:
            units.append([message])
    return units


def is_call(message: ViewMessage) -> bool:
    """True for a view message that holds a tool call."""
    return any(isinstance(part, ToolUsePart) for part in message.parts)


def cost(window: Window, message: ViewMessage) -> int:
    """Tokens ``message`` takes by ``window``'s counter."""
    images = sum(1 for part in message.parts if isinstance(part, ImagePart))
    return window.message_tokens + window.tokens_of(message.text) + images * window.image_tokens


def assemble(
    state: SessionState,
    blocks: Iterable[tuple[Block, list[ViewMessage] | tuple[ViewMessage, ...]]],
    window: Window | None,
) -> ModelView:
    """The view of ``state`` from its blocks' view messages, newest block first.

    Without a window every block is kept; with one, whole units are kept from
    the newest back while they fit (the current turn always), and a note says
    what was left out. The note is counted in the budget: when it would not fit,
    the oldest units kept go too (never the current turn's). ``blocks`` is read
    lazily: a window stops early.
    """
    if window is None:
        chunks = [messages for _, messages in blocks]
        chunks.reverse()
        everything = [m for messages in chunks for m in messages]
        return _view(state, everything, _lead(state, everything, False), False, None)
    kept: list[tuple[list[ViewMessage], int, bool]] = []  # (unit, tokens, protected), newest first
    current = CurrentTurn(state)
    truncated = False
    tokens = count = 0
    for block, messages in blocks:
        protected = current.protects(block)
        for unit in reversed(units(list(messages))):
            unit_tokens = sum(cost(window, m) for m in unit)
            if not protected and not _fits(window, tokens + unit_tokens, count + len(unit)):
                truncated = True
                break
            tokens += unit_tokens
            count += len(unit)
            kept.append((unit, unit_tokens, protected))
        if truncated:
            break
    kept.reverse()  # oldest first
    first = 0
    while True:
        out = [m for unit, _, _ in kept[first:] for m in unit]
        lead = _lead(state, out, truncated)
        if lead is None:
            return _view(state, out, None, truncated, tokens)
        lead_tokens = cost(window, lead)
        if _fits(window, tokens + lead_tokens, count + 1) or first == len(kept) or kept[first][2]:
            return _view(state, out, lead, truncated, tokens + lead_tokens)
        # The note would overflow the budget: the oldest unit kept makes room for it.
        unit, unit_tokens, _ = kept[first]
        first += 1
        tokens -= unit_tokens
        count -= len(unit)
        truncated = True


def _fits(window: Window, tokens: int, count: int) -> bool:
    return (window.max_tokens is None or tokens <= window.max_tokens) and (
        window.max_messages is None or count <= window.max_messages
    )


def _lead(state: SessionState, out: list[ViewMessage], truncated: bool) -> ViewMessage | None:
    """The user note that goes first: what was left out, or that the view starts with the
    assistant; None when neither."""
    if truncated:
        first = next((m for m in out if m.event_seq is not None), None)
        source = None if first is None or first.source_id is None else state.get(first.source_id)
        # A seq of this session (an inherited message's own event_seq is its source's).
        first_seq = (
            state.seq
            if first is None
            else first.event_seq
            if source is None
            else added_seq(state, source)
        )
        note = _OMITTED_NOTE.format(seq=first_seq)
    elif out and out[0].role is not ViewRole.USER:
        note = START_NOTE
    else:
        return None
    return ViewMessage(role=ViewRole.USER, parts=(TextPart(text=note),))


def _view(
    state: SessionState,
    out: list[ViewMessage],
    lead: ViewMessage | None,
    truncated: bool,
    tokens: int | None,
) -> ModelView:
    return ModelView(
        session_id=state.session_id,
        seq=state.seq,
        messages=tuple(out) if lead is None else (lead, *out),
        truncated=truncated,
        tokens=tokens,
    )
