"""Snapshot reads that decode a message only when it is read (``load_span(..., lazy=True)``).

An eager snapshot read builds every message (``_fast``, ~1.5 µs each),
derives the indexes from them and checks them: most of a late ``amber show
--at`` in a long session, which prints a hundred messages of 45,000. A lazy
read parses each chunk as the eager one does, takes a few key columns of its
rows while they are at hand (id, session, type, status, turn, the tool
call's id, the call a result answers, ``active``: all that the indexes,
``assemble_facts``, and the consistency checks need; ``Facts``), then drops
the rows and keeps the chunk's stored bytes. The messages vector
(``LazyMessages``, a pyrsistent ``PythonPVector``) holds, at each position
not read yet, the chunk it is in; reading a position parses that chunk
again and decodes its rows, strictly as the eager read does, and the message
replaces the placeholder. A row that does not decode raises the eager read's
``CorruptRow`` (same text) when it is read, not when the state is loaded;
the other rows of its chunk still read.

Vectors made from a lazy one (``append``, ``set``, an evolver: the reducer
applying the events after a checkpoint) stay lazy and share its chunks, so a
message read through any of them is the same object. A placeholder only
ever sits at the position it was loaded at (``delete`` and ``remove``
decode everything first), which is how its row is found in its chunk.

Any doubt about the key columns (a row that is not a full row of the known
fields, a value of the wrong type or unknown) and the read is eager
instead, which names the problem. ``check_consistent``'s checks of every
message are run on the key columns (``Facts.problems``); should one of them
find something, every message is decoded and the full check names it.

Lazy states are for read-only views (``amber show``): the runtime and
``amber diff`` read eagerly (the default), and a snapshot is never planned
against a lazy state. An eager read (``Facts(..., lazy=False)``) decodes every
message itself but takes its indexes and message checks from here too: the
key columns cost ~25 µs a chunk of 64 rows in C, where deriving them from the
messages (``assemble_state``) and checking them (``check_consistent``) were
four Python loops over every message.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime
from itertools import compress
from operator import itemgetter
from typing import Any, cast

from pyrsistent._pvector import BIT_MASK, PythonPVector
from pyrsistent.typing import PVector

from .._audit import AuditRow
from .._errors import CorruptRow, DecodeError
from .._message import Message, MessageType, Status
from .._state import SessionState, check_consistent, new_vector
from .._turn import Turn
from ._assemble import FAST_STATES, assemble_facts
from ._fast import FAST_MESSAGES, MESSAGE_FIELDS, decode_message_row, decode_message_rows

__all__ = ["Facts", "LazyMessages"]

_WIDTH = len(MESSAGE_FIELDS)
_COLUMN = {name: itemgetter(MESSAGE_FIELDS.index(name)) for name in MESSAGE_FIELDS}
_ID, _SESSION, _TYPE, _STATUS = (_COLUMN[n] for n in ("id", "session_id", "type", "status"))
_TURN, _CALL_ID, _ACTIVE = (_COLUMN[n] for n in ("turn_id", "tool_call_id", "active"))
_TOOL_CALL_AT = MESSAGE_FIELDS.index("tool_call")
_STATUSES = {member.value: member for member in Status}
_TYPES = frozenset(member.value for member in MessageType)
_CALL = MessageType.TOOL_CALL.value
_RESULT = MessageType.TOOL_RESULT.value
_PENDING = Status.PENDING_AGENT.value
_PROCESSING = Status.PROCESSING.value
_STR = {str}
_OPTIONAL_STR = {str, type(None)}
_Vector: Any = PythonPVector  # untyped: its trie internals are read below
_node_for: Any = PythonPVector._node_for


class _Chunk:
    """A chunk of a lazy read's messages: its stored bytes until a row of it is read."""

    __slots__ = ("body", "messages", "number", "reader")

    def __init__(self, reader: _Reader, number: int, body: object) -> None:
        self.reader = reader
        self.number = number
        self.body: object = body
        self.messages: list[Message | str] | None = None  # str: why that row is corrupt

    def message(self, offset: int) -> Message:
        messages = self.messages
        if messages is None:
            decoded = self.reader.decode(self.body, self.number)
            # Two threads decoding one chunk: both keep the first one stored (setdefault is
            # atomic), so every reader gets the same objects.
            messages = self.messages = self.reader.decoded.setdefault(self.number, decoded)
        found = messages[offset]
        if type(found) is str:
            raise self.reader.corrupt(found)
        assert isinstance(found, Message)
        return found


class _Reader:
    """What the chunks of one lazy read share: how to parse and name them."""

    __slots__ = ("corrupt", "decoded", "rows_of")

    def __init__(
        self, corrupt: Callable[[str], CorruptRow], rows_of: Callable[[object, str], list[Any]]
    ) -> None:
        self.corrupt = corrupt
        self.rows_of = rows_of
        self.decoded: dict[int, list[Message | str]] = {}  # by chunk number

    def decode(self, body: object, number: int) -> list[Message | str]:
        rows = self.rows_of(body, f"messages chunk {number}")
        fast: list[Any] | None = decode_message_rows(MESSAGE_FIELDS, rows)
        if fast is not None:
            return fast
        decoded: list[Message | str] = []
        for index, row in enumerate(rows):  # as the eager read does, naming the bad row
            try:
                decoded.append(decode_message_row(MESSAGE_FIELDS, row))
            except DecodeError as exc:
                problem = str(exc).rstrip(".")
                decoded.append(f"messages chunk {number} item {index}: {problem}")
        return decoded


def _decoded(item: Any, position: int, chunk_size: int) -> Any:
    if type(item) is _Chunk:
        return item.message(position - item.number * chunk_size)
    return item


def _decode_leaf(leaf: list[Any], base: int, chunk_size: int) -> None:
    for offset, item in enumerate(leaf):
        if type(item) is _Chunk:
            leaf[offset] = item.message(base + offset - item.number * chunk_size)


class LazyMessages(_Vector):  # type: ignore[misc]
    """A state's messages vector whose items are decoded on first read (module docstring).

    It is a pyrsistent ``PythonPVector`` and behaves as one: indexing, slicing,
    iteration, equality, ``append``/``set``/``evolver`` (which return lazy
    vectors sharing its chunks) and ``tolist`` (which decodes every row).
    """

    __slots__ = ("_chunk_size",)
    _chunk_size: int  # 0: every item is decoded

    def __new__(
        cls, count: int, shift: int, root: list[Any], tail: list[Any], chunk_size: int = 0
    ) -> LazyMessages:
        self: LazyMessages = super().__new__(cls, count, shift, root, tail)
        self._chunk_size = chunk_size
        return self

    @classmethod
    def of_items(cls, items: list[Any], chunk_size: int) -> LazyMessages:
        """A vector of ``items`` (messages, or the ``_Chunk`` each position is in)."""
        # A fresh vector, its leaves this one's own (a read writes the message into its leaf).
        built: Any = new_vector(items) if items else _Vector(0, 5, [], [])
        return cls(built._count, built._shift, built._root, built._tail, chunk_size)

    def _lazy(self, vector: Any) -> Any:
        if not self._chunk_size or type(vector) is not _Vector:
            return vector
        return LazyMessages(
            vector._count, vector._shift, vector._root, vector._tail, self._chunk_size
        )

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice) or not self._chunk_size:
            return super().__getitem__(index)
        if index < 0:
            index += self._count
        leaf = _node_for(self, index)
        item = leaf[index & BIT_MASK]
        if type(item) is _Chunk:
            item = leaf[index & BIT_MASK] = _decoded(item, index, self._chunk_size)
        return item

    @staticmethod
    def _node_for(pvector_like: Any, i: int) -> list[Any]:
        # Callers that read a leaf at a time (runtime._history) get it decoded.
        leaf: list[Any] = _node_for(pvector_like, i)
        chunk_size = getattr(pvector_like, "_chunk_size", 0)
        if chunk_size:
            _decode_leaf(leaf, i & ~BIT_MASK, chunk_size)
        return leaf

    def tolist(self) -> list[Any]:
        """Every message, each row decoded (once)."""
        if self._chunk_size:
            for base in range(0, self._count, BIT_MASK + 1):
                _decode_leaf(_node_for(self, base), base, self._chunk_size)
            self._chunk_size = 0  # this vector's items are all decoded now
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

    __slots__ = ("_lazy_chunk_size",)

    def __init__(self, vector: LazyMessages) -> None:
        super().__init__(vector)
        self._lazy_chunk_size = vector._chunk_size

    def __getitem__(self, index: Any) -> Any:
        item = super().__getitem__(index)
        if type(item) is _Chunk:
            position = index + len(self) if index < 0 else index
            item = _decoded(item, position, self._lazy_chunk_size)
        return item

    def __delitem__(self, key: Any) -> None:
        if self._lazy_chunk_size and self._orig_pvector:  # positions shift: decode all first
            for base in range(0, self._count, BIT_MASK + 1):
                _decode_leaf(_node_for(self, base), base, self._lazy_chunk_size)
        super().__delitem__(key)

    def persistent(self) -> Any:
        result = super().persistent()
        if self._lazy_chunk_size and type(result) is _Vector:
            result = LazyMessages(
                result._count, result._shift, result._root, result._tail, self._lazy_chunk_size
            )
            self._reset(result)
        return result


def _types_are(values: Iterable[object], allowed: set[Any]) -> bool:
    return set(map(type, values)) <= allowed


class Facts:
    """The key columns of a snapshot read's message rows, chunk by chunk (module docstring):
    a lazy read's messages, and the indexes and message checks of either read."""

    def __init__(
        self,
        session_id: str,
        chunk_size: int,
        corrupt: Callable[[str], CorruptRow],
        rows_of: Callable[[object, str], list[Any]],
        *,
        lazy: bool = True,
    ) -> None:
        """``rows_of(body, what)``: a chunk's rows from its stored bytes (``CorruptRow``
        naming ``what`` if they do not parse). ``lazy=False``: an eager read, which decodes
        the messages itself and takes only the indexes and checks from here."""
        self.lazy = lazy
        self.session_id = session_id
        self.chunk_size = chunk_size
        self.reader = _Reader(corrupt, rows_of)
        self.items: list[Any] = []  # a _Chunk per position
        self.ids: list[str] = []
        self.statuses: Counter[str] = Counter()
        self.queued: dict[str, int] = {}
        self.processing: list[str] = []
        self.calls: dict[str, str] = {}  # call id -> the message's id
        self.call_turns: dict[str, str | None] = {}  # a call message's id -> its turn
        self.results: dict[str, str] = {}  # answered call id -> the result's id
        self.answered: list[str] = []  # each result's call id …
        self.answer_turns: list[str | None] = []  # … and turn
        self.turn_ids: set[str | None] = set()
        self.own = 0  # messages of this session
        self.first_own: int | None = None  # the position of the first of them

    @staticmethod
    def usable() -> bool:
        """Whether this Amber's ``Message`` and ``SessionState`` are those this module knows."""
        return FAST_MESSAGES and FAST_STATES

    def add(self, number: int, body: object, rows: list[Any]) -> bool:
        """Take the key columns of chunk ``number`` (rows in ``MESSAGE_FIELDS`` order);
        False if any is in doubt (then a lazy read reads eagerly, an eager read derives the
        indexes from its messages)."""
        if not _types_are(rows, {list}) or not set(map(len, rows)) <= {_WIDTH}:
            return False
        # A pass per column, in C; the few rows that need more (inputs, calls, results)
        # picked out in C too (compress), where there are any.
        ids = list(map(_ID, rows))
        statuses = list(map(_STATUS, rows))
        types = list(map(_TYPE, rows))
        try:
            status_set, type_set = set(statuses), set(types)
            sessions, turns = set(map(_SESSION, rows)), set(map(_TURN, rows))
        except TypeError:  # an unhashable value
            return False
        if (
            not status_set <= _STATUSES.keys()
            or not type_set <= _TYPES
            or not _types_are(ids, _STR)
            or not _types_are(sessions, _STR)
            or not _types_are(turns, _OPTIONAL_STR)
        ):
            return False
        base = len(self.ids)
        if self.session_id in sessions:
            column = list(map(_SESSION, rows)) if len(sessions) > 1 else None
            self.own += len(rows) if column is None else column.count(self.session_id)
            if self.first_own is None:
                self.first_own = base + (0 if column is None else column.index(self.session_id))
        for value in status_set:
            self.statuses[value] += statuses.count(value)
        self.turn_ids |= turns
        if _PENDING in status_set:
            for offset in compress(range(len(rows)), map(_PENDING.__eq__, statuses)):
                active = _ACTIVE(rows[offset])
                if type(active) is not bool:
                    return False
                if active:
                    self.queued[ids[offset]] = base + offset
        if _PROCESSING in status_set:
            self.processing += compress(ids, map(_PROCESSING.__eq__, statuses))
        if _CALL in type_set:
            for row in compress(rows, map(_CALL.__eq__, types)):
                call = row[_TOOL_CALL_AT]
                if type(call) is not dict or type(call.get("id")) is not str:
                    return False
                self.calls[call["id"]] = _ID(row)
                self.call_turns[_ID(row)] = _TURN(row)
        if _RESULT in type_set:
            for row in compress(rows, map(_RESULT.__eq__, types)):
                call_id = _CALL_ID(row)
                if type(call_id) is not str:
                    return False
                self.results[call_id] = _ID(row)
                self.answered.append(call_id)
                self.answer_turns.append(_TURN(row))
        self.ids += ids
        if self.lazy:
            self.items += [_Chunk(self.reader, number, body)] * len(rows)
        return True

    def state(
        self,
        *,
        seq: int,
        updated_at: datetime | None,
        turns: list[Turn],
        audit: Iterable[AuditRow],
        messages: list[Message] | None = None,
    ) -> SessionState | None:
        """The state, its messages undecoded (or ``messages``, those an eager read decoded);
        None if the key columns are in doubt."""
        vector: PVector[Message] = (
            LazyMessages.of_items(self.items, self.chunk_size)
            if messages is None
            else new_vector(messages)
        )
        state = assemble_facts(
            session_id=self.session_id,
            seq=seq,
            updated_at=updated_at,
            messages=vector,
            ids=self.ids,
            counts={_STATUSES[value]: count for value, count in self.statuses.items()},
            queued=self.queued,
            tool_calls=self.calls,
            tool_results=self.results,
            turns=turns,
            audit=audit,
        )
        return None if "" in state.index else state  # an empty id: the eager read says so

    def problems(self, state: SessionState) -> list[str]:
        """``check_consistent(state)``, its checks of every message run on the key columns.

        Only if one of them finds something is every message decoded, for
        ``check_consistent`` to name each problem as an eager read does.
        """
        if self._suspect(state):
            state.messages.tolist()  # a row that does not decode raises here
            return check_consistent(state)
        return check_consistent(state, messages=False)

    def _suspect(self, state: SessionState) -> bool:
        index = state.index
        if len(index) != len(self.ids):
            return True  # ids repeat
        if self.own and self.own != len(self.ids) - (self.first_own or 0):
            return True  # a message of another session after one of this session's
        turn = state.active_turn
        claimed = set(turn.input_ids) if turn is not None else set()
        if set(self.processing) != {c for c in claimed if c in index}:
            return True  # a processing message the active turn does not claim, or back
        known = set(state.turns.keys()) | ({turn.id} if turn is not None else set())
        if not self.turn_ids - {None} <= known:
            return True  # a message names an unknown turn
        # A column at a time, in C (9,091 results at the head of a long session).
        message_ids = list(map(self.calls.get, self.answered))
        if None in message_ids:
            return True  # a result answers no known call
        # A result of another turn than its call's (the columns are lists of str and None).
        calls = cast(list[str], message_ids)
        return list(map(self.call_turns.__getitem__, calls)) != self.answer_turns
