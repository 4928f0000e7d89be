"""Forks that share their source's state, in constant time (DESIGN §5, issue 16).

A fork's state is its source's state with a new session id: the persistent
message vector, the id indexes and the turn maps are the source's own objects.
Inherited messages keep the ``session_id`` and ``event_seq`` of the session and
event that added them (their provenance, see ``inherited``); the messages a
fork adds itself carry the fork's id. The fork's ``BranchImported`` carries the
same vector and a view of the turns in start order, so nothing is copied per
message or per turn until a store encodes the event.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import overload

from ._events import BranchImported, Checked
from ._message import Message
from ._replace import replace
from ._state import IMPORT_SEQ, SessionState
from ._turn import Turn

__all__ = ["MissingTurn", "TurnsInOrder", "fork_parts", "lineage"]

_MAX_LINEAGE = 64
"""Forks of forks deeper than this take the copying path (their lineage is not walked)."""


class MissingTurn(KeyError):
    """A state's ``turn_order`` names a turn it does not hold (only a state built by hand)."""


class TurnsInOrder(Sequence[Turn]):
    """A state's turns in start order (its ``turn_order``), looked up one by one.

    Equal (and hashing equal) to a vector or list of the same turns, in order.
    """

    __slots__ = ("_active", "_order", "_turns")

    def __init__(self, state: SessionState) -> None:
        self._order, self._turns, self._active = state.turn_order, state.turns, state.active_turn

    @property
    def complete(self) -> bool:
        """Whether ``turn_order`` lists every turn (it does in every state ``apply`` makes)."""
        return len(self._order) == len(self._turns) + (self._active is not None)

    def __len__(self) -> int:
        return len(self._order)

    @overload
    def __getitem__(self, index: int) -> Turn: ...

    @overload
    def __getitem__(self, index: slice) -> list[Turn]: ...

    def __getitem__(self, index: int | slice) -> Turn | list[Turn]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        turn_id = self._order[index]
        active = self._active
        if active is not None and active.id == turn_id:
            return active
        turn = self._turns.get(turn_id)
        if turn is None:
            raise MissingTurn(turn_id)
        return turn

    def __iter__(self) -> Iterator[Turn]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))  # as a vector of the same turns hashes

    def __repr__(self) -> str:
        return f"TurnsInOrder({list(self)!r})"


def lineage(messages: Sequence[Message]) -> list[str]:
    """The session ids of ``messages`` in order, one per run (O(runs · log n)).

    The messages of one session are contiguous in a state (a fork imports a
    prefix, then adds its own), so each run ends where a binary search finds a
    message of another session.
    """
    out: list[str] = []
    start, end = 0, len(messages)
    while start < end and len(out) <= _MAX_LINEAGE:
        session_id = messages[start].session_id
        out.append(session_id)
        lo, hi = start + 1, end
        while lo < hi:
            mid = (lo + hi) // 2
            if messages[mid].session_id == session_id:
                lo = mid + 1
            else:
                hi = mid
        start = lo
    return out


def fork_parts(
    source: SessionState,
    *,
    source_session_id: str,
    source_seq: int,
    new_session_id: str,
    at: datetime,
) -> tuple[BranchImported, SessionState | None]:
    """The ``BranchImported`` that forks ``source``, and the state it makes (None: apply it).

    ``source`` must be a state ``apply`` made (or a snapshot checked when read):
    the fork trusts its parts. Without per-message work it checks what it can:
    ids unique, ``turn_order`` complete, and that no inherited message already
    carries the new id (a fork named like a session it descends from takes the
    copying path, which rewrites every message to the new id).
    """
    turns = TurnsInOrder(source)
    lineage_ids = lineage(source.messages)
    shared = (
        turns.complete
        and len(source.index) == len(source.messages)
        and len(lineage_ids) <= _MAX_LINEAGE
        and new_session_id not in lineage_ids
    )
    if not shared:
        copied = [
            replace(m, session_id=new_session_id, event_seq=IMPORT_SEQ) for m in source.messages
        ]
        event = BranchImported(
            session_id=new_session_id,
            seq=IMPORT_SEQ,
            at=at,
            source_session_id=source_session_id,
            source_seq=source_seq,
            messages=copied,
            turns=source.turn_list(),
        )
        return event, None
    event = BranchImported(
        session_id=new_session_id,
        seq=IMPORT_SEQ,
        at=at,
        source_session_id=source_session_id,
        source_seq=source_seq,
        messages=Checked(source.messages),
        turns=Checked(turns),
    )
    start = SessionState.empty(new_session_id)  # a fork starts without audit rows
    state = replace(
        source,
        session_id=new_session_id,
        seq=IMPORT_SEQ,
        updated_at=at,
        audit=start.audit,
        audit_ops=start.audit_ops,
        audit_running=(),
        audit_rows=start.audit_rows,
    )
    return event, state
