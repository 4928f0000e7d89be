"""attrs field validators shared by messages, events and their parts.

Each ``Checks`` raises one error class, so a bad message field raises
``InvalidMessage`` and a bad event field ``InvalidEvent``, with the same words:
``'{Class}.{field} must be … (got …)'``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import attrs

from ._errors import InvalidEvent, InvalidMessage

__all__ = ["EVENT_CHECKS", "MESSAGE_CHECKS", "Checks"]


def _kind(value: object) -> str:
    return f"{value!r} that is a {type(value).__name__!r}"


@attrs.frozen
class Checks:
    """Validators that raise ``error``."""

    error: type[Exception]
    """The exception class every check raises."""

    def _fail(
        self, instance: object, attribute: attrs.Attribute[Any], wanted: str, got: str
    ) -> Exception:
        return self.error(
            f"{type(instance).__name__}.{attribute.name} must be {wanted} (got {got})."
        )

    def non_empty_str(
        self, instance: object, attribute: attrs.Attribute[Any], value: object
    ) -> None:
        """A str with at least one character."""
        if not isinstance(value, str) or not value:
            raise self._fail(instance, attribute, "a non-empty str", _kind(value))

    def string(self, instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        """A str (empty allowed)."""
        if not isinstance(value, str):
            raise self._fail(instance, attribute, "a str", _kind(value))

    def optional_string(
        self, instance: object, attribute: attrs.Attribute[Any], value: object
    ) -> None:
        """A str or None."""
        if value is not None and not isinstance(value, str):
            raise self._fail(instance, attribute, "a str or None", _kind(value))

    def boolean(self, instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        """A bool."""
        if not isinstance(value, bool):
            raise self._fail(instance, attribute, "a bool", _kind(value))

    def count(self, instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        """A non-negative int (not a bool)."""
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self._fail(instance, attribute, "a non-negative int", repr(value))

    def optional_count(
        self, instance: object, attribute: attrs.Attribute[Any], value: object
    ) -> None:
        """A non-negative int or None."""
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self._fail(instance, attribute, "a non-negative int or None", repr(value))

    def aware(self, instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        """A timezone-aware datetime."""
        if not isinstance(value, datetime) or value.utcoffset() is None:
            raise self.error(
                f"{type(instance).__name__}.{attribute.name} must be a timezone-aware datetime "
                f"(got {value!r}); use datetime.now(timezone.utc)."
            )


MESSAGE_CHECKS = Checks(InvalidMessage)
"""Checks for messages and their parts."""
EVENT_CHECKS = Checks(InvalidEvent)
"""Checks for events."""
