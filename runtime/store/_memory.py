"""``MemoryStore``: the ``Store`` protocol in memory, for tests and examples.

It keeps every promise of the protocol except durability: batches are all or
nothing, every event is applied before it is kept, snapshots are taken every
``snapshot_every`` events and ``load_timeline(from_snapshot=True)`` starts
from them, exports are the same JSON as ``SQLiteStore``'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from types import TracebackType
from typing import Any, Self

import attrs
from immutables import Map

from .._errors import InvalidArgument, SessionExists, StoreClosed, UnknownSession
from .._events import BranchImported, Event
from .._state import SessionState
from .._timeline import Timeline, replay
from .._timeline import verify as verify_log
from ._batch import check_batch, check_session_id
from ._chain import genesis, link
from ._check import CheckReport, Problem, RebuildReport, snapshot_problem, summary_problem
from ._compact import encode_body
from ._protocol import SessionInfo
from ._transfer import export_data, parse_export

__all__ = ["MemoryStore"]


class MemoryStore:
    """An event store held in memory (nothing survives the process).

    Args:
        snapshot_every: snapshot a session once this many events have been
            stored since its last snapshot.
    """

    def __init__(self, *, snapshot_every: int = 100) -> None:
        if isinstance(snapshot_every, bool) or not isinstance(snapshot_every, int):
            raise InvalidArgument(
                f"snapshot_every must be a positive int (got {snapshot_every!r})."
            )
        if snapshot_every < 1:
            raise InvalidArgument(
                f"snapshot_every must be a positive int (got {snapshot_every!r})."
            )
        self._snapshot_every = snapshot_every
        self._logs: dict[str, list[Event]] = {}
        self._heads: dict[str, SessionState] = {}
        self._snapshots: dict[str, SessionState] = {}
        self._created: dict[str, datetime] = {}
        self._closed = False

    @property
    def snapshot_every(self) -> int:
        """Events between snapshots of a session."""
        return self._snapshot_every

    def _open(self) -> None:
        if self._closed:
            raise StoreClosed("The memory store is closed; make a new MemoryStore.")

    def _known(self, session_id: str) -> list[Event]:
        self._open()
        check_session_id(session_id)
        log = self._logs.get(session_id)
        if log is None:
            raise UnknownSession(
                f"The memory store has no session {session_id!r}; list_sessions() shows the "
                "sessions it holds."
            )
        return log

    def _head(self, session_id: str) -> SessionState:
        # Not ``get(...) or empty``: a state with no messages is falsy (it has a length).
        head = self._heads.get(session_id)
        return SessionState.empty(session_id) if head is None else head

    def append(self, events: Iterable[Event]) -> dict[str, SessionState]:
        """Keep ``events`` (one or many sessions), all or nothing.

        Raises:
            SeqConflict: an event's seq is taken or skips one; nothing was kept.
            EventRejected: an event does not apply to its session's head; nothing was kept.
        """
        self._open()
        if isinstance(events, Event):
            raise InvalidArgument(
                "append() takes an iterable of events; wrap a single event in a list: "
                "append([event])."
            )
        batch, heads = check_batch(events, self._head)
        imported: set[str] = set()
        for event in batch:
            self._created.setdefault(event.session_id, event.at)
            self._logs.setdefault(event.session_id, []).append(event)
            if type(event) is BranchImported:
                imported.add(event.session_id)
        for session_id, head in heads.items():
            self._heads[session_id] = head
            done = self._snapshots[session_id].seq if session_id in self._snapshots else 0
            # A fork's first event carries its whole state: a snapshot at once, as SQL stores.
            if head.seq - done >= self._snapshot_every or session_id in imported:
                self._snapshots[session_id] = head
        return heads

    def load_state(self, session_id: str) -> SessionState:
        """The session's latest state.

        Raises:
            UnknownSession: the store has no such session.
        """
        self._known(session_id)
        return self._heads[session_id]

    def load_timeline(self, session_id: str, *, from_snapshot: bool = False) -> Timeline:
        """Every state of the session (from its latest snapshot on, if asked).

        Raises:
            UnknownSession: the store has no such session.
        """
        log = self._known(session_id)
        base = SessionState.empty(session_id)
        if from_snapshot and session_id in self._snapshots:
            base = self._snapshots[session_id]
        return replay(log[base.seq :], base=base)

    def events(self, session_id: str, *, after: int = 0) -> list[Event]:
        """The session's events with seq above ``after``, in seq order.

        Raises:
            UnknownSession: the store has no such session.
        """
        log = self._known(session_id)
        if isinstance(after, bool) or not isinstance(after, int) or after < 0:
            raise InvalidArgument(f"after must be a non-negative int seq (got {after!r}).")
        return log[after:]

    def session(self, session_id: str) -> SessionInfo:
        """The session's summary.

        Raises:
            UnknownSession: the store has no such session.
        """
        self._known(session_id)
        snapshot = self._snapshots.get(session_id)
        return SessionInfo.of(
            self._heads[session_id],
            created_at=self._created[session_id],
            snapshot_seq=0 if snapshot is None else snapshot.seq,
        )

    def list_sessions(self) -> list[SessionInfo]:
        """Every stored session, most recently active first."""
        self._open()
        infos = [self.session(session_id) for session_id in self._logs]
        return sorted(infos, key=lambda info: (info.updated_at, info.session_id), reverse=True)

    def snapshot(self, session_id: str, *, rebuild: bool = False) -> int:
        """Snapshot the session's head now; returns its seq.

        ``rebuild`` replays the whole log for it (the snapshot is the same).

        Raises:
            UnknownSession: the store has no such session.
        """
        log = self._known(session_id)
        head = replay(log).head if rebuild else self._heads[session_id]
        self._snapshots[session_id] = head
        return head.seq

    def verify(self, session_id: str) -> Timeline:
        """Replay the whole log and check the snapshot reproduces the same state.

        Raises:
            ReplayMismatch: the snapshot differs from the replayed state at its seq.
        """
        log = self._known(session_id)
        recorded = [self._snapshots[session_id]] if session_id in self._snapshots else []
        return verify_log(log, recorded, base=SessionState.empty(session_id))

    def check(self) -> CheckReport:
        """Replay every log and compare its head and snapshot (nothing can damage rows here).

        The chain heads are the ones an ``SQLiteStore`` holding the same events has.
        """
        self._open()
        problems: list[Problem] = []
        heads: dict[str, str] = {}
        events = 0
        for session_id, log in self._logs.items():
            timeline = replay(log, base=SessionState.empty(session_id))
            events += len(log)
            chain = genesis(session_id)
            for event in log:
                chain = link(chain, encode_body(event))
            heads[session_id] = chain
            info = SessionInfo.of(
                self._heads[session_id], created_at=self._created[session_id], snapshot_seq=0
            )
            snapshot = self._snapshots.get(session_id)
            for found in (
                summary_problem(timeline, attrs.evolve(info, snapshot_seq=0)),
                snapshot_problem(timeline, snapshot),
            ):
                if found is not None:
                    problems.append(found)
        return CheckReport(
            sessions=len(self._logs), events=events, problems=tuple(problems), heads=Map(heads)
        )

    def rebuild(self, session_id: str | None = None) -> RebuildReport:
        """Derive every head and snapshot again from the logs."""
        ids = [session_id] if session_id is not None else list(self._logs)
        for sid in ids:
            log = self._known(sid)
            head = replay(log).head
            self._heads[sid] = head
            if sid in self._snapshots:
                self._snapshots[sid] = replay(log[: self._snapshots[sid].seq]).head
        return RebuildReport(rebuilt=tuple(ids), removed=(), skipped=())

    def export_session(self, session_id: str) -> dict[str, Any]:
        """The session as JSON-ready data: its whole event log.

        Raises:
            UnknownSession: the store has no such session.
        """
        return export_data(session_id, self._known(session_id))

    def import_session(self, data: Mapping[str, Any] | str | bytes) -> SessionState:
        """Keep a session from ``export_session`` data (or its JSON text).

        Raises:
            DecodeError: ``data`` is not a session export.
            SessionExists: the store already holds that session.
            EventRejected: an event of the export does not apply.
        """
        self._open()
        session_id, events = parse_export(data)
        if session_id in self._logs:
            raise SessionExists(
                f"Cannot import session {session_id!r}: the store already holds it (at seq "
                f"{self._heads[session_id].seq}). Import it into another store, or fork it under "
                "a new id."
            )
        return self.append(events)[session_id]

    def __contains__(self, session_id: object) -> bool:
        self._open()
        return session_id in self._logs

    def close(self) -> None:
        """Forget everything; later calls raise ``StoreClosed``."""
        self._closed = True
        self._logs.clear()
        self._heads.clear()
        self._snapshots.clear()

    def __enter__(self) -> Self:
        self._open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
