"""``Transaction``: one SQLite transaction, its errors turned into Amber's store errors."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import TracebackType

from .._errors import CorruptRow, SeqConflict, StoreError

__all__ = ["Transaction"]


class Transaction:
    """``with``: BEGIN … COMMIT, or ROLLBACK on any error (SQLite errors become StoreErrors)."""

    def __init__(self, db: sqlite3.Connection, begin: str, path: Path) -> None:
        self._db, self._begin, self._path = db, begin, path
        self._write = begin != "BEGIN"

    def __enter__(self) -> sqlite3.Connection:
        try:
            self._db.execute(self._begin)
            return self._db
        except sqlite3.Error as exc:
            raise StoreError(f"Cannot start a transaction on {str(self._path)!r}: {exc}.") from exc

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None:
            try:
                self._db.execute("COMMIT")
                return
            except sqlite3.Error as error:
                exc = error
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")
        path = str(self._path)
        if isinstance(exc, sqlite3.IntegrityError) and self._write:
            raise SeqConflict(
                f"{path!r} refused the write ({exc}); another writer changed the "
                "session. Nothing in this batch was stored; load the session again and retry."
            ) from exc
        if isinstance(exc, UnicodeDecodeError):
            # SQLite's message quoted bytes that are not UTF-8: the file is damaged.
            raise CorruptRow(
                f"{path!r} is damaged: SQLite reports bytes that are not UTF-8 ({exc}). 'amber "
                "check' runs SQLite's integrity check; restore the file from a backup."
            ) from exc
        if isinstance(exc, sqlite3.DatabaseError) and _damaged(exc):
            raise CorruptRow(
                f"{path!r} is damaged at the SQLite level ({exc}). 'amber check' runs SQLite's "
                "integrity check; restore the file from a backup."
            ) from exc
        if isinstance(exc, sqlite3.OperationalError) and _altered(exc):
            raise CorruptRow(
                f"{path!r} is damaged: SQLite reports {exc}. A table of the store was dropped "
                "or changed by other software; restore the file from a backup."
            ) from exc
        if isinstance(exc, sqlite3.Error):
            if self._write:
                raise StoreError(
                    f"Cannot write {path!r}: {exc}. Nothing in this batch was stored."
                ) from exc
            raise StoreError(f"Cannot read {path!r}: {exc}.") from exc


def _damaged(exc: sqlite3.DatabaseError) -> bool:
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text or "corrupt" in text


def _altered(exc: sqlite3.OperationalError) -> bool:
    """SQLite's error of a statement on a table or column the store should have."""
    return str(exc).startswith(("no such table: ", "no such column: "))
