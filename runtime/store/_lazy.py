"""Snapshot reads that decode a message only when it is read (``load_span(..., lazy=True)``).

A snapshot read builds every message (``_fast``, ~1.5 µs each), derives the
indexes from them and checks them: at 45,000 messages most of a late
``amber show --at``, which prints a hundred of them. A lazy read keeps each
message's row as parsed and builds the state from a few key columns of the
rows, pulled out in C (``map(itemgetter(k), rows)``): the id, session,
type, status, turn, tool call id, the id a result answers and ``active``,
which are all the indexes (``assemble_facts``) and the consistency checks
need. The rows sit in the messages vector itself (``LazyMessages``, a
pyrsistent ``PythonPVector``); a row is decoded, strictly as an eager read
decodes it, the first time its position is read, and the message replaces
it. A row that does not decode raises the eager read's ``CorruptRow`` (same
text) when it is read, not when the state is loaded.

Vectors made from a lazy one (``append``, ``set``, an evolver: the reducer
applying the events after a checkpoint) stay lazy and share its rows; every
vector made from one load shares one cache, so a message read through any
of them is the same object. A row only ever sits at the position it was
loaded at (``delete`` and ``remove`` decode everything first), which is how
a row is found in its chunk for an error.

Any doubt about the key columns (a row that is not a full row of the known
fields, a value of the wrong type or unknown) and the read is eager
instead, which names the problem. The checks ``check_consistent`` runs on
every message are run on the columns (``key_problems``); should any of them
find something, every message is decoded and the full check names it.

Lazy states are for read-only views (``amber show``): the runtime and
``amber diff`` read eagerly (the default), and a snapshot is never planned
against a lazy state.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime
from operator import itemgetter
from typing import Any

from pyrsistent._pvector import BIT_MASK, PythonPVector
from pyrsistent.typing import PVector

from .._audit import AuditRow
from .._errors import CorruptRow, DecodeError
from .._message import Message, MessageType, Status
from .._state import SessionState, check_consistent
from .._turn import Turn
from ._assemble import FAST_STATES, assemble_facts
from ._fast import FAST_MESSAGES, MESSAGE_FIELDS, decode_message_row

__all__ = ["LazyMessages", "key_problems", "lazy_state"]

_WIDTH = len(MESSAGE_FIELDS)
_COLUMN = {name: itemgetter(MESSAGE_FIELDS.index(name)) for name in MESSAGE_FIELDS}
_STATUSES = {member.value: member for member in Status}
_TYPES = {member.value: member for member in MessageType}
_CALL = MessageType.TOOL_CALL.value
_RESULT = MessageType.TOOL_RESULT.value
_PENDING = Status.PENDING_AGENT.value
_PROCESSING_VALUE = Status.PROCESSING.value
_STR = {str}
_OPTIONAL_STR = {str, type(None)}
_COLUMN_INDEX_TOOL_CALL = MESSAGE_FIELDS.index("tool_call")
_Vector: Any = PythonPVector  # untyped: its trie internals are read below
_node_for: Any = PythonPVector._node_for


class _Rows:
    """Decodes the rows of one lazy read (one cache for every vector made from it)."""

    __slots__ = ("cache", "chunk_size", "corrupt")

    def __init__(self, chunk_size: int, corrupt: Callable[[str], CorruptRow]) -> None:
        self.cache: dict[int, Message] = {}
        self.chunk_size = chunk_size
        self.corrupt = corrupt

    def __call__(self, position: int, row: list[Any]) -> Message:
        found = self.cache.get(position)
        if found is not None:
            return found
        try:
            message = decode_message_row(MESSAGE_FIELDS, row)
        except DecodeError as exc:
            number, index = divmod(position, self.chunk_size)
            problem = str(exc).rstrip(".")
            raise self.corrupt(f"messages chunk {number} item {index}: {problem}") from None
        # Two threads decoding one row: both get the first one stored.
        return self.cache.setdefault(position, message)


def _decode_leaf(rows: _Rows, leaf: list[Any], base: int) -> None:
    for offset, item in enumerate(leaf):
        if type(item) is list:  # a row not decoded yet (a Message is never a list)
            leaf[offset] = rows(base + offset, item)


class LazyMessages(_Vector):  # type: ignore[misc]
    """A state's messages vector whose items are decoded on first read (module docstring).

    It is a pyrsistent ``PythonPVector`` and behaves as one: indexing, slicing,
    iteration, equality, ``append``/``set``/``evolver`` (which return lazy
    vectors sharing its rows) and ``tolist`` (which decodes every row).
    """

    __slots__ = ("_rows",)
    _rows: _Rows | None

    def __new__(
        cls, count: int, shift: int, root: list[Any], tail: list[Any], rows: _Rows | None = None
    ) -> LazyMessages:
        self: LazyMessages = super().__new__(cls, count, shift, root, tail)
        self._rows = rows
        return self

    @classmethod
    def of_rows(cls, rows: list[Any], decode: _Rows) -> LazyMessages:
        """A vector holding ``rows`` (undecoded) at positions 0, 1, 2 …"""
        built: Any = _Vector(0, 5, [], []).extend(rows)
        return cls(built._count, built._shift, built._root, built._tail, decode)

    def _lazy(self, vector: Any) -> LazyMessages:
        if self._rows is None or type(vector) is not _Vector:
            return vector  # type: ignore[no-any-return]
        return LazyMessages(vector._count, vector._shift, vector._root, vector._tail, self._rows)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice) or self._rows is None:
            return super().__getitem__(index)
        if index < 0:
            index += self._count
        leaf = _node_for(self, index)
        item = leaf[index & BIT_MASK]
        if type(item) is list:
            item = leaf[index & BIT_MASK] = self._rows(index, item)
        return item

    @staticmethod
    def _node_for(pvector_like: Any, i: int) -> list[Any]:
        # Callers that read a leaf at a time (runtime._history) get it decoded.
        leaf: list[Any] = _node_for(pvector_like, i)
        rows = getattr(pvector_like, "_rows", None)
        if rows is not None:
            _decode_leaf(rows, leaf, i & ~BIT_MASK)
        return leaf

    def tolist(self) -> list[Any]:
        """Every message, each row decoded (once)."""
        rows = self._rows
        if rows is not None:
            for base in range(0, self._count, BIT_MASK + 1):
                _decode_leaf(rows, _node_for(self, base), base)
            self._rows = None  # this vector's items are all decoded now
        return super().tolist()  # type: ignore[no-any-return]

    def append(self, val: Any) -> Any:
        return self._lazy(super().append(val))

    def set(self, i: Any, val: Any) -> Any:
        return self._lazy(super().set(i, val))

    def evolver(self) -> Any:
        return _Evolver(self)

    def __reduce__(self) -> Any:
        return _Vector(0, 5, [], []).extend(self.tolist()).__reduce__()


class _Evolver(_Vector.Evolver):  # type: ignore[misc]
    """A lazy vector's evolver: reads decode, ``persistent()`` is lazy again."""

    __slots__ = ("_lazy_rows",)

    def __init__(self, vector: LazyMessages) -> None:
        super().__init__(vector)
        self._lazy_rows = vector._rows

    def __getitem__(self, index: Any) -> Any:
        item = super().__getitem__(index)
        if type(item) is list and self._lazy_rows is not None:
            position = index + len(self) if index < 0 else index
            item = self._lazy_rows(position, item)
        return item

    def __delitem__(self, key: Any) -> None:
        if self._lazy_rows is not None and self._orig_pvector:  # positions shift: decode all
            for base in range(0, self._count, BIT_MASK + 1):
                _decode_leaf(self._lazy_rows, _node_for(self, base), base)
        super().__delitem__(key)

    def persistent(self) -> Any:
        result = super().persistent()
        if self._lazy_rows is not None and type(result) is _Vector:
            result = LazyMessages(
                result._count, result._shift, result._root, result._tail, self._lazy_rows
            )
            self._reset(result)
        return result


def _types_are(values: Iterable[object], allowed: set[Any]) -> bool:
    return set(map(type, values)) <= allowed


def lazy_state(
    *,
    session_id: str,
    seq: int,
    updated_at: datetime | None,
    rows: list[Any],
    chunk_size: int,
    corrupt: Callable[[str], CorruptRow],
    turns: list[Turn],
    audit: Iterable[AuditRow],
) -> SessionState | None:
    """The state a snapshot holds, its messages left as ``rows`` until read.

    ``rows`` are the messages' rows in ``MESSAGE_FIELDS`` order, every chunk's
    in turn. None when a key column is in doubt: the caller then reads eagerly,
    which names the problem.
    """
    if not (FAST_MESSAGES and FAST_STATES):
        return None
    if not _types_are(rows, {list}) or not set(map(len, rows)) <= {_WIDTH}:
        return None
    ids = list(map(_COLUMN["id"], rows))
    statuses = list(map(_COLUMN["status"], rows))
    types = list(map(_COLUMN["type"], rows))
    active = list(map(_COLUMN["active"], rows))
    tool_call_ids = list(map(_COLUMN["tool_call_id"], rows))
    try:
        counted = Counter(statuses)
        counts = {_STATUSES[value]: count for value, count in counted.items()}
        if not set(types) <= _TYPES.keys():
            return None
    except (KeyError, TypeError):  # TypeError: an unhashable value
        return None
    if (
        not _types_are(ids, _STR)
        or not _types_are(map(_COLUMN["session_id"], rows), _STR)
        or not _types_are(map(_COLUMN["turn_id"], rows), _OPTIONAL_STR)
        or not _types_are(active, {bool})
        or not _types_are(tool_call_ids, _OPTIONAL_STR)
    ):
        return None
    calls: dict[str, str] = {}
    for position in [p for p, kind in enumerate(types) if kind == _CALL]:
        call = rows[position][_COLUMN_INDEX_TOOL_CALL]
        if type(call) is not dict or type(call.get("id")) is not str:
            return None
        calls[call["id"]] = ids[position]
    results: dict[str, str] = {}
    for position in [p for p, kind in enumerate(types) if kind == _RESULT]:
        call_id = tool_call_ids[position]
        if call_id is None:
            return None
        results[call_id] = ids[position]
    queued = {
        ids[position]: position
        for position, status in enumerate(statuses)
        if status == _PENDING and active[position]
    }
    state = assemble_facts(
        session_id=session_id,
        seq=seq,
        updated_at=updated_at,
        messages=_as_vector(LazyMessages.of_rows(rows, _Rows(chunk_size, corrupt))),
        ids=ids,
        counts=counts,
        queued=queued,
        tool_calls=calls,
        tool_results=results,
        turns=turns,
        audit=audit,
    )
    return None if "" in state.index else state  # an empty id: the eager read says so


def _as_vector(messages: LazyMessages) -> PVector[Message]:
    vector: PVector[Message] = messages  # a PythonPVector, which pyrsistent leaves untyped
    return vector


def key_problems(state: SessionState, rows: list[Any]) -> list[str]:
    """``check_consistent(state)`` for a lazy state, from its rows' key columns.

    The checks of every message run on the columns (in C where they can); only
    if one finds something is every message decoded, to let ``check_consistent``
    name each problem as an eager read does.
    """
    problems = check_consistent(state, messages=False)
    if _suspect(state, rows):
        state.messages.tolist()  # a row that does not decode raises here
        return check_consistent(state)
    return problems


def _suspect(state: SessionState, rows: list[Any]) -> bool:
    """Whether ``check_consistent``'s checks of the messages could find a problem."""
    ids = state.index
    if len(ids) != len(rows):
        return True  # ids repeat: check_consistent says so
    session_ids = list(map(_COLUMN["session_id"], rows))
    own = session_ids.count(state.session_id)
    if own and own != len(session_ids) - session_ids.index(state.session_id):
        return True  # a message of another session after one of this session's
    active_turn = state.active_turn
    claimed = set(active_turn.input_ids) if active_turn is not None else set()
    statuses = list(map(_COLUMN["status"], rows))
    wanted = _PROCESSING_VALUE
    processing = {rows[p][0] for p, status in enumerate(statuses) if status == wanted}
    if processing != {c for c in claimed if c in ids}:
        return True  # processing messages that are not the active turn's inputs, or back
    turn_ids = set(map(_COLUMN["turn_id"], rows))
    turn_ids.discard(None)
    known = set(state.turns.keys())
    if active_turn is not None:
        known.add(active_turn.id)
    if not turn_ids <= known:
        return True
    turn_of = _COLUMN["turn_id"]
    for call_id, result_id in state.tool_results.items():
        call = state.tool_calls.get(call_id)
        if call is None or turn_of(rows[ids[call]]) != turn_of(rows[ids[result_id]]):
            return True
    # Two results answering one call: the map keeps one; count them.
    return len(state.tool_results) != list(map(_COLUMN["type"], rows)).count(_RESULT)
