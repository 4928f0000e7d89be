"""``SQLiteStore``: the embedded default store, one SQLite file (DESIGN §9).

Durability: the file is in WAL mode with ``synchronous=FULL``, and
``append`` returns only after its transaction has committed, so an event
the caller goes on to apply and announce survives a crash or a power cut.
A batch is one transaction (group commit: one fsync for many events), and a
transaction is all or nothing, so no event is ever half-written.

Every event is applied to its session's head before it is stored, so the
log holds only events that apply. Heads are cached (least recently used
first out); before each write the cache is checked against the file, so
another process writing the same file cannot make it stale.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from .._errors import InvalidArgument, StoreClosed, StoreError
from ._db import Db
from ._pg_names import url_problem
from ._schema import WRITABLE, connect, recreate_guards
from ._sql import SqlStore
from ._transaction import Transaction

if TYPE_CHECKING:
    from ._check import Problem

__all__ = ["SQLiteStore"]


class SQLiteStore(SqlStore):
    """An event store in one SQLite file.

    Args:
        path: the store file; created (with its schema) if it does not exist.
        snapshot_every: snapshot a session once this many events have been
            stored since its last snapshot (checked after each ``append``).
        chunk_size: messages (and turns) per snapshot chunk; a snapshot
            rewrites only the chunks that changed.
        cache_size: how many session heads to keep in memory.

    Raises:
        InvalidArgument: ``path`` is a URL (a mistyped ``postgresql://``, ``sqlite:///``),
            or ``":memory:"`` (use ``MemoryStore``).
        NotAStore: ``path`` is not an Amber store (another SQLite database, or not SQLite).
        SchemaVersionError: the store was written by a newer Amber, or its version is unknown.
        StoreError: the file cannot be opened, or it needs writing (a new store, a
            migration) and cannot be written. A store that only cannot be written opens
            read-only (``read_only``): reads work, a write raises ``StoreError``.

    A store is not thread-safe: use it from one thread at a time (a ``Runtime``
    hands it to its store thread) and close it when done, or use it as a
    context manager.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        snapshot_every: int = 100,
        chunk_size: int = 64,
        cache_size: int = 128,
    ) -> None:
        super().__init__(
            snapshot_every=snapshot_every, chunk_size=chunk_size, cache_size=cache_size
        )
        problem = url_problem(path)
        if isinstance(path, str | os.PathLike) and os.fspath(path) == ":memory:":
            problem = (
                "':memory:' is an in-memory SQLite database, which a SQLiteStore cannot use "
                "(its write-ahead log needs a file); for a store in memory use MemoryStore() "
                "(Runtime(store=':memory:')), or pass a file's path."
            )
        if problem is not None:
            raise InvalidArgument(f"SQLiteStore(path): {problem}")
        self._path = Path(path)
        self._db: sqlite3.Connection | None
        self._db, self._read_only = connect(self._path)

    @property
    def path(self) -> Path:
        """The store file."""
        return self._path

    @property
    def read_only(self) -> bool:
        """True if the store was opened for reading only: its file or folder cannot be
        written (permissions, an immutable file, a read-only file system); a write raises
        ``StoreError`` saying so."""
        return self._read_only is not None

    @property
    def why_read_only(self) -> str | None:
        """Why the store cannot be written (``its file or its folder cannot be written
        (…)``), or None if it can."""
        return self._read_only

    @property
    def _name(self) -> str:
        return str(self._path)

    @property
    def closed(self) -> bool:
        """True once ``close()`` was called."""
        return self._db is None

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            raise StoreClosed(
                f"The store {str(self._path)!r} is closed; open a new SQLiteStore to use it again."
            )
        return self._db

    def _read(self) -> Transaction:
        return Transaction(self._conn(), "BEGIN", self._path)

    def _write(self, sessions: Collection[str] | None) -> Transaction:
        db = self._conn()
        if self._read_only is not None:
            raise StoreError(
                f"Cannot write {str(self._path)!r}: {self._read_only}; it was opened for "
                f"reading only. To write it, {WRITABLE}. Nothing was stored."
            )
        # BEGIN IMMEDIATE takes the file's write lock: one writer at a time.
        return Transaction(db, "BEGIN IMMEDIATE", self._path)

    def _store_problems(self, db: Db) -> list[Problem]:
        from ._scan import sqlite_problems  # the checker: only for check()

        return sqlite_problems(self._conn())

    def _recreate_guards(self, db: Db) -> None:
        recreate_guards(self._conn())

    def _release(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __repr__(self) -> str:
        state = "closed" if self._db is None else "open"
        return f"<SQLiteStore {str(self._path)!r} {state}>"
