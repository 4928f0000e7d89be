"""``value_repr``: the ``__repr__`` attrs generates, written once for the core's value classes.

attrs writes the source of each class's ``__init__``, ``__eq__``, ``__hash__`` and
``__repr__`` and compiles it when the class is defined; the ``__repr__`` (an f-string of
every field inside a recursion guard) was ~40% of that compiling, and defining the core's
classes is most of what importing it costs (``amber show`` defines ~35 of them before it
reads anything: docs/performance-long.md §4). A class whose body says
``__repr__ = value_repr`` gets this one instead (attrs' ``auto_detect`` leaves a
``__repr__`` the class defines alone): the same text, made when it is asked for.
``tests/runtime/test_repr.py`` pins it to the repr attrs generates for every class that
uses it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any
from weakref import WeakKeyDictionary

import attrs

__all__ = ["value_repr"]

_Field = tuple[str, Callable[[Any], object] | None, bool]

_FIELDS: WeakKeyDictionary[type, tuple[_Field, ...]] = WeakKeyDictionary()
"""Class -> its fields shown (name, its own repr or None for ``repr``, whether
``__init__`` sets it), as attrs' generated ``__repr__`` lists them. Weak: a class made
at run time and shown once is freed with its last reference."""

_showing: ContextVar[frozenset[int]] = ContextVar("amber_repr_showing", default=frozenset())
"""The ids of the values being shown (attrs' recursion guard: ``...``). A context
variable, as the core starts and names no threads: each thread runs in a context of its
own, and the set is immutable and put back after each ``__repr__``, so a context copied
into another thread (``asyncio.to_thread``, trio's ``to_thread``) while a value is shown
shares nothing with it."""

_MISSING = attrs.NOTHING


def _fields(cls: type) -> tuple[_Field, ...]:
    fields = tuple(
        (field.name, None if field.repr is True else field.repr, field.init)
        for field in attrs.fields(cls)
        if field.repr is not False
    )
    _FIELDS[cls] = fields
    return fields


def value_repr(self: object) -> str:
    """``ClassName(field=value!r, ...)``, exactly as attrs' generated ``__repr__`` shows it.

    Fields with ``repr=False`` are left out, a field's own ``repr=`` callable is used
    for it, a field ``__init__`` does not set shows ``NOTHING`` while unset, and a value
    shown again inside itself (on the same thread) is ``...``.
    """
    cls = self.__class__
    fields = _FIELDS.get(cls)
    if fields is None:  # (a class that shows no field keeps its empty tuple)
        fields = _fields(cls)
    already = _showing.get()
    if id(self) in already:
        return "..."
    token = _showing.set(already | {id(self)})
    try:
        parts = []
        for name, custom, init in fields:
            value = getattr(self, name) if init else getattr(self, name, _MISSING)
            parts.append(f"{name}={value!r}" if custom is None else f"{name}={custom(value)}")
        return f"{cls.__qualname__.rsplit('>.', 1)[-1]}({', '.join(parts)})"
    finally:
        _showing.reset(token)
