"""The summary rows' cost and approval flag stay those of each session's head, whatever runs.

``amber sessions`` reads a session's cost and whether it waits for approval from its
summary row, which an append updates by the audit rows its batch started or finished
(``runtime/store/_tally.py``). The simulator's random traffic (model calls that cost
something by the settings' prices, tools waiting for approval, decisions, timeouts,
interrupts, crashes with their recovery, stops that drain) goes to a durable store
whose every append is checked: each session it wrote lists the cost and the flag its
head has (``SessionInfo.of``), and ``waits_for_approval`` (what recovery asks) answers
the head's flag from the row alone. On a memory store and SQLite; a few examples on
PostgreSQL.
"""

from __future__ import annotations

import pathlib
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import initialize, invariant, run_state_machine_as_test

from runtime import Event, SessionState, session_cost
from runtime._cost import Price, PriceTable
from runtime.store import MemoryStore, SQLiteStore, Store, waits_for_approval
from runtime.testing import SimulationMachine

PRICED = attrs.evolve(
    SimulationMachine.settings,
    model_name="sim-model",
    prices=PriceTable({"sim-model": Price(input=0.3, output=1.7)}),
)
"""The machine's settings, with a price for its model: every call costs something."""


def summaries_match(store: Store, session_ids: Iterable[str]) -> None:
    """Each session's listed cost and approval flag are its head's."""
    listed = {info.session_id: info for info in store.list_sessions()}
    for session_id in session_ids:
        head = store.load_state(session_id)
        info = listed[session_id]
        want = (session_cost(head.audit.values()), head.waits_for_approval)
        assert (info.cost, info.waits_for_approval) == want, (session_id, head.seq)
        # What recovery asks, answered from the row alone: a load would raise.
        unloadable: Any = Unloadable()
        assert waits_for_approval(unloadable, info) == head.waits_for_approval, session_id


class Unloadable:
    """A store whose sessions cannot be loaded."""

    def load_state(self, session_id: str) -> SessionState:
        raise AssertionError(f"load_state({session_id!r}): the summary row held the answer")


class CheckedSQLite(SQLiteStore):
    """A SQLite store that checks the summaries of the sessions each append wrote."""

    def append(self, events: Iterable[Event]) -> dict[str, SessionState]:
        heads = super().append(events)
        summaries_match(self, heads)
        return heads


class CheckedMemory(MemoryStore):
    """A memory store that checks the summaries of the sessions each append wrote."""

    def append(self, events: Iterable[Event]) -> dict[str, SessionState]:
        heads = super().append(events)
        summaries_match(self, heads)
        return heads


def _machine(make: type[Store] | None, directory: pathlib.Path | None, dsn: str = "") -> type:
    class Summaries(SimulationMachine):
        settings = PRICED

        def make_store(self) -> Store | None:
            if make is CheckedMemory:
                return CheckedMemory()
            if directory is not None:
                return CheckedSQLite(directory / f"{uuid.uuid4().hex}.db", snapshot_every=7)
            from runtime.store import PostgresStore

            schema = f"amber_test_{uuid.uuid4().hex[:12]}"
            _made.append(schema)
            return PostgresStore(dsn, schema=schema, snapshot_every=7, chunk_size=3)

        @initialize()
        def first_message(self) -> None:
            self.sim.send(self.sessions[0], "hi", channel=self._channels[0])

        @invariant()
        def summaries_are_the_heads(self) -> None:
            store = self.sim.store
            summaries_match(store, [info.session_id for info in store.list_sessions()])

    return Summaries


_made: list[str] = []


def _run(machine: type, examples: int, steps: int, *, fixed: bool = False) -> None:
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=steps,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
            derandomize=fixed,
        ),
    )


def test_the_prices_make_costs() -> None:
    """The machine's calls are priced (else the checks below compare nothing but zeros)."""
    store = CheckedMemory()

    class Once(_machine(CheckedMemory, None)):  # type: ignore[misc]
        def make_store(self) -> Store | None:
            return store

        def teardown(self) -> None:  # keep the store open to read it
            self.sim.settle()

    _run(Once, examples=1, steps=3, fixed=True)
    costs = [info.cost for info in store.list_sessions()]
    assert any(cost is not None and cost.usd > 0 for cost in costs), costs


def test_on_memory() -> None:
    _run(_machine(CheckedMemory, None), examples=15, steps=30)


def test_on_sqlite() -> None:
    with tempfile.TemporaryDirectory() as directory:
        _run(_machine(CheckedSQLite, pathlib.Path(directory)), examples=15, steps=30)


@pytest.fixture
def schemas(postgres_dsn: str) -> Iterator[list[str]]:
    _made.clear()
    yield _made
    import psycopg
    from psycopg import sql

    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        for name in _made:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


def test_on_postgres(postgres_dsn: str, schemas: list[str]) -> None:
    """A few examples (the invariant after each step; PostgresStore is not subclassed)."""
    _run(_machine(None, None, postgres_dsn), examples=3, steps=20, fixed=True)
