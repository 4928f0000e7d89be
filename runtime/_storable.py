"""What a store can keep: the one rule every entry point applies.

A value is accepted only if it can be stored and read back unchanged. For
the parts that JSON and the stores do not take as they come, the rule is:

- **Text** is valid Unicode: no lone surrogates (``"\\ud800"``, or the
  ``"\\udcff"`` that ``os.listdir`` makes of a byte that is not UTF-8). Text a
  person typed is refused; text the system made (tool output, file names,
  subprocess output) is made storable by ``storable_text``, visibly.
- **Integers** in JSON-like values fit in 64 bits (``INT_MIN`` to ``INT_MAX``);
  seqs fit in a signed 64-bit column (``MAX_SEQ``).
- **Nesting** of JSON-like values (metadata, tool arguments, metrics) is at
  most ``MAX_DEPTH`` levels.
- **Session ids** are 1 to ``MAX_SESSION_ID_CHARS`` characters of valid
  Unicode without control characters (they are keys of store rows and
  appear on terminals).
- **An event** encodes to at most ``MAX_EVENT_BYTES`` of JSON.

docs/reliability.md lists the limits and where each is checked.
"""

from __future__ import annotations

import re
import reprlib
import unicodedata

from ._article import article, type_named

__all__ = [
    "INT_MAX",
    "INT_MIN",
    "MAX_DEPTH",
    "MAX_EVENT_BYTES",
    "MAX_SEQ",
    "MAX_SESSION_ID_CHARS",
    "session_id_problem",
    "shown",
    "storable_text",
    "text_problem",
]

INT_MIN = -(2**63)
"""The smallest integer a JSON-like value may hold."""
INT_MAX = 2**64 - 1
"""The largest integer a JSON-like value may hold (what the JSON codec round-trips)."""
MAX_SEQ = 2**63 - 1
"""The largest seq (and count) a store keeps: a signed 64-bit column."""
MAX_DEPTH = 64
"""How deeply JSON-like values (metadata, tool arguments, metrics) may nest."""
MAX_SESSION_ID_CHARS = 256
"""The longest session id."""
MAX_EVENT_BYTES = 64 * 1024 * 1024
"""The largest event a store takes, as JSON (64 MiB)."""

_SURROGATE = re.compile("[\ud800-\udfff]")


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored (it holds a lone surrogate), or None if it can.

    The answer names the first bad character and its position, e.g.
    ``"a lone surrogate '\\udcff' at index 6"``.
    """
    if value.isascii():
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"a lone surrogate {value[exc.start]!r} at index {exc.start}"
    return None


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    # U+DC80..U+DCFF is how Python's surrogateescape carries a byte that was not
    # UTF-8 (os.listdir, os.environ, subprocess output): show the byte.
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def storable_text(value: str) -> str:
    """``value`` with every lone surrogate spelled out, so that it can be stored.

    A surrogate escape (a byte that was not UTF-8, as ``os.listdir`` or
    ``surrogateescape`` decoding gives it) becomes ``\\xNN``, the byte it
    stood for; any other lone surrogate becomes ``\\uNNNN``. Text that is
    valid already is returned as it is (the same object).
    """
    if text_problem(value) is None:
        return value
    return _SURROGATE.sub(_visible, value)


_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother = 3, 60, 60


def shown(value: object) -> str:
    """``value`` for an error message: a short repr, safe on anything (deep, huge, odd)."""
    if type(value) is int and not -(10**30) < value < 10**30:
        return f"an integer of {value.bit_length()} bits"
    try:
        return _SHORT.repr(value)
    except Exception:  # a repr that fails (or recurses) must not hide the real problem
        return article(type(value).__name__)


def session_id_problem(value: object) -> str | None:
    """Why ``value`` is not a usable session id, or None if it is.

    A session id is a str of 1 to ``MAX_SESSION_ID_CHARS`` characters, valid
    Unicode, with no control characters (NUL, newline, escape …).
    """
    if not isinstance(value, str):
        return f"it must be a str (got {shown(value)} that is {type_named(value)})"
    if not value:
        return "it must not be empty"
    if len(value) > MAX_SESSION_ID_CHARS:
        return f"it has {len(value)} characters, more than the limit of {MAX_SESSION_ID_CHARS}"
    problem = text_problem(value)
    if problem is not None:
        return f"it holds {problem}"
    if not value.isprintable():
        for index, char in enumerate(value):
            if unicodedata.category(char) == "Cc":
                return f"it holds the control character {char!r} at index {index}"
    return None
