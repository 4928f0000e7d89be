"""Builders that make frozen attrs values from field values already checked.

Reading a snapshot builds every message a session has. attrs' ``__init__``
runs the converters and validators and, the class being frozen, stores each
field through ``object.__setattr__``; ``_fast`` checks the values itself, so
only the stores are left, and they were most of what remained: through a
slot's descriptor a store costs ~160 ns (a C wrapper called with an argument
tuple), 3.4 µs for the 21 fields of a ``Message``.

A plain attribute store on a slotted class costs a few ns, but a frozen class
refuses it. So the builder makes the value as an instance of a private
subclass that adds no slots and is not frozen, stores the fields, and then
assigns ``__class__``. Python allows that between classes of the same
layout, and the result is an ordinary instance of the frozen class: its type
*is* the class, and it compares, hashes, pickles and refuses changes like
any other (tests pin it). ~1 µs per ``Message``.

If the assignment is ever refused (a Python or attrs whose layout does not
allow it), the builder sets the slots through their descriptors instead.
Builders check nothing: never give them values that were not checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import attrs

__all__ = ["slot_builder"]

T = TypeVar("T")


def _generate(source: str, cls: type, namespace: dict[str, Any]) -> Callable[..., Any]:
    name = source[len("def ") : source.index("(")]
    exec(compile(source, f"<amber {name} {cls.__name__}>", "exec"), namespace)
    return namespace[name]  # type: ignore[no-any-return]


def _by_class_assignment(cls: type[T], names: list[str]) -> Callable[..., T]:
    # Not frozen: both hooks plain, so that attribute stores take CPython's
    # fast path (a class that overrides only one of them does not).
    unfrozen = type(
        f"_Unfrozen{cls.__name__}",
        (cls,),
        {"__slots__": (), "__setattr__": object.__setattr__, "__delattr__": object.__delattr__},
    )
    params = ", ".join(f"v{i}" for i in range(len(names)))
    stores = "".join(f"    new.{name} = v{i}\n" for i, name in enumerate(names))
    source = (
        f"def build_by_class_assignment({params}):\n    new = new_object(unfrozen)\n{stores}"
        "    new.__class__ = cls\n    return new\n"
    )
    namespace = {"new_object": object.__new__, "unfrozen": unfrozen, "cls": cls}
    return _generate(source, cls, namespace)


def _by_descriptors(cls: type[T], names: list[str]) -> Callable[..., T]:
    params = ", ".join(f"v{i}" for i in range(len(names)))
    stores = "".join(f"    set{i}(new, v{i})\n" for i in range(len(names)))
    source = (
        f"def build_by_descriptors({params}):\n    new = new_object(cls)\n{stores}    return new\n"
    )
    namespace: dict[str, Any] = {"new_object": object.__new__, "cls": cls}
    namespace.update({f"set{i}": cls.__dict__[name].__set__ for i, name in enumerate(names)})
    return _generate(source, cls, namespace)


def slot_builder(cls: type[T], *, by_class_assignment: bool = True) -> Callable[..., T]:
    """A function that makes a ``cls`` from its field values, in field order.

    ``cls`` is a frozen, slotted attrs class. The function stores the values
    as they are: no converters, no validators, no ``__attrs_post_init__``.

    Args:
        cls: the class.
        by_class_assignment: use the fast builder if this Python allows it
            (False: always the descriptor stores, for tests).
    """
    names = [field.name for field in attrs.fields(cls)]  # type: ignore[arg-type]
    if by_class_assignment:
        try:
            build = _by_class_assignment(cls, names)
            made = build(*[None] * len(names))
        except TypeError:  # a class that refuses subclasses, or "... object layout differs"
            pass
        else:
            if type(made) is cls:
                return build
    return _by_descriptors(cls, names)
