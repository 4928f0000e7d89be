"""Time travel from the store: spans and walks from the nearest stored state, bulk loads."""

from __future__ import annotations

import contextlib
import gc
import itertools
import sqlite3
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import runtime.store._checkpoints as checkpoints
import runtime.store._travel as travel
from runtime import (
    EVENT_TYPES,
    CorruptRow,
    Event,
    InvalidArgument,
    MessageAdded,
    UnknownSession,
    replay,
    reports_error,
)
from runtime.store import SQLiteStore
from runtime.store._travel import bulk
from runtime.testing import session_events

from .conftest import OpenStore
from .scenario import conversation
from .test_store_damage import raw


@pytest.fixture(autouse=True)
def _unfreeze() -> Iterator[None]:
    yield
    gc.unfreeze()


def flags(log: list[Event]) -> list[tuple[str, bool]]:
    """What ``error_flags`` reads for ``log``."""
    return [(event.kind, reports_error(event)) for event in log]


class TestSpans:
    @settings(
        max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        log=session_events(max_steps=50),
        every=st.integers(min_value=1, max_value=15),
        ends=st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)),
    )
    def test_equal_a_full_replay(
        self, tmp_path_factory: Any, log: list[Event], every: int, ends: tuple[int, int]
    ) -> None:
        """Every state of a span, and every step of a walk, is the full replay's."""
        path = tmp_path_factory.mktemp("span") / "s.db"
        full = replay(log)
        first, last = sorted(end % (len(log) + 1) for end in ends)
        with SQLiteStore(path, snapshot_every=every) as store:
            store.append(log)
            snapshot = store.session("s").snapshot_seq
            line = store.load_span("s", first, last)
            assert line.first_seq == (snapshot if 0 < snapshot <= first else 0)
            assert line.last_seq == last
            for seq in range(first, last + 1):
                assert line.at(seq) == full.at(seq)
            walked = list(store.walk("s", first, last))
            assert [e.seq for e, _, _ in walked] == list(range(max(first, 1), last + 1))
            for event, before, after in walked:
                assert event == full.event(event.seq)
                assert before == full.at(event.seq - 1)
                assert after == full.at(event.seq)

    def test_near_the_head_reads_only_the_tail(self, open_store: OpenStore) -> None:
        """A span past the snapshot starts at it (and decodes nothing before it)."""
        store = open_store(snapshot_every=10)
        events = conversation("s", 25)
        store.append(events[:20])
        store.append(events[20:])
        line = store.load_span("s", 22)
        assert (line.first_seq, line.last_seq) == (20, 25)
        assert line.head == replay(events).head
        assert store.load_span("s", 3, 4).first_seq == 0

    def test_bad_spans(self, open_store: OpenStore) -> None:
        store = open_store()
        store.append(conversation("s", 5))
        for first, last in ((3, 2), (-1, 2), (0, 6), (True, 2)):
            with pytest.raises(InvalidArgument, match=r"seq"):
                store.load_span("s", first, last)  # type: ignore[arg-type]
            with pytest.raises(InvalidArgument, match=r"seq"):
                list(store.walk("s", first, last))  # type: ignore[arg-type]
        with pytest.raises(UnknownSession):
            store.load_span("nope", 0)
        with pytest.raises(UnknownSession):
            next(store.walk("nope"))

    @settings(
        max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        log=session_events(max_steps=40),
        every=st.integers(min_value=1, max_value=15),
        seq=st.integers(-2, 10**6),
    )
    def test_one_event_is_the_log_s(
        self, tmp_path_factory: Any, log: list[Event], every: int, seq: int
    ) -> None:
        """``event(s, seq)`` is ``events(s, after=seq - 1)[0]``; out of range it is refused."""
        path = tmp_path_factory.mktemp("event") / "s.db"
        with SQLiteStore(path, snapshot_every=every) as store:
            store.append(log)
            for at in range(1, len(log) + 1):
                assert store.event("s", at) == store.events("s", after=at - 1)[0]
            wrong = seq if not 1 <= seq <= len(log) else len(log) + 1 + seq
            with pytest.raises(InvalidArgument, match=rf"from 1 to {len(log)}.*got {wrong}"):
                store.event("s", wrong)

    def test_one_event_refuses_what_events_refuses(
        self, open_store: OpenStore, db_path: Any
    ) -> None:
        """A bad seq, an unknown session, a damaged row: each is an error, as for ``events``."""
        store = open_store(snapshot_every=5)
        log = conversation("s", 12)
        store.append(log)
        for bad in (0, 13, -1, True, "3"):
            with pytest.raises(InvalidArgument, match="seq"):
                store.event("s", bad)  # type: ignore[arg-type]
        with pytest.raises(UnknownSession):
            store.event("nope", 1)
        with raw(db_path) as db:  # a bad disk
            db.execute("UPDATE events SET body = '{' WHERE session_id = 's' AND seq = 7")
        with pytest.raises(CorruptRow, match="seq 7") as general:
            store.events("s", after=6)
        with pytest.raises(CorruptRow, match="seq 7") as one:
            store.event("s", 7)
        assert str(one.value) == str(general.value)
        assert store.event("s", 6) == log[5]  # the rows before it are read alone

    def test_one_event_on_postgres(self, open_pg: Any) -> None:
        """PostgreSQL reads one event through the same code: the same events."""
        store = open_pg(snapshot_every=5)
        log = conversation("s", 12)
        store.append(log)
        assert [store.event("s", seq) for seq in range(1, 13)] == store.events("s") == log
        with pytest.raises(InvalidArgument, match="from 1 to 12"):
            store.event("s", 13)

    @settings(
        max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        log=session_events(max_steps=40),
        every=st.integers(min_value=1, max_value=15),
        ends=st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)),
    )
    def test_events_between_are_the_log_s(
        self, tmp_path_factory: Any, log: list[Event], every: int, ends: tuple[int, int]
    ) -> None:
        """``events_between(s, first, last)`` is the log's slice; out of range, refused."""
        path = tmp_path_factory.mktemp("between") / "s.db"
        first, last = sorted(1 + end % len(log) for end in ends)
        with SQLiteStore(path, snapshot_every=every) as store:
            store.append(log)
            assert store.events_between("s", first, last) == log[first - 1 : last]
            assert store.error_flags("s", first, last) == flags(log[first - 1 : last])
            for bad in ((0, last), (first, len(log) + 1), (last + 1, last)):
                with pytest.raises(InvalidArgument, match="first"):
                    store.events_between("s", *bad)
                with pytest.raises(InvalidArgument, match="first"):
                    store.error_flags("s", *bad)

    def test_events_between_refuses_what_events_refuses(
        self, open_store: OpenStore, db_path: Any
    ) -> None:
        """An unknown session, a damaged row: each is ``events``' error; the rows before a
        damaged one are read alone."""
        store = open_store(snapshot_every=5)
        log = conversation("s", 12)
        store.append(log)
        with pytest.raises(UnknownSession):
            store.events_between("nope", 1, 2)
        with pytest.raises(UnknownSession):
            store.error_flags("nope", 1, 2)
        with raw(db_path) as db:  # a bad disk
            db.execute("UPDATE events SET body = '{' WHERE session_id = 's' AND seq = 7")
        with pytest.raises(CorruptRow, match="seq 7") as general:
            store.events("s", after=4)
        with pytest.raises(CorruptRow, match="seq 7") as between:
            store.events_between("s", 5, 9)
        assert str(between.value) == str(general.value)
        with pytest.raises(CorruptRow, match="seq 7") as flagged:
            store.error_flags("s", 5, 9)
        assert str(flagged.value) == str(general.value)
        assert store.events_between("s", 1, 6) == log[:6]
        assert store.error_flags("s", 1, 6) == flags(log[:6])

    def test_error_flags_check_rows_they_do_not_decode(
        self, open_store: OpenStore, db_path: Any
    ) -> None:
        """A row whose body was changed but still decodes, with no error marker in it, is
        not decoded by ``error_flags`` and still fails the hash chain there."""
        store = open_store(snapshot_every=5)
        log = conversation("s", 12)
        store.append(log)
        seq = next(e.seq for e in log if not reports_error(e) and e.seq > 2)
        with raw(db_path) as db:
            (body,) = db.execute(
                "SELECT body FROM events WHERE session_id = 's' AND seq = ?", (seq,)
            ).fetchone()
            changed = body.replace("0", "1", 1)
            assert changed != body
            db.execute(
                "UPDATE events SET body = ? WHERE session_id = 's' AND seq = ?", (changed, seq)
            )
        with pytest.raises(CorruptRow, match=f"seq {seq}"):
            store.error_flags("s", 1, len(log))
        with pytest.raises(CorruptRow, match=f"seq {seq}"):
            store.events_between("s", 1, len(log))

    @pytest.mark.parametrize("relabel", ["status_changed", "turn_started", "message_added"])
    def test_error_flags_check_a_row_s_kind(
        self, open_store: OpenStore, db_path: Any, relabel: str
    ) -> None:
        """The kind column is not hashed: a row relabelled to another kind fails
        ``error_flags`` as it fails ``events_between``, and is not read as that kind."""
        store = open_store(snapshot_every=5)
        log = conversation("s", 12)
        store.append(log)
        seq = next(e.seq for e in log if e.kind == "turn_ended")
        with raw(db_path) as db:
            db.execute(
                "UPDATE events SET kind = ? WHERE session_id = 's' AND seq = ?", (relabel, seq)
            )
        with pytest.raises(CorruptRow, match=f"seq {seq}") as whole:
            store.events_between("s", 1, len(log))
        with pytest.raises(CorruptRow, match=f"seq {seq}") as flagged:
            store.error_flags("s", 1, len(log))
        assert str(flagged.value) == str(whole.value)

    def test_events_between_on_postgres(self, open_pg: Any) -> None:
        """PostgreSQL reads a range through the same code: the same events."""
        store = open_pg(snapshot_every=5)
        log = conversation("s", 12)
        store.append(log)
        assert store.events_between("s", 3, 9) == log[2:9]
        assert store.error_flags("s", 3, 9) == flags(log[2:9])

    @settings(
        max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        log=session_events(max_steps=40),
        kinds=st.lists(st.sampled_from(sorted(EVENT_TYPES)), max_size=4),
        pivot=st.integers(0, 200),
        limits=st.tuples(st.integers(0, 12), st.integers(0, 12)),
        ends=st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)),
    )
    def test_kind_seqs_and_counts_are_the_log_s(
        self,
        tmp_path_factory: Any,
        log: list[Event],
        kinds: list[str],
        pivot: int,
        limits: tuple[int, int],
        ends: tuple[int, int],
    ) -> None:
        """``kind_seqs`` are the seqs of those kinds nearest the pivot, ``kind_counts`` the
        count of each kind in a range: as filtering the log says."""
        path = tmp_path_factory.mktemp("kinds") / "s.db"
        first, last = sorted(1 + end % len(log) for end in ends)
        before, after = limits
        with SQLiteStore(path, snapshot_every=5) as store:
            store.append(log)
            matching = [e.seq for e in log[:last] if e.kind in kinds]
            want = (
                [s for s in matching if s < pivot][-before:] if before else [],
                [s for s in matching if s >= pivot][:after],
            )
            got = store.kind_seqs("s", kinds, pivot, before=before, after=after, last=last)
            assert got == want
            if last == len(log):
                assert store.kind_seqs("s", kinds, pivot, before=before, after=after) == want
            assert store.kind_counts("s", first, last) == Counter(
                e.kind for e in log[first - 1 : last]
            )
            assert store.kind_counts("s") == Counter(e.kind for e in log)
            assert store.kind_counts("s", last + 1, last) == {}

    @settings(
        max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(log=session_events(max_steps=40), first=st.integers(1, 200))
    def test_mentions_find_every_event_naming_a_message(
        self, tmp_path_factory: Any, log: list[Event], first: int
    ) -> None:
        """``mentions`` lists every status change and metadata update of a message from
        ``first`` on (and may list more: candidates), in seq order."""
        path = tmp_path_factory.mktemp("mentions") / "s.db"
        kinds = ["status_changed", "metadata_updated"]
        with SQLiteStore(path, snapshot_every=5) as store:
            store.append(log)
            for message_id in {e.message.id for e in log if isinstance(e, MessageAdded)}:
                found = store.mentions("s", kinds, f'"{message_id}"', first)
                named = [
                    e.seq
                    for e in log[first - 1 :]
                    if e.kind in kinds and getattr(e, "message_id", None) == message_id
                ]
                assert found == sorted(found)
                assert set(named) <= set(found)
                assert all(log[seq - 1].kind in kinds and seq >= first for seq in found)
            assert store.mentions("s", kinds, "100%_\\") == []
            with pytest.raises(InvalidArgument, match="non-empty string"):
                store.mentions("s", kinds, "")

    def test_mentions_on_postgres(self, open_pg: Any) -> None:
        """PostgreSQL searches the bodies through the same code."""
        store = open_pg(snapshot_every=5)
        log = conversation("s", 12)
        store.append(log)
        changed = [e for e in log if e.kind == "status_changed"]
        assert changed
        target = changed[0].message_id  # type: ignore[attr-defined]
        found = store.mentions("s", ["status_changed"], f'"{target}"')
        assert changed[0].seq in found
        assert store.mentions("s", ["status_changed"], "100%_\\") == []

    def test_kind_seqs_refuse_bad_arguments(self, open_store: OpenStore) -> None:
        """Kinds that are not a list of strings, negative limits, seqs past the head."""
        store = open_store(snapshot_every=5)
        store.append(conversation("s", 6))
        for kinds, match in (("turn_ended", "list of event kinds"), ([1], "strings")):
            with pytest.raises(InvalidArgument, match=match):
                store.kind_seqs("s", kinds, 1, before=1, after=1)
        with pytest.raises(InvalidArgument, match="before must be an int >= 0"):
            store.kind_seqs("s", ["turn_ended"], 1, before=-1, after=1)
        with pytest.raises(InvalidArgument, match="<= 6"):
            store.kind_seqs("s", ["turn_ended"], 1, before=1, after=1, last=7)
        with pytest.raises(InvalidArgument, match="first must be an int seq >= 1"):
            store.kind_counts("s", 0)
        with pytest.raises(UnknownSession):
            store.kind_counts("nope")
        assert store.kind_seqs("s", [], 1, before=5, after=5) == ([], [])

    def test_kind_seqs_on_postgres(self, open_pg: Any) -> None:
        """PostgreSQL reads the kind column through the same code: the same seqs and counts."""
        store = open_pg(snapshot_every=5)
        log = conversation("s", 12)
        store.append(log)
        kinds = ["turn_started", "turn_ended"]
        matching = [e.seq for e in log if e.kind in kinds]
        assert store.kind_seqs("s", kinds, 6, before=2, after=3) == (
            [s for s in matching if s < 6][-2:],
            [s for s in matching if s >= 6][:3],
        )
        assert store.kind_counts("s", 2, 9) == Counter(e.kind for e in log[1:9])

    def test_a_walk_is_lazy(self, open_store: OpenStore) -> None:
        """The first step comes before the rest is read: a walk can be stopped early."""
        store = open_store(snapshot_every=1000)
        store.append(conversation("s", 40))
        steps = store.walk("s")
        first = list(itertools.islice(steps, 2))
        assert [event.seq for event, _, _ in first] == [1, 2]
        steps.close()


class TestBulk:
    def test_no_collection_while_loading(
        self, open_store: OpenStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A big load runs no GC collection, and leaves the GC as it found it."""
        monkeypatch.setattr(travel, "FREEZE_AFTER", 1_000)  # this load counts as big
        store = open_store(snapshot_every=50)
        store.append(conversation("s", 600))
        collections: list[int] = []

        def count(phase: str, info: dict[str, int]) -> None:
            if phase == "start":
                collections.append(info["generation"])

        gc.callbacks.append(count)
        try:
            store.load_timeline("s")
            store.load_span("s", 3)
        finally:
            gc.callbacks.remove(count)
        assert collections == []
        assert gc.isenabled()

    def test_freezes_only_big_loads(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """What a big load built is frozen out of the GC's way; a small one is not."""
        gc.unfreeze()
        with bulk():
            kept = [[i] for i in range(100)]
        assert gc.get_freeze_count() == 0
        monkeypatch.setattr(travel, "FREEZE_AFTER", 1_000)
        with bulk():
            kept += [[i] for i in range(5_000)]
        assert gc.get_freeze_count() >= 5_000

    def test_leaves_a_disabled_gc_disabled(self) -> None:
        gc.disable()
        try:
            with bulk():
                assert not gc.isenabled()
            assert not gc.isenabled()
        finally:
            gc.enable()

    def test_an_error_restores_the_gc(self) -> None:
        gc.unfreeze()
        with pytest.raises(ValueError, match="boom"), bulk():
            raise ValueError("boom")
        assert gc.isenabled()
        assert gc.get_freeze_count() == 0


class TestCheckpoints:
    @settings(
        max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        log=session_events(max_steps=60),
        every=st.integers(min_value=1, max_value=6),
        checkpoint_every=st.integers(min_value=1, max_value=20),
        chunk=st.integers(min_value=1, max_value=4),
        batch=st.integers(min_value=1, max_value=7),
        ends=st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)),
    )
    def test_spans_start_at_the_nearest_checkpoint(
        self,
        tmp_path_factory: Any,
        log: list[Event],
        every: int,
        checkpoint_every: int,
        chunk: int,
        batch: int,
        ends: tuple[int, int],
    ) -> None:
        """Older snapshots kept as checkpoints give the same states as a replay, from the
        nearest one (their chunk versions survive later snapshots)."""
        path = tmp_path_factory.mktemp("cp") / "s.db"
        full = replay(log)
        first, last = sorted(end % (len(log) + 1) for end in ends)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(checkpoints, "CHECKPOINT_EVERY", checkpoint_every)
            with SQLiteStore(path, snapshot_every=every, chunk_size=chunk) as store:
                for start in range(0, len(log), batch):
                    store.append(log[start : start + batch])
        with SQLiteStore(path, snapshot_every=every, chunk_size=chunk) as store:
            with contextlib.closing(sqlite3.connect(path)) as db:  # 3.13 warns about unclosed
                kept = [
                    row[0]
                    for row in db.execute(
                        "SELECT seq FROM snapshot_history UNION SELECT seq FROM snapshots"
                    )
                ]
            line = store.load_span("s", first, last)
            assert line.first_seq == max([seq for seq in kept if seq <= first], default=0)
            for seq in range(first, last + 1):
                assert line.at(seq) == full.at(seq)
            for seq in kept:  # every checkpoint decodes to the replayed state
                assert store.load_span("s", seq, seq).at(seq) == full.at(seq)
            store.rebuild()
            assert store.load_span("s", last).head == full.head


class TestStoredCounts:
    @settings(
        max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        log=session_events(max_steps=60),
        every=st.integers(min_value=1, max_value=6),
        checkpoint_every=st.integers(min_value=1, max_value=20),
        batch=st.integers(min_value=1, max_value=7),
        end=st.integers(0, 10**6),
    )
    def test_are_the_replay_s_counts_at_each_stored_state(
        self,
        tmp_path_factory: Any,
        log: list[Event],
        every: int,
        checkpoint_every: int,
        batch: int,
        end: int,
    ) -> None:
        """``stored_counts`` lists every checkpoint and the latest snapshot up to ``last``,
        each with the replayed state's status counts."""
        path = tmp_path_factory.mktemp("counts") / "s.db"
        full = replay(log)
        last = end % (len(log) + 1)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(checkpoints, "CHECKPOINT_EVERY", checkpoint_every)
            with SQLiteStore(path, snapshot_every=every) as store:
                for start in range(0, len(log), batch):
                    store.append(log[start : start + batch])
        with contextlib.closing(sqlite3.connect(path)) as db:
            kept = sorted(
                row[0]
                for row in db.execute(
                    "SELECT seq FROM snapshot_history UNION SELECT seq FROM snapshots"
                )
            )
        with SQLiteStore(path) as store:
            assert store.stored_counts("s", last) == [
                (seq, full.at(seq).counts) for seq in kept if seq <= last
            ]
            assert [seq for seq, _ in store.stored_counts("s")] == kept

    def test_a_changed_record_is_named(self, open_store: OpenStore, db_path: Any) -> None:
        """A record edited after it was written fails its digest: the error names it."""
        store = open_store(snapshot_every=5)
        store.append(conversation("s", 12))
        seq = store.session("s").snapshot_seq
        with raw(db_path) as db:
            db.execute(
                "UPDATE snapshots SET record = replace(record, '\"counts\":[', "
                "'\"counts\":[7,') WHERE session_id = 's'"
            )
        with pytest.raises(CorruptRow, match=f"seq {seq} is corrupt: its record does not match"):
            store.stored_counts("s")

    def test_on_postgres(self, open_pg: Any) -> None:
        """PostgreSQL reads the records through the same code: the same counts."""
        store = open_pg(snapshot_every=5)
        log = conversation("s", 12)
        store.append(log)
        full = replay(log)
        counts = store.stored_counts("s")
        assert counts
        assert all(full.at(seq).counts == found for seq, found in counts)


class TestPostgres:
    """The same time travel on PostgreSQL: spans, walks and checkpoints (bytea chunks)."""

    @settings(
        max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        log=session_events(max_steps=40, rich=True),
        every=st.integers(min_value=1, max_value=6),
        ends=st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)),
    )
    def test_spans_walks_and_checkpoints(
        self, open_pg: Any, log: list[Event], every: int, ends: tuple[int, int]
    ) -> None:
        full = replay(log)
        first, last = sorted(end % (len(log) + 1) for end in ends)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(checkpoints, "CHECKPOINT_EVERY", 5)
            store = open_pg(snapshot_every=every, chunk_size=2)
            for start in range(0, len(log), 3):
                store.append(log[start : start + 3])
        line = store.load_span("s", first, last)
        assert line.first_seq <= first
        for seq in range(first, last + 1):
            assert line.at(seq) == full.at(seq)
        for event, before, after in store.walk("s", first, last):
            assert (event, before, after) == (
                full.event(event.seq),
                full.at(event.seq - 1),
                full.at(event.seq),
            )
        store.rebuild()
        assert store.load_span("s", last).head == full.head


class TestDamagedCheckpoints:
    """A checkpoint (an older snapshot kept in ``snapshot_history``/``chunk_versions``) is
    derived data, like the snapshot: ``check`` finds its damage, ``rebuild`` mends it, and
    reads that meet it fall back to an older stored state or the log, with a warning (before
    the fix ``check`` said "Sound" while ``load_span`` raised ``CorruptRow``)."""

    @pytest.fixture
    def damaged(self, open_store: OpenStore, monkeypatch: pytest.MonkeyPatch) -> Any:
        """A session of 40 events with checkpoints, one of whose kept chunk versions was
        edited (its digest kept), and its replay."""
        monkeypatch.setattr(checkpoints, "CHECKPOINT_EVERY", 10)
        log = conversation("s", 40)
        store = open_store(snapshot_every=3, chunk_size=2)
        for event in log:
            store.append([event])
        store.close()
        with raw(store.path) as db:
            rows = db.execute(
                "SELECT part, chunk, seq FROM chunk_versions WHERE part = 'messages' "
                "ORDER BY seq LIMIT 1"
            ).fetchall()
            assert rows, "the fixture must keep a chunk version"
            (part, chunk, seq) = rows[0]
            db.execute(
                "UPDATE chunk_versions SET body = ? WHERE session_id = 's' AND part = ? "
                "AND chunk = ? AND seq = ?",
                (b'{"fields": [], "rows": []}', part, chunk, seq),
            )
        return store.path, replay(log)

    def test_check_finds_it_and_rebuild_mends_it(self, damaged: Any, open_store: OpenStore) -> None:
        path, _ = damaged
        store = open_store(path, snapshot_every=3, chunk_size=2)
        report = store.check()
        assert not report.ok
        (problem,) = report.problems
        assert problem.derived
        assert problem.session_id == "s"
        assert "a checkpoint's messages chunk 0" in str(problem)
        assert "does not match its digest" in str(problem)
        store.rebuild()
        assert store.check().ok

    def test_check_compares_them_with_the_log(
        self, open_store: OpenStore, db_path: Any, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An edit that keeps the digests right (software that knows them) is found by
        comparing the checkpoint with the replayed state."""
        import zlib

        from runtime.store._chain import digest

        monkeypatch.setattr(checkpoints, "CHECKPOINT_EVERY", 10)
        store = open_store(snapshot_every=3, chunk_size=2)
        for event in conversation("s", 40):
            store.append([event])
        with raw(db_path) as db:
            part, chunk, seq, body = db.execute(
                "SELECT part, chunk, seq, body FROM chunk_versions WHERE part = 'messages' "
                "ORDER BY seq LIMIT 1"
            ).fetchone()
            text = zlib.decompress(body)
            edited = zlib.compress(text.replace(b"question 1", b"question Z"))
            assert edited != body
            db.execute(
                "UPDATE chunk_versions SET body = ?, digest = ? WHERE session_id = 's' "
                "AND part = ? AND chunk = ? AND seq = ?",
                (edited, digest(edited), part, chunk, seq),
            )
        problems = open_store(snapshot_every=3, chunk_size=2).check().problems
        assert problems
        assert all(p.derived and "checkpoint" in str(p) for p in problems)

    def test_verify_finds_it(self, damaged: Any, open_store: OpenStore) -> None:
        """``verify`` (``amber replay --verify``) checks the checkpoints too."""
        from runtime import ReplayMismatch

        path, _ = damaged
        store = open_store(path, snapshot_every=3, chunk_size=2)
        with pytest.raises(ReplayMismatch, match=r"checkpoint at seq \d+ is corrupt"):
            store.verify("s")
        store.rebuild()
        store.verify("s")

    def test_reads_fall_back_to_the_log(
        self, damaged: Any, open_store: OpenStore, caplog: pytest.LogCaptureFixture
    ) -> None:
        path, full = damaged
        store = open_store(path, snapshot_every=3, chunk_size=2)
        with raw(path) as db:
            (kept,) = db.execute("SELECT min(seq) FROM chunk_versions").fetchone()
            seqs = [row[0] for row in db.execute("SELECT seq FROM snapshot_history ORDER BY seq")]
        at = max(seq for seq in seqs if seq <= max(seqs))  # some checkpoint that names it
        with caplog.at_level("WARNING", logger="amber.store"):
            for seq in range(kept, full.last_seq + 1):
                assert store.load_span("s", seq, seq).at(seq) == full.at(seq)
            for event, _, after in store.walk("s", kept, full.last_seq):
                assert after == full.at(event.seq)
        assert at >= kept
        warned = [r.getMessage() for r in caplog.records if r.name == "amber.store"]
        assert warned
        assert all("amber recover --rebuild" in text for text in warned)
        assert all("\n" not in text for text in warned)

    def test_with_the_head_snapshot_damaged_too(
        self, damaged: Any, open_store: OpenStore, caplog: pytest.LogCaptureFixture
    ) -> None:
        path, full = damaged
        with raw(path) as db:
            db.execute("UPDATE snapshot_chunks SET body = ? WHERE part = 'messages'", (b"{}",))
        store = open_store(path, snapshot_every=3, chunk_size=2)
        with caplog.at_level("WARNING", logger="amber.store"):
            head = full.last_seq
            assert store.load_span("s", head).head == full.head
            assert store.load_span("s", head - 3).head == full.head
            assert [after for _, _, after in store.walk("s", head - 3)] == [
                full.at(seq) for seq in range(head - 3, head + 1)
            ]
        warned = [r for r in caplog.records if "snapshot at seq" in r.getMessage()]
        assert warned
        # as logging.getLogger("amber.store").warning in _warn wrote it (runtime._log)
        assert {(r.name, r.levelname, r.filename, r.funcName) for r in warned} == {
            ("amber.store", "WARNING", "_travel.py", "_warn")
        }
        assert all(isinstance(getattr(r, "amber_damage", None), CorruptRow) for r in warned)
