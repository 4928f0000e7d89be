"""Frozen JSON-like values: what metadata and tool arguments may hold.

JSON-like input (dicts, lists, tuples, str, int, float, bool, None) is frozen
on the way in: dicts become ``pmap``, lists and tuples become ``pvector``.
Only values that survive a JSON round trip unchanged are accepted, so a stored
message always reads back equal: string keys only, finite floats only, integers
that fit in 64 bits, text without lone surrogates, at most ``MAX_DEPTH`` levels
of nesting.

``thaw`` gives the plain dicts and lists back; ``canonical`` does the same with
every dict's keys sorted, which is how the codec writes them: the JSON of a
value is byte-for-byte the same however the value was built.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from pyrsistent import PMap as PMapABC
from pyrsistent import PVector as PVectorABC
from pyrsistent import pmap, pvector

from ._article import type_named
from ._errors import InvalidArgument
from ._storable import INT_MAX, INT_MIN, MAX_DEPTH, text_problem

if TYPE_CHECKING:
    from pyrsistent.typing import PMap, PVector

__all__ = ["FrozenJSON", "JSONValue", "canonical", "freeze", "freeze_map", "thaw"]

if TYPE_CHECKING:
    JSONValue: TypeAlias = (
        "bool | int | float | str | list[JSONValue] | tuple[JSONValue, ...]"
        " | Mapping[str, JSONValue] | PMap[str, JSONValue] | PVector[JSONValue] | None"
    )
    FrozenJSON: TypeAlias = (
        "bool | int | float | str | PVector[FrozenJSON] | PMap[str, FrozenJSON] | None"
    )
else:
    # At run time the aliases are plain ``Any``, so that attrs and cattrs can
    # resolve annotations that use them; the codec hooks on the container type.
    JSONValue = Any
    FrozenJSON = Any


def freeze(
    value: object, *, path: str = "$", error: type[Exception] = InvalidArgument
) -> FrozenJSON:
    """Return ``value`` as a frozen JSON-like value.

    Only values that read back unchanged from the store are accepted (see
    ``runtime._storable``): str (valid Unicode, no lone surrogate), int within
    64 bits, finite float, bool, None, and lists and string-keyed dicts of
    them, nested at most ``MAX_DEPTH`` levels.

    Args:
        value: a JSON-like value; dicts and lists may be nested.
        path: where the value sits, used in error messages (``$.metadata.x``).
        error: the error class to raise (messages and events raise their own).

    Raises:
        InvalidArgument: a value JSON cannot represent (a set, bytes, an
            object, a non-string key), a float that is not finite, an integer
            beyond 64 bits, text with a lone surrogate, or nesting deeper than
            ``MAX_DEPTH``; the message names its path.
    """
    return _freeze(value, path, 0, error)


def _freeze(value: object, path: str, depth: int, error: type[Exception]) -> FrozenJSON:
    if value is None or value is True or value is False:
        return value
    # Subclasses (a StrEnum, an IntEnum, numpy's float64) are stored as their
    # plain value, which is what reads back.
    if isinstance(value, str):
        text = value if type(value) is str else str.__str__(value)
        problem = text_problem(text)
        if problem is not None:
            raise error(
                f"{_at(path)} must be valid Unicode text (got {problem}); lone surrogates "
                "cannot be stored: decode bytes with errors='replace', or pass the text "
                "through runtime.storable_text()."
            )
        return text
    if isinstance(value, int):
        number = value if type(value) is int else int.__index__(value)
        if not INT_MIN <= number <= INT_MAX:
            raise error(
                f"{_at(path)} must be an integer that fits in 64 bits (got {int_text(number)}); "
                "store big numbers as strings."
            )
        return number
    if isinstance(value, float):
        real = value if type(value) is float else float.__float__(value)
        if not math.isfinite(real):
            raise error(
                f"{_at(path)} must be a finite number (got {real!r}); JSON has no NaN or "
                "infinity, store it as a string or null."
            )
        return real
    if isinstance(value, (Mapping, list, tuple, PVectorABC)):
        if depth >= MAX_DEPTH:
            raise error(
                f"{_at(path)} nests more than {MAX_DEPTH} levels deep; flatten it, or store "
                "the deep part as a JSON string."
            )
        if isinstance(value, Mapping):
            return _freeze_map(value, path, depth, error)
        frozen = [_freeze(item, f"{path}[{i}]", depth + 1, error) for i, item in enumerate(value)]
        if isinstance(value, PVectorABC) and all(
            a is b for a, b in zip(frozen, value, strict=True)
        ):
            return value
        return pvector(frozen)
    raise error(
        f"{_at(path)} must be a JSON-like value (None, bool, int, float, str, list or dict) "
        f"(got {_short(value)} that is {type_named(value)}); convert it before storing it."
    )


def int_text(value: int) -> str:
    """``value`` for an error message: its digits, or its size if it has too many."""
    if -(10**30) < value < 10**30:
        return repr(value)
    return f"an integer of {value.bit_length()} bits"


def _at(path: str) -> str:
    """``path`` for an error message, its middle cut if it is long."""
    return path if len(path) <= 120 else f"{path[:50]}…{path[-60:]}"


def _short(value: object) -> str:
    try:
        text = repr(value)
    except Exception:  # a repr that fails must not hide the real error
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= 80 else text[:79] + "…"


def freeze_map(
    value: object, *, path: str = "$", error: type[Exception] = InvalidArgument
) -> PMap[str, FrozenJSON]:
    """Return ``value`` (a mapping with string keys) as a frozen ``pmap``.

    An already-frozen ``pmap`` whose contents are frozen is returned as is;
    None is the empty map.

    Raises:
        InvalidArgument: as ``freeze`` does (or ``error``).
    """
    if value is None or (type(value) is dict and not value):
        return _EMPTY
    if not isinstance(value, Mapping):
        raise error(
            f"{_at(path)} must be a mapping with string keys (got {_short(value)} that is "
            f"{type_named(value)})."
        )
    return _freeze_map(value, path, 0, error)


def _freeze_map(
    value: Mapping[object, object], path: str, depth: int, error: type[Exception]
) -> PMap[str, FrozenJSON]:
    items: dict[str, FrozenJSON] = {}
    unchanged = isinstance(value, PMapABC)
    for key, item in value.items():
        if type(key) is not str:
            raise error(
                f"{_at(path)} keys must be strings (got {_short(key)} that is {type_named(key)})."
            )
        problem = text_problem(key)
        if problem is not None:
            raise error(
                f"{_at(path)} keys must be valid Unicode text (got {problem} in "
                f"{_short(key)}); lone surrogates cannot be stored."
            )
        frozen = _freeze(item, f"{path}.{key}", depth + 1, error)
        unchanged = unchanged and frozen is item
        items[key] = frozen
    if unchanged:
        return value  # type: ignore[return-value]
    return pmap(items) if items else _EMPTY


def freeze_metadata(value: object) -> PMap[str, FrozenJSON]:
    """attrs converter for a message's ``metadata``."""
    return freeze_map(value, path="$.metadata")


def freeze_arguments(value: object) -> PMap[str, FrozenJSON]:
    """attrs converter for tool-call ``arguments``."""
    return freeze_map(value, path="$.arguments")


def freeze_metrics(value: object) -> PMap[str, FrozenJSON]:
    """attrs converter for a turn's ``metrics``."""
    return freeze_map(value, path="$.metrics")


def thaw(value: object) -> object:
    """Return a frozen JSON-like value as plain dicts and lists (for JSON output)."""
    if isinstance(value, PMapABC):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, PVectorABC):
        return [thaw(item) for item in value]
    return value


_SCALARS = frozenset({str, int, float, bool, type(None)})
"""Types ``canonical`` returns as they are (checked by exact type: the fast path)."""


PMAP_CLASS: Any = type(pmap())
"""pyrsistent's map class (``PMapABC`` is an ABC: an ``isinstance`` through it costs more)."""


def map_items(value: PMapABC[Any, Any]) -> list[tuple[Any, Any]]:
    """``[*value.iteritems()]``, read straight from the map's buckets when it is pyrsistent's
    own class (``iteritems`` is a Python generator: a resume per item); the same items in the
    same order (a property test pins it)."""
    if type(value) is PMAP_CLASS:
        # A loop, not a comprehension: most maps here (tool arguments) have a bucket or
        # two, and a comprehension makes and calls a function each time.
        out: list[tuple[Any, Any]] = []
        for bucket in value._buckets:
            if bucket:
                out += bucket
        return out
    return [*value.iteritems()]


def canonical(value: object) -> object:
    """``thaw(value)`` with every dict's keys in sorted order (the codec's form)."""
    held: Any = value  # pyrsistent's untyped internals: ``_size``, ``_buckets``
    if type(held) is PMAP_CLASS and held._size == 1:
        for bucket in held._buckets:
            if bucket:  # the map's one item: most tool arguments (no sort, no comprehension)
                key, item = bucket[0]
                return {key: item if type(item) in _SCALARS else canonical(item)}
    if type(value) is PMAP_CLASS or isinstance(value, PMapABC):
        items = map_items(value)  # type: ignore[arg-type]
        if len(items) > 1:  # most tool arguments have one key: nothing to sort
            items.sort()  # compares keys only: a map's keys are distinct
        return {key: item if type(item) in _SCALARS else canonical(item) for key, item in items}
    if isinstance(value, PVectorABC):
        return [item if type(item) in _SCALARS else canonical(item) for item in value]
    return value


_EMPTY: PMap[str, FrozenJSON] = pmap()
