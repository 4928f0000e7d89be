"""The SQLite store's summary rows: one per session, derived from its log, checked on read.

A summary row lets ``list_sessions`` answer without loading states. It is
derived data: every read checks it against the log's last seq, a session
whose events are stored without one is an error naming it (never a session
silently left out), and ``rebuild()`` writes it again from the events.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson
from immutables import Map

from .._errors import CorruptRow
from .._message import Status
from .._session_cost import SessionCost
from .._state import SessionState
from .._storable import session_id_problem, text_problem
from ._chain import digest
from ._db import Db
from ._protocol import SessionInfo

if TYPE_CHECKING:
    from ._tally import Tally

__all__ = [
    "OLDER_WRITER",
    "SUMMARY_COLUMNS",
    "all_summaries",
    "missing_summary",
    "parse_cost",
    "read_summaries",
    "sessions_without_summary",
    "shown",
    "summary_digest",
    "summary_row_digest",
    "timestamp",
    "write_summary",
]

_STATUSES = {status.value: status for status in Status}


def timestamp(value: object) -> datetime | None:
    """A stored ISO 8601 time with a UTC offset, or None if it is not one."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.utcoffset() is not None else None


def shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:79] + "…"


def missing_summary(session_id: str, seq: int) -> CorruptRow:
    """The error for a session whose events are stored but whose summary row is not."""
    return CorruptRow(
        f"Session {session_id!r} has events up to seq {seq} but no summary row, so listings "
        "would not show it. Its events are intact: rebuild the summary with 'amber recover "
        "--rebuild' (store.rebuild()).",
        session_id=session_id,
        seq=seq,
    )


def lost_events(session_id: str, recorded: int, last: int) -> CorruptRow:
    """The error for a log cut short under an intact summary row (it ends before ``recorded``).

    Rebuilding the summary would make the shorter log look sound (``store.rebuild()``
    leaves such a session alone), so the way out is a backup.
    """
    return CorruptRow(
        f"Session {session_id!r} seq {last + 1}: its summary row says the log ends at seq "
        f"{recorded}, but it ends at seq {last}: events {last + 1} to {recorded} were lost. "
        "Restore the file from a backup (rebuilding would make the shorter log look sound).",
        session_id=session_id,
        seq=last + 1,
    )


OLDER_WRITER = (
    "amber: this store was migrated by a newer Amber (SQLite schema 4, PostgreSQL schema 2) "
    "whose summary rows keep each session cost, and this process runs an older one that "
    "writes them without it (every newer reader would call the row damaged). Upgrade amber "
    "in this process, as in every process sharing the store, and start it again"
)
"""What the store says to a summary write of an Amber older than the cost columns (a process
that opened the store before a newer one migrated it): the triggers on the ``digest`` column,
which only such a writer sets (this Amber writes ``row_digest``), raise it."""

SUMMARY_COLUMNS = (
    "session_id, seq, created_at, updated_at, messages, counts, active_turn_id, "
    "turn_started_at, cost, waits"
)
"""The columns of a summary row its digest covers, in order (``summary_row_digest``)."""


def summary_intact(db: Db, session_id: str) -> bool:
    """Whether the session's summary row exists and matches its digest."""
    row = db.execute(
        f"SELECT {SUMMARY_COLUMNS}, row_digest FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    return row is not None and row[10] == summary_row_digest(tuple(row[:10]))


def write_summary(db: Db, head: SessionState, created_at: datetime, tally: Tally) -> None:
    """Insert or update the session's summary row from its head (``tally``: its cost)."""
    assert head.updated_at is not None
    turn = head.active_turn
    counts = {str(status): n for status, n in head.status_counts().items()}
    values = (
        head.session_id,
        head.seq,
        created_at.isoformat(),
        head.updated_at.isoformat(),
        len(head.messages),
        orjson.dumps(counts).decode(),
        None if turn is None else turn.id,
        None if turn is None else turn.started_at.isoformat(),
        tally.to_text(),
        int(head.waits_for_approval),
    )
    db.execute(
        f"INSERT INTO sessions ({SUMMARY_COLUMNS}, row_digest) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (session_id) DO UPDATE SET seq = excluded.seq, "
        "created_at = excluded.created_at, "
        "updated_at = excluded.updated_at, messages = excluded.messages, "
        "counts = excluded.counts, active_turn_id = excluded.active_turn_id, "
        "turn_started_at = excluded.turn_started_at, cost = excluded.cost, "
        "waits = excluded.waits, row_digest = excluded.row_digest",
        (*values, summary_row_digest(values)),
    )


def summary_row_digest(values: tuple[object, ...]) -> str:
    """The digest of a summary row's ``SUMMARY_COLUMNS``: of the first eight alone while
    ``cost`` and ``waits`` are NULL (a row an older Amber wrote, not filled yet)."""
    if len(values) == 10 and values[8] is None and values[9] is None:
        values = values[:8]
    return summary_digest(values)


def summary_digest(values: tuple[object, ...]) -> str:
    """The digest a summary row carries of its other columns (so an edit is named)."""
    try:
        return digest(orjson.dumps(list(values)))
    except TypeError:  # a column that is not JSON-like (damage): no digest matches it
        return ""


def read_summaries(db: Db, where: str, params: tuple[Any, ...]) -> list[SessionInfo]:
    """Summaries of the sessions ``where`` selects (an SQL clause over ``s``).

    Raises:
        CorruptRow: a summary row does not decode, or says the log ends at
            another seq than it does.
    """
    rows = db.execute(f"{_SUMMARY_SELECT} {where}", params)
    return [_summary(row) for row in rows]


_SUMMARY_SELECT = (
    "SELECT s.session_id, s.seq, s.created_at, s.updated_at, s.messages, s.counts, "
    "s.active_turn_id, s.turn_started_at, s.cost, s.waits, coalesce(p.seq, 0), s.row_digest, "
    "(SELECT max(e.seq) FROM events AS e WHERE e.session_id = s.session_id) "
    "FROM sessions AS s LEFT JOIN snapshots AS p ON p.session_id = s.session_id"
)
"""The columns ``_summary`` reads, of every summary row (a ``WHERE`` may follow)."""


def all_summaries(db: Db) -> list[SessionInfo]:
    """Every summary row, checked; a session with events but no summary is an error.

    Raises:
        CorruptRow: naming the first session whose summary is damaged or missing.
    """
    infos = read_summaries(db, "", ())
    orphans = sessions_without_summary(db)
    if orphans:
        session_id, seq = orphans[0]
        error = missing_summary(session_id, seq)
        if len(orphans) > 1:
            error = CorruptRow(
                f"{error} ({len(orphans) - 1} more session(s) lack one too.)",
                session_id=session_id,
                seq=seq,
            )
        raise error
    return infos


def sound_summaries(db: Db) -> tuple[list[SessionInfo], list[CorruptRow]]:
    """The summaries of the sound sessions and the errors of the damaged ones (a summary row
    damaged or disagreeing with its log, a log without a summary row), at the cost of
    ``all_summaries``: one damaged session does not hide the others.

    Raises:
        CorruptRow: damage that is no one session's (a summary row keyed by no valid id).
    """
    infos: list[SessionInfo] = []
    damaged: list[CorruptRow] = []
    for row in db.execute(_SUMMARY_SELECT, ()):
        try:
            infos.append(_summary(row))
        except CorruptRow as exc:
            if exc.session_id is None:
                raise
            damaged.append(exc)
    damaged.extend(
        missing_summary(session_id, seq) for session_id, seq in sessions_without_summary(db)
    )
    return infos, damaged


def sessions_without_summary(db: Db) -> list[tuple[str, int]]:
    """Sessions whose events are stored but whose summary row is not: ``(id, last seq)``.

    Walks the distinct session ids of ``events`` through its primary key (one
    index seek per session, not a scan of every event).
    """
    rows = db.execute(
        "WITH RECURSIVE ids(id) AS ("
        " SELECT min(session_id) FROM events"
        " UNION ALL"
        " SELECT (SELECT min(session_id) FROM events WHERE session_id > ids.id)"
        " FROM ids WHERE ids.id IS NOT NULL)"
        " SELECT ids.id, (SELECT max(seq) FROM events WHERE session_id = ids.id) FROM ids"
        " WHERE ids.id IS NOT NULL"
        " AND NOT EXISTS (SELECT 1 FROM sessions WHERE session_id = ids.id)"
    )
    return [(session_id, seq) for session_id, seq in rows]


def parse_cost(text: object) -> tuple[int, int, int, int]:
    """A summary row's ``cost`` column (``Tally.to_text``): the exact sum's numerator and
    denominator, the priced and the unpriced calls.

    Raises:
        ValueError: the text is not one.
    """
    if not isinstance(text, str):
        raise ValueError(f"its cost is {text!r}, not text")
    data = orjson.loads(text)
    if (
        type(data) is not list
        or len(data) != 3
        or type(data[0]) is not str
        or any(type(n) is not int or n < 0 for n in data[1:])
    ):
        raise ValueError(f"its cost {text[:80]!r} is not [sum, priced, unpriced]")
    numerator, slash, denominator = data[0].partition("/")
    if not slash or not numerator.isdigit() or not denominator.isdigit() or not int(denominator):
        raise ValueError(f"its cost sum {data[0][:80]!r} is not a fraction")
    return int(numerator), int(denominator), data[1], data[2]


def _cost(text: object) -> SessionCost:
    numerator, denominator, priced, unpriced = parse_cost(text)
    # An int division rounds once, as Fraction's float() and session_cost's fsum do.
    return SessionCost(usd=numerator / denominator, priced=priced, unpriced=unpriced)


def _summary(row: tuple[Any, ...]) -> SessionInfo:
    (session_id, seq, created, updated, messages, counts, turn_id, started, cost, waits,
     snapshot_seq, stored_digest, last) = row  # fmt: skip
    where = f"Session {shown(session_id)} seq {seq}: its summary row"
    fix = "Rebuild the summary with 'amber recover --rebuild'."
    problem = session_id_problem(session_id)
    if problem is not None:
        raise CorruptRow(
            f"A summary row has the session id {shown(session_id)}, which is not one ({problem}). "
            "The row was damaged or written by other software.",
        )
    if stored_digest != summary_row_digest(row[:10]):
        raise CorruptRow(
            f"{where} does not match its digest: it was changed after it was written. {fix}",
            session_id=session_id,
            seq=seq if type(seq) is int else None,
        )
    if last is None:
        raise CorruptRow(
            f"{where} lists a session that has no events. {fix}", session_id=session_id
        )
    if type(seq) is int and seq > last:  # the digest holds: the log lost its last events
        raise lost_events(session_id, seq, last)
    if seq != last:
        raise CorruptRow(
            f"{where} says the log ends at seq {shown(seq)}, but it ends at seq {last}. {fix}",
            session_id=session_id,
            seq=last,
        )
    created_at, updated_at = timestamp(created), timestamp(updated)
    turn_started_at = None if started is None else timestamp(started)
    try:
        if (
            created_at is None
            or updated_at is None
            or (started is not None and turn_started_at is None)
        ):
            raise ValueError("a time is not an ISO 8601 timestamp with a UTC offset")
        raw_counts = orjson.loads(counts)
        if type(raw_counts) is not dict or any(
            type(value) is not int or value < 0 for value in raw_counts.values()
        ):
            raise ValueError("its counts are not a map of status to count")
        if type(messages) is not int or messages < 0:
            raise ValueError(f"its message count is {messages!r}")
        if turn_id is not None and (type(turn_id) is not str or text_problem(turn_id)):
            raise ValueError(f"its active turn id is {turn_id!r}")
        if waits not in (None, 0, 1) or type(waits) is bool:
            raise ValueError(f"its approval flag is {waits!r}")
        return SessionInfo(
            session_id=session_id,
            seq=seq,
            created_at=created_at,
            updated_at=updated_at,
            messages=messages,
            counts=Map({_STATUSES[key]: value for key, value in raw_counts.items()}),
            active_turn_id=turn_id,
            active_turn_started_at=turn_started_at,
            snapshot_seq=snapshot_seq,
            cost=None if cost is None else _cost(cost),
            waits_for_approval=bool(waits),
        )
    except (TypeError, ValueError, KeyError, AttributeError, orjson.JSONDecodeError) as exc:
        raise CorruptRow(
            f"{where} does not decode ({shown(str(exc))}). {fix}",
            session_id=session_id,
            seq=seq,
        ) from None
