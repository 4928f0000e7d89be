"""Time travel from a store: any stretch of a session from the nearest stored state.

A session's stored states are its start (seq 0), its checkpoints (an older
snapshot kept every ``CHECKPOINT_EVERY`` events, ``_checkpoints``) and its
latest snapshot. The state at a seq is the nearest of them at or before it
plus the events after it, so reaching any seq reads and applies at most a
checkpoint's span of events, not the whole log (``load_span``); ``walk`` streams a
stretch one event at a time, so the first line of a listing does not wait for
the last. Every row read is checked against the hash chain from that stored
state on. A stored state that is damaged is passed over for an older one (at
worst the session's start: the log is the truth), with a warning.

Loading many states at once builds many long-lived objects: ``bulk`` keeps
the cyclic GC from walking them again and again while they are built (each
young collection would promote them, and the full collections that follow
walk the whole heap), then moves them out of its way (``gc.freeze``), as
DESIGN §13 advises after bulk loads.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import TypeVar

import orjson

from .._errors import CorruptRow, EventRejected, InvalidArgument
from .._events import Event
from .._log import LazyLogger
from .._reducer import apply
from .._state import STATUS_ORDER, SessionState
from .._timeline import Timeline
from ._chain import ChainCheck, digest
from ._checkpoints import kept, nearest, read_checkpoint
from ._db import Db
from ._rows import chain_at, read_error_flags, read_events, read_snapshot, untrusted_past
from ._summaries import shown

__all__ = ["FREEZE_AFTER", "TimeTravel", "bulk", "check_span", "load_span", "walk"]

_Row = TypeVar("_Row")

log = LazyLogger("amber.store")  # logging imported when a damaged state is met


FREEZE_AFTER = 50_000
"""``bulk`` freezes what it built when it built more than this many GC-tracked objects."""


@contextlib.contextmanager
def bulk() -> Iterator[None]:
    """Build many long-lived objects with the cyclic GC off, then freeze them out of its way.

    The GC is only switched off if it was on, and back on afterwards. If the
    block succeeded and built more than ``FREEZE_AFTER`` tracked objects, they
    are frozen (``gc.freeze``): otherwise the next young collection would walk
    them all at once (a pause of a tenth of a second per million). A small
    load is left to the GC as usual, so freezing stays rare.
    """
    enabled = gc.isenabled()
    gc.disable()
    before = gc.get_count()[0]
    try:
        yield
        if gc.get_count()[0] - before > FREEZE_AFTER:
            gc.freeze()
    finally:
        if enabled:
            gc.enable()


def check_span(first: object, last: object, head: int) -> tuple[int, int]:
    """``(first, last)`` if ``0 <= first <= last <= head``; ``InvalidArgument`` otherwise."""
    for name, value in (("first", first), ("last", last)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidArgument(f"{name} must be an int seq (got {value!r}).")
    assert isinstance(first, int)
    assert isinstance(last, int)
    if not 0 <= first <= last <= head:
        raise InvalidArgument(
            f"Expected seqs 0 <= first <= last <= {head} (the session's head), got first "
            f"{first} and last {last}."
        )
    return first, last


def _base(
    db: Db, session_id: str, chunk_size: int, seq: int, *, lazy: bool = False
) -> tuple[SessionState, str]:
    """The nearest stored state at or before ``seq`` (the latest snapshot, a checkpoint, or
    the session's start) and the chain's hash there.

    A stored state that is damaged is derived data: the next older one is read instead
    (at worst the session's start, replaying the log, which is the truth), with a warning
    on the ``amber.store`` logger that says how to mend it.
    """
    row = db.execute("SELECT seq FROM snapshots WHERE session_id = ?", (session_id,)).fetchone()
    latest = row[0] if row is not None and type(row[0]) is int and 0 < row[0] <= seq else 0
    checkpoint = nearest(db, session_id, seq) or 0
    damaged: CorruptRow | None = None
    if latest and latest >= checkpoint:
        try:
            state, _, chain, _ = read_snapshot(db, session_id, chunk_size, lazy=lazy)
        except CorruptRow as exc:
            damaged = exc
        else:
            if chain is not None and state.seq <= seq:
                return state, chain
    # The nearest checkpoint; once a stored state failed, every older one in turn.
    seqs = [checkpoint] if checkpoint and damaged is None else kept(db, session_id, checkpoint)
    index = 0
    while index < len(seqs):
        at = seqs[index]
        try:
            state, chain = read_checkpoint(
                db, session_id, at, chain_at(db, session_id, at), lazy=lazy
            )
        except CorruptRow as exc:
            if damaged is None:
                damaged = exc
                seqs = kept(db, session_id, at)
            index += 1
            continue
        _warn(damaged, state.seq)
        return state, chain
    _warn(damaged, 0)
    return SessionState.empty(session_id), chain_at(db, session_id, 0)


def _warn(damaged: CorruptRow | None, seq: int) -> None:
    """Say (one line) that a damaged stored state was passed over for the one at ``seq``;
    the record's ``amber_damage`` is its ``CorruptRow``."""
    if damaged is None:
        return
    instead = f"the checkpoint at seq {seq}" if seq else "the session's start"
    text = " ".join(str(damaged).split())
    log.warning(
        "%s Read from %s instead: the event log is the truth.",
        text,
        instead,
        extra={"amber_damage": damaged},
    )


def _applied(session_id: str, state: SessionState, event: Event) -> SessionState:
    try:
        return apply(state, event)
    except EventRejected as exc:
        raise CorruptRow(
            f"Session {session_id!r} event seq {event.seq} does not apply to the state before "
            f"it: {exc} The log is damaged or was written by other software: "
            f"{untrusted_past(event.seq, 'it')}",
            session_id=session_id,
            seq=event.seq,
        ) from None


def _gap(db: Db, session_id: str, reached: int, last: int) -> CorruptRow:
    """The error of a read that stopped at seq ``reached``, short of ``last``: seq
    ``reached + 1`` is missing, and the log either goes on after it (a gap, as ``_rows``
    says of one it meets) or ends there."""
    row = db.execute(
        "SELECT min(seq) FROM events WHERE session_id = ? AND seq > ?", (session_id, reached)
    ).fetchone()
    after = row[0] if row is not None and type(row[0]) is int else None
    if after is not None:
        return CorruptRow(
            f"Session {session_id!r} event seq {reached + 1} is missing: the next stored "
            f"event has seq {after}. The log has a gap and cannot be replayed past seq "
            f"{reached}; restore the file from a backup.",
            session_id=session_id,
            seq=reached + 1,
        )
    return CorruptRow(
        f"Session {session_id!r} event seq {reached + 1} is missing: the log ends at seq "
        f"{reached}, before seq {last}. Restore the file from a backup.",
        session_id=session_id,
        seq=reached + 1,
    )


def load_span(
    db: Db, session_id: str, chunk_size: int, first: int, last: int, *, lazy: bool = False
) -> Timeline:
    """A timeline reaching every state from ``first`` to ``last`` (its ``first_seq`` is the
    nearest stored state at or before ``first``), checked from there by the hash chain;
    ``lazy``: the stored state's messages are decoded when read (``_lazy``)."""
    base, chain = _base(db, session_id, chunk_size, first, lazy=lazy)
    check = ChainCheck(session_id, chain)
    events: list[Event] = []
    states: list[SessionState] = []
    state = base
    for event in read_events(db, check, base.seq, last):
        state = _applied(session_id, state, event)
        events.append(event)
        states.append(state)
    if state.seq != last:
        raise _gap(db, session_id, state.seq, last)
    return Timeline._assemble(base, events, states)


def walk(
    db: Db, session_id: str, chunk_size: int, first: int, last: int
) -> Iterator[tuple[Event, SessionState, SessionState]]:
    """``(event, state before, state after)`` for each seq from ``first`` to ``last``, one at
    a time, from the nearest stored state before ``first``."""
    base, chain = _base(db, session_id, chunk_size, max(first - 1, 0))
    check = ChainCheck(session_id, chain)
    state = base
    for event in read_events(db, check, base.seq, last):
        before, state = state, _applied(session_id, state, event)
        if event.seq >= first:
            yield event, before, state
    if state.seq != last:
        raise _gap(db, session_id, state.seq, last)


class TimeTravel:
    """The SQL stores' time-travel reads (``load_span``, ``walk``, ``event``,
    ``events_between``, ``kind_seqs``, ``kind_counts``, ``mentions``, ``stored_counts``)."""

    _chunk_size: int

    def _read(self) -> contextlib.AbstractContextManager[Db]:
        raise NotImplementedError

    def _head_seq(self, db: Db, session_id: str) -> int:
        raise NotImplementedError

    def load_span(
        self, session_id: str, first: int, last: int | None = None, *, lazy: bool = False
    ) -> Timeline:
        """A timeline that reaches every state from seq ``first`` to ``last`` (the head by
        default), replayed from the nearest stored state at or before ``first`` (the latest
        snapshot, or the session's start): it costs the distance from there, not the
        session's length. Its ``first_seq`` is that stored state's seq.

        ``lazy=True`` leaves the stored state's messages undecoded until each is
        read (a view that prints a few of a long session's messages, as ``amber
        show`` does): the states behave as eagerly loaded ones, and a message
        whose stored row is damaged raises ``CorruptRow`` when it is read rather
        than here. The default reads every message now.

        Raises:
            UnknownSession: the store has no such session.
            InvalidArgument: not ``0 <= first <= last <= head``.
            CorruptRow: a row on the way does not decode or does not fit.
        """
        with self._read() as db:
            head = self._head_seq(db, session_id)
            first, last = check_span(first, head if last is None else last, head)
            with bulk():
                return load_span(db, session_id, self._chunk_size, first, last, lazy=lazy)

    def event(self, session_id: str, seq: int) -> Event:
        """The event at ``seq``, read alone: ``events(session_id, after=seq - 1)[0]`` without
        reading (and decoding) every event after it. Its row is checked against the hash
        chain from the hash stored with the event before it, as ``events`` checks it.

        Raises:
            UnknownSession: the store has no such session.
            InvalidArgument: not ``1 <= seq <= head``.
            CorruptRow: the row does not decode or does not fit the chain.
        """
        with self._read() as db:
            head = self._head_seq(db, session_id)
            if isinstance(seq, bool) or not isinstance(seq, int) or not 1 <= seq <= head:
                raise InvalidArgument(
                    f"Expected a seq from 1 to {head} (the session's head), got {seq!r}: seq 0 "
                    "is the empty state before the first event."
                )
            check = ChainCheck(session_id, chain_at(db, session_id, seq - 1))
            for event in read_events(db, check, seq - 1, seq):
                return event
            raise _gap(db, session_id, seq - 1, seq)

    def events_between(self, session_id: str, first: int, last: int) -> list[Event]:
        """The events from seq ``first`` to ``last``, read alone (``events`` reads every
        event after a seq): checked against the hash chain from the hash stored with the
        event before ``first``, as ``events`` checks them. For reading a long log in
        chunks.

        Raises:
            UnknownSession: the store has no such session.
            InvalidArgument: not ``1 <= first <= last <= head``.
            CorruptRow: a row does not decode or does not fit the chain.
        """
        return self._between(session_id, first, last, read_events)

    def error_flags(self, session_id: str, first: int, last: int) -> list[tuple[str, bool]]:
        """Each event's kind and whether it reports an error (``runtime.reports_error``: a turn
        that ended in error, a failed model call, an error tool result), seqs ``first`` to
        ``last``: what ``amber inspect`` marks. Every row is checked against the hash chain
        as ``events_between`` checks it, but only the rows that may report an error are
        decoded (several times faster over a long log).

        Raises:
            UnknownSession: the store has no such session.
            InvalidArgument: not ``1 <= first <= last <= head``.
            CorruptRow: a row does not fit the chain (or, if decoded, does not decode).
        """
        return self._between(session_id, first, last, read_error_flags)

    def _between(
        self,
        session_id: str,
        first: int,
        last: int,
        read: Callable[[Db, ChainCheck, int, int], Iterator[_Row]],
    ) -> list[_Row]:
        """What ``read`` reads of the rows ``first`` to ``last`` (all of them), checked by
        the hash chain from the hash stored with the event before ``first``."""
        with self._read() as db:
            head = self._head_seq(db, session_id)
            first, last = check_span(first, last, head)
            if first < 1:
                raise InvalidArgument(
                    f"Expected first >= 1, got {first}: seq 0 is the empty state before the "
                    "first event, which has no event."
                )
            check = ChainCheck(session_id, chain_at(db, session_id, first - 1))
            rows = list(read(db, check, first - 1, last))
            if len(rows) != last - first + 1:
                raise _gap(db, session_id, first - 1 + len(rows), last)
            return rows

    def kind_seqs(
        self,
        session_id: str,
        kinds: Sequence[str],
        pivot: int,
        *,
        before: int,
        after: int,
        last: int | None = None,
    ) -> tuple[list[int], list[int]]:
        """The seqs of the events of ``kinds`` nearest ``pivot``: the last ``before`` of those
        before it and the first ``after`` from it on (up to ``last``, the head by default),
        each list ascending. Read from the log's kind column through its primary key, from
        ``pivot`` outwards until enough are found: it costs the distance to them, not the
        session's length. The rows are not decoded (nor checked against the hash chain):
        a page that shows them reads them with ``load_span``, which does.

        Raises:
            UnknownSession: the store has no such session.
            InvalidArgument: ``kinds`` is not a list of strings, a limit is negative, or
                ``last`` is not a seq from 0 to the head.
        """
        names = _kinds(kinds)
        for name, value in (("pivot", pivot), ("before", before), ("after", after)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidArgument(f"{name} must be an int >= 0 (got {value!r}).")
        if not names:
            return [], []
        marks = ", ".join("?" * len(names))
        with self._read() as db:
            head = self._head_seq(db, session_id)
            _, upto = check_span(0, head if last is None else last, head)
            earlier = db.execute(
                "SELECT seq FROM events WHERE session_id = ? AND seq < ? AND seq <= ? "
                f"AND kind IN ({marks}) ORDER BY seq DESC LIMIT ?",
                (session_id, pivot, upto, *names, before),
            ).fetchall()
            later = db.execute(
                "SELECT seq FROM events WHERE session_id = ? AND seq >= ? AND seq <= ? "
                f"AND kind IN ({marks}) ORDER BY seq LIMIT ?",
                (session_id, pivot, upto, *names, after),
            ).fetchall()
        return [int(row[0]) for row in reversed(earlier)], [int(row[0]) for row in later]

    def kind_counts(
        self, session_id: str, first: int = 1, last: int | None = None
    ) -> dict[str, int]:
        """How many events of each kind seqs ``first`` to ``last`` (the head by default) hold,
        from the log's kind column (one pass over those rows in SQL, none decoded).

        Raises:
            UnknownSession: the store has no such session.
            InvalidArgument: not ``1 <= first`` and ``first - 1 <= last <= head``.
        """
        with self._read() as db:
            head = self._head_seq(db, session_id)
            upto = head if last is None else last
            if isinstance(first, bool) or not isinstance(first, int) or first < 1:
                raise InvalidArgument(f"first must be an int seq >= 1 (got {first!r}).")
            _, upto = check_span(first - 1, upto, head)
            rows = db.execute(
                "SELECT kind, count(*) FROM events WHERE session_id = ? AND seq >= ? "
                "AND seq <= ? GROUP BY kind",
                (session_id, first, upto),
            ).fetchall()
        return {str(kind): int(count) for kind, count in rows}

    def mentions(
        self, session_id: str, kinds: Sequence[str], text: str, first: int = 1
    ) -> list[int]:
        """The seqs from ``first`` on of the events of ``kinds`` whose stored body holds
        ``text`` (in SQLite, in any ASCII case): candidates for what names an id, found
        in SQL without decoding a row (one pass over those rows). A body holds a string
        as JSON writes it: search for an id that JSON writes as it is. The rows are not
        checked: decode the events to be sure (``event``, ``events_between``).

        Raises:
            UnknownSession: the store has no such session.
            InvalidArgument: ``kinds`` is not a list of strings, ``text`` is not a
                non-empty string, or ``first`` is not a seq >= 1.
        """
        names = _kinds(kinds)
        if not isinstance(text, str) or not text:
            raise InvalidArgument(f"text must be a non-empty string (got {text!r}).")
        if isinstance(first, bool) or not isinstance(first, int) or first < 1:
            raise InvalidArgument(f"first must be an int seq >= 1 (got {first!r}).")
        if not names:
            return []
        pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        with self._read() as db:
            self._head_seq(db, session_id)
            rows = db.execute(
                "SELECT seq FROM events WHERE session_id = ? AND seq >= ? "
                f"AND kind IN ({', '.join('?' * len(names))}) AND body LIKE ? ESCAPE '\\' "
                "ORDER BY seq",
                (session_id, first, *names, pattern),
            ).fetchall()
        return [int(row[0]) for row in rows]

    def stored_counts(
        self, session_id: str, last: int | None = None
    ) -> list[tuple[int, tuple[int, ...]]]:
        """The count of messages of each status (in ``STATUS_ORDER``, as
        ``SessionState.counts``) at each stored state up to ``last`` (the head by default):
        the session's checkpoints and its latest snapshot, ``(seq, counts)`` in seq order.
        Read from their records alone (no chunk, no event decoded), each checked against
        its digest and the hash chain at its seq. What a chart of a long session samples.

        Raises:
            UnknownSession: the store has no such session.
            InvalidArgument: ``last`` is not a seq from 0 to the head.
            CorruptRow: a record does not match its digest, does not decode, or was built
                from another log.
        """
        with self._read() as db:
            head = self._head_seq(db, session_id)
            _, upto = check_span(0, head if last is None else last, head)
            rows = db.execute(
                "SELECT seq, CAST(record AS BLOB), digest FROM snapshot_history "
                "WHERE session_id = ? AND seq <= ? "
                "UNION SELECT seq, CAST(record AS BLOB), digest FROM snapshots "
                "WHERE session_id = ? AND seq <= ? ORDER BY 1",
                (session_id, upto, session_id, upto),
            ).fetchall()
            found = {  # the latest snapshot may be kept as a checkpoint too: one each
                seq: _record_counts(session_id, seq, record, stored, db)
                for seq, record, stored in rows
            }
        return sorted(found.items())

    def walk(
        self, session_id: str, first: int = 1, last: int | None = None
    ) -> Generator[tuple[Event, SessionState, SessionState], None, None]:
        """``(event, state before, state after)`` for seqs ``first`` to ``last`` (default: the
        head), one at a time from the nearest stored state; errors as ``load_span``'s.

        The walk reads in one transaction: finish it (or ``close()`` it) before using the
        store for anything else.
        """
        with self._read() as db:
            head = self._head_seq(db, session_id)
            first, last = check_span(first, head if last is None else last, head)
            yield from walk(db, session_id, self._chunk_size, max(first, 1), last)


def _kinds(kinds: object) -> list[str]:
    """``kinds`` as a list of strings; ``InvalidArgument`` if it is not one."""
    if isinstance(kinds, str) or not isinstance(kinds, Sequence | set | frozenset):
        raise InvalidArgument(
            f"kinds must be a list of event kinds such as ['turn_ended'] (got {kinds!r})."
        )
    names = list(kinds)
    bad = [name for name in names if not isinstance(name, str)]
    if bad:
        raise InvalidArgument(f"kinds must be strings such as 'turn_ended' (got {bad[0]!r}).")
    return names


def _record_counts(
    session_id: str, seq: object, record: object, stored: object, db: Db
) -> tuple[int, ...]:
    """The status counts a snapshot or checkpoint record holds, checked (``stored_counts``)."""
    where = f"Session {session_id!r} stored state at seq {seq!r}"

    def corrupt(problem: str) -> CorruptRow:
        return CorruptRow(
            f"{where} is corrupt: {problem}. Snapshots and checkpoints are rebuilt from the "
            "event log by 'amber recover --rebuild' (store.rebuild()).",
            session_id=session_id,
            seq=seq if type(seq) is int else None,
        )

    if not isinstance(record, bytes) or digest(record) != stored:
        raise corrupt("its record does not match its digest: it was changed after it was written")
    try:
        data = orjson.loads(record)
    except orjson.JSONDecodeError as exc:
        raise corrupt(f"its record is not JSON ({exc})") from None
    counts = data.get("counts") if type(data) is dict else None
    if (
        type(counts) is not list
        or len(counts) != len(STATUS_ORDER)
        or any(type(n) is not int or n < 0 for n in counts)
    ):
        raise corrupt(f"its counts are {shown(counts)}, not {len(STATUS_ORDER)} counts")
    if type(seq) is not int or data.get("seq") != seq:
        raise corrupt(f"its record says seq {shown(data.get('seq'))}")
    if data.get("chain") != chain_at(db, session_id, seq):
        raise corrupt(f"it was built from another log than the one stored (at seq {seq})")
    return tuple(counts)
