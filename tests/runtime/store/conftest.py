"""Fixtures for the store tests: every store kind, and a way to reopen the SQLite one."""

from __future__ import annotations

import logging
import pathlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from runtime import CorruptRow
from runtime.store import MemoryStore, SQLiteStore, Store

OpenStore = Callable[..., SQLiteStore]


def passed_over(read: Callable[[], Any]) -> CorruptRow:
    """The damage of the stored state (snapshot, checkpoint) that ``read`` met and passed
    over for an older one or the log (its ``amber.store`` warning); fails if none."""
    found: list[CorruptRow] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            damage = getattr(record, "amber_damage", None)
            if isinstance(damage, CorruptRow):
                found.append(damage)

    logger = logging.getLogger("amber.store")
    handler = Catch(logging.WARNING)
    logger.addHandler(handler)
    try:
        read()
    finally:
        logger.removeHandler(handler)
    assert found, "the read met no damaged stored state"
    return found[0]


@pytest.fixture
def db_path(tmp_path: pathlib.Path) -> pathlib.Path:
    """Where a test's SQLite store lives."""
    return tmp_path / "amber.db"


@pytest.fixture
def open_store(db_path: pathlib.Path) -> Iterator[OpenStore]:
    """Open ``SQLiteStore(path or db_path, **options)``; all are closed after the test."""
    opened: list[SQLiteStore] = []

    def open_(path: pathlib.Path | None = None, **options: object) -> SQLiteStore:
        store = SQLiteStore(path or db_path, **options)  # type: ignore[arg-type]
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


@pytest.fixture
def open_pg(request: pytest.FixtureRequest) -> Iterator[Callable[..., Store]]:
    """Open ``PostgresStore`` in a fresh schema (or ``schema=``); all are closed after the test.

    Skips (fails in CI) when no PostgreSQL server answers (tests/conftest.py).
    """
    from runtime.store import PostgresStore

    dsn = request.getfixturevalue("postgres_dsn")
    schemas = request.getfixturevalue("pg_schema")
    opened: list[Store] = []

    def open_(schema: str | None = None, **options: object) -> Store:
        store = PostgresStore(dsn, schema=schema or schemas(), **options)  # type: ignore[arg-type]
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def make_store(
    request: pytest.FixtureRequest, open_store: OpenStore, tmp_path: pathlib.Path
) -> Callable[..., Store]:
    """A factory of fresh, empty stores of each kind (``snapshot_every`` … as options).

    The PostgreSQL stores each get a schema of their own, dropped after the test.
    """
    made = 0
    if request.param == "postgres":
        return request.getfixturevalue("open_pg")  # type: ignore[no-any-return]

    def make(**options: object) -> Store:
        nonlocal made
        made += 1
        if request.param == "memory":
            return MemoryStore(**options)  # type: ignore[arg-type]
        return open_store(tmp_path / f"store{made}.db", **options)

    return make


@pytest.fixture
def store(make_store: Callable[..., Store]) -> Store:
    """A fresh store of each kind, snapshotting every 5 events."""
    return make_store(snapshot_every=5)
