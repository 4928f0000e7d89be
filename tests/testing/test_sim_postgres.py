"""The deterministic simulator and DESIGN §11's checks on a PostgreSQL store.

The same ``SimulationMachine`` as on the default ``MemoryStore`` (random
traffic, crashes, restarts, every invariant checked after every step), with
each example's events in a fresh PostgreSQL schema: whatever the durable
store does differently (the compact encoding, snapshots, the row code shared
with SQLite, reads after a crash) is checked by the same invariants. A few
examples in the default run, more under ``-m slow``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import initialize, run_state_machine_as_test

from runtime.store import Store
from runtime.testing import SimulationMachine


def _machine(dsn: str, made: list[str]) -> type[SimulationMachine]:
    from runtime.store import PostgresStore

    class OnPostgres(SimulationMachine):
        def make_store(self) -> Store | None:
            schema = f"amber_test_{uuid.uuid4().hex[:12]}"
            made.append(schema)
            return PostgresStore(dsn, schema=schema, snapshot_every=7, chunk_size=3)

        @initialize()
        def first_message(self) -> None:
            """Every example stores events, whatever its drawn steps (a fixed set of
            examples could otherwise store none, as one did when the rules changed)."""
            self.sim.send(self.sessions[0], "hi", channel=self._channels[0])

    return OnPostgres


@pytest.fixture
def schemas(postgres_dsn: str) -> Iterator[list[str]]:
    made: list[str] = []
    yield made
    import psycopg
    from psycopg import sql

    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        for name in made:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


def _run(dsn: str, made: list[str], examples: int, steps: int, *, fixed: bool = False) -> None:
    run_state_machine_as_test(
        _machine(dsn, made),
        settings=settings(
            max_examples=examples,
            stateful_step_count=steps,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
            derandomize=fixed,
        ),
    )


def test_the_simulation_on_postgres(postgres_dsn: str, schemas: list[str]) -> None:
    # The same four examples every run, each starting with a message (``first_message``):
    # random ones could all store nothing, which failed the check below once in CI.
    _run(postgres_dsn, schemas, examples=4, steps=25, fixed=True)
    import psycopg
    from psycopg import sql

    with psycopg.connect(postgres_dsn) as conn:  # the events really went to PostgreSQL
        stored = sum(
            conn.execute(
                sql.SQL("SELECT count(*) FROM {}.events").format(sql.Identifier(name))
            ).fetchone()[0]
            for name in schemas
        )
    assert stored > 0


@pytest.mark.slow
def test_the_simulation_on_postgres_long(postgres_dsn: str, schemas: list[str]) -> None:
    _run(postgres_dsn, schemas, examples=40, steps=40)
