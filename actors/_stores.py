"""Opening a runtime's store from what ``Runtime(store=...)`` was given."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from runtime import StoreError
from runtime._article import type_named
from runtime.store import MemoryStore, SQLiteStore, Store, is_postgres_url
from runtime.store._pg_names import DEFAULT_SCHEMA, schema_problem, url_problem

from ._errors import InvalidConfig
from ._ownership import RunnerLock, StoreBusy

__all__ = [
    "StoreHold",
    "check_front_end_store",
    "check_store",
    "hold_store",
    "is_shared",
    "open_store",
    "pg_schema",
]

_running: dict[int, tuple[Store, str]] = {}
"""The ``Store`` objects the Runtimes of this process run: id -> (store, runner)."""
_running_lock = threading.Lock()


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


class StoreHold:
    """What a runtime holds of its store while it runs: the claim on a ``Store`` object it
    was given, and the runner lock of a SQLite file."""

    def __init__(self, claimed: Store | None, lock: RunnerLock | None) -> None:
        self._claimed = claimed
        self._lock = lock

    def release(self) -> None:
        """Let the store go (idempotent)."""
        claimed, self._claimed = self._claimed, None
        if claimed is not None:
            with _running_lock:
                _running.pop(id(claimed), None)
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()


def hold_store(store: Store | str | os.PathLike[str], runner: str) -> tuple[Store, StoreHold]:
    """Open ``store`` for the runtime ``runner`` to run, and hold it: a ``Store`` object is
    claimed for it in this process, a SQLite file locked against every other runtime.
    On failure nothing is held, and a ``Store`` object another runtime runs is left open.

    Raises:
        StoreBusy: another runtime runs the ``Store`` object (in this process) or the file.
        StoreError: the SQLite file cannot be written.
        InvalidConfig: as ``check_store``.
    """
    claimed = _claim(store, runner) if isinstance(store, Store) else None
    hold = StoreHold(claimed, None)
    try:
        opened = open_store(store)
        if isinstance(opened, SQLiteStore):
            if opened.why_read_only is not None:
                opened.close()
                raise StoreError(
                    f"Cannot run a runtime on {str(opened.path)!r}: a runtime writes its "
                    f"store, and {opened.why_read_only}. Make the file and its folder "
                    "writable, or copy the store (with its -wal file, if any) to a writable "
                    "folder; the amber commands that read a store work on it."
                )
            lock = RunnerLock(opened.path, runner)
            try:
                lock.acquire()
            except BaseException:
                opened.close()
                raise
            hold = StoreHold(claimed, lock)
    except BaseException:
        hold.release()
        raise
    return opened, hold


def _claim(store: Store, runner: str) -> Store:
    """Claim the ``Store`` object for ``runner``.

    Raises:
        StoreBusy: a Runtime of this process runs it already.
    """
    with _running_lock:
        held = _running.get(id(store))
        if held is None or held[0] is not store:
            _running[id(store)] = (store, runner)
            return store
    path = getattr(store, "path", None)
    name = repr(str(path)) if isinstance(store, SQLiteStore) and path is not None else repr(store)
    raise StoreBusy(
        f"The store {name} is run by another Runtime of this process ({held[1]}); one runtime "
        "runs a store at a time. Stop that one first (rt.stop(), or leave its with block), or "
        "give this runtime a store of its own."
    )
