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
                f"{path!r} is damaged: SQLite reports {exc}. {_expected(self._db, exc)}: "
                "other software dropped or changed it. Restore the file from a backup, or "
                "import exports of its sessions made before the damage into a new store ('amber "
                "import FILE --db NEW.db' for each)."
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


_ROLES = {
    "amber_meta": "the store's application and schema version",
    "events": "every session's event log",
    "sessions": "the sessions' summary rows",
    "snapshots": "the sessions' latest snapshots",
    "snapshot_chunks": "the snapshots' messages and turns",
    "snapshot_history": "the older snapshots kept for time travel",
    "chunk_versions": "the older snapshots' chunks",
}
"""What each table of a store holds, for the error that says one is missing."""


def _expected(db: sqlite3.Connection, exc: sqlite3.OperationalError) -> str:
    """What an Amber store has that SQLite did not find (``exc``), and what the file has."""
    kind, _, name = str(exc).partition(": ")
    if kind != "no such table":
        return f"An Amber store has a column {name!r}, but a table of this file lacks it"
    try:
        found = sorted(
            str(name)
            for (name,) in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        )
    except sqlite3.Error:
        found = []
    tables = f"this file's tables are {', '.join(found)}" if found else "this file has no table"
    role = _ROLES.get(name)
    held = f" ({role})" if role else ""
    return f"An Amber store has the table {name!r}{held}, but {tables}"


def _altered(exc: sqlite3.OperationalError) -> bool:
    """SQLite's error of a statement on a table or column the store should have."""
    return str(exc).startswith(("no such table: ", "no such column: "))
