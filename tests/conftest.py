"""PostgreSQL for the tests: the server named by ``AMBER_TEST_POSTGRES``, a fresh schema each.

Tests that take ``postgres_dsn`` (or a ``PostgresStore`` through the store
fixtures) run against ``AMBER_TEST_POSTGRES`` (default: the local ``test``
database). When no server answers they are skipped, saying why; in CI (``CI``
set) or with ``AMBER_REQUIRE_POSTGRES=1`` they fail instead, so a missing
server can never pass for a green run.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator

import pytest

DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/test"


def _required() -> bool:
    return bool(os.environ.get("CI")) or os.environ.get("AMBER_REQUIRE_POSTGRES") == "1"


@pytest.fixture(scope="session")
def postgres_dsn() -> str:
    """The test server's DSN; skips (or fails, in CI) when it cannot be reached."""
    dsn = os.environ.get("AMBER_TEST_POSTGRES", DEFAULT_DSN)
    try:
        import psycopg

        psycopg.connect(dsn, connect_timeout=5).close()
    except Exception as exc:  # ImportError, or no server
        why = (
            f"PostgreSQL is not reachable at {dsn!r} ({type(exc).__name__}: {exc}); set "
            "AMBER_TEST_POSTGRES to a server's DSN (and pip install 'amber[postgres]')"
        )
        if _required():
            pytest.fail(f"{why}. CI (or AMBER_REQUIRE_POSTGRES=1) requires it.", pytrace=False)
        pytest.skip(why)
    return dsn


@pytest.fixture
def pg_schema(postgres_dsn: str) -> Iterator[Callable[[], str]]:
    """Make fresh schema names; every schema made is dropped after the test."""
    made: list[str] = []

    def make() -> str:
        name = f"amber_test_{uuid.uuid4().hex[:12]}"
        made.append(name)
        return name

    yield make
    if made:
        import psycopg
        from psycopg import sql

        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            for name in made:
                conn.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name))
                )
