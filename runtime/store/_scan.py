"""``check()`` and ``rebuild()`` of the SQL stores: finding every row and judging it.

The judging is shared with every store (``_check``); this module finds the
rows, in the SQL that SQLite and PostgreSQL both speak (``_db``): every session
id any table names, and each session's log, summary and snapshot. SQLite's own
integrity check and its triggers are ``sqlite_problems``. Functions over an open
connection, called inside a transaction.
"""

from __future__ import annotations

import sqlite3

from immutables import Map

from .._errors import CorruptRow
from .._state import SessionState
from .._storable import text_problem
from .._timeline import Timeline
from ._chain import digest
from ._check import CheckReport, Problem, RebuildReport, snapshot_problem, summary_problem
from ._checkpoints import kept, read_checkpoint
from ._db import Db
from ._protocol import SessionInfo
from ._rows import (
    chain_at,
    delete_snapshot,
    last_seq,
    read_snapshot,
    replay_rows,
    write_snapshot,
)
from ._schema import TRIGGERS
from ._snapshot import plan_snapshot
from ._summaries import SUMMARY_COLUMNS, read_summaries, summary_row_digest, write_summary
from ._tally import Tally

__all__ = [
    "CHECKPOINT_BUDGET",
    "check_rows",
    "missing_guards",
    "rebuild_rows",
    "sqlite_problems",
]

CHECKPOINT_BUDGET = 50_000
"""How many events' worth of checkpoints ``check`` decodes in full and compares with the
replayed state, per session (their seqs summed, oldest first); the later ones of a very
long session only have their rows' digests checked (as every checkpoint's are)."""


def _event_ids(db: Db) -> list[str]:
    """Every session id of ``events``, one index seek per session."""
    rows = db.execute(
        "WITH RECURSIVE ids(id) AS ("
        " SELECT min(session_id) FROM events"
        " UNION ALL"
        " SELECT (SELECT min(session_id) FROM events WHERE session_id > ids.id)"
        " FROM ids WHERE ids.id IS NOT NULL)"
        " SELECT id FROM ids WHERE id IS NOT NULL"
    )
    return [row[0] for row in rows]


def _derived_ids(db: Db) -> set[str]:
    return {
        row[0]
        for row in db.execute(
            "SELECT session_id FROM sessions UNION SELECT session_id FROM snapshots "
            "UNION SELECT session_id FROM snapshot_chunks "
            "UNION SELECT session_id FROM snapshot_history"
        )
    }


def _bad_id(session_id: object) -> Problem | None:
    if isinstance(session_id, str) and text_problem(session_id) is None:
        return None
    return Problem(
        session_id=None,
        seq=None,
        what=f"a row has the session id {session_id!r}, which is not valid text (the file was "
        "damaged or written by other software)",
        derived=False,
    )


def _summary(db: Db, session_id: str) -> SessionInfo | CorruptRow | None:
    try:
        infos = read_summaries(db, "WHERE s.session_id = ?", (session_id,))
    except CorruptRow as exc:
        return exc
    return infos[0] if infos else None


def _snapshot(db: Db, session_id: str, chunk_size: int) -> SessionState | CorruptRow:
    try:
        return read_snapshot(db, session_id, chunk_size)[0]
    except CorruptRow as exc:
        return exc


def _kept_digests(db: Db, session_id: str) -> list[Problem]:
    """The session's checkpoint rows (records, kept chunk versions) whose bytes do not match
    their digests: every one, at the cost of hashing them."""
    problems: list[Problem] = []
    changed = "does not match its digest: it was changed after it was written"
    for seq, record, stored in db.execute(
        "SELECT seq, CAST(record AS BLOB), digest FROM snapshot_history WHERE session_id = ? "
        "ORDER BY seq",
        (session_id,),
    ):
        if not isinstance(record, bytes) or digest(record) != stored:
            what = f"its checkpoint at seq {seq} is corrupt: the record {changed}"
            problems.append(Problem(session_id=session_id, seq=seq, what=what, derived=True))
    for part, number, seq, body, stored in db.execute(
        "SELECT part, chunk, seq, CAST(body AS BLOB), digest FROM chunk_versions "
        "WHERE session_id = ? ORDER BY seq, part, chunk",
        (session_id,),
    ):
        if not isinstance(body, bytes) or digest(body) != stored:
            what = (
                f"a checkpoint's {part} chunk {number} (the version of seq {seq}) is corrupt: "
                f"it {changed}"
            )
            problems.append(Problem(session_id=session_id, seq=seq, what=what, derived=True))
    return problems


def _checkpoint_problems(
    db: Db, timeline: Timeline, session_id: str, *, skip: int | None
) -> list[Problem]:
    """What is wrong with the session's checkpoints (older snapshots kept for time travel):
    every row's digest; then, if those are sound, the oldest checkpoints (within
    ``CHECKPOINT_BUDGET``) read with every check a snapshot gets and compared with the
    state replayed from the log at their seq. ``skip``: the seq of a damaged snapshot, whose
    damage a checkpoint there shares."""
    seqs = [at for at in reversed(kept(db, session_id)) if at != skip]
    last = timeline.last_seq
    problems = [
        Problem(
            session_id=session_id,
            seq=at,
            what=f"its checkpoint is at seq {at}, past the log's end ({last})",
            derived=True,
        )
        for at in seqs
        if at > last
    ]
    problems += _kept_digests(db, session_id)
    if problems:
        return problems
    budget = CHECKPOINT_BUDGET
    for at in seqs:
        if at > budget:
            break
        budget -= at
        try:
            state, _ = read_checkpoint(db, session_id, at, chain_at(db, session_id, at))
        except CorruptRow as exc:
            problems.append(Problem.of(exc, derived=True))
            continue
        found = snapshot_problem(timeline, state, kind="checkpoint")
        if found is not None:
            problems.append(found)
    return problems


def _lost_events(db: Db, session_id: str, upto: int) -> Problem | None:
    """A log cut short: an intact summary or snapshot recorded a later seq than it holds.

    Summaries and snapshots are written in the same transaction as the events
    they describe, so one that passes its digest and is ahead of the log means
    events were lost, not that the derived row is wrong: rebuilding from the
    shorter log would make the loss look sound.
    """
    row = db.execute(
        f"SELECT {SUMMARY_COLUMNS}, row_digest FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    recorded = []
    if row is not None and row[10] == summary_row_digest(tuple(row[:10])) and type(row[1]) is int:
        recorded.append(row[1])
    snapshot = db.execute(
        "SELECT seq, CAST(record AS BLOB), digest FROM snapshots WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    if (
        snapshot is not None
        and isinstance(snapshot[1], bytes)
        and snapshot[2] == digest(snapshot[1])
    ) and type(snapshot[0]) is int:
        recorded.append(snapshot[0])
    if not recorded or max(recorded) <= upto:
        return None
    return Problem(
        session_id=session_id,
        seq=upto + 1,
        what=f"the log ends at seq {upto}, but its intact summary or snapshot recorded seq "
        f"{max(recorded)}: events {upto + 1} to {max(recorded)} were lost. Restore the file "
        "from a backup (rebuilding would make the shorter log look sound)",
        derived=False,
    )


def sqlite_problems(db: sqlite3.Connection) -> list[Problem]:
    """What is wrong with an SQLite file as a whole: its integrity check, missing guards."""
    problems: list[Problem] = []
    integrity = [str(row[0]) for row in db.execute("PRAGMA integrity_check(100)")]
    if integrity != ["ok"]:
        problems.append(
            Problem(
                session_id=None,
                seq=None,
                what=f"SQLite's integrity check fails: {'; '.join(integrity[:10])}",
                derived=False,
            )
        )
    triggers = {
        row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
    }
    return problems + missing_guards(TRIGGERS, triggers)


def missing_guards(expected: tuple[str, ...], present: set[str]) -> list[Problem]:
    """A problem for each trigger that guards the log and is missing."""
    return [
        Problem(
            session_id=None,
            seq=None,
            what=f"the trigger {name} that guards the log is missing (dropped by other "
            "software); rebuilding creates it again",
            derived=True,
        )
        for name in expected
        if name not in present
    ]


def check_rows(db: Db, chunk_size: int, problems: list[Problem]) -> CheckReport:
    """Check every session's rows, after the store-wide ``problems`` already found."""
    problems = list(problems)
    ids = _event_ids(db)
    events = 0
    heads: dict[str, str] = {}
    for session_id in ids:
        bad = _bad_id(session_id)
        if bad is not None:
            problems.append(bad)
            continue
        upto = last_seq(db, session_id) or 0
        try:
            timeline, head = replay_rows(db, SessionState.empty(session_id), upto=upto)
        except CorruptRow as exc:
            problems.append(Problem.of(exc, derived=False))
            if exc.session_id == session_id and exc.seq:
                events += exc.seq - 1  # read, chained and replayed before the damaged row
            continue
        events += timeline.last_seq
        lost = _lost_events(db, session_id, upto)
        if lost is not None:
            problems.append(lost)
            continue
        heads[session_id] = head
        snapshot = snapshot_problem(timeline, _snapshot(db, session_id, chunk_size))
        for found in (summary_problem(timeline, _summary(db, session_id)), snapshot):
            if found is not None:
                problems.append(found)
        # A checkpoint at the snapshot's seq is the snapshot's own rows: said once.
        same = snapshot.seq if snapshot is not None else None
        problems += _checkpoint_problems(db, timeline, session_id, skip=same)
    for session_id in sorted(_derived_ids(db) - set(ids), key=repr):
        problems.append(
            _bad_id(session_id)
            or Problem(
                session_id=session_id,
                seq=None,
                what="a summary or snapshot row names this session, which has no events",
                derived=True,
            )
        )
    return CheckReport(sessions=len(ids), events=events, problems=tuple(problems), heads=Map(heads))


def rebuild_rows(
    db: Db, *, chunk_size: int, snapshot_every: int, session_id: str | None
) -> RebuildReport:
    """Write summaries and snapshots again from the events (one session, or all).

    The caller first creates the guards of the log again (they are the store's own).
    """
    ids = [session_id] if session_id is not None else _event_ids(db)
    rebuilt: list[str] = []
    skipped: list[Problem] = []
    for sid in ids:
        bad = _bad_id(sid)
        if bad is not None:
            skipped.append(bad)
            continue
        upto = last_seq(db, sid)
        if upto is None:
            continue
        try:
            timeline, chain = replay_rows(db, SessionState.empty(sid), upto=upto)
        except CorruptRow as exc:
            skipped.append(Problem.of(exc, derived=False))
            continue
        lost = _lost_events(db, sid, upto)
        if lost is not None:
            skipped.append(lost)
            continue
        head = timeline.head
        write_summary(db, head, timeline.event(1).at, Tally.of(head))
        delete_snapshot(db, sid)
        if head.seq >= snapshot_every:
            plan = plan_snapshot(head, previous=None, refs=None, chunk_size=chunk_size, chain=chain)
            write_snapshot(db, plan, sid)
        rebuilt.append(sid)
    removed: list[str] = []
    if session_id is None:
        for sid in sorted(_derived_ids(db) - set(ids), key=repr):
            # By the stored bytes: an id that is not valid UTF-8 cannot be bound as text.
            raw = sid.encode("utf-8", "surrogateescape")
            for table in (
                "sessions",
                "snapshots",
                "snapshot_chunks",
                "snapshot_history",
                "chunk_versions",
            ):
                db.execute(f"DELETE FROM {table} WHERE CAST(session_id AS BLOB) = ?", (raw,))
            removed.append(sid)
    return RebuildReport(rebuilt=tuple(rebuilt), removed=tuple(removed), skipped=tuple(skipped))
