"""``MessageIndex`` and ``InputQueue``: a state's id -> position maps, shared along a chain.

Every state of a session keeps its own index of message ids (``SessionState.index``)
and of the inputs waiting for a turn (``SessionState.queued``). As ``immutables.Map``
each step copied a path of hash-trie nodes in both: eight objects the cyclic GC
tracks, of the fourteen a step of a user question kept (issue 16; the GC
traversals they cost were a third of the step).

Both maps only grow between two states that follow each other (an input is
queued, a message is indexed), and a queue is emptied at once when a turn
claims its inputs. So, as ``Timeline`` shares its entries, the versions of one
map made by adding share one private, append-only log: a list of entries in the
order they were added and a dict ``key -> place in the log``; each version
knows how many places it sees. A lookup is one dict lookup and a comparison.
Adding to the newest version appends to the log (O(1)). Adding to an older
version (two events applied to one state) copies that version's own log when
it is short (``COPY_LIMIT``); else it starts a new log on top of that version
(its parent), so a version is a short chain of logs and a lookup asks each log
of the chain, newest first. A chain longer than ``MAX_DEPTH`` is flattened into
one log (O(n)). The dicts hold only strings and ints, so CPython does not track
them; a step keeps one small tracked object per map.

``MessageIndex``'s entries are the ids (a message's position is its place plus
the positions of the logs below); ``InputQueue``'s are ``(id, position)``
pairs. Both are read-only ``Mapping``s, equal to any mapping with the same items.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import repeat
from typing import Any, TypeVar, overload

__all__ = ["InputQueue", "MessageIndex"]

_T = TypeVar("_T")


_new = object.__new__

MAX_DEPTH = 8
"""Logs in a version's chain before adding to it flattens the chain into one."""

COPY_LIMIT = 32
"""Adding to a version that is not its log's newest copies that version's own log when
it holds at most this many entries (so applying two events to each state does not grow
the chain by a log a step); past it, the version becomes the parent of a new log."""


class _Log(Mapping[str, int]):
    """What both maps share: a version of an append-only log of distinct keys, on top of
    a parent version (or None)."""

    __slots__ = ("_depth", "_end", "_hash", "_log", "_offset", "_parent", "_size", "_where")

    _log: list[Any]
    """Entries in the order added (shared by the versions made by appending)."""
    _where: dict[str, int]
    """Key -> its place in ``_log`` (places past ``_end`` belong to newer versions)."""
    _end: int
    """How many entries of ``_log`` this version sees."""
    _size: int
    _hash: int | None
    _parent: Any
    """The version this log was started on (None: the first log)."""
    _offset: int
    """Positions before this log (``MessageIndex``: the first entry's position)."""
    _depth: int
    """Logs in the chain, this one included."""

    def _value(self, place: int) -> int:
        raise NotImplementedError

    @staticmethod
    def _key_of(entry: Any) -> str:
        raise NotImplementedError

    def _entries(self) -> Iterator[tuple[str, int]]:
        """This log's own items, in order."""
        raise NotImplementedError

    def _flat(self, key: str, entry: Any) -> Any:
        """A single-log copy of this version with ``entry`` (for ``key``) added."""
        raise NotImplementedError

    def _share(
        self, log: list[Any], where: dict[str, int], end: int, parent: Any, depth: int
    ) -> Any:
        new = object.__new__(type(self))
        new._log, new._where, new._end, new._hash = log, where, end, None
        new._parent, new._depth = parent, depth
        if parent is None:
            new._offset, new._size = 0, end
        else:
            new._offset, new._size = parent._offset + parent._end, parent._size + end
        return new

    def _append(self, key: str, entry: Any) -> Any:
        """This version with ``entry`` (for ``key``, which it does not hold) added last."""
        log, where, end = self._log, self._where, self._end
        if end and len(log) == end and key not in where:
            log.append(entry)
            # Another thread may have grown the same version meanwhile; then the place
            # is not ours (as in Timeline.append) and we start a log of our own.
            if log[end] is entry and where.setdefault(key, end) == end:
                # The hot path (every message added): the slots stored directly.
                new = _new(type(self))
                new._log = log
                new._where = where
                new._end = end + 1
                new._size = self._size + 1
                new._hash = None
                new._parent = self._parent
                new._offset = self._offset
                new._depth = self._depth
                return new
        if end <= COPY_LIMIT:  # a short log of our own: a copy of it, on our parent
            log = [*log[:end], entry]
            key_of = self._key_of
            new = self._share(
                log, {key_of(e): i for i, e in enumerate(log)}, end + 1, self._parent, self._depth
            )
            new._size = self._size + 1
            return new
        if self._depth >= MAX_DEPTH:
            return self._flat(key, entry)
        return self._share([entry], {key: 0}, 1, self, self._depth + 1)

    def _place(self, key: object) -> tuple[_Log, int] | None:
        version: _Log | None = self
        while version is not None:
            place = version._where.get(key)  # type: ignore[call-overload]
            if place is not None and place < version._end:
                return version, place
            version = version._parent
        return None

    def __getitem__(self, key: str) -> int:
        found = self._place(key)
        if found is None:
            raise KeyError(key)
        return found[0]._value(found[1])

    @overload
    def get(self, key: str) -> int | None: ...

    @overload
    def get(self, key: str, default: int | _T) -> int | _T: ...

    def get(self, key: str, default: object = None) -> object:
        """The value of ``key``, or ``default``."""
        place = self._where.get(key)
        if place is not None and place < self._end:  # the common case: one log
            return self._value(place)
        found = None if self._parent is None else self._parent._place(key)
        return default if found is None else found[0]._value(found[1])

    def __contains__(self, key: object) -> bool:
        place = self._where.get(key)  # type: ignore[call-overload]
        if place is not None and place < self._end:
            return True
        return self._parent is not None and self._parent._place(key) is not None

    def _all(self) -> Iterator[tuple[str, int]]:
        if self._parent is not None:
            yield from self._parent._all()
        yield from self._entries()

    def __iter__(self) -> Iterator[str]:
        return (key for key, _ in self._all())

    def __len__(self) -> int:
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Log):
            if self._size != other._size:
                return False
            if (
                self._log is other._log
                and self._end == other._end
                and self._parent is other._parent
            ):
                return True
        elif not isinstance(other, Mapping):
            return NotImplemented
        return dict(self._all()) == dict(other.items())

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._all()))
        return self._hash

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self._all())!r})"


class MessageIndex(_Log):
    """Message id -> position in ``SessionState.messages``, positions in the order the
    messages were added (a read-only mapping; ``add`` makes the next version)."""

    __slots__ = ()

    def __init__(self, ids: Iterable[str] = ()) -> None:
        """The index of messages with ``ids``, at positions 0, 1, 2 … (an id given twice:
        its last position, and the index is shorter than ``ids``)."""
        log = list(ids)
        self._log, self._end, self._hash = log, len(log), None
        self._where = dict(zip(log, range(len(log)), strict=True))  # in C: in half the time
        self._size, self._parent, self._offset, self._depth = len(self._where), None, 0, 1

    def _positions(self) -> list[str]:
        """The id at each position (a repeated id at each of its positions)."""
        own = self._log[: self._end]
        return own if self._parent is None else self._parent._positions() + own

    def __reduce__(self) -> tuple[Any, ...]:
        return (MessageIndex, (self._positions(),))

    def _value(self, place: int) -> int:
        return self._offset + place

    @staticmethod
    def _key_of(entry: Any) -> str:
        return entry  # type: ignore[no-any-return]

    def _entries(self) -> Iterator[tuple[str, int]]:
        log, where, offset = self._log, self._where, self._offset
        # A key given twice to MessageIndex() is seen at its last place only.
        return ((log[i], offset + i) for i in range(self._end) if where[log[i]] == i)

    def _flat(self, key: str, entry: Any) -> MessageIndex:
        return MessageIndex([*self._positions(), key])

    def add(self, key: str) -> MessageIndex:
        """The index with ``key`` at the next position (the number of positions indexed).

        Raises:
            ValueError: ``key`` is indexed already.
        """
        parent = self._parent
        # The common case (a new id, a one-log version) is decided by one dict lookup.
        if (key in self._where or (parent is not None and key in parent)) and key in self:
            raise ValueError(f"Message id {key!r} is indexed already; ids are unique in a session.")
        return self._append(key, key)  # type: ignore[no-any-return]

    def positions(self, keys: Sequence[str | None], default: int) -> list[int]:
        """``[self.get(key, default) for key in keys]`` (a None key: ``default``), in one C
        pass when this version sees its whole log and has no parent (a state loaded from a
        snapshot, say): ``turn_list`` looks up the first input of each of 9,091 turns."""
        if self._parent is None and self._end == len(self._log):
            get: Any = self._where.get  # a None key is not there: the default
            return list(map(get, keys, repeat(default)))  # offset 0, every place seen
        return [default if key is None else self.get(key, default) for key in keys]

    def add_new(self, key: str) -> MessageIndex:
        """``add(key)`` for a ``key`` the caller knows is not indexed (the reducer looked it
        up before): the same index, without looking ``key`` up again. Unchecked: a key
        indexed already breaks the index."""
        return self._append(key, key)  # type: ignore[no-any-return]


class InputQueue(_Log):
    """Input message id -> position in ``SessionState.messages``, in the order queued (a
    read-only mapping; ``set`` makes the next version, a new empty one clears it)."""

    __slots__ = ()

    def __init__(self, items: Mapping[str, int] | Iterable[tuple[str, int]] = ()) -> None:
        """A queue of ``items`` (id -> position) in their order."""
        log = list(dict(items).items())
        self._log, self._end, self._size, self._hash = log, len(log), len(log), None
        self._where = {key: place for place, (key, _) in enumerate(log)}
        self._parent, self._offset, self._depth = None, 0, 1

    def __reduce__(self) -> tuple[Any, ...]:
        return (InputQueue, (dict(self._all()),))

    def _value(self, place: int) -> int:
        return self._log[place][1]  # type: ignore[no-any-return]

    @staticmethod
    def _key_of(entry: Any) -> str:
        return entry[0]  # type: ignore[no-any-return]

    def _entries(self) -> Iterator[tuple[str, int]]:
        return iter(self._log[: self._end])

    def _flat(self, key: str, entry: Any) -> InputQueue:
        return InputQueue([*self._all(), entry])

    def set(self, key: str, position: int) -> InputQueue:
        """The queue with ``key`` at ``position`` (queued last, or its position changed)."""
        parent = self._parent
        if (key in self._where or (parent is not None and key in parent)) and key in self:
            pairs = dict(self._all())
            pairs[key] = position
            return InputQueue(pairs)
        # The entry is a new tuple: the identity check in _append tells two threads
        # that add the same key to the same version apart.
        return self._append(key, (key, position))  # type: ignore[no-any-return]

    def set_new(self, key: str, position: int) -> InputQueue:
        """``set(key, position)`` for a ``key`` the caller knows is not queued (the id of a
        message the session does not have yet): the same queue, without looking ``key`` up
        again. Unchecked: a key queued already breaks the queue."""
        return self._append(key, (key, position))  # type: ignore[no-any-return]
