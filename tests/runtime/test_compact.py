"""Compact blocks (``runtime/_compact.py``): settled plain blocks kept as they are stored,
spelled straight from their messages, and the lazy ``ModelView`` that holds them.

Each is pinned to the general path: a compact block's view messages to the builder's,
every provider's spelling of compact blocks to its body over the built view messages,
and a lazy view to the eager view ``clean_history`` builds.
"""

from __future__ import annotations

import gc
from datetime import UTC, datetime
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import (
    Attachment,
    Category,
    ModelView,
    SessionState,
    Timeline,
    ToolCall,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
    ViewPrefix,
    cached_view,
    clean_history,
    to_anthropic,
    to_gemini,
    to_openai,
)
from runtime._clean import DEFAULT_MAX_RESULT_CHARS, BlockBuilder
from runtime._compact import compact, materialize
from runtime._compact_spell import SPELLERS, spell
from runtime._history import Block, Walk
from runtime._providers import _anthropic_body, _gemini_body, _openai_body
from runtime._view_cache import _settled
from runtime.testing import timelines
from tests.runtime.test_view_cache import Building, turns

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SESSIONS = st.booleans().flatmap(lambda rich: timelines(rich=rich))
"""Plain sessions (many turns of calls and results, most of them compact) and rich ones
(every category, attachments, signatures: most blocks are not compact)."""
BODIES = {"openai": _openai_body, "anthropic": _anthropic_body, "gemini": _gemini_body}


class AnyBytes:
    """An artifact store that has every attachment (as a few bytes)."""

    def read(self, attachment: Attachment) -> bytes:
        return b"\x89PNG" + attachment.name.encode()


ARTIFACTS = AnyBytes()


def settled_blocks(state: SessionState, limit: int | None) -> list[tuple[Block, list[Any]]]:
    """Every settled block of ``state``, oldest first, with the view the builder gives it."""
    builder = BlockBuilder(state, ARTIFACTS, limit)
    out = [
        (block, builder.block(block)) for block, _ in Walk(state).blocks() if _settled(state, block)
    ]
    out.reverse()
    return out


class TestCompactBlocks:
    @settings(max_examples=80, deadline=None)
    @given(SESSIONS, st.sampled_from([None, 5, 50, DEFAULT_MAX_RESULT_CHARS]))
    def test_views_and_spellings_equal_the_general_path(
        self, timeline: Timeline, limit: int | None
    ) -> None:
        """For every state of a random session: a compact settled block's view messages are
        the builder's, and every run of settled blocks, compact ones kept as they are and
        the others as view messages, spells as each provider's body spells their view."""
        for state in timeline.states():
            current = state.active_turn_id
            segments: list[Any] = []
            for block, built in settled_blocks(state, limit):
                if compact(block, current):
                    assert list(materialize((block,), limit, False)) == built
                    segments.append(block)
                else:
                    segments.append(tuple(built))
            for start in range(0, len(segments), 3):  # runs that start anywhere
                run = tuple(segments[start:])
                for note in (False, True):
                    views = materialize(run, limit, note)
                    for key, body in BODIES.items():
                        assert spell(run, limit, note, key, body) == body(views)

    @settings(max_examples=60, deadline=None)
    @given(SESSIONS)
    def test_the_walks_bare_hint_changes_no_verdict(self, timeline: Timeline) -> None:
        """A block the walk marks ``bare`` is what the hint says (active messages of its
        turn, no metadata, attachments or browser elements), and ``compact`` tells it as it
        tells the same block without the hint, for the running turn, its own and none."""
        for state in timeline.states():
            for block, _ in Walk(state).blocks():
                if block.bare:
                    assert all(
                        m.active
                        and m.turn_id == block.turn_id
                        and not m.metadata
                        and not m.attachments
                        and not m.browser_elements
                        for m in block.messages
                    )
                plain = attrs.evolve(block, bare=False)
                for current in (state.active_turn_id, block.turn_id, None):
                    assert compact(block, current) == compact(plain, current)

    def test_calls_out_of_index_order_spell_as_their_view(self) -> None:
        """A compact block whose calls are stored out of index order (and two of one index)
        spells as the view built from its messages, which orders them by index."""
        session = Building("s")
        emit, add = session.emit, session.add

        orders = [(0, 1, 2), (2, 0, 1), (1, 1, 0), (0, 2, 2)]
        for n, indexes in enumerate(orders):
            add(Category.USER_QUESTION, f"u{n}", sender="U", content=f"q{n}")
            emit(TurnStarted, turn_id=f"t{n}")
            for k, index in enumerate(indexes):
                call = ToolCall(id=f"c{n}{k}", name="sh", arguments={"k": k}, index=index)
                add(Category.TOOL_CALL, f"call{n}{k}", turn_id=f"t{n}", tool_call=call)
            for k in range(len(indexes)):
                add(Category.TOOL_RESULT, f"r{n}{k}", turn_id=f"t{n}", sender="sh",
                    tool_call_id=f"c{n}{k}", content=f"ok {k}")  # fmt: skip
            add(Category.REPLY, f"a{n}", turn_id=f"t{n}", content=f"a{n}")
            emit(TurnEnded, turn_id=f"t{n}", outcome=TurnOutcome.PROCESSED)
        blocks = settled_blocks(session.state, None)
        assert len(blocks) == len(orders)
        for block, built in blocks:
            assert compact(block, None)
            assert list(materialize((block,), None, False)) == built
        run = tuple(block for block, _ in blocks)
        views = materialize(run, None, False)
        for key, body in BODIES.items():
            assert spell(run, None, False, key, body) == body(views)

    def test_a_plain_session_is_kept_compact(self) -> None:
        """The settled turns of the benchmark's session are all compact, and the walk read
        each in one step (``bare``)."""
        state = turns(4)[-1]
        cache, _ = cached_view(None, state)
        assert len(cache.segments) == 4
        assert all(type(segment) is Block and segment.bare for segment in cache.segments)

    def test_every_provider_has_a_speller(self) -> None:
        """The three providers of the issue spell compact blocks themselves."""
        assert set(SPELLERS) == set(BODIES)


class TestLazyView:
    @settings(max_examples=60, deadline=None)
    @given(SESSIONS)
    def test_provider_views_before_the_messages_equal_the_fresh_ones(
        self, timeline: Timeline
    ) -> None:
        """From a fresh cache, provider views spelled before anything reads the view's
        messages equal those of clean_history's view, and do not build the messages; read
        afterwards, the messages are clean_history's."""
        for state in timeline.states():
            fresh = clean_history(state, artifacts=ARTIFACTS, max_result_chars=50)
            _, view = cached_view(None, state, artifacts=ARTIFACTS, max_result_chars=50)
            assert to_openai(view, system="s") == to_openai(fresh, system="s")
            assert to_anthropic(view, system="s") == to_anthropic(fresh, system="s")
            assert to_gemini(view, system="s") == to_gemini(fresh, system="s")
            if view.prefix is not None:
                assert view.built is None
                assert view.prefix.built is None
            last = view.last_role()
            assert view.messages == fresh.messages
            assert last == (fresh.messages[-1].role if fresh.messages else None)
            assert view.tail() == fresh.messages[len(view.prefix.messages) :] if view.prefix else 1

    @settings(max_examples=60, deadline=None)
    @given(SESSIONS)
    def test_a_carried_cache_spells_each_state_as_the_fresh_view(self, timeline: Timeline) -> None:
        """Every state of a random session in turn, one cache carried along: each provider
        view (a spelled prefix extended by the compact blocks of the turns since) equals
        that of clean_history's view, and only then are the messages read and compared."""
        cache = None
        for state in timeline.states():
            fresh = clean_history(state, artifacts=ARTIFACTS)
            cache, view = cached_view(cache, state, artifacts=ARTIFACTS)
            assert to_openai(view) == to_openai(fresh)
            assert to_anthropic(view) == to_anthropic(fresh)
            assert to_gemini(view) == to_gemini(fresh)
            assert view.messages == fresh.messages

    @settings(max_examples=30, deadline=None)
    @given(SESSIONS)
    def test_equality_hash_repr_and_evolve_are_the_eager_views(self, timeline: Timeline) -> None:
        """A lazy view is equal to, hashes like and prints like the eager view with its
        messages; ``attrs.evolve`` keeps what it means."""
        state = timeline.head
        fresh = clean_history(state, artifacts=ARTIFACTS)
        for _ in range(2):  # before and after the messages are built
            _, view = cached_view(None, state, artifacts=ARTIFACTS)
            assert view == fresh
            assert (view != fresh) is False
            assert hash(view) == hash(fresh)
            assert repr(view) == repr(fresh)
            assert attrs.evolve(view, tokens=3) == attrs.evolve(fresh, tokens=3)
            other = attrs.evolve(view, messages=fresh.messages[:1])
            assert other.messages == fresh.messages[:1]
        assert view != attrs.evolve(fresh, seq=fresh.seq + 1)
        assert view != object()

    def test_eager_views_are_as_before(self) -> None:
        """A view built with its messages keeps them; ``repr`` is the field list it was."""
        view = ModelView(session_id="s", seq=1, messages=())
        assert view.messages == ()
        assert view.tail() == ()
        assert view.last_role() is None
        assert (
            repr(view)
            == "ModelView(session_id='s', seq=1, messages=(), truncated=False, tokens=None)"
        )


class TestConstructors:
    def test_a_view_needs_its_messages(self) -> None:
        """A view made without messages, nor a prefix and the rest, is refused."""
        with pytest.raises(TypeError, match=r"^ModelView\(\) takes its messages, or a prefix"):
            ModelView(session_id="s", seq=1)

    def test_a_prefix_made_from_messages_spells_them(self) -> None:
        """``ViewPrefix(messages=...)`` (as before compact blocks) is one segment of them, and
        provider views spell a view holding it as the view's messages."""
        state = turns(3)[-1]
        fresh = clean_history(state)
        prefix = ViewPrefix(messages=fresh.messages[:2])
        view = ModelView(
            session_id=fresh.session_id,
            seq=fresh.seq,
            messages=fresh.messages,
            prefix=prefix,
        )
        assert prefix.segments == (fresh.messages[:2],)
        assert to_openai(view) == to_openai(fresh)
        assert to_anthropic(view) == to_anthropic(fresh)
        assert to_gemini(view) == to_gemini(fresh)


class TestCollector:
    def test_a_cold_view_keeps_few_objects(self) -> None:
        """A cold view of plain turns keeps a few collector-tracked objects per turn (the
        blocks and the spelled dicts), not a view message and its parts per message."""
        state = turns(200)[-1]
        gc.collect()
        before = len(gc.get_objects())
        _cache, view = cached_view(None, state)
        to_openai(view)
        gc.collect()
        kept = len(gc.get_objects()) - before
        # per turn: the Block, its two tuples, the user and assistant dicts (~5); view
        # messages would add four more (message, parts tuple, part, ...)
        assert kept < 200 * 7, kept
        assert view.prefix is not None
        assert view.prefix.built is None
