"""``ViewCache`` / ``cached_view``: the cached view equals the fresh one, and costs what changed."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st
from pyrsistent import pvector

from runtime import (
    Attachment,
    Category,
    MessageAdded,
    ModelView,
    SessionState,
    Timeline,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
    ViewCache,
    Window,
    apply,
    cached_view,
    clean_history,
    new_message,
    to_anthropic,
    to_gemini,
    to_openai,
)
from runtime._state import new_vector
from runtime._view_cache import first_change
from runtime.testing import timelines

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class AnyBytes:
    """An artifact store that has every attachment (as a few bytes)."""

    def read(self, attachment: Attachment) -> bytes:
        return b"\x89PNG" + attachment.name.encode()


ARTIFACTS = AnyBytes()


def spelled(view: ModelView) -> tuple[object, ...]:
    return (
        to_openai(view, system="be brief"),
        to_anthropic(view, system="be brief"),
        to_gemini(view, system="be brief"),
    )


def same(cache: ViewCache | None, state: SessionState, window: Window | None) -> ViewCache:
    """The cached view (and its provider views) equals the fresh one; the next cache."""
    fresh = clean_history(state, artifacts=ARTIFACTS, max_result_chars=50, window=window)
    cache, view = cached_view(cache, state, artifacts=ARTIFACTS, max_result_chars=50, window=window)
    assert view == fresh
    assert view.messages == fresh.messages
    assert spelled(view) == spelled(fresh)
    assert spelled(view) == spelled(fresh)  # twice: the memo of the prefix is not changed
    return cache


class TestCachedEqualsFresh:
    @settings(max_examples=60, deadline=None)
    @given(timelines(rich=True))
    def test_every_state_in_order(self, timeline: Timeline) -> None:
        """Viewing every state of a random session in turn, one cache carried along, gives
        clean_history's view and the same provider views each time."""
        cache = None
        for state in timeline.states():
            cache = same(cache, state, None)

    @settings(max_examples=40, deadline=None)
    @given(timelines(rich=True), st.randoms(use_true_random=False), st.integers(0, 30))
    def test_states_in_any_order_and_windows(
        self, timeline: Timeline, random: st.SearchStrategy[object], budget: int
    ) -> None:
        """States visited in any order (time travel back and forth), with or without a
        window, still give clean_history's view."""
        states = list(timeline.states())
        random.shuffle(states)  # type: ignore[attr-defined]
        cache = ViewCache.empty()
        for n, state in enumerate(states):
            window = Window(max_messages=budget) if n % 2 else None
            cache = same(cache, state, window)

    @settings(max_examples=20, deadline=None)
    @given(timelines(rich=True))
    def test_another_session_or_options_start_afresh(self, timeline: Timeline) -> None:
        """A cache built for other options is not used for these."""
        cache, _ = cached_view(None, timeline.head, max_result_chars=10, artifacts=ARTIFACTS)
        _, view = cached_view(cache, timeline.head, artifacts=ARTIFACTS)
        assert view == clean_history(timeline.head, artifacts=ARTIFACTS)


class Building:
    """A session built an event at a time, all at ``T0``: ``emit`` applies an event of the
    session at its next seq, ``add`` a message of a category; ``state`` is the latest."""

    def __init__(self, session_id: str = "s") -> None:
        self.state = SessionState.empty(session_id)

    def emit(self, make: Any, **fields: Any) -> None:
        state = self.state
        event = make(session_id=state.session_id, seq=state.seq + 1, at=T0, **fields)
        self.state = apply(state, event)

    def add(self, category: Category, id: str, **fields: Any) -> None:
        session_id = self.state.session_id
        message = new_message(category, id=id, session_id=session_id, created_at=T0, **fields)
        self.emit(MessageAdded, message=message)


def turns(count: int, session_id: str = "s") -> list[SessionState]:
    """The state after each of ``count`` ended turns (question, reply)."""
    session = Building(session_id)
    emit, add = session.emit, session.add
    out = []
    for n in range(count):
        add(Category.USER_QUESTION, f"u{n}", sender="Chii", content=f"q{n}")
        emit(TurnStarted, turn_id=f"t{n}")
        add(Category.REPLY, f"a{n}", turn_id=f"t{n}", content=f"a{n} ")
        emit(TurnEnded, turn_id=f"t{n}", outcome=TurnOutcome.PROCESSED)
        out.append(session.state)
    return out


class TestIncremental:
    def test_a_later_view_shares_the_settled_start(self) -> None:
        """After one more turn, the view's settled start is the earlier one extended, and the
        earlier spelled lists are reused, not rebuilt."""
        states = turns(5)
        cache, first = cached_view(None, states[3])
        spelled(first)
        cache, second = cached_view(cache, states[4])
        assert first.prefix is not None
        assert second.prefix is not None
        assert second.prefix.parent is first.prefix
        assert second.messages[: len(first.messages)] == first.messages
        assert all(
            a is b for a, b in zip(first.messages, second.messages, strict=False)
        )  # the same objects: nothing was built again
        assert spelled(second) == spelled(clean_history(states[4]))
        assert len(cache.segments) == len(cache.cuts) == 5
        assert cache.cut == len(states[4].messages)

    def test_a_changed_message_reopens_its_blocks(self) -> None:
        """A settled message that changes (a delivery, a rollback) is seen: the blocks from the
        last cut before it are built again."""
        states = turns(4)
        cache, _ = cached_view(None, states[3])
        state = states[3]
        message = attrs.evolve(state.messages[2], content="changed")
        edited = attrs.evolve(state, messages=state.messages.set(2, message))
        _, view = cached_view(cache, edited)
        assert view == clean_history(edited)
        assert any("changed" in m.text for m in view.messages)

    def test_the_anthropic_prefill_does_not_change_the_prefix(self) -> None:
        """The final assistant text is stripped on a copy: the prefix's spelled list keeps
        it as it was."""
        states = turns(3)
        _, view = cached_view(None, states[2])
        assert view.prefix is not None
        assert len(view.prefix.messages) == len(view.messages)
        first = to_anthropic(view)
        assert first["messages"][-1]["content"][-1]["text"] == "a2"
        assert view.prefix.spelled["anthropic"][-1]["content"][-1]["text"] == "a2 "
        assert to_anthropic(view) == first


class TestFirstChange:
    @settings(max_examples=200, deadline=None)
    @given(
        st.integers(0, 3000),
        st.integers(0, 200),
        st.lists(st.integers(0, 3200), max_size=4),
        st.integers(0, 3300),
    )
    def test_matches_a_plain_scan(
        self, size: int, grow: int, changes: list[int], limit: int
    ) -> None:
        """The first differing position below the limit, as a scan of both would find it,
        whatever the sizes (tries of different depths) and changes."""
        old = new_vector(object() for _ in range(size))
        new = old.extend(object() for _ in range(grow))
        for position in changes:
            if position < len(new):
                new = new.set(position, object())
        expected = next((p for p in range(min(limit, size)) if old[p] is not new[p]), None)
        assert first_change(old, new, limit) == expected

    def test_other_vectors_are_scanned(self) -> None:
        """A vector that is not pyrsistent's Python one is compared item by item."""
        a, b = object(), object()
        assert first_change(pvector([a, a]), pvector([a, b]), 2) == 1  # type: ignore[arg-type]
        assert first_change(pvector([a, a]), pvector([a, a]), 2) is None  # type: ignore[arg-type]
