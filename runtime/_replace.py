"""``replace``: a trusted, fast ``attrs.evolve`` for the reducer's hot path.

``attrs.evolve`` calls ``__init__``, which runs every converter and validator
again (about 25 µs for a ``Message``). The reducer only changes fields of
values that were validated when they were built, to values it made itself
(a ``Status`` member, a turn id it checked, ``active=False``), so it copies
the fields directly instead. Never use it on caller input.

``replacer(cls, *names)`` is the same copy for one fixed set of changed
fields, taking the new values by position: no dict is built and no field is
looked up by name. The reducer's most common changes (a message stamped with
its seq, a state with one more message) use it; property tests pin both equal
to ``attrs.evolve``.

The copy is made as ``runtime.store``'s builders make values: as an instance
of a private subclass that adds no slots and is not frozen, whose plain
attribute stores cost a few ns, and then ``__class__`` is assigned (about
0.9 µs for the 21 fields of a ``Message``; through the slots' descriptors,
the fallback where Python refuses the assignment, 2 µs). The result is an
ordinary instance of the frozen class.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import attrs

__all__ = ["constructor", "replace", "replacer", "slot_setter"]

T = TypeVar("T")


def _compile(
    cls: type, names: list[str], header: str, values: list[str], *, by_class_assignment: bool = True
) -> Any:
    """``def replace(<header>)``, storing ``values[i]`` (expressions) into field ``names[i]``
    of a new ``cls`` (by class assignment if this Python allows it; False: always through the
    descriptors, for tests)."""
    unfrozen = type(
        f"_Unfrozen{cls.__name__}",
        (cls,),
        {"__slots__": (), "__setattr__": object.__setattr__, "__delattr__": object.__delattr__},
    )
    probe: Any = object.__new__(unfrozen)
    try:
        probe.__class__ = cls
    except TypeError:  # "__class__ assignment: ... object layout differs", say
        by_class_assignment = False
    namespace: dict[str, Any] = {"_new": object.__new__, "unfrozen": unfrozen, "cls": cls}
    if by_class_assignment:
        stores = "".join(f"    new.{n} = {v}\n" for n, v in zip(names, values, strict=True))
        source = (
            f"def replace({header}):\n    new = _new(unfrozen)\n{stores}"
            "    new.__class__ = cls\n    return new\n"
        )
    else:  # each slot's descriptor stores without the frozen __setattr__
        stores = "".join(f"    _s{i}(new, {value})\n" for i, value in enumerate(values))
        source = f"def replace({header}):\n    new = _new(cls)\n{stores}    return new\n"
        namespace.update({f"_s{i}": slot_setter(cls, name) for i, name in enumerate(names)})
    exec(compile(source, f"<amber replace {cls.__name__}>", "exec"), namespace)
    return namespace["replace"]


def slot_setter(cls: type, name: str) -> Callable[[Any, Any], None]:
    """A function ``(instance, value)`` that stores field ``name`` of a (frozen) ``cls``
    through its slot's descriptor, unchecked: for an ``__init__`` that checked the value."""
    slot = next((k.__dict__[name] for k in cls.__mro__ if name in k.__dict__), None)
    if hasattr(slot, "__set__") and hasattr(slot, "__objclass__"):  # a slot's member descriptor
        return slot.__set__  # type: ignore[union-attr, no-any-return]

    def store(instance: Any, value: Any) -> None:  # not a slot: the general way
        object.__setattr__(instance, name, value)

    return store


@functools.cache
def _replacer(cls: type) -> Callable[[Any, dict[str, Any]], Any]:
    # Generated per class, like attrs' own methods: one store per field, no loop
    # and no getattr() calls.
    names = [field.name for field in attrs.fields(cls)]
    values = [f"changes[{name!r}] if {name!r} in changes else old.{name}" for name in names]
    return _compile(cls, names, "old, changes", values)  # type: ignore[no-any-return]


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
    values = [f"_v{position[name]}" if name in position else f"old.{name}" for name in names]
    header = "old" + "".join(f", _v{i}" for i in range(len(changed)))
    return _compile(cls, names, header, values)  # type: ignore[no-any-return]


def constructor(cls: type, *params: str, **constants: str) -> Callable[..., Any]:
    """A function taking the fields ``params`` by position that builds a ``cls`` with them
    and every other field set to ``constants[name]`` (a Python expression, e.g. ``"None"``),
    unchecked, the way the copies above are made: for values checked already (the view's
    trusted constructors).

    Raises:
        ValueError: ``params`` and ``constants`` do not name each field of ``cls`` once.
    """
    names = [field.name for field in attrs.fields(cls)]
    given = [*params, *constants]
    if sorted(given) != sorted(names):
        raise ValueError(
            f"constructor() takes each field of {cls.__name__} once ({', '.join(names)}); "
            f"got {', '.join(given)}."
        )
    values = [name if name in params else constants[name] for name in names]
    return _compile(cls, names, ", ".join(params), values)  # type: ignore[no-any-return]


def replace(instance: T, **changes: Any) -> T:
    """A copy of the frozen attrs ``instance`` with ``changes``, unchecked."""
    cls: type = type(instance)
    return _replacer(cls)(instance, changes)  # type: ignore[no-any-return]
