"""The viewer's ``Source``: cached timelines that stay equal to a fresh replay of the store.

A stateful test runs a ``Source`` beside the simplest model of it (load the
whole timeline from the store again) while a session grows, and compares
every state the source hands out.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from web_support import agent_session, web

from actors._cli._app import CliError, ExitCode
from actors._web import Source
from actors._web._pages import KindIndex
from runtime import Event, Timeline
from runtime.store import MemoryStore, SQLiteStore, Store

EVENTS = agent_session(1_200, "s")
"""The session the tests grow, event by event."""


def memory_source(store: MemoryStore, **options: object) -> Source:
    """A ``Source`` over a memory store (the same protocol as SQLite's)."""

    @contextmanager
    def opener(db: str) -> Iterator[Store]:
        yield store

    return Source("memory", opener=opener, **options)  # type: ignore[arg-type]


def grow(store: Store, upto: int) -> None:
    """Append the session's events up to seq ``upto``."""
    have = store.session("s").seq if "s" in store else 0
    if upto > have:
        store.append(EVENTS[have:upto])


class TestLoading:
    def test_the_head_comes_from_the_snapshot_then_the_whole_log(self) -> None:
        """A first request near the head gets the states from the snapshot on; later, all."""
        store = MemoryStore(snapshot_every=100)
        grow(store, 200)  # snapshot at 200
        grow(store, 230)
        source = memory_source(store)
        first = source.timeline("s", need=-2)
        assert first.timeline.first_seq == store.session("s").snapshot_seq > 0
        assert first.loading
        assert not first.complete
        assert source.wait_loaded(timeout=30)
        later = source.timeline("s", need=-2)
        assert later.complete
        assert not later.loading
        assert later.timeline == store.load_timeline("s")

    def test_a_snapshot_at_the_head_loads_everything(self) -> None:
        """With the snapshot at the head there is no state before it: the whole log is read."""
        store = MemoryStore(snapshot_every=100)
        grow(store, 200)
        assert store.session("s").snapshot_seq == 200
        assert memory_source(store).timeline("s", need=-2).complete

    def test_an_older_seq_waits_for_the_whole_log(self) -> None:
        """A request for a state before the snapshot gets every state."""
        store = MemoryStore(snapshot_every=100)
        grow(store, 200)
        grow(store, 230)
        source = memory_source(store)
        source.timeline("s", need=-1)
        older = source.timeline("s", need=10)
        assert older.complete
        assert older.timeline.at(10) == store.load_timeline("s").at(10)

    def test_a_live_session_is_followed_without_reloading(self) -> None:
        """Events stored after a load are applied to the cached timeline (same base)."""
        store = MemoryStore()
        grow(store, 60)
        source = memory_source(store)
        before = source.timeline("s").timeline
        grow(store, 90)
        after = source.timeline("s").timeline
        assert after.last_seq == 90
        assert after.base is before.base
        assert after == store.load_timeline("s")

    def test_a_partial_timeline_that_moved_on_is_caught_up(self) -> None:
        """Events applied to the partial timeline before the whole log lands are kept."""
        store = MemoryStore(snapshot_every=100)
        grow(store, 230)
        source = memory_source(store)
        source.timeline("s", need=-1)  # partial; the replay is not started yet
        grow(store, 260)
        assert source.timeline("s", need=-1).timeline.last_seq == 260
        assert source.wait_loaded(timeout=30)
        assert source.timeline("s").timeline == store.load_timeline("s")

    def test_a_recreated_session_is_loaded_again(self, tmp_path: Path) -> None:
        """A store file replaced by another with the same session id is not mistaken for it."""
        db = tmp_path / "a.db"
        with SQLiteStore(db) as store:
            grow(store, 40)
        source = Source(str(db))
        assert source.timeline("s").timeline.last_seq == 40
        db.unlink()
        other = agent_session(30, "s")
        shifted = [e.__class__(**{**_fields(e), "at": e.at.replace(year=2027)}) for e in other]
        with SQLiteStore(db) as store:
            store.append(shifted)
        again = source.timeline("s").timeline
        assert again.last_seq == len(other)
        assert again.head.updated_at == shifted[-1].at

    def test_least_recently_used_timelines_leave_first(self) -> None:
        """Past the budget, the least recently used complete timeline is dropped."""
        store = MemoryStore()
        for name in ("a", "b", "c"):
            store.append(agent_session(60, name))
        source = memory_source(store, budget=150)
        for name in ("a", "b", "c"):
            source.timeline(name)
        assert list(source._entries) == ["b", "c"]

    def test_a_failed_background_load_is_reported_then_retried(self) -> None:
        """A replay that fails is the waiting request's error; the next request loads again."""
        store = MemoryStore(snapshot_every=100)
        grow(store, 250)
        failing = [True]
        real = store.load_timeline

        def load_timeline(session_id: str, *, from_snapshot: bool = False) -> object:
            if failing[0] and not from_snapshot:
                raise OSError("disk on fire")
            return real(session_id, from_snapshot=from_snapshot)

        store.load_timeline = load_timeline  # type: ignore[method-assign]
        source = memory_source(store)
        source.timeline("s", need=-1)
        with pytest.raises(CliError, match=r"^OSError: disk on fire$") as caught:
            source.timeline("s", need=1)
        assert caught.value.code is ExitCode.FAILED
        failing[0] = False
        assert source.timeline("s", need=1).complete

    def test_unknown_sessions_are_the_cli_error(self) -> None:
        """An unknown id is a NOT_FOUND CliError with the closest ids."""
        store = MemoryStore()
        grow(store, 5)
        with pytest.raises(CliError, match=r"^No session 't' in 'memory'; it holds 1 session") as e:
            memory_source(store).timeline("t")
        assert e.value.code is ExitCode.NOT_FOUND


def _fields(event: Event) -> dict[str, object]:
    import attrs

    return {f.name: getattr(event, f.name) for f in attrs.fields(type(event))}


class SourceMachine(RuleBasedStateMachine):
    """A ``Source`` beside a fresh replay of the store, while the session grows."""

    def __init__(self) -> None:
        super().__init__()
        self.store = MemoryStore(snapshot_every=25)
        grow(self.store, 1)
        self.source = memory_source(self.store)

    @rule(count=st.integers(1, 60))
    def append(self, count: int) -> None:
        """The runtime stores more events."""
        grow(self.store, min(len(EVENTS), self.store.session("s").seq + count))

    @rule(need=st.integers(-5, 300))
    def read(self, need: int) -> None:
        """A page asks for the states from ``need`` on; every state it gets is the replay's."""
        loaded = self.source.timeline("s", need=need)
        fresh = self.store.load_timeline("s")
        wanted = max(0, fresh.last_seq + 1 + need) if need < 0 else need
        timeline = loaded.timeline
        assert timeline.last_seq == fresh.last_seq
        assert timeline.first_seq <= min(wanted, fresh.last_seq)
        for seq in {
            timeline.first_seq,
            (timeline.first_seq + timeline.last_seq) // 2,
            fresh.last_seq,
        }:
            assert timeline.at(seq) == fresh.at(seq)

    @precondition(lambda self: True)
    @rule()
    def background_done(self) -> None:
        """The background replays finish."""
        assert self.source.wait_loaded(timeout=30)

    @invariant()
    def sessions_list_matches(self) -> None:
        """The sessions list's figures are the store's summary."""
        (row,), damaged = self.source.sessions()
        assert not damaged
        assert row.info == self.store.session("s")
        assert row.totals.messages == len(self.store.load_state("s").messages)

    def teardown(self) -> None:
        self.source.wait_loaded(timeout=30)


TestSourceMachine = SourceMachine.TestCase
TestSourceMachine.settings = settings(max_examples=25, stateful_step_count=12, deadline=None)


def test_web_helper_waits_for_background_loads(tmp_path: Path) -> None:
    """The test helper's client leaves no replay running."""
    db = tmp_path / "x.db"
    with SQLiteStore(db) as store:
        grow(store, 150)
    with web(db) as (client, source):
        assert client.get("/session?s=s").status_code == 200
    assert source.wait_loaded(timeout=0)


class TestKindIndex:
    @given(cuts=st.lists(st.integers(0, 300), min_size=1, max_size=6))
    def test_extended_in_any_order_equals_built_at_once(self, cuts: list[int]) -> None:
        """Versions of one timeline, in any order: the index follows the longest, never back."""
        versions: dict[int, Timeline] = {}
        line, have = Timeline.start("s"), 0
        for n in sorted(set(cuts)):
            line, have = line.extend(EVENTS[have:n]), n
            versions[n] = line
        index = KindIndex(base=line.base, upto=0)
        for n in cuts:
            assert index.fits(versions[n]) == (index.upto <= n)
            index.extended(versions[n])
        top = max(cuts)
        assert index.upto == top
        expected: dict[str, list[int]] = {}
        for event in EVENTS[:top]:
            expected.setdefault(event.kind, []).append(event.seq)
        assert index.seqs == expected
