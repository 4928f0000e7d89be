"""``replace``: a trusted, fast ``attrs.evolve`` for the reducer's hot path.

``attrs.evolve`` calls ``__init__``, which runs every converter and validator
again (about 25 µs for a ``Message``). The reducer only changes fields of
values that were validated when they were built, to values it made itself
(a ``Status`` member, a turn id it checked, ``active=False``), so it copies
the slots directly instead (about 2 µs). Never use it on caller input.

``replacer(cls, *names)`` is the same copy for one fixed set of changed
fields, taking the new values by position: no dict is built and no field is
looked up by name (about 1.5 µs for a ``Message``). The reducer's most common
changes (a message stamped with its seq, a state with one more message) use
it; a property test pins it equal to ``attrs.evolve``.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any, TypeVar

import attrs

__all__ = ["replace", "replacer"]

T = TypeVar("T")


def _setters(cls: type, names: list[str]) -> dict[str, Any]:
    # A slot's member descriptor stores without the frozen class's __setattr__
    # and without looking the name up: about twice as fast as object.__setattr__.
    setters: dict[str, Any] = {}
    for i, name in enumerate(names):
        slot = next((k.__dict__[name] for k in cls.__mro__ if name in k.__dict__), None)
        if isinstance(slot, types.MemberDescriptorType):
            setters[f"_s{i}"] = slot.__set__
        else:  # not a slot (a class without __slots__): the general way
            setters[f"_s{i}"] = _attribute_setter(name)
    return setters


def _attribute_setter(name: str) -> Callable[[Any, Any], None]:
    def store(instance: Any, value: Any) -> None:
        object.__setattr__(instance, name, value)

    return store


def _compile(cls: type, source: str, namespace: dict[str, Any]) -> Any:
    namespace.update(_new=object.__new__, cls=cls)
    exec(compile(source, f"<amber replace {cls.__name__}>", "exec"), namespace)
    return namespace["replace"]


@functools.cache
def _replacer(cls: type) -> Callable[[Any, dict[str, Any]], Any]:
    # Generated per class, like attrs' own methods: one slot store per field,
    # no loop and no getattr() calls.
    names = [field.name for field in attrs.fields(cls)]
    body = "\n".join(
        f"    _s{i}(new, changes[{name!r}] if {name!r} in changes else old.{name})"
        for i, name in enumerate(names)
    )
    source = f"def replace(old, changes):\n    new = _new(cls)\n{body}\n    return new\n"
    return _compile(cls, source, _setters(cls, names))  # type: ignore[no-any-return]


def replacer(cls: type[T], *changed: str) -> Callable[..., T]:
    """A function ``(instance, *values)`` that copies the frozen attrs ``instance`` of
    ``cls`` with the fields ``changed`` set to ``values`` (in that order), unchecked.

    Raises:
        ValueError: a name in ``changed`` is not a field of ``cls``, or is given twice.
    """
    klass: type = cls
    return _positional(klass, changed)


@functools.cache
def _positional(cls: type, changed: tuple[str, ...]) -> Callable[..., Any]:
    names = [field.name for field in attrs.fields(cls)]
    unknown = sorted(set(changed) - set(names))
    if unknown or len(set(changed)) != len(changed):
        raise ValueError(
            f"replacer() takes distinct field names of {cls.__name__} (one of "
            f"{', '.join(names)}); got {', '.join(map(repr, changed))}."
        )
    position = {name: i for i, name in enumerate(changed)}
    body = "\n".join(
        f"    _s{i}(new, {f'_v{position[name]}' if name in position else f'old.{name}'})"
        for i, name in enumerate(names)
    )
    arguments = "".join(f", _v{i}" for i in range(len(changed)))
    source = f"def replace(old{arguments}):\n    new = _new(cls)\n{body}\n    return new\n"
    return _compile(cls, source, _setters(cls, names))  # type: ignore[no-any-return]


def replace(instance: T, **changes: Any) -> T:
    """A copy of the frozen attrs ``instance`` with ``changes``, unchecked."""
    cls: type = type(instance)
    return _replacer(cls)(instance, changes)  # type: ignore[no-any-return]
