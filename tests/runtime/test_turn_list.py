"""``SessionState.turn_list``: every turn in start order, as the plain sort by key has it."""

from __future__ import annotations

import random

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st
from pyrsistent import pvector

from runtime import SessionState, Timeline, Turn
from runtime._fork import TurnsInOrder
from runtime._positions import MessageIndex
from runtime.testing import timelines


def reference_turn_list(state: SessionState) -> list[Turn]:
    """The sort ``turn_list`` did before its keys were made a column at a time."""
    turns = list(state.turns.values())
    if state.active_turn is not None:
        turns.append(state.active_turn)
    index = state.index
    rank = {turn_id: n for n, turn_id in enumerate(state.turn_order)}

    def key(turn: Turn) -> tuple[int, int]:
        first = index.get(turn.input_ids[0], -1) if turn.input_ids else -1
        return first, rank.get(turn.id, turn.started_seq)

    return sorted(turns, key=key)


def same_turns(got: list[Turn], expected: list[Turn]) -> None:
    assert [turn.id for turn in got] == [turn.id for turn in expected]
    assert all(a is b for a, b in zip(got, expected, strict=True))


class TestTurnList:
    @settings(max_examples=60, deadline=None)
    @given(timelines(max_steps=60))
    def test_same_as_the_sort_by_key(self, timeline: Timeline) -> None:
        """Every state of a session lists the turns the sort by key lists, the same objects:
        with its index as the reducer grew it (a chain of logs) and as a snapshot read
        builds it (one log)."""
        for _, state in timeline.entries:
            same_turns(state.turn_list(), reference_turn_list(state))
            flat = attrs.evolve(state, index=MessageIndex(m.id for m in state.messages))
            same_turns(flat.turn_list(), reference_turn_list(flat))

    @settings(max_examples=40, deadline=None)
    @given(timelines(max_steps=60), st.randoms(use_true_random=False))
    def test_without_or_with_a_shuffled_turn_order(
        self, timeline: Timeline, rng: random.Random
    ) -> None:
        """A state built by hand without turn_order (then by seq), or with it in another
        order, still lists what the sort by key lists."""
        state = timeline.head
        order = list(state.turn_order)
        rng.shuffle(order)
        # Complete but shuffled (the active turn anywhere), partial, or of the right length
        # with an id twice (one turn missing): the keys decide, not the order's shape.
        twice = [*order[:-1], order[0]] if len(order) > 1 else order
        for turn_order in ((), order, order[: len(order) // 2], twice, [*order, "nope"]):
            odd = attrs.evolve(state, turn_order=pvector(turn_order))
            same_turns(odd.turn_list(), reference_turn_list(odd))

    @settings(max_examples=40, deadline=None)
    @given(timelines(max_steps=60))
    def test_in_turn_order_for_a_session_that_ran(self, timeline: Timeline) -> None:
        """For a session the reducer built, the turns in start order (a sanity check of the
        keys: turn_order is complete there)."""
        state = timeline.head
        if TurnsInOrder(state).complete:
            assert {t.id for t in state.turn_list()} == set(state.turn_order)
            # … listed by turn_order, not sorted from the map (the fast path is taken).
            assert state._turns_in_turn_order() is not None


class TestLastTurns:
    @settings(max_examples=60, deadline=None)
    @given(timelines(max_steps=60), st.randoms(use_true_random=False), st.integers(-2, 70))
    def test_the_tail_of_turn_list(
        self, timeline: Timeline, rng: random.Random, count: int
    ) -> None:
        """``last_turns(n)`` is ``turn_list()``'s last n turns (the same objects, in its
        order) for every state, a shuffled or partial turn_order included, and none for
        n <= 0."""
        state = timeline.head
        order = list(state.turn_order)
        rng.shuffle(order)
        for _, each in timeline.entries:
            expected = each.turn_list()[-count:] if count > 0 else []
            same_turns(each.last_turns(count), expected)
        twice = [*order[:-1], order[0]] if len(order) > 1 else order
        for turn_order in ((), order, order[: len(order) // 2], twice):
            odd = attrs.evolve(state, turn_order=pvector(turn_order))
            expected = odd.turn_list()[-count:] if count > 0 else []
            same_turns(odd.last_turns(count), expected)
