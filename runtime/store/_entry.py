"""What ``SQLiteStore`` keeps in memory of a session, and loading it from the file."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import attrs

from .._article import type_named
from .._errors import InvalidArgument
from .._repr import value_repr
from .._state import SessionState
from ._db import Db
from ._rows import read_snapshot, replay_rows
from ._snapshot import Refs

if TYPE_CHECKING:
    from ._tally import Tally

__all__ = ["Entry", "load_entry", "positive"]


@attrs.frozen(kw_only=True)
class Entry:
    """A cached session: its head, its latest snapshot, and its chain's head hash."""

    __repr__ = value_repr

    head: SessionState
    """The session's latest state."""
    created_at: datetime
    """``at`` of its first event."""
    snapshot: SessionState | None
    """The state its latest snapshot holds (None: no snapshot yet)."""
    refs: Refs | None
    """That snapshot's chunk versions (None: written with another chunk size)."""
    record_digest: str | None
    """The digest of the snapshot record ``snapshot`` and ``refs`` were read from or written
    as (None: none). The next snapshot is planned against them only while the store still
    holds that record: another process (a rebuild) may have replaced the snapshot's rows
    without changing the session's seq, which is all the cache is checked by."""
    chain: str
    """The hash of the head's event: the next event chains from it."""
    tally: Tally | None = None
    """The exact cost of the head's model calls, as its summary row holds it (None: not
    counted yet; the next append counts every row once, then only the rows it changes)."""

    def tally_of(self, head: SessionState) -> Tally:
        """The tally of ``head``, a later state of this session."""
        from ._tally import Tally  # Fraction: only for writes

        if self.tally is None:
            return Tally.of(head)
        return self.tally.after(self.head, head)


def load_entry(db: Db, session_id: str, row: tuple[int, datetime], chunk_size: int) -> Entry:
    """The session's entry from its snapshot and the events after it (inside a transaction).

    ``row`` is the session's summary (last seq, creation time), already checked.

    Raises:
        CorruptRow: a row on the way is damaged, or breaks the chain.
    """
    seq, created_at = row
    snapshot, refs, chain, record_digest = read_snapshot(db, session_id, chunk_size)
    timeline, head = replay_rows(db, snapshot, upto=seq, chain=chain)
    return Entry(
        head=timeline.head,
        created_at=created_at,
        snapshot=snapshot if snapshot.seq else None,
        refs=refs,
        record_digest=record_digest,
        chain=head,
    )


def positive(name: str, value: object) -> int:
    """``value`` if it is a positive int; ``InvalidArgument`` naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument(
            f"{name} must be a positive int (got {value!r} that is {type_named(value)})."
        )
    return value
