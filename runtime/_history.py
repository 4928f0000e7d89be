"""``session_history``: every active message, turn by turn, in phased order (DESIGN §6).

Inside a turn the messages are put back in the order of their lifecycle,
whatever order they were stored in (async tools make them overlap): the
turn's inputs first, then thoughts (phase 0), tool calls (1), tool results (2)
and final text (3), each phase in stored order (seed 000 §5.1).

Turns come in the order they ran. That order is read from message positions,
not from ``Turn.started_seq`` (a fork keeps the source's seqs on the turns it
imports, so seqs of imported and new turns do not compare): a turn claims only
input that arrived after the previous turn started, so the position of its
earliest input orders it. Turns that share an input (a turn whose runner died,
then the turn that claimed its input again) are ordered recovered-first. An
input belongs to the first turn that claimed it, so a recovered turn's work
stays after the question that caused it. Messages outside any turn (a
notification, pending input) stand alone at their position.

The walk runs from the newest message back, so a window that needs only the
last few turns (``clean_history``) touches only them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from operator import itemgetter
from typing import Any

import attrs
from pyrsistent.typing import PVector

from ._article import type_named
from ._category import _DEFAULT, _NO_METADATA, Category, category_of
from ._message import _NO_ITEMS, Message
from ._replace import constructor
from ._state import SessionState
from ._turn import Turn, TurnStatus

__all__ = [
    "Block",
    "Walk",
    "blocks_newest_first",
    "newest_first",
    "order_key",
    "phase_of",
    "session_history",
    "start_rank",
]

INPUT_PHASE = -1
"""Phase of a turn's inputs: they come first."""
_PHASES = {
    category: INPUT_PHASE
    if category.is_input
    else {Category.THOUGHT: 0, Category.TOOL_CALL: 1, Category.TOOL_RESULT: 2}.get(category, 3)
    for category in Category
}


def phase_of(message: Message, category: Category | None = None) -> int:
    """The phase of ``message`` inside its turn: input -1, thought 0, call 1, result 2, text 3."""
    return _PHASES[category or category_of(message)]


def newest_first(messages: PVector[Message]) -> Iterator[tuple[int, Message]]:
    """``(position, message)`` from the last message back.

    Reads the vector a leaf (32 messages) at a time when it can: indexing
    pyrsistent's pure-Python vector walks the trie on every call.
    """
    node_for = getattr(type(messages), "_node_for", None)
    position = len(messages) - 1
    if node_for is None:  # another vector type: index one by one
        while position >= 0:
            yield position, messages[position]
            position -= 1
        return
    while position >= 0:
        leaf = node_for(messages, position)
        base = position & ~31
        for offset in range(position - base, -1, -1):
            yield base + offset, leaf[offset]
        position = base - 1


@attrs.frozen(kw_only=True)
class Block:
    """One turn's active messages in phased order, or one message outside any turn."""

    turn_id: str | None
    """The turn, or None for a message that stands alone."""
    messages: tuple[Message, ...]
    """The messages, in phased order (inputs first)."""
    categories: tuple[Category, ...]
    """``category_of`` each message, computed once."""
    stored_order: bool = False
    """True when ``messages`` are also in stored order (phasing moved nothing), so a reader
    that wants stored order need not sort them again; False when unknown."""
    bare: bool = attrs.field(default=False, eq=False, repr=False)
    """True when every message is active, of the block's turn, and without metadata,
    attachments or browser elements (the walk read the turn in one step, ``_turn_run``), so
    a reader that needs no more than that need not look at each message; False when
    unknown. A hint, not part of the block's value (not compared)."""


trusted_block: Callable[
    [str | None, tuple[Message, ...], tuple[Category, ...], bool, bool], Block
] = constructor(Block, "turn_id", "messages", "categories", "stored_order", "bare")
"""``Block(...)`` of values the walk made, by position, built without ``__init__`` (as
``_view``'s trusted constructors are; ``Block`` has no validators or converters)."""


def start_rank(state: SessionState, turn: Turn) -> int:
    """Where ``turn`` started among ``state``'s turns: its place in ``turn_order``.

    Not ``turn.started_seq``: a fork keeps the source's seqs on the turns it imports, so
    the seqs of imported and new turns do not compare, while ``turn_order`` lists the
    imported turns first. Searched from the newest turn back (the turns compared are
    recent ones); a state built by hand without ``turn_order`` falls back to the seq.
    """
    order = state.turn_order
    turn_id = turn.id
    for position in range(len(order) - 1, -1, -1):
        if order[position] == turn_id:
            return position
    return turn.started_seq


def order_key(state: SessionState, turn: Turn) -> tuple[bool, int, str]:
    """Orders turns that share their first input: every claimer but the last was recovered,
    and recovered ones in the order they started."""
    return (turn.status is not TurnStatus.RECOVERED, start_rank(state, turn), turn.id)


_phase_key = itemgetter(0)
"""The phase of a ``(phase, message, category)`` entry (a C function: no Python call)."""


def _stored(messages: PVector[Message], node_for: Any, start: int, end: int) -> list[Message]:
    """``messages[start:end + 1]`` as a list, a leaf of the trie at a time (slicing
    pyrsistent's vector copies all of it)."""
    if node_for is None:
        return [messages[position] for position in range(start, end + 1)]
    out: list[Message] = []
    while start <= end:
        base = start & ~31
        out += node_for(messages, start)[start - base : min(end, base + 31) - base + 1]
        start = base + 32
    return out


def _by_type() -> dict[object, Category]:
    """Message type -> the category ``_DEFAULT`` gives every message of that type, where
    neither role nor sender changes it (a valid message's role/type pair is checked when it
    is built): a one-string key instead of a tuple's for most messages."""
    found: dict[object, set[Category]] = {}
    for (_, type_, _), category in _DEFAULT.items():
        found.setdefault(type_, set()).add(category)
    return {type_: next(iter(c)) for type_, c in found.items() if len(c) == 1}


_BY_TYPE = _by_type()

Shape = tuple[tuple[Category, ...], tuple[int, ...] | None, tuple[int, ...]]
"""What the walk needs of a turn's run of categories: the block's categories (in phased
order), the positions that put the run in phased order (None: it is in order already),
and the positions of its inputs."""


def _shape(categories: tuple[Category | None, ...]) -> Shape | None:
    """The ``Shape`` of a run of categories (None if one is None: the run is not plain)."""
    if None in categories:
        return None
    known: tuple[Category, ...] = categories  # type: ignore[assignment]
    phases = [_PHASES[category] for category in known]
    inputs = tuple(n for n, phase in enumerate(phases) if phase == INPUT_PHASE)
    if phases == sorted(phases):
        return known, None, inputs
    order = tuple(sorted(range(len(phases)), key=phases.__getitem__))  # stable, as the walk's
    return tuple([known[n] for n in order]), order, inputs


def _turn_run(
    leaf: Any,
    base: int,
    messages: PVector[Message],
    node_for: Any,
    turn_id: str,
    anchor: int,
    position: int,
    claims: dict[str, Turn],
    shapes: dict[tuple[Category | None, ...], Shape | None],
) -> Block | None:
    """The block of turn ``turn_id`` when the walk, with no other turn open, meets its
    newest message at ``position`` (in ``leaf``, which starts at ``base``) and every
    message from its ``anchor`` up to there is active, without metadata, attachments or
    browser elements, and belongs to it: then the walk would put each of them in its block
    and nothing else, so the block is read off the run in one comprehension instead of the
    walk's steps per message. None when the run is not so, or an input in it is claimed by
    another turn: the walk then takes the messages one by one.

    ``shapes`` keeps the ``Shape`` of each run of categories the walk has met (turns repeat
    a few shapes): a block of a known shape shares its categories tuple and is not sorted
    again."""
    if anchor >= base:
        run = leaf[anchor - base : position - base + 1]
    else:  # the leaves before this one, then this one's start (a list, or a 1-tuple)
        run = _stored(messages, node_for, anchor, base - 1)
        run += leaf[: position - base + 1]
    by_type = _BY_TYPE.get
    categories: tuple[Any, ...] = tuple(
        [  # a Category each, or None where the run is not plain
            (by_type(m.type) or _DEFAULT[(m.role, m.type, m.sender == "Notification")])
            if m.turn_id == turn_id
            and m.active
            and m.metadata is _NO_METADATA
            and m.attachments is _NO_ITEMS
            and m.browser_elements is _NO_ITEMS
            else None
            for m in run
        ]
    )
    if categories in shapes:
        shape = shapes[categories]
    else:
        shape = shapes[categories] = _shape(categories)
    if shape is None:
        return None
    kept, order, inputs = shape
    for n in inputs:
        owner = claims.get(run[n].id)
        if owner is not None and owner.id != turn_id:
            return None
    if order is None:
        return trusted_block(turn_id, tuple(run), kept, True, True)
    return trusted_block(turn_id, tuple([run[n] for n in order]), kept, False, True)


def blocks_newest_first(state: SessionState) -> Iterator[Block]:
    """Yield the state's blocks from the newest back (see the module docstring).

    Each block is complete when yielded; the walk touches only the messages
    of the blocks it has yielded so far (plus rolled-back ones among them).
    """
    for block, _ in Walk(state).blocks():
        yield block


class Walk:
    """The walk of ``blocks_newest_first``, which can stop at a clean cut.

    A *cut* is a position ``p`` that no block straddles: every block yielded
    so far holds only messages at ``p`` or after it, every block still to come
    only messages before it. ``blocks()`` yields each block with the cut just
    before it (None when a turn still open straddles that point), and, given
    ``stop``, ends at ``stop`` if ``stop`` is a cut (``stopped`` is then True);
    if it is not, the walk goes on to the first message.

    A turn met while no other is open is read in one step when its run of messages
    allows (``_turn_run``); ``fast=False`` takes every message one by one, the path
    property tests pin that shortcut equal to.
    """

    __slots__ = ("fast", "state", "stop", "stopped")

    def __init__(self, state: SessionState, stop: int = 0, *, fast: bool = True) -> None:
        self.state = state
        self.stop = stop
        self.stopped = False
        self.fast = fast

    def blocks(self) -> Iterator[tuple[Block, int | None]]:
        """``(block, cut before it or None)``, newest first."""
        state = self.state
        stop = self.stop
        messages = state.messages
        index = state.index
        turn_of = state.turn
        members: dict[str, list[tuple[int, Message, Category]]] = {}
        anchors: dict[int, list[Turn]] = {}
        claims: dict[str, Turn] = {}
        shapes: dict[tuple[Category | None, ...], Shape | None] = {}

        def claim(turn: Turn, position: int) -> int:
            """Record ``turn``'s claims on its inputs; its anchor (``position`` or the
            earliest of its inputs before it)."""
            anchor = position
            for input_id in turn.input_ids:
                where = index.get(input_id)
                if where is not None and where < anchor:
                    anchor = where
                known = claims.get(input_id)
                if known is None or order_key(state, turn) < order_key(state, known):
                    claims[input_id] = turn
            return anchor

        def register(turn: Turn, anchor: int) -> None:
            members[turn.id] = []
            anchors.setdefault(anchor, []).append(turn)

        def finish(turn: Turn) -> Block | None:
            found = members.pop(turn.id)
            if not found:
                return None
            found.reverse()  # stored order
            phases, members_of, categories_of = zip(*found, strict=True)
            stored_order = list(phases) == sorted(phases)
            if not stored_order:
                found.sort(key=_phase_key)
                _, members_of, categories_of = zip(*found, strict=True)
            return trusted_block(turn.id, members_of, categories_of, stored_order, False)

        # The messages newest first, a 32-message leaf of the trie at a time (as
        # ``newest_first`` reads them, inlined: this loop runs once per stored message).
        node_for = getattr(type(messages), "_node_for", None)
        # Anchors lie at or before the message that registered them and the walk goes back,
        # so the next one it meets is the largest: one int test a message, not a dict pop.
        next_anchor = -1
        last_id: str | None = None  # the turn the previous message went to, and its members
        last_into: list[tuple[int, Message, Category]] | None = None
        fast = self.fast
        top = len(messages) - 1
        base = top + 1
        leaf: Any = None
        while top >= 0:
            if node_for is not None:
                if top < base:  # else a turn read in one step ended inside this leaf
                    leaf = node_for(messages, top)
                    base = top & ~31
            else:  # another vector type: one message at a time
                leaf = (messages[top],)
                base = top
            for position in range(top, base - 1, -1):
                message = leaf[position - base]
                if position < stop and not members:
                    self.stopped = True
                    return
                if message.active:
                    turn_id = message.turn_id
                    into = None  # the members of the block it goes to
                    if turn_id is not None:
                        if turn_id == last_id:
                            into = last_into
                        else:
                            into = members.get(turn_id)
                            turn = turn_of(turn_id) if into is None else None
                            if turn is not None:
                                anchor = claim(turn, position)
                                if fast and not members:  # the only open turn: one step?
                                    block = _turn_run(
                                        leaf,
                                        base,
                                        messages,
                                        node_for,
                                        turn_id,
                                        anchor,
                                        position,
                                        claims,
                                        shapes,
                                    )
                                    if block is not None:
                                        yield block, anchor
                                        if anchor < stop <= position:
                                            stop = 0  # not a cut: walk on to the first
                                        last_id = last_into = None
                                        break
                                register(turn, anchor)
                                if anchor > next_anchor:
                                    next_anchor = anchor
                                into = members[turn_id]
                            last_id, last_into = turn_id, into
                    # Read only now: a turn read in one step above does not need it.
                    category = (
                        _DEFAULT[(message.role, message.type, message.sender == "Notification")]
                        if message.metadata is _NO_METADATA
                        else category_of(message)
                    )
                    phase = _PHASES[category]
                    if phase == INPUT_PHASE:
                        owner = claims.get(message.id)
                        if owner is not None:
                            into = members[owner.id]
                    if into is not None:
                        into.append((phase, message, category))
                    else:
                        alone = trusted_block(None, (message,), (category,), False, False)
                        yield alone, None if members else position
                if position == next_anchor:
                    due = anchors.pop(position)
                    next_anchor = max(anchors) if anchors else -1
                    if due:
                        last_id = last_into = None  # a finished turn's members are gone
                        if len(due) > 1:  # turns sharing their first input: rare, ranked then
                            due.sort(key=lambda turn: order_key(state, turn), reverse=True)
                        last = len(due) - 1
                        for n, turn in enumerate(due):
                            block = finish(turn)
                            if block is not None:
                                yield block, position if n == last and not members else None
                if stop and position == stop:
                    stop = 0 if members else stop  # not a cut: walk on to the first message
            else:
                top = base - 1
                continue
            top = anchor - 1  # the turn's run was read in one step


def session_history(state: SessionState) -> tuple[Message, ...]:
    """Every active message of ``state``, turn by turn, each turn in phased order.

    Inside a turn: its inputs, then thoughts, tool calls, tool results and
    final text (replies, crash notices, nudges, notifications), each phase in
    the order it was stored. Rolled-back messages are left out; the stored
    messages are returned as they are.

    Raises:
        TypeError: ``state`` is not a ``SessionState``.
    """
    if not isinstance(state, SessionState):
        raise TypeError(
            f"session_history() takes a SessionState (got {state!r} that is "
            f"{type_named(state)}); pass timeline.head or timeline.at(seq)."
        )
    blocks = list(blocks_newest_first(state))
    blocks.reverse()
    return tuple(m for block in blocks for m in block.messages)
