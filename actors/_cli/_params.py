"""The click parameter types and callbacks the commands share: seqs, seconds, session ids.

Each turns a bad value into click's usage error (exit 2) naming the parameter, what is
wrong, and what to pass.
"""

from __future__ import annotations

import click

from runtime import InvalidArgument, InvalidInput, check_session_id
from runtime._storable import session_id_problem

__all__ = [
    "SEQ_HELP",
    "Port",
    "Seconds",
    "parse_seq",
    "read_seq",
    "session_argument",
    "session_id_option",
]

SEQ_HELP = (
    "a number (0 is the empty state before the first event), a negative number to count back "
    "from the head (-1 is the head), or 'head'"
)


def session_id_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A click callback: a session id a new session can have (``USAGE``, naming the option
    and what is wrong, if it cannot), or None."""
    if value is None:
        return None
    try:
        return check_session_id(value)
    except InvalidInput as exc:
        raise click.BadParameter(str(exc)) from None


def session_argument(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A click callback: the id of a stored session as given (``SESSION``), or ``USAGE``
    naming what no session id can be (empty, a control character), or None.

    Only that is refused: a blank id, refused for a new session, may still be stored."""
    if value is None:
        return None
    problem = session_id_problem(value)
    if problem is not None:
        raise click.BadParameter(
            f"{value!r} is no session's id: {problem}. Pass the id of a stored session, as "
            "'amber sessions' lists it."
        )
    return value


class Seconds(click.ParamType):  # type: ignore[type-arg]  # generic only in newer click
    """A number of seconds, parsed by ``actors._seconds.time_limit`` (the one parser every
    option taking seconds shares): finite, from ``minimum`` to ``maximum`` (100 years unless
    given); anything else is a usage error naming the option and the range."""

    name = "seconds"

    def __init__(
        self, minimum: float = 0.0, *, above_minimum: bool = False, maximum: float | None = None
    ) -> None:
        self.minimum = minimum
        self.above_minimum = above_minimum
        self.maximum = maximum

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        """The value as a float, or a usage error saying what is taken."""
        from actors._seconds import time_limit

        what = param.opts[0] if param is not None and param.opts else "the value"
        try:
            if self.maximum is not None:
                return time_limit(
                    value,
                    what=what,
                    minimum=self.minimum,
                    above_minimum=self.above_minimum,
                    maximum=self.maximum,
                )
            return time_limit(
                value, what=what, minimum=self.minimum, above_minimum=self.above_minimum
            )
        except InvalidArgument as exc:
            self.fail(str(exc), param, ctx)


def read_seq(value: str) -> int:
    """A seq as typed (the CLI's options, the web viewer's parameters): a number, negative
    from the head, or ``head`` (-1); checked against the session later.

    Raises:
        InvalidArgument: not a seq, or ``-0`` (the sentence says what to pass).
    """
    text = value.strip().lower()
    if text == "head":
        return -1
    # ASCII digits only, as documented: int() would also take 1_0 (10), +5, other
    # scripts' digits.
    digits = text[1:] if text.startswith("-") else text
    try:
        seq = int(text) if digits.isascii() and digits.isdigit() else None
    except ValueError:  # past 4,300 digits
        seq = None
    if seq is None:
        meant = _python_int(text)
        hint = "" if meant is None else f" A seq is ASCII digits only: did you mean {meant}?"
        raise InvalidArgument(f"{value!r} is not a seq: pass {SEQ_HELP}.{hint}")
    if seq == 0 and text.startswith("-"):
        # Counting back from the head starts at -1: -0 would silently be the empty state.
        raise InvalidArgument(
            f"{value!r} is not a seq: 0 is the empty state before the first event and -1 the "
            "head; pass 0, -1 or 'head'."
        )
    return seq


def _python_int(text: str) -> int | None:
    """What Python's ``int`` reads ``text`` as (``1_0``, ``+5``, other scripts' digits),
    or None."""
    try:
        return int(text)
    except ValueError:
        return None


def parse_seq(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """A click callback: a seq as an int (``read_seq``); ``head`` is -1."""
    if value is None:
        return None
    try:
        return read_seq(value)
    except InvalidArgument as exc:
        raise click.BadParameter(str(exc)) from None


class Port(click.ParamType):  # type: ignore[type-arg]  # generic only in newer click
    """A TCP port: a whole number from 0 (any free port) to 65535; anything else is a
    usage error saying so (``click.IntRange`` said "'abc' is not a valid integer range")."""

    name = "port"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> int:
        """The port as an int, or a usage error saying what a port is."""
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 65535:
            return value
        text = value.strip() if isinstance(value, str) else ""
        if text.isascii() and text.isdigit() and len(text) <= 5 and int(text) <= 65535:
            return int(text)
        raise click.BadParameter(
            f"{value!r} is not a port: pass a whole number from 1 to 65535, or 0 for any free "
            "port.",
            ctx=ctx,
            param=param,
        )
