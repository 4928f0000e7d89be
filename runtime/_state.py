"""``SessionState``: one session at one seq, as a persistent value (DESIGN §5).

Updating one message costs O(log n) and copies only a path of the tries
below; the rest of the history is shared with the previous state, so keeping
every state of a session is cheap.

Two choices here are about CPython's cyclic garbage collector (DESIGN §13):

- The message sequence is pyrsistent's pure-Python ``PVector``. The C
  ``pvector`` is one GC object whose traversal walks its whole trie, so every
  young collection visits every message of every new state and a step costs
  O(n) (measured: 25 µs/step at 1k states, 400 µs/step at 5k). The pure-Python
  trie is made of ordinary nodes, which age into the old generation like any
  other object, so the cost stays flat.
- The id indexes that grow with every message (``index``, ``queued``) are a
  ``MessageIndex`` and an ``InputQueue``: the states of one chain share an
  append-only log of keys and a dict of strings and ints, which CPython does
  not track, so a step adds one small tracked object per index instead of an
  ``immutables.Map`` path copy (about four tracked objects). The other
  indexes are ``immutables.Map`` (a C HAMT whose nodes are separate GC
  objects); pyrsistent's ``pmap`` stores its buckets in a C ``pvector``.

Small collections inside values (metadata, tool arguments) stay ``pmap`` and
``pvector``: their traversal is bounded by their own small size.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from heapq import nlargest
from itertools import count as _count
from itertools import islice
from operator import attrgetter
from operator import le as _le
from typing import Any

import attrs
from immutables import Map
from pyrsistent._pvector import BRANCH_FACTOR, SHIFT, PythonPVector, python_pvector
from pyrsistent.typing import PVector

from ._audit import AuditRow, AuditStatus, model_calls, operation_key
from ._errors import UnknownMessage
from ._message import Message, MessageType, Status
from ._positions import InputQueue, MessageIndex
from ._replace import replace as _replace
from ._repr import value_repr
from ._turn import Turn, TurnStatus

__all__ = ["STATUS_ORDER", "SessionState"]

IMPORT_SEQ = 1
"""The seq of a fork's ``BranchImported``: messages inherited from another session keep
that session's ids and seqs (their provenance) only when imported as seq 1."""

STATUS_ORDER: tuple[Status, ...] = tuple(Status)
"""The order of ``SessionState.counts``."""
_ZERO_COUNTS = (0,) * len(STATUS_ORDER)
_STATUS_INDEX = {status: i for i, status in enumerate(STATUS_ORDER)}
_EMPTY_MAP: Map[Any, Any] = Map()
_EMPTY_INDEX = MessageIndex()
_TURN_ID, _STARTED_SEQ = attrgetter("id"), attrgetter("started_seq")
_INPUT_IDS = attrgetter("input_ids")
_EMPTY_QUEUE = InputQueue()
RUNNING = AuditStatus.RUNNING


def _first_inputs(turns: list[Turn]) -> list[str | None]:
    """The first input each turn claimed (None: none)."""
    return [ids[0] if ids else None for ids in map(_INPUT_IDS, turns)]


def status_index(status: Status) -> int:
    """Position of ``status`` in ``SessionState.counts``."""
    return _STATUS_INDEX[status]


def new_vector(items: Iterable[Any] = ()) -> PVector[Any]:
    """A GC-friendly persistent vector (see the module docstring).

    The trie ``python_pvector`` builds, node for node (a property test pins it), built in
    one pass: its leaves sliced from the list, each level above them from the one below
    (``python_pvector`` pushes each leaf down a copied path: ~8 ms for the 45,000
    messages of a long session's snapshot, ~1 ms this way).
    """
    values = items if type(items) is list else list(items)
    if _PYTHON_VECTOR is None or not values:
        return python_pvector(values)  # type: ignore[no-untyped-call, no-any-return]
    count = len(values)
    # python_pvector pushes every full leaf into the trie, the last one too: the tail holds
    # what is left (nothing when the count is a multiple of the leaf size).
    full = count - count % BRANCH_FACTOR
    node: list[Any] = [
        values[start : start + BRANCH_FACTOR] for start in range(0, full, BRANCH_FACTOR)
    ]
    shift = _SHIFT
    while len(node) > BRANCH_FACTOR:  # a level more: the root overflowed
        node = [node[start : start + BRANCH_FACTOR] for start in range(0, len(node), BRANCH_FACTOR)]
        shift += _SHIFT
    vector: PVector[Any] = _PYTHON_VECTOR(count, shift, node, values[full:])
    return vector


_SHIFT: int = SHIFT
_new = object.__new__
_VECTOR_SLOTS = ("_count", "_shift", "_root", "_tail", "_tail_offset", "__weakref__")
# pyrsistent's untyped internals, which appended() writes: if a release changes the slots,
# no vector is of this "type" and every append is pyrsistent's own.
_PYTHON_VECTOR: Any = PythonPVector if PythonPVector.__slots__ == _VECTOR_SLOTS else None


def appended(vector: PVector[Any], item: Any) -> PVector[Any]:
    """``vector.append(item)``, sooner in the common case: the reducer adds each new message
    at the end of a state's vector.

    Appending to a pure-Python vector whose tail has room copies the tail with the item at
    its end and shares the rest (the trie), as ``append`` does; the slots of the new vector
    are stored directly instead of through ``append``, ``list`` and the class's ``__new__``.
    Anything else (a full tail, which ``append`` pushes into the trie) is ``append``'s. A
    property test pins both equal, node for node.
    """
    v: Any = vector
    if type(v) is _PYTHON_VECTOR and len(tail := v._tail) < BRANCH_FACTOR:
        new = _new(_PYTHON_VECTOR)
        new._count = v._count + 1
        new._shift = v._shift
        new._root = v._root
        new._tail = [*tail, item]
        new._tail_offset = v._tail_offset
        made: PVector[Any] = new
        return made
    return vector.append(item)


@attrs.frozen(kw_only=True)
class SessionState:
    """A session at one seq. Build the first one with ``SessionState.empty``.

    Only ``apply`` makes new states; every state a timeline holds stays equal
    to itself (and hashes equal) whatever happens after it.
    """

    __repr__ = value_repr

    session_id: str
    """The session."""
    seq: int = 0
    """Seq of the last event applied (0: nothing yet)."""
    updated_at: datetime | None = None
    """Wall-clock time of the last event applied."""
    messages: PVector[Message] = attrs.field(factory=new_vector)
    """Every message, in the order it was added (rolled-back ones included)."""
    index: MessageIndex = _EMPTY_INDEX
    """Message id -> position in ``messages`` (a read-only mapping)."""
    queued: InputQueue = _EMPTY_QUEUE
    """Active inputs waiting for a turn (``pending_agent``): id -> position, in the order
    queued (a read-only mapping)."""
    turns: Map[str, Turn] = _EMPTY_MAP
    """Every ended turn (processed, interrupted, error, recovered), by id."""
    active_turn: Turn | None = None
    """The turn running now, if any. It joins ``turns`` when it ends, so the
    bookkeeping of each tool call (its open calls) touches this small value,
    not a map that grows with the session."""
    tool_calls: Map[str, str] = _EMPTY_MAP
    """Tool call id -> id of the ``tool_call`` message."""
    tool_results: Map[str, str] = _EMPTY_MAP
    """Tool call id -> id of the ``tool_result`` message that answers it."""
    counts: tuple[int, ...] = _ZERO_COUNTS
    """How many messages have each status, in ``STATUS_ORDER``."""
    audit: Map[str, AuditRow] = _EMPTY_MAP
    """Model-call audit rows by source key (never part of history or counts)."""
    audit_ops: Map[str, str] = _EMPTY_MAP
    """``operation_key(turn, role, operation id)`` -> source key: operation ids are unique
    per turn and role."""
    audit_running: tuple[str, ...] = ()
    """Source keys of the rows still running (all of the active turn)."""
    audit_rows: PVector[AuditRow] = attrs.field(factory=new_vector, eq=False)
    """The rows of ``audit`` in sequence order (a row's sequence is its position + 1), updated
    with the map: a snapshot finds the rows that changed by comparing two such vectors. Not
    part of equality (it holds nothing ``audit`` does not)."""
    turn_order: PVector[str] = attrs.field(factory=new_vector, eq=False)
    """Every turn's id, the active one included, in the order the turns were started (or
    imported): a snapshot writes turns in this order, so a new turn only touches the last
    chunk. Not part of equality: two states with the same turns are equal whatever order a
    snapshot or an import listed them in."""

    @classmethod
    def empty(cls, session_id: str) -> SessionState:
        """The state of a session before its first event."""
        return cls(session_id=session_id)

    @property
    def audit_keys(self) -> Mapping[str, str]:
        """Source key -> the key of its row in ``audit`` (the same key; kept for older code)."""
        return _SourceKeys(self.audit)

    @property
    def active_turn_id(self) -> str | None:
        """The running turn's id, or None."""
        return None if self.active_turn is None else self.active_turn.id

    @property
    def waits_for_approval(self) -> bool:
        """True when the active turn only waits for a person: every tool call it left open
        waits for approval (none was approved and runs), and no input waits. Such a turn
        logs nothing while it waits, however long: it is no orphan (recovery leaves it
        alone, and a runner that loads it waits on)."""
        turn = self.active_turn
        return (
            turn is not None
            and bool(turn.awaiting_approval)
            and set(turn.open_calls) == set(turn.awaiting_approval)
            and not self.queued
        )

    def turn(self, turn_id: str) -> Turn | None:
        """The turn with ``turn_id``, active or ended, or None."""
        active = self.active_turn
        if active is not None and active.id == turn_id:
            return active
        return self.turns.get(turn_id)

    def message(self, message_id: str) -> Message:
        """The message with ``message_id``.

        Raises:
            UnknownMessage: the session has no such message.
        """
        position = self.index.get(message_id)
        if position is None:
            raise UnknownMessage(
                f"Session {self.session_id!r} has no message {message_id!r} at seq {self.seq}."
            )
        return self.messages[position]

    def get(self, message_id: str) -> Message | None:
        """The message with ``message_id``, or None."""
        position = self.index.get(message_id)
        return None if position is None else self.messages[position]

    def __contains__(self, message_id: object) -> bool:
        return message_id in self.index

    def __len__(self) -> int:
        return len(self.messages)

    def __bool__(self) -> bool:
        # A state is a value, not a container: an empty session is still a
        # state, so ``state or default`` must not replace it.
        return True

    def __iter__(self) -> Iterator[Message]:
        return iter(self.messages)

    def count(self, status: Status) -> int:
        """How many messages have ``status`` (rolled-back ones included)."""
        return self.counts[_STATUS_INDEX[status]]

    def status_counts(self) -> dict[Status, int]:
        """Non-zero message counts by status."""
        return {s: n for s, n in zip(STATUS_ORDER, self.counts, strict=True) if n}

    def turn_list(self) -> list[Turn]:
        """Every turn, the active one included, in start order."""
        turns, keys = self._turn_keys()
        return turns if keys is None else [turns[key[-1]] for key in sorted(keys)]

    def last_turns(self, count: int) -> list[Turn]:
        """The last ``count`` turns of ``turn_list()``, in its order (none for a count of 0
        or less), without sorting every turn: a view that prints the last hundred turns
        of a session of thousands picks them from the same keys (``heapq.nlargest``)."""
        if count <= 0:
            return []
        turns, keys = self._turn_keys()
        if keys is None:
            return turns[-count:]
        return [turns[key[-1]] for key in reversed(nlargest(count, keys))]

    def _turn_keys(self) -> tuple[list[Turn], Iterator[tuple[Any, ...]] | None]:
        """Every turn, and the key ``turn_list`` sorts each by (its last item: the turn's place
        in the list; every key differs); None for the keys: the list is in order already."""
        # By the position of the first input a turn claimed (-1: none), then by start:
        # positions are this session's own, while the seqs of turns imported by a fork are
        # the source's, so they do not compare with the fork's own (turn_order does). Where
        # each turn started: its place in turn_order; a state built by hand without it: its
        # seq. Then as the turns came (a stable sort). The keys are made a column at a
        # time, mostly in C.
        ordered = self._turns_in_turn_order()
        if ordered is not None:
            # Each turn's rank is its place here, so the keys are (position, place): in
            # order already when the positions do not decrease (a session that ran: no sort).
            positions = self.index.positions(_first_inputs(ordered), -1)
            if all(map(_le, positions, islice(positions, 1, None))):
                return ordered, None
            return ordered, zip(positions, _count())
        turns = list(self.turns.values())
        if self.active_turn is not None:
            turns.append(self.active_turn)
        positions = self.index.positions(_first_inputs(turns), -1)
        rank = dict(zip(self.turn_order, _count()))
        ranks = map(rank.get, map(_TURN_ID, turns), map(_STARTED_SEQ, turns))
        return turns, zip(positions, ranks, _count())

    def _turns_in_turn_order(self) -> list[Turn] | None:
        """Every turn in ``turn_order``'s order, if it lists each turn once (the reducer's
        and a snapshot's states); None otherwise (a state built by hand)."""
        order = self.turn_order
        active = self.active_turn
        if len(order) != len(self.turns) + (active is not None):
            return None
        turns: list[Any] = list(map(self.turns.get, order))
        if active is not None:
            # Not in ``turns``: its id is where it started, the last (or the order is odd).
            if not turns or turns[-1] is not None or order[-1] != active.id:
                return None
            turns[-1] = active
        if not all(turns) or len(set(order)) != len(order):  # an id not there, or twice
            return None
        return turns

    def model_calls(self, turn_id: str | None = None) -> tuple[AuditRow, ...]:
        """The model-call audit rows in sequence order (only ``turn_id``'s, if given)."""
        return model_calls(self, turn_id)

    def active_messages(self) -> Iterator[Message]:
        """Messages that are not rolled back, in order."""
        return (m for m in self.messages if m.active)


class _SourceKeys(Mapping[str, str]):
    """Every audit row's source key, mapped to itself (``SessionState.audit_keys``)."""

    __slots__ = ("_audit",)

    def __init__(self, audit: Map[str, AuditRow]) -> None:
        self._audit = audit

    def __getitem__(self, key: str) -> str:
        if key in self._audit:
            return key
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._audit.keys())

    def __len__(self) -> int:
        return len(self._audit)


def inherited(state: SessionState, message: Message) -> bool:
    """Whether ``message`` came into ``state``'s session with its fork (``BranchImported``).

    A fork shares its source's messages as they are, so an inherited message keeps the
    ``session_id`` and ``event_seq`` of the session and event that added it (its
    provenance); every message the session adds itself carries its own id.
    """
    return message.session_id != state.session_id


def added_seq(state: SessionState, message: Message) -> int | None:
    """The seq of ``state``'s session at which ``message`` was added.

    A message's ``event_seq`` is a seq of the session named by its ``session_id``; a
    message inherited by a fork was added by the fork's ``BranchImported``, seq 1.
    """
    return IMPORT_SEQ if inherited(state, message) else message.event_seq


def as_own(state: SessionState, message: Message) -> Message:
    """``message`` as ``state``'s session shows it to the outside world (adapters, subscribers).

    An inherited message gets this session's id and the seq that added it here (1), so
    whoever routes or acknowledges it by ``session_id`` reaches this session, not its
    source; the session's own messages are returned as they are.
    """
    if message.session_id == state.session_id:
        return message
    return _replace(message, session_id=state.session_id, event_seq=IMPORT_SEQ)


def build_state(
    *,
    session_id: str,
    seq: int,
    updated_at: datetime | None,
    messages: Iterable[Message],
    turns: Iterable[Turn],
    audit: Iterable[AuditRow] = (),
) -> SessionState:
    """Build a state from its messages, turns and audit rows, deriving every index.

    Used to read snapshots and to import branches. The caller checks that the
    parts agree (see ``check_consistent``).
    """
    vector = new_vector(messages)
    ids: list[str] = []
    queued: dict[str, int] = {}
    calls: dict[str, str] = {}
    results: dict[str, str] = {}
    counts = [0] * len(STATUS_ORDER)
    for position, message in enumerate(vector):
        ids.append(message.id)
        counts[_STATUS_INDEX[message.status]] += 1
        if message.status is Status.PENDING_AGENT and message.active:
            queued[message.id] = position
        if message.type is MessageType.TOOL_CALL and message.tool_call is not None:
            calls[message.tool_call.id] = message.id
        elif message.type is MessageType.TOOL_RESULT and message.tool_call_id is not None:
            results[message.tool_call_id] = message.id
    turns = list(turns)
    turn_map = dict(zip(map(_TURN_ID, turns), turns, strict=True))
    order = new_vector(turn_map)
    active = [turn for turn in turn_map.values() if turn.status is TurnStatus.ACTIVE]
    if active:
        # One active turn is the norm; any others stay in the map, where
        # check_consistent reports them.
        del turn_map[active[0].id]
    rows = {row.source_key: row for row in audit}
    by_sequence = sorted(rows.values(), key=lambda r: r.sequence)
    return SessionState(
        session_id=session_id,
        seq=seq,
        updated_at=updated_at,
        messages=vector,
        index=MessageIndex(ids),
        queued=InputQueue(queued),
        turns=Map(turn_map),
        active_turn=active[0] if active else None,
        tool_calls=Map(calls),
        tool_results=Map(results),
        counts=tuple(counts),
        audit=Map(rows),
        audit_ops=Map(
            {operation_key(r.turn_id, r.role, r.operation_id): r.source_key for r in rows.values()}
        ),
        audit_running=tuple(row.source_key for row in by_sequence if row.status is RUNNING),
        audit_rows=new_vector(by_sequence),
        turn_order=order,
    )


def check_consistent(state: SessionState, *, messages: bool = True) -> list[str]:
    """Problems that make ``state``'s parts disagree (empty when sound).

    Checks what a snapshot or an imported branch could get wrong: ids unique,
    messages of other sessions (inherited by a fork) before every message of
    this session, one active turn at most, processing inputs exactly those of
    the active turn, results answering a call of their own turn, categories
    valid.

    ``messages=False`` leaves out the checks that read every message (all but
    the ids' uniqueness): a lazy snapshot read (``runtime.store._lazy``) runs
    them on its rows' key columns instead, without decoding the messages.
    """
    problems: list[str] = []
    if len(state.index) != len(state.messages):
        problems.append("message ids are not unique")
    # Every turn, in no order (turn_list would sort them all; the ids are sorted below).
    turns = [*state.turns.values(), *((state.active_turn,) if state.active_turn else ())]
    active = [t.id for t in turns if t.status is TurnStatus.ACTIVE]
    if len(active) > 1:
        problems.append(f"more than one active turn: {sorted(active)}")
    if state.active_turn is not None and state.active_turn.status is not TurnStatus.ACTIVE:
        problems.append(f"the active turn {state.active_turn.id!r} is {state.active_turn.status}")
    claimed = set(state.active_turn.input_ids) if state.active_turn else set()
    turn_ids = set(state.turns.keys())
    if state.active_turn is not None:
        turn_ids.add(state.active_turn.id)
    session_id = state.session_id
    processing_status = Status.PROCESSING
    own: str | None = None  # the first message of this session's own
    # One pass, the common case first: this runs on every snapshot read.
    # (Every Message has a category: its role/type pair is checked when built.)
    for message in state.messages if messages else ():
        if message.session_id == session_id:
            if own is None:
                own = message.id
        elif own is not None:
            problems.append(
                f"message {message.id!r} of session {message.session_id!r} comes after message "
                f"{own!r} of this session (messages inherited by a fork come first)"
            )
        processing = message.status is processing_status
        if processing != (message.id in claimed):
            problems.append(
                f"message {message.id!r} is {message.status} but "
                + (
                    "is not claimed by the active turn"
                    if processing
                    else "is claimed by the active turn"
                )
            )
        if message.turn_id is not None and message.turn_id not in turn_ids:
            problems.append(f"message {message.id!r} names unknown turn {message.turn_id!r}")
        if message.type is MessageType.TOOL_RESULT:
            call_id = state.tool_calls.get(message.tool_call_id or "")
            call = state.get(call_id) if call_id else None
            if call is None:
                problems.append(f"tool result {message.id!r} answers no known tool call")
            elif call.turn_id != message.turn_id:
                problems.append(f"tool result {message.id!r} answers a call of another turn")
    if state.audit:
        problems += _audit_problems(state)
    return problems


def _audit_problems(state: SessionState) -> list[str]:
    problems = []
    rows = model_calls(state)
    if [row.sequence for row in rows] != list(range(1, len(rows) + 1)):
        problems.append("audit row sequences are not 1, 2, 3 … without gaps")
    if len(state.audit_ops) != len(rows):
        problems.append("audit rows share an operation id in one turn and role")
    active = state.active_turn_id
    for row in rows:
        if row.status is AuditStatus.RUNNING and row.turn_id != active:
            problems.append(
                f"audit row {row.operation_id!r} is running but its turn {row.turn_id!r} is not "
                "active"
            )
    return problems
