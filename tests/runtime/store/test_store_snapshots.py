"""Snapshots: chunked writes of what changed, and loads that equal a full replay."""

from __future__ import annotations

import contextlib
import itertools
import pathlib
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime import Event, replay
from runtime.store import MemoryStore, PostgresStore, SQLiteStore, Store
from runtime.testing import session_events

from .scenario import continue_session, conversation


def chunks(path: pathlib.Path, session_id: str = "s") -> dict[tuple[str, int], int]:
    """(part, chunk) -> the seq of the snapshot that wrote its current version."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        rows = db.execute(
            "SELECT part, chunk, seq FROM snapshot_chunks WHERE session_id = ?", (session_id,)
        )
        return {(part, chunk): seq for part, chunk, seq in rows}


class TestChunks:
    def test_a_snapshot_rewrites_only_what_changed(self, tmp_path: pathlib.Path) -> None:
        """Old chunks keep their version; only chunks with new or changed items are written."""
        path = tmp_path / "s.db"
        with SQLiteStore(path, snapshot_every=1000, chunk_size=4) as store:
            store.append(conversation("s", 44))
            store.snapshot("s")
            first = chunks(path)
            assert set(first.values()) == {44}
            events = continue_session(store.load_state("s"), 11)[0]
            store.append(events)
            store.snapshot("s")
            second = chunks(path)
        rewritten = {key for key, seq in second.items() if seq == 55}
        kept = {key for key, seq in second.items() if seq == 44}
        assert kept, "every chunk was rewritten"
        assert rewritten >= set(second) - set(first)  # new chunks are written
        # Only the tail of the message list changed.
        last_kept = max(chunk for part, chunk in kept if part == "messages")
        assert all(chunk > last_kept - 2 for part, chunk in rewritten if part == "messages")

    def test_no_new_snapshot_when_nothing_changed(self, tmp_path: pathlib.Path) -> None:
        """Snapshotting a head that is already snapshotted writes nothing."""
        with SQLiteStore(tmp_path / "s.db", snapshot_every=5) as store:
            store.append(conversation("s", 10))
            statements: list[str] = []
            store._conn().set_trace_callback(statements.append)
            assert store.snapshot("s") == 10
            assert not any("snapshot" in s for s in statements if s.startswith("INSERT"))

    def test_changing_the_chunk_size(self, tmp_path: pathlib.Path) -> None:
        """A store reopened with another chunk size reads the old snapshot and rewrites it whole."""
        path = tmp_path / "s.db"
        events = conversation("s", 60)
        with SQLiteStore(path, snapshot_every=20, chunk_size=3) as store:
            store.append(events[:40])
        with SQLiteStore(path, snapshot_every=20, chunk_size=50) as store:
            assert store.load_state("s") == replay(events[:40]).head
            store.append(events[40:])
            assert set(chunks(path).values()) == {60}
            assert max(chunk for _, chunk in chunks(path)) == 0
        with SQLiteStore(path) as store:
            assert store.load_state("s") == replay(events).head
            store.verify("s")

    def test_a_smaller_chunk_size_is_not_reused(self, tmp_path: pathlib.Path) -> None:
        """After a chunk size change, unchanged items are not matched to chunks of the old size."""
        path = tmp_path / "s.db"
        events = conversation("s", 41)
        with SQLiteStore(path, snapshot_every=40, chunk_size=3) as store:
            store.append(events[:40])
        with SQLiteStore(path, snapshot_every=1000, chunk_size=5) as store:
            store.load_state("s")
            store.append(events[40:])
            store.snapshot("s")
            assert set(chunks(path).values()) == {41}
        with SQLiteStore(path) as store:
            assert store.load_state("s") == replay(events).head
            store.verify("s")


def split(events: list[Event], cuts: list[int]) -> list[list[Event]]:
    points = sorted({0, len(events), *(c % (len(events) + 1) for c in cuts)})
    return [events[a:b] for a, b in itertools.pairwise(points)]


LOGS = {
    "log": session_events(max_steps=60),
    "every": st.integers(min_value=1, max_value=12),
    "chunk": st.integers(min_value=1, max_value=9),
    "cuts": st.lists(st.integers(min_value=0, max_value=80), max_size=6),
}


def cold_load_equals_replay(
    open_store: Callable[[], Store], log: list[Event], cuts: list[int]
) -> None:
    """Store ``log`` in batches, open the store again: loads and timelines equal a replay."""
    with open_store() as store:
        for batch in split(log, cuts):
            store.append(batch)
    with open_store() as store:
        assert store.load_state("s") == replay(log).head
        timeline = store.load_timeline("s", from_snapshot=True)
        assert timeline.head == replay(log).head
        assert timeline.first_seq == store.session("s").snapshot_seq
        store.verify("s")


class TestEqualsReplay:
    @settings(
        max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(**LOGS)
    def test_sqlite(
        self, tmp_path_factory: Any, log: list[Event], every: int, chunk: int, cuts: list[int]
    ) -> None:
        """For any legal log, K, chunk size and batching: a cold load equals a full replay."""
        path = tmp_path_factory.mktemp("eq") / "s.db"
        cold_load_equals_replay(
            lambda: SQLiteStore(path, snapshot_every=every, chunk_size=chunk), log, cuts
        )

    @settings(
        max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(**LOGS)
    def test_postgres(
        self, postgres_dsn: str, pg_schema: Any, log: list[Event], every: int, chunk: int,
        cuts: list[int],
    ) -> None:  # fmt: skip
        """The same in PostgreSQL (fewer runs: each opens a schema on a server)."""
        schema = pg_schema()
        cold_load_equals_replay(
            lambda: PostgresStore(
                postgres_dsn, schema=schema, snapshot_every=every, chunk_size=chunk
            ),
            log,
            cuts,
        )

    @settings(max_examples=40, deadline=None)
    @given(log=session_events(max_steps=60), every=st.integers(min_value=1, max_value=12))
    def test_memory(self, log: list[Event], every: int) -> None:
        """The memory store's snapshots also reproduce the replayed states."""
        store = MemoryStore(snapshot_every=every)
        for event in log:
            store.append([event])
        assert store.load_timeline("s", from_snapshot=True).head == replay(log).head
        store.verify("s")


REBUILDERS = {
    "same options": {"snapshot_every": 5, "chunk_size": 4},
    "default options": {},
    "another chunk size": {"snapshot_every": 5, "chunk_size": 3},
}


def rebuild_all(store: Store) -> None:
    assert store.rebuild().rebuilt == ("s",)


def rebuild_snapshot(store: Store) -> None:
    store.snapshot("s", rebuild=True)


REBUILDS = {"rebuild()": rebuild_all, "snapshot(rebuild=True)": rebuild_snapshot}


def rebuilt_under_a_writer(
    open_writer: Callable[[], Store],
    open_rebuilder: Callable[[], Store],
    rebuild: Callable[[Store], None],
    at: int,
) -> None:
    """A writer appends (snapshotting every 5 events in chunks of 4), another store on the
    same database rebuilds, the writer goes on past more snapshots: nothing is damaged."""
    events = conversation("s", 40)
    writer = open_writer()
    for event in events[:at]:
        writer.append([event])
    rebuild(open_rebuilder())
    for event in events[at:]:
        writer.append([event])
    report = writer.check()
    assert report.ok, report.problems
    assert writer.load_state("s") == replay(events).head
    writer.verify("s")
    fresh = open_writer()
    assert fresh.load_state("s") == replay(events).head
    assert fresh.load_timeline("s", from_snapshot=True).head == replay(events).head
    fresh.verify("s")


class TestRebuiltByAnotherStore:
    """Snapshots rebuilt by another process while a runtime writes the same store: the
    runtime's cached snapshot plan must not outlive the rows it was made from (the rebuild
    keeps the session's seq, which is all the cache of heads is checked by)."""

    @pytest.mark.parametrize("at", [10, 12])
    @pytest.mark.parametrize("rebuild", REBUILDS.values(), ids=REBUILDS.keys())
    @pytest.mark.parametrize("options", REBUILDERS.values(), ids=REBUILDERS.keys())
    def test_sqlite(
        self, open_store: Any, at: int, rebuild: Callable[[Store], None], options: dict[str, int]
    ) -> None:
        """Two SQLiteStores on one file: the writer's later snapshots are sound."""
        rebuilt_under_a_writer(
            lambda: open_store(snapshot_every=5, chunk_size=4),
            lambda: open_store(**options),
            rebuild,
            at,
        )

    @pytest.mark.parametrize("at", [10, 12])
    @pytest.mark.parametrize("rebuild", REBUILDS.values(), ids=REBUILDS.keys())
    @pytest.mark.parametrize("options", REBUILDERS.values(), ids=REBUILDERS.keys())
    def test_postgres(
        self,
        open_pg: Any,
        pg_schema: Any,
        at: int,
        rebuild: Callable[[Store], None],
        options: dict[str, int],
    ) -> None:
        """Two PostgresStores on one schema: the writer's later snapshots are sound."""
        schema = pg_schema()
        rebuilt_under_a_writer(
            lambda: open_pg(schema, snapshot_every=5, chunk_size=4),
            lambda: open_pg(schema, **options),
            rebuild,
            at,
        )
