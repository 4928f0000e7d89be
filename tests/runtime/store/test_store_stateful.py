"""The stores against a dead-simple model: a plain list of events per session.

Like pyrsistent's list-vs-pvector test (and ``tests/runtime/test_stateful.py``):
a real store runs beside the model through appends (one event, or batches
mixing sessions), refused appends (a taken seq, a gap, an event that does not
apply), snapshots, reopening, and export/import into a new store. After every
step the store holds exactly the model's events, and its states equal a
replay of them.
"""

from __future__ import annotations

import pathlib
import shutil
import tempfile
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from runtime import Event, EventRejected, SessionState, StatusChanged, apply
from runtime.store import MemoryStore, PostgresStore, SeqConflict, SQLiteStore, Store
from runtime.testing import session_events

from .scenario import T0

SESSIONS = ("a", "b")


class StoreMachine(RuleBasedStateMachine):
    """One store, two sessions, and the model: the events each session must hold."""

    def __init__(self) -> None:
        super().__init__()
        self.folder = pathlib.Path(tempfile.mkdtemp(prefix="amber-store-"))
        self.opened = 0
        self.store = self.fresh()
        self.model: dict[str, list[Event]] = {}
        self.heads: dict[str, SessionState] = {}
        self.pending: dict[str, list[Event]] = {}

    # -- the store under test ------------------------------------------------------

    def fresh(self) -> Store:
        """A new, empty store of the machine's kind."""
        raise NotImplementedError

    def reopened(self) -> Store:
        """The same sessions, as a store opened again."""
        raise NotImplementedError

    # -- helpers -------------------------------------------------------------------

    def accept(self, events: list[Event]) -> None:
        heads = self.store.append(events)
        for event in events:
            self.model.setdefault(event.session_id, []).append(event)
            head = self.heads.get(event.session_id)
            if head is None:
                head = SessionState.empty(event.session_id)
            self.heads[event.session_id] = apply(head, event)
        assert heads == {sid: self.heads[sid] for sid in {e.session_id for e in events}}

    def take(self, session_id: str) -> Event:
        return self.pending[session_id].pop(0)

    def has_pending(self) -> bool:
        return any(self.pending.values())

    def stored(self) -> list[str]:
        return sorted(self.model)

    # -- rules ---------------------------------------------------------------------

    @initialize(a=session_events("a", max_steps=30), b=session_events("b", max_steps=30))
    def logs(self, a: list[Event], b: list[Event]) -> None:
        self.pending = {"a": list(a), "b": list(b)}

    @precondition(has_pending)
    @rule(data=st.data())
    def append_one(self, data: st.DataObject) -> None:
        session_id = data.draw(st.sampled_from([s for s in SESSIONS if self.pending[s]]))
        self.accept([self.take(session_id)])

    @precondition(has_pending)
    @rule(data=st.data(), size=st.integers(min_value=1, max_value=12))
    def append_batch(self, data: st.DataObject, size: int) -> None:
        batch: list[Event] = []
        for _ in range(size):
            left = [s for s in SESSIONS if self.pending[s]]
            if not left:
                break
            batch.append(self.take(data.draw(st.sampled_from(left))))
        self.accept(batch)

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def append_taken_seq(self, data: st.DataObject) -> None:
        session_id = data.draw(st.sampled_from(self.stored()))
        event = data.draw(st.sampled_from(self.model[session_id]))
        try:
            self.store.append([event])
        except SeqConflict:
            pass
        else:  # pragma: no cover - a failing test reports this
            raise AssertionError(f"seq {event.seq} was stored twice")

    @precondition(lambda self: any(len(p) >= 2 for p in self.pending.values()))
    @rule(data=st.data())
    def append_with_a_gap(self, data: st.DataObject) -> None:
        session_id = data.draw(st.sampled_from([s for s in SESSIONS if len(self.pending[s]) >= 2]))
        try:
            self.store.append([self.pending[session_id][1]])
        except SeqConflict:
            pass
        else:  # pragma: no cover
            raise AssertionError("a gap was stored")

    @rule(data=st.data())
    def append_what_does_not_apply(self, data: st.DataObject) -> None:
        """A legal event followed by one that does not apply: neither is stored."""
        session_id = data.draw(st.sampled_from(SESSIONS))
        batch = []
        seq = len(self.model.get(session_id, [])) + 1
        if self.pending[session_id] and data.draw(st.booleans()):
            batch.append(self.pending[session_id][0])
            seq += 1
        batch.append(
            StatusChanged(
                session_id=session_id,
                seq=seq,
                at=T0,
                message_id="ghost",
                expected="pending",
                status="delivered",
            )
        )
        try:
            self.store.append(batch)
        except EventRejected:
            pass
        else:  # pragma: no cover
            raise AssertionError("an event that does not apply was stored")

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def snapshot(self, data: st.DataObject) -> None:
        session_id = data.draw(st.sampled_from(self.stored()))
        assert self.store.snapshot(session_id) == len(self.model[session_id])

    @rule()
    def reopen(self) -> None:
        self.store = self.reopened()

    @rule()
    def export_and_import(self) -> None:
        exports = [self.store.export_session(sid) for sid in self.stored()]
        target = self.fresh()
        for data in exports:
            target.import_session(data)
            assert target.export_session(data["session_id"]) == data
        self.store.close()
        self.store = target

    # -- invariants ----------------------------------------------------------------

    @invariant()
    def holds_the_model(self) -> None:
        infos = self.store.list_sessions()
        assert sorted(info.session_id for info in infos) == self.stored()
        for info in infos:
            assert info.seq == len(self.model[info.session_id])
        for session_id, events in self.model.items():
            assert self.store.events(session_id) == events
            assert self.store.load_state(session_id) == self.heads[session_id]
            assert (
                self.store.load_timeline(session_id, from_snapshot=True).head
                == self.heads[session_id]
            )

    def teardown(self) -> None:
        for session_id, events in self.model.items():
            timeline = self.store.verify(session_id)
            assert timeline.events() == events
        self.store.close()
        shutil.rmtree(self.folder, ignore_errors=True)


class MemoryMachine(StoreMachine):
    def fresh(self) -> Store:
        return MemoryStore(snapshot_every=3)

    def reopened(self) -> Store:
        # Nothing survives a memory store; "reopening" is importing its exports.
        exports = [self.store.export_session(sid) for sid in self.stored()]
        store = self.fresh()
        for data in exports:
            store.import_session(data)
        return store


class SQLiteMachine(StoreMachine):
    path: pathlib.Path

    def fresh(self) -> Store:
        self.opened += 1
        self.path = self.folder / f"store{self.opened}.db"
        return self.open()

    def open(self) -> SQLiteStore:
        return SQLiteStore(self.path, snapshot_every=3, chunk_size=2, cache_size=1)

    def reopened(self) -> Store:
        self.store.close()
        return self.open()


class PostgresMachine(StoreMachine):
    """A PostgreSQL store; each fresh store is a new schema (``dsn`` and ``schemas`` are set by
    ``test_postgres_store`` from its fixtures)."""

    dsn: str
    schemas: Any
    schema: str

    def fresh(self) -> Store:
        self.schema = self.schemas()
        return self.open()

    def open(self) -> PostgresStore:
        return PostgresStore(
            self.dsn, schema=self.schema, snapshot_every=3, chunk_size=2, cache_size=1
        )

    def reopened(self) -> Store:
        self.store.close()
        return self.open()


SETTINGS: Any = settings(max_examples=40, stateful_step_count=25, deadline=None)
MemoryMachine.TestCase.settings = SETTINGS
SQLiteMachine.TestCase.settings = SETTINGS
TestMemoryStore = MemoryMachine.TestCase
TestSQLiteStore = SQLiteMachine.TestCase


def _run_postgres(dsn: str, schemas: Any, examples: int) -> None:
    PostgresMachine.dsn = dsn
    PostgresMachine.schemas = staticmethod(schemas)
    run_state_machine_as_test(
        PostgresMachine,
        settings=settings(max_examples=examples, stateful_step_count=20, deadline=None),
    )


def test_postgres_store(postgres_dsn: str, pg_schema: Any) -> None:
    """The PostgreSQL store against the model (a few runs: each opens schemas on a server)."""
    _run_postgres(postgres_dsn, pg_schema, 2)


@pytest.mark.slow
def test_postgres_store_long(postgres_dsn: str, pg_schema: Any) -> None:
    """The same, as many runs as the other stores get."""
    _run_postgres(postgres_dsn, pg_schema, 40)
