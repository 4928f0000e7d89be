"""Filling the cost and approval columns of summary rows an older Amber wrote (a migration).

Schema version 4 (SQLite) and 2 (PostgreSQL) add ``cost`` and ``waits`` to the
summary rows, so that ``amber sessions`` lists them without loading states.
The migration fills them from each session's head (its snapshot and the
events after it), once, and leaves the other columns as they are (a summary
that disagrees with its log stays for ``amber check`` to find). A session
whose rows are damaged is left as it was: reading it reports the damage as
before, and ``amber recover --rebuild`` writes its summary whole.
"""

from __future__ import annotations

from .._errors import CorruptRow
from ._db import Db
from ._entry import load_entry
from ._rows import session_row
from ._summaries import SUMMARY_COLUMNS, summary_intact, summary_row_digest
from ._tally import Tally

__all__ = ["fill_summaries"]

_CHUNK_SIZE = 64
"""The stores' default chunk size (only how the snapshot's chunk versions are read)."""


def fill_summaries(db: Db) -> int:
    """Write ``cost`` and ``waits`` into every summary row without them, inside the
    migration's transaction; returns how many rows were filled."""
    ids = [row[0] for row in db.execute("SELECT session_id FROM sessions WHERE cost IS NULL")]
    filled = 0
    for session_id in ids:
        try:
            row = session_row(db, session_id) if summary_intact(db, session_id) else None
            if row is None:
                continue
            head = load_entry(db, session_id, row, _CHUNK_SIZE).head
        except (CorruptRow, UnicodeError):  # damaged: left for the reads to report
            continue
        stored = db.execute(
            f"SELECT {SUMMARY_COLUMNS} FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        values = (*stored[:8], Tally.of(head).to_text(), int(head.waits_for_approval))
        db.execute(
            "UPDATE sessions SET cost = ?, waits = ?, row_digest = ? WHERE session_id = ?",
            (values[8], values[9], summary_row_digest(values), session_id),
        )
        filled += 1
    return filled
