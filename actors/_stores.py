"""Opening a runtime's store from what ``Runtime(store=...)`` was given."""

from __future__ import annotations

import os
from pathlib import Path

from runtime._article import type_named
from runtime.store import MemoryStore, SQLiteStore, Store, is_postgres_url
from runtime.store._pg_names import DEFAULT_SCHEMA, schema_problem, url_problem

from ._errors import InvalidConfig

__all__ = ["check_front_end_store", "check_store", "is_shared", "open_store", "pg_schema"]


def check_store(store: object) -> None:
    """Refuse what ``Runtime(store=...)`` cannot open, without opening it.

    Raises:
        InvalidConfig: ``store`` is not a ``Store``, a path, or a URL Amber opens.
    """
    if isinstance(store, str) and (store == ":memory:" or is_postgres_url(store)):
        return
    problem = url_problem(store)
    if problem is not None:
        raise InvalidConfig(f"store={problem}")
    if isinstance(store, str | os.PathLike | Store):
        return
    raise InvalidConfig(
        f"store must be a Store, a path to a SQLite file, a postgresql:// URL, or ':memory:' "
        f"(got {store!r} that is {type_named(store)})."
    )


def check_front_end_store(store: Store | str | os.PathLike[str]) -> None:
    """Refuse, without opening it, a store a front end (``run_sessions=False``) cannot use:
    one that is not shared by workers (a SQLite path, ``":memory:"``, a ``Store`` that is
    not shared). Checking before opening leaves no SQLite file behind.

    Raises:
        InvalidConfig: ``store`` is not a PostgreSQL URL nor a shared ``Store``.
    """
    if is_postgres_url(store) or (isinstance(store, Store) and is_shared(store)):
        return
    raise InvalidConfig(
        f"run_sessions=False makes a front end for workers that share a PostgreSQL store, "
        f"but store={store!r} is not shared (a SQLite file or an in-memory store serves one "
        "runtime, and it hears no other process). Pass store='postgresql://…', or run the "
        "sessions here (run_sessions=True, with a model)."
    )


def open_store(store: Store | str | os.PathLike[str]) -> Store:
    """The store: ``":memory:"``, a ``postgresql://`` URL (schema ``$AMBER_PG_SCHEMA`` or
    ``amber``), a SQLite file path, or a ``Store`` as it is.

    Raises:
        InvalidConfig: as ``check_store``.
    """
    check_store(store)
    if isinstance(store, str) and store == ":memory:":
        return MemoryStore()
    if is_postgres_url(store):
        from runtime.store import PostgresStore

        assert isinstance(store, str)
        return PostgresStore(store, schema=pg_schema())
    if isinstance(store, str | os.PathLike):
        return SQLiteStore(Path(store))
    assert isinstance(store, Store)
    return store


def pg_schema() -> str:
    """The schema of a store given as a PostgreSQL URL: ``$AMBER_PG_SCHEMA``, or ``amber``.

    Raises:
        InvalidConfig: ``$AMBER_PG_SCHEMA`` cannot name a schema (over 63 bytes, say),
            naming the variable.
    """
    schema = os.environ.get("AMBER_PG_SCHEMA") or DEFAULT_SCHEMA
    problem = schema_problem(schema)
    if problem is not None:
        raise InvalidConfig(f"$AMBER_PG_SCHEMA: {problem} Set AMBER_PG_SCHEMA to another name.")
    return schema


def is_shared(store: Store) -> bool:
    """True for a store several runtimes share (sessions are owned through leases)."""
    return bool(getattr(store, "shared", False)) and hasattr(store, "acquire")
