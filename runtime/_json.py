"""Frozen JSON-like values: what metadata and tool arguments may hold.

JSON-like input (dicts, lists, tuples, str, int, float, bool, None) is frozen
on the way in: dicts become ``pmap``, lists and tuples become ``pvector``.
Only values that survive a JSON round trip unchanged are accepted, so a stored
message always reads back equal: string keys only, finite floats only, integers
that fit in 64 bits.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from pyrsistent import PMap as PMapABC
from pyrsistent import PVector as PVectorABC
from pyrsistent import pmap, pvector

if TYPE_CHECKING:
    from pyrsistent.typing import PMap, PVector

__all__ = ["FrozenJSON", "JSONValue", "freeze", "freeze_map", "thaw"]

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

_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1


def freeze(value: object, *, path: str = "$") -> FrozenJSON:
    """Return ``value`` as a frozen JSON-like value.

    Args:
        value: a JSON-like value; dicts and lists may be nested.
        path: where the value sits, used in error messages (``$.metadata.x``).

    Raises:
        TypeError: a value JSON cannot represent (a set, bytes, an object,
            a non-string key); the message names its path.
        ValueError: a float that is not finite, or an integer beyond 64 bits.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        if not _INT_MIN <= value <= _INT_MAX:
            raise ValueError(
                f"{path} must be an integer that fits in 64 bits (got {value!r}); "
                "store big numbers as strings."
            )
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(
                f"{path} must be a finite number (got {value!r}); JSON has no NaN or "
                "infinity, store it as a string or null."
            )
        return value
    if isinstance(value, Mapping):
        return freeze_map(value, path=path)
    if isinstance(value, (list, tuple, PVectorABC)):
        frozen = [freeze(item, path=f"{path}[{i}]") for i, item in enumerate(value)]
        if isinstance(value, PVectorABC) and all(
            a is b for a, b in zip(frozen, value, strict=True)
        ):
            return value
        return pvector(frozen)
    raise TypeError(
        f"{path} must be a JSON-like value (None, bool, int, float, str, list or dict) "
        f"(got {value!r} that is a {type(value).__name__!r}); convert it before storing it."
    )


def freeze_map(value: object, *, path: str = "$") -> PMap[str, FrozenJSON]:
    """Return ``value`` (a mapping with string keys) as a frozen ``pmap``.

    An already-frozen ``pmap`` whose contents are frozen is returned as is.
    """
    if value is None:
        return _EMPTY
    if not isinstance(value, Mapping):
        raise TypeError(
            f"{path} must be a mapping with string keys (got {value!r} that is a "
            f"{type(value).__name__!r})."
        )
    items: dict[str, FrozenJSON] = {}
    unchanged = isinstance(value, PMapABC)
    for key, item in value.items():
        if not isinstance(key, str):
            raise TypeError(
                f"{path} keys must be strings (got {key!r} that is a {type(key).__name__!r})."
            )
        frozen = freeze(item, path=f"{path}.{key}")
        unchanged = unchanged and frozen is item
        items[key] = frozen
    if unchanged:
        return value  # type: ignore[return-value]
    return pmap(items) if items else _EMPTY


def freeze_metadata(value: object) -> PMap[str, FrozenJSON]:
    """attrs converter for ``metadata`` fields."""
    return freeze_map(value, path="$.metadata")


def freeze_arguments(value: object) -> PMap[str, FrozenJSON]:
    """attrs converter for tool-call ``arguments``."""
    return freeze_map(value, path="$.arguments")


def freeze_metrics(value: object) -> PMap[str, FrozenJSON]:
    """attrs converter for turn ``metrics``."""
    return freeze_map(value, path="$.metrics")


def thaw(value: object) -> object:
    """Return a frozen JSON-like value as plain dicts and lists (for JSON output)."""
    if isinstance(value, PMapABC):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, PVectorABC):
        return [thaw(item) for item in value]
    return value


_EMPTY: PMap[str, FrozenJSON] = pmap()
