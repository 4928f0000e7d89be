"""Checks of the machines' options, made when ``simulation_machine(...)`` (or
``lifecycle_machine(...)``) is called rather than deep inside the first example.

Each check takes the option's value and returns None when it fits, else what
was expected (``"a positive int"``); ``check_options`` turns that into one
error naming the function, the option, what was expected and what was got.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .._article import article
from .._errors import InvalidArgument

__all__ = [
    "Check",
    "check_machine_class",
    "check_options",
    "choice",
    "flag",
    "instance",
    "mapping_of_flags",
    "number",
    "optional_path",
    "sequence_of",
    "session_names",
    "whole",
]

Check = Callable[[Any], "str | None"]
"""A check: None when the value fits, else what was expected."""


def check_options(
    function: str,
    base: type,
    options: Mapping[str, Any],
    checks: Mapping[str, Check],
    *,
    error: type[Exception] = InvalidArgument,
) -> None:
    """Raise ``error`` for the first option that is unknown or does not fit its check.

    Args:
        function: the function the options were given to (``simulation_machine``).
        base: the machine class; the options are its public class attributes.
        options: what was given.
        checks: a check per option (options without one are only checked to exist).
        error: the exception class to raise.
    """
    unknown = sorted(k for k in options if k.startswith("_") or not hasattr(base, k))
    if unknown:
        known = sorted(checks)
        raise error(
            f"{function}() got unknown options {unknown}; the options are the class attributes "
            f"of {base.__name__}: {', '.join(known)}."
        )
    for name, value in options.items():
        check = checks.get(name)
        expected = None if check is None else check(value)
        if expected is not None:
            raise error(f"{function}() option {name!r} must be {expected} (got {_got(value)}).")


def check_machine_class(
    function: str, base: Any, root: type, name: Any, *, error: type[Exception]
) -> None:
    """Raise ``error`` unless ``base`` is ``root`` or a subclass and ``name`` (the class
    name to make) is a non-empty str: the arguments both machine factories take."""
    if not (isinstance(base, type) and issubclass(base, root)):
        raise error(
            f"{function}() option 'base' must be {root.__name__} or a subclass of it "
            f"(got {base!r})."
        )
    if not isinstance(name, str) or not name:
        raise error(
            f"{function}() option 'name' must be a non-empty str, the class name (got {name!r})."
        )


def _got(value: Any) -> str:
    text = repr(value)
    if len(text) > 120:
        text = text[:117] + "..."
    return f"{text} that is {with_article(type(value).__name__)}"


def with_article(noun: str) -> str:
    """``noun`` with its article: "an int", "a str", "an InvalidInput"."""
    return article(noun)


def instance(*types: type, what: str | None = None) -> Check:
    """The value is an instance of one of ``types``."""
    expected = what or " or ".join(article(t.__name__) for t in types)
    return lambda value: None if isinstance(value, types) else expected


def flag(value: Any) -> str | None:
    """True or False."""
    return None if isinstance(value, bool) else "True or False"


def whole(low: int) -> Check:
    """An int (not a bool) of at least ``low``."""
    expected = "a positive int" if low == 1 else f"an int >= {low}"

    def check(value: Any) -> str | None:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= low
        return None if ok else expected

    return check


def number(*, positive: bool) -> Check:
    """A finite int or float, above 0 (``positive``) or at least 0 (seconds)."""
    expected = "a finite number of seconds " + ("> 0" if positive else ">= 0")

    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return expected
        if not math.isfinite(value) or value < 0 or (positive and value == 0):
            return expected
        return None

    return check


def choice(*choices: str) -> Check:
    """One of the strings ``choices``."""
    expected = "one of " + ", ".join(repr(c) for c in choices)
    return lambda value: None if isinstance(value, str) and value in choices else expected


def optional_path(value: Any) -> str | None:
    """None, a str or an ``os.PathLike`` (a directory)."""
    ok = value is None or isinstance(value, str | os.PathLike)
    return None if ok else "None or a directory path (a str or os.PathLike)"


def session_names(value: Any) -> str | None:
    """A non-empty sequence of distinct, non-empty session ids (not one str)."""
    expected = (
        'a non-empty sequence of distinct, non-empty session ids, e.g. ("s1", "s2") '
        '(for one session write ("s1",))'
    )
    if isinstance(value, str | bytes) or not isinstance(value, Sequence) or not value:
        return expected
    if not all(isinstance(s, str) and s for s in value) or len(set(value)) != len(value):
        return expected
    return None


def sequence_of(item: Callable[[Any], bool], what: str) -> Check:
    """A sequence (not a str) whose items all pass ``item``."""
    expected = f"a sequence of {what}"

    def check(value: Any) -> str | None:
        if isinstance(value, str | bytes) or not isinstance(value, Sequence):
            return expected
        return None if all(item(v) for v in value) else expected

    return check


def mapping_of_flags(keys: Iterable[str]) -> Check:
    """A mapping from some of ``keys`` to True or False."""
    known = sorted(keys)
    expected = f"a mapping of some of {', '.join(known)} to True or False"

    def check(value: Any) -> str | None:
        if not isinstance(value, Mapping):
            return expected
        ok = all(k in known and isinstance(v, bool) for k, v in value.items())
        return None if ok else expected

    return check
