"""Lazy snapshot reads (``load_span(..., lazy=True)``): the same states, messages decoded when
read, damage named when read."""

from __future__ import annotations

import copy
import gc
import pathlib
import pickle
import re
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyrsistent._pvector import PythonPVector

import runtime.store._checkpoints as checkpoints
import runtime.store._lazy as lazy_reads
from runtime import CorruptRow, Event, SessionState, replay
from runtime._history import newest_first
from runtime._state import STATUS_ORDER
from runtime.store import SQLiteStore
from runtime.store._chain import digest
from runtime.store._fast import MESSAGE_FIELDS, TURN_FIELDS
from runtime.store._lazy import LazyMessages, _Chunk
from runtime.testing import session_events

from .conftest import OpenStore, passed_over
from .scenario import conversation
from .test_store_damage import raw

_FIELDS = [field.name for field in attrs.fields(SessionState)]


@pytest.fixture(autouse=True)
def _unfreeze() -> Iterator[None]:
    yield
    gc.unfreeze()


def _undecoded(messages: Any) -> int:
    """How many positions of a lazy vector are not decoded yet."""
    return sum(type(item) is _Chunk for item in PythonPVector.tolist(messages))


def _chunks_decoded(messages: Any) -> int:
    """How many of a lazy vector's chunks have had their rows decoded."""
    chunks = {id(item): item for item in PythonPVector.tolist(messages) if type(item) is _Chunk}
    return sum(chunk.messages is not None for chunk in chunks.values())


def _same(lazy: SessionState, eager: SessionState) -> None:
    """Every index first (nothing decoded for them), then every message, then the whole."""
    for name in _FIELDS:
        if name != "messages":
            assert getattr(lazy, name) == getattr(eager, name), name
    assert len(lazy.messages) == len(eager.messages)
    for position in range(len(eager.messages)):
        assert lazy.messages[position] == eager.messages[position]
        assert lazy.message(eager.messages[position].id) == eager.messages[position]
    assert list(lazy.messages) == list(eager.messages)
    assert lazy == eager


class TestLazyEqualsEager:
    @settings(
        max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        log=session_events(max_steps=50),
        every=st.integers(min_value=1, max_value=12),
        checkpoint_every=st.integers(min_value=2, max_value=20),
        chunk=st.integers(min_value=1, max_value=6),
        ends=st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)),
    )
    def test_every_state_message_and_index(
        self,
        tmp_path_factory: Any,
        log: list[Event],
        every: int,
        checkpoint_every: int,
        chunk: int,
        ends: tuple[int, int],
    ) -> None:
        """From a snapshot, a checkpoint or the start, every state of a lazy span equals the
        eager span's and the replay's: each index, each message, the whole state."""
        path = tmp_path_factory.mktemp("lazy") / "s.db"
        full = replay(log)
        first, last = sorted(end % (len(log) + 1) for end in ends)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(checkpoints, "CHECKPOINT_EVERY", checkpoint_every)
            with SQLiteStore(path, snapshot_every=every, chunk_size=chunk) as store:
                for start in range(0, len(log), 7):
                    store.append(log[start : start + 7])
        with SQLiteStore(path, snapshot_every=every, chunk_size=chunk) as store:
            lazy = store.load_span("s", first, last, lazy=True)
            eager = store.load_span("s", first, last)
            assert (lazy.first_seq, lazy.last_seq) == (eager.first_seq, eager.last_seq)
            base = lazy.at(lazy.first_seq)
            if 0 < lazy.first_seq == last and len(base.messages):  # no tail read any yet
                assert type(base.messages) is LazyMessages
                assert _undecoded(base.messages) == len(base.messages)
            for seq in range(first, last + 1):
                _same(lazy.at(seq), eager.at(seq))
                assert eager.at(seq) == full.at(seq)

    @settings(
        max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        log=session_events(max_steps=40, rich=True),
        every=st.integers(min_value=1, max_value=6),
        ends=st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)),
    )
    def test_on_postgres(
        self, open_pg: Any, log: list[Event], every: int, ends: tuple[int, int]
    ) -> None:
        """PostgreSQL's lazy spans (bytea chunks, checkpoints) equal its eager ones."""
        first, last = sorted(end % (len(log) + 1) for end in ends)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(checkpoints, "CHECKPOINT_EVERY", 5)
            store = open_pg(snapshot_every=every, chunk_size=2)
            for start in range(0, len(log), 3):
                store.append(log[start : start + 3])
        lazy = store.load_span("s", first, last, lazy=True)
        eager = store.load_span("s", first, last)
        for seq in range(first, last + 1):
            _same(lazy.at(seq), eager.at(seq))


def _store(open_store: OpenStore, steps: int = 24, **options: Any) -> SQLiteStore:
    store = open_store(snapshot_every=10, chunk_size=4, **options)
    events = conversation("s", steps)
    store.append(events[:20])
    store.append(events[20:])
    return store


class TestLazyMessages:
    """The vector behaves as pyrsistent's, and decodes only what is read."""

    def test_reads_decode_only_their_chunk(self, open_store: OpenStore) -> None:
        state = _store(open_store).load_span("s", 20, 20, lazy=True).head
        eager = replay(conversation("s", 20)).head
        messages = state.messages
        assert _undecoded(messages) == len(messages)
        assert _chunks_decoded(messages) == 0
        assert messages[-1] == eager.messages[-1]
        assert _undecoded(messages) == len(messages) - 1
        assert _chunks_decoded(messages) == 1
        assert messages[1:3] == eager.messages[1:3]
        assert messages == eager.messages
        assert _undecoded(messages) == 0

    def test_derived_vectors_stay_lazy_and_share_messages(self, open_store: OpenStore) -> None:
        """append, set and an evolver give lazy vectors; a message read through any of them
        is one object."""
        messages = _store(open_store).load_span("s", 20, 20, lazy=True).head.messages
        extra = replay(conversation("x", 2)).head.messages[0]
        appended = messages.append(extra)
        changed = messages.set(0, extra)
        evolver = messages.evolver()
        evolver[1] = extra
        evolved = evolver.persistent()
        for vector in (appended, changed, evolved):
            assert type(vector) is LazyMessages
            assert _undecoded(vector) >= len(messages) - 2
        assert appended[2] is changed[2] is evolved[2] is messages[2]
        assert appended[-1] is extra
        assert changed[0] is extra
        assert evolved[1] is extra
        assert evolver[3] is messages[3]
        assert list(appended) == [*messages, extra]

    def test_list_like_reads(self, open_store: OpenStore) -> None:
        """Deleting, pickling, counting and reading a leaf at a time see messages, never rows."""
        messages = _store(open_store).load_span("s", 20, 20, lazy=True).head.messages
        eager = replay(conversation("s", 20)).head.messages
        assert list(messages.delete(0)) == list(eager.delete(0))
        evolver = messages.evolver()
        del evolver[0]
        assert list(evolver.persistent()) == list(eager.delete(0))
        assert pickle.loads(pickle.dumps(messages)) == eager
        assert [m for _, m in newest_first(messages)] == list(reversed(eager))
        assert messages.index(eager[3]) == 3
        assert hash(messages) == hash(eager)


def _rewrite_row(
    path: pathlib.Path, position: int, change: Callable[[list[Any]], None], chunk_size: int = 4
) -> None:
    """Change the stored row of message ``position`` of the snapshot, digest made to match (as
    a program writing the wrong thing would)."""
    number, index = divmod(position, chunk_size)
    with raw(path) as db:
        (body,) = db.execute(
            "SELECT body FROM snapshot_chunks WHERE session_id = 's' AND part = 'messages' "
            "AND chunk = ?",
            (number,),
        ).fetchone()
        chunk = orjson.loads(zlib.decompress(body))
        change(chunk["rows"][index])
        packed = zlib.compress(orjson.dumps(chunk))
        db.execute(
            "UPDATE snapshot_chunks SET body = ?, digest = ? "
            "WHERE session_id = 's' AND part = 'messages' AND chunk = ?",
            (packed, digest(packed), number),
        )


def _setter(name: str, value: object) -> Callable[[list[Any]], None]:
    def change(row: list[Any]) -> None:
        row[MESSAGE_FIELDS.index(name)] = value

    return change


class TestDamage:
    @settings(
        max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        position=st.integers(min_value=0, max_value=19),
        damage=st.sampled_from(
            [
                ("created_at", "not a time"),
                ("created_at", "2026-05-27T12:50:00"),  # no offset
                ("content", 7),
                ("sender", None),
                ("metadata", [1]),
                ("event_seq", -1),
                ("role", "robot"),
            ]
        ),
    )
    def test_a_bad_row_raises_the_eager_error_when_read(
        self,
        tmp_path_factory: Any,
        position: int,
        damage: tuple[str, object],
    ) -> None:
        """A row whose key columns are sound but which does not decode loads lazily; reading
        it raises the CorruptRow the eager read raises (same text); the rest still read."""
        path = tmp_path_factory.mktemp("damage") / "s.db"
        with SQLiteStore(path, snapshot_every=10, chunk_size=4) as store:
            events = conversation("s", 24)
            store.append(events[:20])
            store.append(events[20:])
        with SQLiteStore(path, snapshot_every=10, chunk_size=4) as store:
            if position >= len(store.load_span("s", 20, 20).head.messages):
                return
        _rewrite_row(path, position, _setter(*damage))
        with SQLiteStore(path, snapshot_every=10, chunk_size=4) as store:
            eager = passed_over(lambda: store.load_span("s", 20, 24))
            assert str(eager).startswith(
                f"Session 's' snapshot at seq 20 is corrupt: messages chunk {position // 4} "
                f"item {position % 4}: "
            )
            expected = rf"^{re.escape(str(eager))}$"
            state = store.load_span("s", 20, 20, lazy=True).head
            with pytest.raises(CorruptRow, match=expected) as caught:
                state.messages[position]
            assert (caught.value.session_id, caught.value.seq) == ("s", 20)
            with pytest.raises(CorruptRow, match=expected):
                list(state.messages)
            # With events after the snapshot: raised when they or a reader read the row.
            with pytest.raises(CorruptRow, match=expected):
                list(store.load_span("s", 20, 24, lazy=True).head.messages)
            good = replay(conversation("s", 20)).head.messages
            for other in range(len(good)):
                if other != position:
                    assert state.messages[other] == good[other]

    @pytest.mark.parametrize(
        ("name", "value"),
        [("status", "bogus"), ("id", 5), ("type", "nonsense"), ("active", "yes")],
    )
    def test_a_bad_key_column_raises_when_loaded(
        self, open_store: OpenStore, db_path: pathlib.Path, name: str, value: object
    ) -> None:
        """A key column the indexes need that is in doubt: the lazy read is the eager one."""
        _store(open_store).close()
        _rewrite_row(db_path, 0, _setter(name, value))
        store = open_store(snapshot_every=10, chunk_size=4)
        # The eager read passes the damaged snapshot over for the log (with a warning).
        eager = passed_over(lambda: store.load_span("s", 20, 20))
        if name == "active":  # only an input waiting for a turn reads it
            state = store.load_span("s", 20, 20, lazy=True).head
            with pytest.raises(CorruptRow, match=rf"^{re.escape(str(eager))}$"):
                list(state.messages)
            return
        lazy = passed_over(lambda: store.load_span("s", 20, 20, lazy=True))
        assert str(lazy) == str(eager)

    @pytest.mark.parametrize(
        ("position", "name", "value"),
        [
            (5, "turn_id", "no-such-turn"),
            (5, "session_id", "other"),
            (5, "status", "processing"),
            (5, "id", "m1"),
            (3, "tool_call_id", "no-such-call"),  # a result (of call4, turn t2) answers no call
            (3, "tool_call_id", "call15"),  # … or a call of another turn (t13)
            (8, "turn_id", "t2"),  # a result of another turn than its call's
        ],
    )
    def test_an_inconsistent_snapshot_is_named_when_loaded(
        self,
        open_store: OpenStore,
        db_path: pathlib.Path,
        position: int,
        name: str,
        value: object,
    ) -> None:
        """check_consistent's checks of the messages run on the key columns: a lazy load
        raises what the eager one raises."""
        _store(open_store).close()
        _rewrite_row(db_path, position, _setter(name, value))
        store = open_store(snapshot_every=10, chunk_size=4)
        eager = passed_over(lambda: store.load_span("s", 20, 20))
        assert "is corrupt" in str(eager)
        assert str(passed_over(lambda: store.load_span("s", 20, 20, lazy=True))) == str(eager)


_ODD: list[object] = [
    None, True, 0, 7, -1, "", "x", "m1", "u1", "m4", "m15", "t2", "t13", "no-such-turn",
    "other", "s", "call4", "call15", "processing", "pending_agent", "delivered", "tool_result", "tool_call",
    "text", "user", "tool", [], {}, {"id": "call4"}, {"id": 3}, [1],
]  # fmt: skip


def _outcome(store: SQLiteStore, seq: int) -> tuple[str, object]:
    try:
        return "ok", store.load_span("s", seq, seq).head
    except CorruptRow as exc:
        return "error", (str(exc), exc.session_id, exc.seq)


class TestEagerReadsTheKeyColumns:
    """An eager snapshot read derives its indexes and runs check_consistent's message checks
    on the rows' key columns (``Facts``): the same states and errors as deriving them from
    the messages (``assemble_state`` and the full ``check_consistent``, the reference)."""

    @settings(
        max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        log=session_events(max_steps=50),
        every=st.integers(min_value=1, max_value=12),
        chunk=st.integers(min_value=1, max_value=6),
    )
    def test_same_states_as_the_reference(
        self, tmp_path_factory: Any, log: list[Event], every: int, chunk: int
    ) -> None:
        """Every state an eager span holds equals the reference read's."""
        path = tmp_path_factory.mktemp("facts") / "s.db"
        with SQLiteStore(path, snapshot_every=every, chunk_size=chunk) as store:
            for start in range(0, len(log), 5):
                store.append(log[start : start + 5])
        with SQLiteStore(path, snapshot_every=every, chunk_size=chunk) as store:
            fast = store.load_span("s", 0, len(log))
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(lazy_reads.Facts, "usable", staticmethod(lambda: False))
                reference = store.load_span("s", 0, len(log))
            for seq in range(len(log) + 1):
                assert fast.at(seq) == reference.at(seq)

    @settings(
        max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        changes=st.lists(
            st.tuples(
                st.integers(min_value=0, max_value=9),  # the snapshot holds 10 messages
                st.sampled_from(MESSAGE_FIELDS),
                st.sampled_from(_ODD),
            ),
            min_size=1,
            max_size=3,
        )
    )
    def test_damaged_rows_raise_the_reference_error(
        self, tmp_path_factory: Any, changes: list[tuple[int, str, object]]
    ) -> None:
        """Key columns or other values changed (the digest made to match): the eager read
        loads, or raises the CorruptRow, exactly as the reference read does."""
        path = tmp_path_factory.mktemp("facts") / "s.db"
        with SQLiteStore(path, snapshot_every=10, chunk_size=4) as store:
            events = conversation("s", 24)
            store.append(events[:20])
            store.append(events[20:])
        for position, name, value in changes:
            _rewrite_row(path, position, _setter(name, value))
        with SQLiteStore(path, snapshot_every=10, chunk_size=4) as store:
            fast = _outcome(store, 20)
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(lazy_reads.Facts, "usable", staticmethod(lambda: False))
                reference = _outcome(store, 20)
        assert fast == reference


_TOOL_CALLS: list[object] = [
    {"id": "call4", "name": "sh", "arguments": {}, "index": 0},
    {"id": "call15", "name": "sh", "arguments": {}, "index": 0},
    {"id": "call4", "name": "sh"},  # a key missing
    {"id": "call4", "name": "sh", "arguments": {}, "index": 0, "x": 1},  # one too many
]
_DAMAGE = st.one_of(
    st.tuples(st.just("set"), st.integers(0, 19), st.sampled_from(MESSAGE_FIELDS),
              st.sampled_from(_ODD + _TOOL_CALLS)),
    st.tuples(st.just("copy"), st.integers(0, 19), st.integers(0, 19), st.none()),
    st.tuples(st.just("swap"), st.integers(0, 19), st.integers(0, 19), st.none()),
    st.tuples(st.just("fork"), st.integers(0, 19), st.none(), st.none()),
    st.tuples(st.just("turn"), st.integers(0, 9), st.sampled_from(TURN_FIELDS),
              st.sampled_from(_ODD)),
)  # fmt: skip
"""A change to the stored snapshot: a message field set, a row copied over another (a
repeated id), two rows swapped, the first rows moved to another session, a turn field set."""


def _stored_chunks(db: Any, part: str) -> list[tuple[int, dict[str, Any]]]:
    return [
        (number, orjson.loads(zlib.decompress(body)))
        for number, body in db.execute(
            "SELECT chunk, body FROM snapshot_chunks WHERE session_id = 's' AND part = ? "
            "ORDER BY chunk",
            (part,),
        )
    ]


def _store_rows(
    db: Any, part: str, chunks: list[tuple[int, dict[str, Any]]], rows: list[Any]
) -> None:
    """Write ``rows`` back into ``chunks`` of ``part``, each as many as it held, digests made
    to match."""
    start = 0
    for number, chunk in chunks:
        chunk["rows"] = rows[start : start + len(chunk["rows"])]
        start += len(chunk["rows"])
        packed = zlib.compress(orjson.dumps(chunk))
        db.execute(
            "UPDATE snapshot_chunks SET body = ?, digest = ? "
            "WHERE session_id = 's' AND part = ? AND chunk = ?",
            (packed, digest(packed), part, number),
        )


class TestEagerReadsOfRearrangedRows:
    """Whole rows rearranged (the cases ``_suspect`` exists for), not only values changed:
    the eager read loads, or raises the CorruptRow, exactly as the reference read does."""

    @settings(
        max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(damage=st.lists(_DAMAGE, min_size=1, max_size=4), fix_counts=st.booleans())
    def test_same_outcome_as_the_reference(
        self, tmp_path_factory: Any, damage: list[tuple[Any, ...]], fix_counts: bool
    ) -> None:
        """``fix_counts``: the record's counts made to match the changed statuses, so that
        the read gets past that check to the consistency checks."""
        path = tmp_path_factory.mktemp("facts") / "s.db"
        with SQLiteStore(path, snapshot_every=24, chunk_size=4) as store:
            events = conversation("s", 30)
            store.append(events[:24])
            store.append(events[24:])
        with raw(path) as db:
            messages, turns = _stored_chunks(db, "messages"), _stored_chunks(db, "turns")
            rows = [row for _, chunk in messages for row in chunk["rows"]]
            turn_rows = [row for _, chunk in turns for row in chunk["rows"]]
            for kind, first, second, value in damage:
                if kind == "set" and first < len(rows):
                    rows[first][MESSAGE_FIELDS.index(second)] = copy.deepcopy(value)
                elif kind == "copy" and max(first, second) < len(rows):
                    rows[second] = copy.deepcopy(rows[first])
                elif kind == "swap" and max(first, second) < len(rows):
                    rows[first], rows[second] = rows[second], rows[first]
                elif kind == "fork":
                    for row in rows[:first]:
                        row[MESSAGE_FIELDS.index("session_id")] = "other"
                elif kind == "turn" and first < len(turn_rows):
                    turn_rows[first][TURN_FIELDS.index(second)] = copy.deepcopy(value)
            _store_rows(db, "messages", messages, rows)
            _store_rows(db, "turns", turns, turn_rows)
            (seq, record) = db.execute(
                "SELECT seq, record FROM snapshots WHERE session_id = 's'"
            ).fetchone()
            if fix_counts:
                data = orjson.loads(record)
                statuses = [row[MESSAGE_FIELDS.index("status")] for row in rows]
                data["counts"] = [statuses.count(status.value) for status in STATUS_ORDER]
                text = orjson.dumps(data).decode()
                db.execute(
                    "UPDATE snapshots SET record = ?, digest = ? WHERE session_id = 's'",
                    (text, digest(text.encode())),
                )
        with SQLiteStore(path, snapshot_every=24, chunk_size=4) as store:
            fast = _outcome(store, seq)
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(lazy_reads.Facts, "usable", staticmethod(lambda: False))
                reference = _outcome(store, seq)
        assert fast == reference
