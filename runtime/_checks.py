"""attrs field validators shared by messages, events and their parts.

Each ``Checks`` raises one error class, so a bad message field raises
``InvalidMessage`` and a bad event field ``InvalidEvent``, with the same words:
``'{Class}.{field} must be … (got …)'``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import attrs

from ._article import type_named
from ._errors import InvalidEvent, InvalidMessage
from ._repr import value_repr
from ._storable import MAX_SEQ, MAX_SESSION_ID_CHARS, session_id_problem, shown, text_problem

__all__ = ["EVENT_CHECKS", "MESSAGE_CHECKS", "Checks", "to_milliseconds"]


def _kind(value: object) -> str:
    return f"{shown(value)} that is {type_named(value)}"


def _number(value: object) -> str:
    if isinstance(value, int) and not -(10**30) < value < 10**30:
        return f"an integer of {value.bit_length()} bits"
    return repr(value)


@attrs.frozen
class Checks:
    """Validators that raise ``error``."""

    __repr__ = value_repr

    error: type[Exception]
    """The exception class every check raises."""

    def _fail(
        self, instance: object, attribute: attrs.Attribute[Any], wanted: str, got: str
    ) -> Exception:
        return self.error(
            f"{type(instance).__name__}.{attribute.name} must be {wanted} (got {got})."
        )

    def _text(self, instance: object, attribute: attrs.Attribute[Any], value: str) -> None:
        problem = text_problem(value)
        if problem is not None:
            raise self.error(
                f"{type(instance).__name__}.{attribute.name} must be valid Unicode text (got "
                f"{problem}); lone surrogates cannot be stored. Decode bytes with "
                "errors='replace', or pass the text through runtime.storable_text()."
            )

    def non_empty_str(
        self, instance: object, attribute: attrs.Attribute[Any], value: object
    ) -> None:
        """A str with at least one character, valid Unicode."""
        if type(value) is str and value and value.isascii():
            return  # the common case, checked fast
        if not isinstance(value, str) or not value:
            raise self._fail(instance, attribute, "a non-empty str", _kind(value))
        self._text(instance, attribute, value)

    def string(self, instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        """A str (empty allowed), valid Unicode."""
        if type(value) is str and value.isascii():
            return  # the common case, checked fast
        if not isinstance(value, str):
            raise self._fail(instance, attribute, "a str", _kind(value))
        self._text(instance, attribute, value)

    def optional_string(
        self, instance: object, attribute: attrs.Attribute[Any], value: object
    ) -> None:
        """A str (valid Unicode) or None."""
        if value is None or (type(value) is str and value.isascii()):
            return
        if not isinstance(value, str):
            raise self._fail(instance, attribute, "a str or None", _kind(value))
        self._text(instance, attribute, value)

    def session_id(self, instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        """A session id: 1 to 256 characters of valid Unicode, no control characters."""
        if (
            type(value) is str
            and 0 < len(value) <= MAX_SESSION_ID_CHARS
            and value.isascii()
            and value.isprintable()
        ):
            return  # the common case, checked fast (printable ASCII has no control character)
        if not isinstance(value, str) or not value:
            raise self._fail(instance, attribute, "a non-empty str", _kind(value))
        problem = session_id_problem(value)
        if problem is not None:
            raise self.error(
                f"{type(instance).__name__}.{attribute.name} must be a session id: 1 to 256 "
                f"characters of valid Unicode without control characters, but {problem}."
            )

    def boolean(self, instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        """A bool."""
        if not isinstance(value, bool):
            raise self._fail(instance, attribute, "a bool", _kind(value))

    def count(self, instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        """A non-negative int (not a bool) that fits in a signed 64-bit column."""
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self._fail(instance, attribute, "a non-negative int", shown(value))
        if value > MAX_SEQ:
            raise self._fail(instance, attribute, "a non-negative int below 2**63", _number(value))

    def optional_count(
        self, instance: object, attribute: attrs.Attribute[Any], value: object
    ) -> None:
        """A non-negative int below 2**63, or None."""
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self._fail(instance, attribute, "a non-negative int or None", shown(value))
        if value > MAX_SEQ:
            raise self._fail(
                instance, attribute, "a non-negative int below 2**63 or None", _number(value)
            )

    def str_items(self, instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        """An iterable of valid str (tuple or pvector of ids)."""
        items: Any = value
        for i, item in enumerate(items):
            if not isinstance(item, str):
                raise self._fail(instance, attribute, "a list of str", f"item {i}: {_kind(item)}")
            problem = text_problem(item)
            if problem is not None:
                raise self.error(
                    f"{type(instance).__name__}.{attribute.name}[{i}] must be valid Unicode "
                    f"text (got {problem})."
                )

    def str_map(self, instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        """A mapping of valid str to valid str."""
        pairs: Any = value
        for key, item in pairs.items():
            for part in (key, item):
                if not isinstance(part, str):
                    raise self._fail(
                        instance, attribute, "a map of str to str", f"{_kind(part)} in it"
                    )
                problem = text_problem(part)
                if problem is not None:
                    raise self.error(
                        f"{type(instance).__name__}.{attribute.name} must map valid Unicode "
                        f"text (got {problem} in {key!r})."
                    )

    def milliseconds(
        self, instance: object, attribute: attrs.Attribute[Any], value: object
    ) -> None:
        """A finite non-negative float (milliseconds), or None."""
        if value is None:
            return
        if type(value) is not float or not 0 <= value < float("inf"):
            raise self.error(
                f"{type(instance).__name__}.{attribute.name} must be a finite non-negative "
                f"number of milliseconds or None (got {_number(value)}); measure it with "
                "time.monotonic()."
            )

    def aware(self, instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        """A timezone-aware datetime."""
        if type(value) is datetime and value.tzinfo is UTC:
            return  # the common case, told by identity: UTC has an offset (zero)
        self.any_aware(instance, attribute, value)

    def any_aware(self, instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        """``aware``'s general check, for any datetime and any tzinfo."""
        if not isinstance(value, datetime) or value.utcoffset() is None:
            raise self.error(
                f"{type(instance).__name__}.{attribute.name} must be a timezone-aware datetime "
                f"(got {shown(value)}); use datetime.now(timezone.utc)."
            )


def to_milliseconds(value: object) -> object:
    """attrs converter: an int or float duration as a float (so it encodes one way).

    Anything else is left for the ``milliseconds`` validator to refuse.
    """
    if type(value) is int and -(2**53) <= value <= 2**53:
        return float(value)
    if isinstance(value, float) and type(value) is not float:
        return float.__float__(value)
    return value


MESSAGE_CHECKS = Checks(InvalidMessage)
"""Checks for messages and their parts."""
EVENT_CHECKS = Checks(InvalidEvent)
"""Checks for events."""
