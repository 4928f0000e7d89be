"""Nouns with their indefinite article or their count, for messages: "an int", "a 'str'",
"1 event", "2 events"."""

from __future__ import annotations

__all__ = ["article", "counted", "type_named"]

_SOUNDS_YOU = ("uni", "usa", "use", "usu", "uu", "utf")
"""Beginnings of nouns whose vowel sounds like "you" (``a Usage``, ``a UUID``)."""


def article(noun: str) -> str:
    """``noun`` with its indefinite article (``an Attachment``, ``a Message``, ``an 'int'``).

    The article follows the noun's first letter, past a quote (a type name shown
    with ``!r``) or a leading underscore.
    """
    word = noun.lstrip("'\"<_").lower()
    vowel = word[:1] in ("a", "e", "i", "o", "u") and not word.startswith(_SOUNDS_YOU)
    return f"{'an' if vowel else 'a'} {noun}"


def type_named(value: object) -> str:
    """The name of ``value``'s type, quoted, with its article: ``an 'int'``, ``a 'str'``."""
    return article(repr(type(value).__name__))


def counted(count: int, noun: str) -> str:
    """``count`` and ``noun``, plural unless it is one: ``1 event``, ``2 events``, ``0 turns``
    (for the regular nouns Amber counts: events, messages, turns, sessions)."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
