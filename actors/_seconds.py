"""Numbers of seconds given by people: one parser for every option that takes them.

``amber recover --older-than``, ``amber resume --timeout``, ``amber worker --lease-ttl``
and ``--poll`` (and their keys in a worker's config file) all go through
``time_limit``. It takes a finite number in a range that ends at ``MAX_SECONDS``
(100 years) and refuses anything else: ``inf`` and ``nan`` (a wait that never ends, a
comparison that is never true), negative numbers, and absurd ones like ``1e400`` or
``10**400`` (a float that overflows to ``inf``, a ``timedelta`` or a lock's timeout that
raises ``OverflowError``).
"""

from __future__ import annotations

import math

from runtime import InvalidArgument

from ._errors import InvalidConfig

__all__ = ["MAX_SECONDS", "time_limit", "wait_limit"]

MAX_SECONDS = 100 * 365 * 24 * 3600
"""The most seconds any option takes (100 years): a cutoff that far back, or a wait that
long, is still a date and a timeout every clock and lock can hold."""


def time_limit(
    value: object,
    *,
    what: str,
    minimum: float = 0.0,
    above_minimum: bool = False,
    maximum: float = MAX_SECONDS,
) -> float:
    """``value`` (a number, or its text as typed) as a float number of seconds.

    Args:
        value: What was given: a str as typed on the command line, or an int or float
            (a config file's value).
        what: The name to put in the error: the option (``--timeout``) or the key.
        minimum: The smallest number taken.
        above_minimum: Whether the minimum itself is refused (a timeout of 0).
        maximum: The largest number taken (``MAX_SECONDS``).

    Raises:
        InvalidArgument: ``value`` is not a finite number in the range (the message says
            which range, and what came).
    """
    number: float | None = None
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    elif isinstance(value, int | float) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:  # an int beyond a float (10**400)
            number = None
    low_ok = number is not None and (number > minimum if above_minimum else number >= minimum)
    if number is None or not math.isfinite(number) or not low_ok or number > maximum:
        low = f"over {minimum:g} and at most" if above_minimum else f"from {minimum:g} to"
        high = f"{maximum:g}" if maximum != MAX_SECONDS else f"{MAX_SECONDS} (100 years)"
        shown = repr(value)
        if len(shown) > 40:
            shown = shown[:39] + "…"
        raise InvalidArgument(
            f"{what} must be a number of seconds {low} {high}; got {shown}. Pass a plain "
            "number in that range, such as 300."
        )
    return number


def wait_limit(
    value: object,
    *,
    what: str,
    nothing_done: bool = False,
    none_is: str = "to wait as long as it takes",
) -> float | None:
    """A timeout passed to a Runtime method (``ask``, ``wait_idle``): a positive number of
    seconds up to ``MAX_SECONDS``, or None (no limit).

    Args:
        value: What the caller passed.
        what: The method, named in the error (``ask``).
        nothing_done: Say in the error that nothing was sent.
        none_is: What None means, for the error.

    Raises:
        InvalidConfig: ``value`` is not such a number (a str, a bool, NaN, infinite, 0 or
            less, or more than a lock can wait for, like ``10**400``).
    """
    if value is None:
        return None
    if (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and 0 < value <= MAX_SECONDS  # False for NaN
    ):
        return float(value)
    shown = repr(value)
    if len(shown) > 40:
        shown = shown[:39] + "…"
    raise InvalidConfig(
        f"{what}()'s timeout must be a positive number of seconds, at most {MAX_SECONDS} "
        f"(100 years), or None {none_is} (got {shown})"
        f"{'; nothing was sent' if nothing_done else ''}. Pass one like timeout=30."
    )
