"""A PostgreSQL store for ``LifecycleMachine(store="postgres")``: a fresh schema per example.

The server is ``$AMBER_TEST_POSTGRES`` (default the local ``test`` database);
the schema is made for the example and dropped when the machine discards the
store. Stopping runtimes cannot close it (the machine does), as with SQLite.
"""

from __future__ import annotations

import os
import uuid

from runtime.store import Store

__all__ = ["kept_postgres"]

DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/test"


def kept_postgres() -> Store:
    """A ``PostgresStore`` in a new schema that only ``discard()`` closes (and drops)."""
    import psycopg
    from psycopg import sql

    from runtime.store import PostgresStore

    class KeptPostgres(PostgresStore):
        def close(self) -> None:
            pass

        def discard(self) -> None:
            super().close()
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                drop = sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                    sql.Identifier(self.schema)
                )
                conn.execute(drop)

    dsn = os.environ.get("AMBER_TEST_POSTGRES", DEFAULT_DSN)
    return KeptPostgres(dsn, schema=f"amber_machine_{uuid.uuid4().hex[:12]}")
