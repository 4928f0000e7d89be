"""``SqlStore``: what the SQL stores share, over a ``Db`` connection (DESIGN §9).

``SQLiteStore`` and ``PostgresStore`` keep the same tables and run the same
statements (``_db``); they differ in how they open a transaction, lock what
a write touches, and check the database as a whole. This base class holds
the rest: the cache of heads, group commit, snapshots, reads, check,
rebuild, export and import.

Every event is applied to its session's head before it is stored, so the
log holds only events that apply. Heads are cached (least recently used
first out); before each write the cache is checked against the database, so
another process writing the same store cannot make it stale. A cached head
also holds the plan of its latest snapshot (its chunk versions), which a
rebuild in another process replaces without changing the session's seq: a
snapshot is planned against it only while the stored record still has the
digest the cache holds (one single-row read per snapshot written).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping
from contextlib import AbstractContextManager
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import attrs

from .._errors import (
    CorruptRow,
    InvalidArgument,
    ReplayMismatch,
    SessionExists,
    UnknownSession,
)
from .._events import BranchImported, Event
from .._state import SessionState
from .._storable import session_id_problem
from .._timeline import Timeline
from .._timeline import verify as verify_log
from ._batch import check_batch, check_session_id, encode_batch, sessions_of
from ._chain import ChainCheck, genesis
from ._checkpoints import kept, read_checkpoint
from ._db import Db
from ._entry import Entry as _Entry
from ._entry import load_entry
from ._entry import positive as _positive
from ._protocol import SessionInfo
from ._rows import (
    chain_at,
    last_seq,
    read_events,
    read_snapshot,
    replay_rows,
    session_row,
    snapshot_digest,
    write_snapshot,
)
from ._snapshot import plan_snapshot
from ._summaries import (
    all_summaries,
    missing_summary,
    read_summaries,
    sound_summaries,
    write_summary,
)
from ._transfer import export_data, parse_export
from ._travel import TimeTravel, bulk

if TYPE_CHECKING:
    from ._check import CheckReport, Problem, RebuildReport
    from ._tally import Tally

# The checker (``_check``, ``_scan``) is imported by ``check`` and ``rebuild``: a store that
# only reads and writes sessions (``amber show``) does not define its report classes.

__all__ = ["SqlStore"]


def _tally_of(head: SessionState) -> Tally:
    """The tally of every audit row of a new session's head."""
    from ._tally import Tally  # Fraction: only for writes

    return Tally.of(head)


class SqlStore(TimeTravel, ABC):
    """The Store protocol over SQL tables; subclasses open the database and its transactions.

    Args:
        snapshot_every: snapshot a session once this many events have been
            stored since its last snapshot (checked after each ``append``).
        chunk_size: messages (and turns) per snapshot chunk; a snapshot
            rewrites only the chunks that changed.
        cache_size: how many session heads to keep in memory.
    """

    def __init__(self, *, snapshot_every: int, chunk_size: int, cache_size: int) -> None:
        self._snapshot_every = _positive("snapshot_every", snapshot_every)
        self._chunk_size = _positive("chunk_size", chunk_size)
        self._cache_size = _positive("cache_size", cache_size)
        self._cache: OrderedDict[str, _Entry] = OrderedDict()

    # -- what a subclass provides ------------------------------------------------------

    @property
    @abstractmethod
    def _name(self) -> str:
        """The store as messages name it (a path, or a database and schema)."""

    @abstractmethod
    def _read(self) -> AbstractContextManager[Db]:
        """A read transaction that sees one consistent state of the store."""

    @abstractmethod
    def _write(self, sessions: Collection[str] | None) -> AbstractContextManager[Db]:
        """A write transaction holding off other writers of ``sessions`` (None: all)."""

    @abstractmethod
    def _store_problems(self, db: Db) -> list[Problem]:
        """What is wrong with the database as a whole (``check``)."""

    @abstractmethod
    def _recreate_guards(self, db: Db) -> None:
        """Create the triggers that guard the log again if something dropped them."""

    @abstractmethod
    def _release(self) -> None:
        """Close the connection(s); the store is closed from now on."""

    @property
    @abstractmethod
    def closed(self) -> bool:
        """True once ``close()`` was called."""

    def _fence(self, db: Db, sessions: Collection[str]) -> None:
        """Refuse a write to ``sessions`` that this store may no longer make (inside the write
        transaction, before anything is stored). Stores without leases allow every write."""
        return

    # -- plumbing ----------------------------------------------------------------------

    @property
    def snapshot_every(self) -> int:
        """Events between snapshots of a session."""
        return self._snapshot_every

    def _remember(self, session_id: str, entry: _Entry) -> None:
        self._cache[session_id] = entry
        self._cache.move_to_end(session_id)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def _unknown(self, session_id: str) -> UnknownSession:
        return UnknownSession(
            f"The store {self._name!r} has no session {session_id!r}; list_sessions() shows "
            "the sessions it holds."
        )

    def _entry(self, db: Db, session_id: str) -> _Entry | None:
        """The session's cached entry, checked against the store (call inside a transaction)."""
        row = session_row(db, session_id)
        if row is None:
            self._cache.pop(session_id, None)
            return None
        entry = self._cache.get(session_id)
        if entry is not None and entry.head.seq == row[0]:
            self._cache.move_to_end(session_id)
            return entry
        with bulk():  # a snapshot builds every message at once
            entry = load_entry(db, session_id, row, self._chunk_size)
        self._remember(session_id, entry)
        return entry

    def _snapshot_entry(self, db: Db, entry: _Entry, *, force: bool) -> _Entry:
        """Write a snapshot of ``entry.head`` if one is due (or ``force``); the new entry."""
        head = entry.head
        done = entry.snapshot.seq if entry.snapshot is not None else 0
        if head.seq == done or (not force and head.seq - done < self._snapshot_every):
            return entry
        previous, refs = entry.snapshot, entry.refs
        if (
            previous is not None
            and refs is not None
            and snapshot_digest(db, head.session_id) != entry.record_digest
        ):
            # Another store replaced the snapshot rows the cached plan was read from (a
            # rebuild in another process: the session's seq, all the cache is checked by,
            # stays): the chunk versions it names may be gone. Write every chunk.
            previous = refs = None
        plan = plan_snapshot(
            head, previous=previous, refs=refs, chunk_size=self._chunk_size, chain=entry.chain
        )
        record_digest = write_snapshot(db, plan, head.session_id)
        return attrs.evolve(entry, snapshot=head, refs=plan.refs, record_digest=record_digest)

    def _store(
        self,
        db: Db,
        batch: list[Event],
        heads: Mapping[str, SessionState],
        old: Mapping[str, _Entry | None],
    ) -> dict[str, _Entry]:
        """Insert the batch and update summaries and snapshots (inside a write transaction)."""
        rows, chains = encode_batch(
            batch,
            {
                session_id: (entry.chain if entry is not None else genesis(session_id))
                for session_id, entry in old.items()
            },
        )
        db.executemany(
            "INSERT INTO events (session_id, seq, kind, body, hash) VALUES (?, ?, ?, ?, ?)", rows
        )
        first_at: dict[str, datetime] = {}
        imported: set[str] = set()
        for event in batch:
            first_at.setdefault(event.session_id, event.at)
            if type(event) is BranchImported:
                imported.add(event.session_id)
        entries: dict[str, _Entry] = {}
        for session_id, head in heads.items():
            previous = old.get(session_id)
            tally = previous.tally_of(head) if previous else _tally_of(head)
            entry = _Entry(
                head=head,
                created_at=previous.created_at if previous else first_at[session_id],
                snapshot=previous.snapshot if previous else None,
                refs=previous.refs if previous else None,
                record_digest=previous.record_digest if previous else None,
                chain=chains[session_id],
                tally=tally,
            )
            write_summary(db, head, entry.created_at, tally)
            # A fork's first event carries its whole state: snapshot it at once, or every
            # load replays that one event through the general codec (4 times a snapshot's time).
            entries[session_id] = self._snapshot_entry(db, entry, force=session_id in imported)
        return entries

    def _append(
        self, db: Db, events: list[Event]
    ) -> tuple[dict[str, SessionState], dict[str, _Entry]]:
        """``append`` inside an open write transaction: the heads and the entries to cache.

        The caller caches the entries once the transaction has committed.
        """
        old: dict[str, _Entry | None] = {}

        def head(session_id: str) -> SessionState:
            entry = old[session_id] = self._entry(db, session_id)
            return entry.head if entry is not None else SessionState.empty(session_id)

        # The fence first: a writer that lost a lease hears that, not a seq conflict.
        self._fence(db, sessions_of(events))
        batch, heads = check_batch(events, head)
        if not batch:
            return heads, {}
        return heads, self._store(db, batch, heads, old)

    # -- the Store protocol ----------------------------------------------------------

    def append(self, events: Iterable[Event]) -> dict[str, SessionState]:
        """Store ``events`` (one or many sessions) in one durable transaction.

        Each event must carry its session's next seq and apply to its head; the
        whole batch is checked before anything is written. When this returns,
        the events are durable.

        Returns:
            The new head of every session the batch touched.

        Raises:
            SeqConflict: an event's seq is taken or skips one; nothing was stored.
            EventRejected: an event does not apply to its session's head; nothing was stored.
            StoreError: the store cannot be written; nothing was stored.
        """
        if isinstance(events, Event):
            raise InvalidArgument(
                "append() takes an iterable of events; wrap a single event in a list: "
                "append([event])."
            )
        batch = list(events)
        with self._write(sessions_of(batch)) as db:
            heads, entries = self._append(db, batch)
        for session_id, entry in entries.items():
            self._remember(session_id, entry)
        return heads

    def load_state(self, session_id: str) -> SessionState:
        """The session's latest state: its snapshot plus the events after it.

        Raises:
            UnknownSession: the store has no such session.
            CorruptRow: a row on the way does not decode or does not fit.
        """
        check_session_id(session_id)
        with self._read() as db:
            entry = self._entry(db, session_id)
        if entry is None:
            raise self._unknown(session_id)
        return entry.head

    def load_timeline(self, session_id: str, *, from_snapshot: bool = False) -> Timeline:
        """Every state of the session, for time travel.

        By default the timeline is replayed from the first event, so
        ``at(seq)`` reaches every state. With ``from_snapshot=True`` it starts
        at the latest snapshot (``first_seq``) and holds only the states after
        it: cheaper, for when only recent history matters.

        Raises:
            UnknownSession: the store has no such session.
            CorruptRow: a row does not decode, does not apply, or the log has a gap.
        """
        with self._read() as db:
            head = self._head_seq(db, session_id)
            if from_snapshot:
                base, _, chain, _ = read_snapshot(db, session_id, self._chunk_size)
            else:
                base, chain = SessionState.empty(session_id), None
            with bulk():
                return replay_rows(db, base, upto=head, chain=chain)[0]

    def _head_seq(self, db: Db, session_id: str) -> int:
        """The session's last seq (call inside a transaction); ``UnknownSession`` if none."""
        check_session_id(session_id)
        row = session_row(db, session_id)
        if row is None:
            raise self._unknown(session_id)
        return int(row[0])

    def events(self, session_id: str, *, after: int = 0) -> list[Event]:
        """The session's events with seq above ``after``, in seq order.

        Raises:
            UnknownSession: the store has no such session.
            CorruptRow: a row does not decode, or the log has a gap.
        """
        check_session_id(session_id)
        if isinstance(after, bool) or not isinstance(after, int) or after < 0:
            raise InvalidArgument(f"after must be a non-negative int seq (got {after!r}).")
        with self._read() as db:
            row = session_row(db, session_id)
            if row is None:
                raise self._unknown(session_id)
            if after > row[0]:
                return []
            # session_row checked that the log ends at the summary's seq.
            check = ChainCheck(session_id, chain_at(db, session_id, after))
            return list(read_events(db, check, after))

    def session(self, session_id: str) -> SessionInfo:
        """The session's summary (read from its summary row, not its state).

        Raises:
            UnknownSession: the store has no such session.
        """
        check_session_id(session_id)
        with self._read() as db:
            rows = read_summaries(db, "WHERE s.session_id = ?", (session_id,))
            if not rows:
                last = last_seq(db, session_id)
                if last is not None:
                    raise missing_summary(session_id, last)
        if not rows:
            raise self._unknown(session_id)
        return rows[0]

    def list_sessions(self) -> list[SessionInfo]:
        """Every stored session, most recently active first.

        Raises:
            CorruptRow: a summary row is damaged or disagrees with its log, or a
                session's events are stored without a summary row (so it would be
                left out); the message names the session.
        """
        with self._read() as db:
            infos = all_summaries(db)
        return sorted(infos, key=lambda info: (info.updated_at, info.session_id), reverse=True)

    def sound_sessions(self) -> tuple[list[SessionInfo], list[CorruptRow]]:
        """The sound sessions, most recently active first, and the errors of the damaged
        ones (their summary rows: ``list_sessions`` raises the first), for a runtime that
        resumes the others.

        Raises:
            CorruptRow: damage that is no one session's (a summary row keyed by no id).
        """
        with self._read() as db:
            infos, damaged = sound_summaries(db)
        infos.sort(key=lambda info: (info.updated_at, info.session_id), reverse=True)
        return infos, damaged

    def snapshot(self, session_id: str, *, rebuild: bool = False) -> int:
        """Snapshot the session's head now (if its latest snapshot is older).

        Args:
            session_id: the session.
            rebuild: replay the whole log and rewrite every chunk, ignoring the
                current snapshot (the way out of a corrupt snapshot).

        Returns:
            The snapshot's seq.

        Raises:
            UnknownSession: the store has no such session.
        """
        check_session_id(session_id)
        with self._write([session_id]) as db:
            if rebuild:
                row = session_row(db, session_id)
                if row is None:
                    raise self._unknown(session_id)
                timeline, chain = replay_rows(db, SessionState.empty(session_id), upto=row[0])
                entry = _Entry(
                    head=timeline.head,
                    created_at=row[1],
                    snapshot=None,
                    refs=None,
                    record_digest=None,
                    chain=chain,
                )
            else:
                found = self._entry(db, session_id)
                if found is None:
                    raise self._unknown(session_id)
                entry = found
            entry = self._snapshot_entry(db, entry, force=True)
        self._remember(session_id, entry)
        return entry.head.seq

    def verify(self, session_id: str) -> Timeline:
        """Replay the whole log and check the snapshot reproduces the same state.

        Returns:
            The replayed timeline.

        Raises:
            ReplayMismatch: the snapshot differs from the replayed state at its seq,
                or is damaged (it fails its digest or does not decode).
            CorruptRow: an event row does not decode, does not apply or fails its checksum.
        """
        check_session_id(session_id)
        with self._read() as db:
            summary = db.execute(
                "SELECT 1 FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
            last = None if summary is not None else last_seq(db, session_id)
            if last is None:
                row = session_row(db, session_id)
                if row is None:
                    raise self._unknown(session_id)
                last = row[0]
            # else only the summary row is missing: a derived row, which the caller compares
            # (replay --verify); the log is the truth, so it is replayed to its end.
            timeline = replay_rows(db, SessionState.empty(session_id), upto=last)[0]
            try:
                snapshot = read_snapshot(db, session_id, self._chunk_size)[0]
                # The checkpoints too (older snapshots kept for time travel).
                checkpoints = [
                    read_checkpoint(db, session_id, at, chain_at(db, session_id, at))[0]
                    for at in kept(db, session_id, last)
                ]
            except CorruptRow as exc:
                # The log is sound (just replayed): it is the snapshot that disagrees.
                raise ReplayMismatch(str(exc)) from None
        recorded = ([snapshot] if snapshot.seq else []) + checkpoints
        return verify_log(timeline.events(), recorded, base=SessionState.empty(session_id))

    def check(self) -> CheckReport:
        """Check the whole store: the database, every row, the chain, the derived rows.

        Every session's log is read from its first event (decoded, chained and
        replayed), and its summary row and snapshot are compared with the replay.
        Nothing is changed. Problems are reported, not raised.
        """
        from ._scan import check_rows

        with self._read() as db:
            return check_rows(db, self._chunk_size, self._store_problems(db))

    def rebuild(self, session_id: str | None = None) -> RebuildReport:
        """Write the summary rows and snapshots again from the events (the truth).

        Args:
            session_id: only this session (default: every session, and derived
                rows of sessions without events are dropped).

        Returns:
            What was rebuilt, dropped, and skipped (a session whose events are
            damaged is left as it is).
        """
        from ._scan import rebuild_rows

        if session_id is not None:
            check_session_id(session_id)
        with self._write(None if session_id is None else [session_id]) as db:
            self._recreate_guards(db)
            report = rebuild_rows(
                db,
                chunk_size=self._chunk_size,
                snapshot_every=self._snapshot_every,
                session_id=session_id,
            )
        self._cache.clear()
        return report

    def export_session(self, session_id: str) -> dict[str, Any]:
        """The session as JSON-ready data: its whole event log (see ``import_session``).

        Raises:
            UnknownSession: the store has no such session.
        """
        return export_data(session_id, self.events(session_id))

    def import_session(self, data: Mapping[str, Any] | str | bytes) -> SessionState:
        """Store a session from ``export_session`` data (or its JSON text).

        Every event is checked and applied as ``append`` does, in one transaction.

        Returns:
            The imported session's head.

        Raises:
            DecodeError: ``data`` is not a session export.
            SessionExists: the store already holds that session.
        """
        session_id, events = parse_export(data)
        with self._write([session_id]) as db:
            row = session_row(db, session_id)
            if row is not None:
                raise SessionExists(
                    f"Cannot import session {session_id!r}: the store already holds it (at seq "
                    f"{row[0]}). Import it into another store, or fork it under a new id."
                )
            heads, entries = self._append(db, events)
        for key, entry in entries.items():
            self._remember(key, entry)
        return heads[session_id]

    def __contains__(self, session_id: object) -> bool:
        if session_id_problem(session_id) is not None:
            return False
        assert isinstance(session_id, str)
        with self._read() as db:
            return session_row(db, session_id) is not None

    def close(self) -> None:
        """Close the store; later calls raise ``StoreClosed``. Closing twice is fine."""
        if not self.closed:
            self._release()
            self._cache.clear()

    def __enter__(self) -> Self:
        with self._read():
            pass
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
