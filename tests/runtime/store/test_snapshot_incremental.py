"""Incremental snapshots: planned from what changed, they write what a full snapshot writes."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import Event, SessionState, replay
from runtime._state import new_vector
from runtime.store._delta import changed_positions
from runtime.store._snapshot import plan_snapshot
from runtime.testing import session_events


def _record(text: str) -> dict[str, object]:
    data = orjson.loads(text)
    for part in ("messages", "turns"):
        data[part] = len(data[part])  # versions differ; the chunk count does not
    return dict(data)


class TestIncrementalEqualsFull:
    @settings(max_examples=60, deadline=None)
    @given(
        log=session_events(max_steps=60, rich=True),
        chunk=st.integers(min_value=1, max_value=9),
        points=st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=8),
    )
    def test_random_sessions(self, log: list[Event], chunk: int, points: list[int]) -> None:
        """At any series of snapshot points, chunks written so far = a full snapshot's."""
        timeline = replay(log)
        seqs = sorted({p % (len(log) + 1) for p in points} - {0})
        stored: dict[tuple[str, int], str] = {}
        previous: SessionState | None = None
        refs = None
        for seq in seqs:
            head = timeline.at(seq)
            plan = plan_snapshot(head, previous=previous, refs=refs, chunk_size=chunk, chain="h")
            for part, number, text in plan.chunks:
                stored[part, number] = text
            full = plan_snapshot(head, previous=None, refs=None, chunk_size=chunk, chain="h")
            expected = {(part, number): text for part, number, text in full.chunks}
            live = {key: stored[key] for key in expected}
            assert live == expected
            assert _record(plan.record) == _record(full.record)
            assert all(v == seq for v in full.refs["messages"] + full.refs["turns"])
            written = {(part, number) for part, number, _ in plan.chunks}
            for part, versions in plan.refs.items():
                for number, version in enumerate(versions):
                    assert (version == seq) == ((part, number) in written)
            previous, refs = head, plan.refs

    @settings(max_examples=20, deadline=None)
    @given(log=session_events(max_steps=60))
    def test_turns_in_start_order(self, log: list[Event]) -> None:
        """A new turn lands at the end: the turns are written in the order they started."""
        head = replay(log).head
        plan = plan_snapshot(head, previous=None, refs=None, chunk_size=1000, chain="h")
        turns = [c for c in plan.chunks if c[0] == "turns"]
        if turns:
            rows = orjson.loads(turns[0][2])["rows"]
            fields = orjson.loads(turns[0][2])["fields"]
            seqs = [row[fields.index("started_seq")] for row in rows]
            assert seqs == sorted(seqs)


class TestChangedPositions:
    @settings(max_examples=200, deadline=None)
    @given(
        size=st.integers(min_value=0, max_value=3000),
        sets=st.lists(st.integers(min_value=0, max_value=10**6), max_size=20),
        grow=st.integers(min_value=0, max_value=2000),
    )
    def test_equals_a_scan(self, size: int, sets: list[int], grow: int) -> None:
        """The trie walk finds exactly the positions whose item is another object."""
        old = new_vector(object() for _ in range(size))
        evolver = old.evolver()
        for _ in range(grow):
            evolver.append(object())
        new = evolver.persistent()
        for value in sets:
            if len(new):
                new = new.set(value % len(new), object())
        found = changed_positions(old, new)
        assert found is not None
        assert sorted(found) == [i for i in range(size) if old[i] is not new[i]]

    def test_other_vectors(self) -> None:
        """Not a pure-Python trie, or a shorter vector: unknown (None)."""
        vector = new_vector([1, 2, 3])
        assert changed_positions([1, 2, 3], vector) is None
        assert changed_positions(vector, new_vector([1])) is None
