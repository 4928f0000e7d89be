"""``replace``: a trusted, fast ``attrs.evolve`` for the reducer's hot path.

``attrs.evolve`` calls ``__init__``, which runs every converter and validator
again (about 25 µs for a ``Message``). The reducer only changes fields of
values that were validated when they were built, to values it made itself
(a ``Status`` member, a turn id it checked, ``active=False``), so it copies
the slots directly instead (about 2 µs). Never use it on caller input.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import attrs

__all__ = ["replace"]

T = TypeVar("T")


@functools.cache
def _replacer(cls: type) -> Callable[[Any, dict[str, Any]], Any]:
    # Generated per class, like attrs' own methods: one slot store per field,
    # no loop and no getattr() calls.
    names = [field.name for field in attrs.fields(cls)]
    body = "\n".join(
        f"    _set(new, {name!r}, changes[{name!r}] if {name!r} in changes else old.{name})"
        for name in names
    )
    source = f"def replace(old, changes):\n    new = _new(cls)\n{body}\n    return new\n"
    namespace: dict[str, Any] = {"_new": object.__new__, "_set": object.__setattr__, "cls": cls}
    exec(compile(source, f"<amber replace {cls.__name__}>", "exec"), namespace)
    return namespace["replace"]  # type: ignore[no-any-return]


def replace(instance: T, **changes: Any) -> T:
    """A copy of the frozen attrs ``instance`` with ``changes``, unchecked."""
    cls: type = type(instance)
    return _replacer(cls)(instance, changes)  # type: ignore[no-any-return]
