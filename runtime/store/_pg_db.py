"""PostgreSQL behind the ``Db`` protocol: statements rewritten, errors turned into Amber's.

The shared row code writes SQL with ``?`` placeholders and reads a text
column's UTF-8 bytes with ``CAST(column AS BLOB)``; ``PgDb`` rewrites both
for psycopg (``%s``, ``amber_blob(column)``: a text column's UTF-8 bytes, a
bytea column as it is; see ``_pg_schema``), once per statement.
``pg_errors`` turns what psycopg raises into ``StoreError`` subclasses: a
unique or trigger violation on a write is a ``SeqConflict`` (another writer
got there first), a lost connection a ``StoreError`` saying nothing was stored.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg

from .._errors import AmberError, CorruptRow, SeqConflict, StoreError
from ._db import Cursor

__all__ = ["PgDb", "pg_errors", "translate"]

_BLOB = re.compile(r"CAST\((\w+(?:\.\w+)?) AS BLOB\)")


@functools.lru_cache(maxsize=256)
def translate(sql: str) -> str:
    """The statement in psycopg's dialect (``?`` → ``%s``; text as UTF-8 bytes)."""
    sql = sql.replace("%", "%%").replace("?", "%s")
    return _BLOB.sub(r"amber_blob(\1)", sql)


class PgDb:
    """A psycopg connection inside a transaction, as the shared row code uses it."""

    __slots__ = ("conn",)

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor:
        """Run one statement written with ``?`` placeholders."""
        return self.conn.execute(translate(sql), parameters)

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor:
        """Run one statement for each set of parameters (pipelined by psycopg; one set is
        sent plainly, without a pipeline's extra round trips)."""
        rows = list(parameters)
        if len(rows) == 1:
            return self.execute(sql, rows[0])
        cursor = self.conn.cursor()
        cursor.executemany(translate(sql), rows)
        return cursor

    def rows(self, sql: str, parameters: Sequence[Any] = ()) -> Iterator[Any]:
        """The rows of one statement."""
        yield from self.execute(sql, parameters)


@contextmanager
def pg_errors(name: str, *, write: bool) -> Iterator[None]:
    """Turn psycopg's errors inside the block into Amber's store errors."""
    try:
        yield
    except AmberError:
        raise
    except psycopg.errors.IntegrityError as exc:
        if write:
            raise SeqConflict(
                f"{name!r} refused the write ({_first_line(exc)}); another writer changed the "
                "session. Nothing in this batch was stored; load the session again and retry."
            ) from exc
        raise StoreError(f"Cannot read {name!r}: {_first_line(exc)}.") from exc
    except (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn) as exc:
        raise CorruptRow(
            f"{name!r} is damaged: the server reports {_first_line(exc)}. A table of the store "
            "was dropped or changed by other software; restore it from a backup."
        ) from exc
    except psycopg.Error as exc:
        if write:
            raise StoreError(
                f"Cannot write {name!r}: {_first_line(exc)}. Nothing in this batch was stored."
            ) from exc
        raise StoreError(f"Cannot read {name!r}: {_first_line(exc)}.") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
