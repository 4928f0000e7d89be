"""The connection the shared row code talks to: SQLite's own, or PostgreSQL's through an adapter.

The functions that read and write a store's rows (``_rows``, ``_summaries``,
``_scan``, ``_entry``) are written once, in the SQL both databases speak:
``?`` placeholders, ``INSERT … ON CONFLICT … DO UPDATE``, ``WITH RECURSIVE``,
and ``CAST(column AS BLOB)`` to read a text column as its UTF-8 bytes.
``sqlite3.Connection`` is a ``Db`` as it is; ``PostgresStore`` hands them a
``_pg_db.PgDb``, which rewrites those statements for PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

__all__ = ["Cursor", "Db"]


class Cursor(Protocol):
    """The rows a statement returned."""

    def fetchone(self) -> Any:
        """The next row, or None."""
        ...

    def fetchall(self) -> list[Any]:
        """Every row left."""
        ...

    def __iter__(self) -> Iterator[Any]: ...


class Db(Protocol):
    """A connection inside a transaction, as the shared row code uses it."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor:
        """Run one statement with ``?`` placeholders."""
        ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor:
        """Run one statement for each set of parameters."""
        ...
