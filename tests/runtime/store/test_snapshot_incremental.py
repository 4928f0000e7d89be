"""Incremental snapshots: planned from what changed, they write what a full snapshot writes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import attrs
import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime import (
    AuditStatus,
    Category,
    Event,
    MessageAdded,
    ModelCallFinished,
    ModelCallStarted,
    SessionState,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
    apply,
    new_message,
    replay,
)
from runtime._state import new_vector
from runtime.store import SQLiteStore
from runtime.store._delta import changed_positions
from runtime.store._snapshot import plan_snapshot
from runtime.testing import EPOCH, session_events


def _record(text: str) -> dict[str, object]:
    data = orjson.loads(text)
    for part in ("messages", "turns", "audit"):
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


@st.composite
def audited_sessions(draw: st.DrawFn) -> list[Event]:
    """Turns that make model calls: finished, replayed or left running (closed by the end)."""
    state = SessionState.empty("s")
    log: list[Event] = []
    calls = 0

    def emit(make: Any) -> None:
        nonlocal state
        event = make(session_id="s", seq=state.seq + 1, at=EPOCH + timedelta(seconds=state.seq))
        state = apply(state, event)
        log.append(event)

    for turn in range(draw(st.integers(min_value=1, max_value=10))):
        question = new_message(Category.USER_QUESTION, id=f"q{turn}", session_id="s",
                               created_at=EPOCH, content="hi", sender="Chii")  # fmt: skip
        emit(lambda m=question, **kw: MessageAdded(message=m, **kw))
        emit(lambda t=turn, **kw: TurnStarted(turn_id=f"t{t}", **kw))
        for call in range(draw(st.integers(min_value=0, max_value=3))):
            calls += 1
            op, key = f"op{calls}", f"t{turn}#{call}"
            emit(lambda op=op, key=key, t=turn, n=calls, **kw: ModelCallStarted(
                operation_id=op, source_key=key, turn_id=f"t{t}", sequence=n, model="m", **kw))  # fmt: skip
            for _ in range(draw(st.integers(min_value=0, max_value=2))):  # 2: a replayed finish
                emit(lambda op=op, key=key, **kw: ModelCallFinished(
                    operation_id=op, source_key=key, status=AuditStatus.COMPLETED,
                    content="ok", **kw))  # fmt: skip
        outcome = draw(st.sampled_from([TurnOutcome.PROCESSED, TurnOutcome.INTERRUPTED]))
        emit(lambda t=turn, o=outcome, **kw: TurnEnded(turn_id=f"t{t}", outcome=o, **kw))
    return log


class TestAuditRows:
    @settings(max_examples=60, deadline=None)
    @given(
        log=audited_sessions(),
        chunk=st.integers(min_value=1, max_value=5),
        points=st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=8),
    )
    def test_incremental_equals_full(self, log: list[Event], chunk: int, points: list[int]) -> None:
        """Audit rows are a chunked part too: written incrementally, equal to a full snapshot."""
        timeline = replay(log)
        seqs = sorted({p % (len(log) + 1) for p in points} - {0})
        stored: dict[tuple[str, int], str] = {}
        previous: SessionState | None = None
        refs = None
        for seq in seqs:
            head = timeline.at(seq)
            assert list(head.audit_rows) == list(head.model_calls())
            plan = plan_snapshot(head, previous=previous, refs=refs, chunk_size=chunk, chain="h")
            for part, number, text in plan.chunks:
                stored[part, number] = text
            full = plan_snapshot(head, previous=None, refs=None, chunk_size=chunk, chain="h")
            expected = {(part, number): text for part, number, text in full.chunks}
            assert {key: stored[key] for key in expected} == expected
            assert _record(plan.record) == _record(full.record)
            previous, refs = head, plan.refs

    @settings(max_examples=40, deadline=None)
    @given(log=audited_sessions(), point=st.integers(min_value=1, max_value=400))
    def test_a_fork_keeps_no_audit_rows(self, log: list[Event], point: int) -> None:
        """A fork carries no model-call audit rows, in its map and in the ordered vector a
        snapshot writes from (fork() builds its state from the source's: found at merge)."""
        timeline = replay(log)
        fork = timeline.fork(point % timeline.last_seq + 1, "f", at=EPOCH)
        applied = apply(SessionState.empty("f"), fork.event(1))
        assert list(fork.head.audit_rows) == list(applied.audit_rows) == []
        assert list(fork.head.turn_order) == list(applied.turn_order)
        full = plan_snapshot(fork.head, previous=None, refs=None, chunk_size=2, chain="h")
        again = plan_snapshot(applied, previous=None, refs=None, chunk_size=2, chain="h")
        assert full.chunks == again.chunks

    @settings(
        max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(log=audited_sessions(), every=st.integers(min_value=1, max_value=9),
           chunk=st.integers(min_value=1, max_value=4))  # fmt: skip
    def test_stored_and_loaded(
        self, tmp_path_factory: Any, log: list[Event], every: int, chunk: int
    ) -> None:
        """A store's snapshots with audit rows load back equal to the replay."""
        path = tmp_path_factory.mktemp("audit") / "s.db"
        with SQLiteStore(path, snapshot_every=every, chunk_size=chunk) as store:
            for start in range(0, len(log), 5):
                store.append(log[start : start + 5])
        with SQLiteStore(path, snapshot_every=every, chunk_size=chunk) as store:
            head = store.load_state("s")
            assert head == replay(log).head
            assert list(head.audit_rows) == list(head.model_calls())
            store.verify("s")
            assert store.check().ok


class TestStatesBuiltByHand:
    @settings(max_examples=30, deadline=None)
    @given(log=session_events(max_steps=40, rich=True))
    def test_a_turn_order_that_does_not_list_the_turns(self, log: list[Event]) -> None:
        """A state whose ``turn_order`` misses its turns, or names one it does not hold (same
        length), is written from ``turn_list()``: every turn, and the same messages."""
        head = replay(log).head
        expected = plan_snapshot(head, previous=None, refs=None, chunk_size=3, chain="h").chunks
        order = head.turn_order
        hand_built = [attrs.evolve(head, turn_order=new_vector())]
        if len(order):
            hand_built.append(attrs.evolve(head, turn_order=order.set(0, "no-such-turn")))
        for state in hand_built:
            plan = plan_snapshot(state, previous=None, refs=None, chunk_size=3, chain="h")
            assert [c for c in plan.chunks if c[0] != "turns"] == [
                c for c in expected if c[0] != "turns"
            ]
            written = [
                row[0]
                for part, _, text in plan.chunks
                if part == "turns"
                for row in orjson.loads(text)["rows"]
            ]
            assert sorted(written) == sorted(turn.id for turn in head.turn_list())
