"""Text that is safe to print on a terminal: stored content is untrusted."""

from __future__ import annotations

__all__ = ["json_safe", "safe"]

_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
"""Unicode's ``Bidi_Control`` characters: marks, embeddings, overrides and isolates."""

_CONTROL = str.maketrans(
    {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if c not in (0x09, 0x0A)}
    | {c: f"\\u{c:04x}" for c in _BIDI}
)


def safe(text: str) -> str:
    """``text`` with control characters (but tabs and newlines) spelled out as ``\\xNN``,
    and Unicode's direction controls (U+202E …) as ``\\uNNNN``.

    Tool output and model text may hold escape sequences that clear the
    screen, retitle the window or forge hyperlinks; they are shown, never run.
    A direction override reorders what follows it on the line (``evil\\u202etxt.exe``
    shows as ``evilexe.txt``): it is shown too, never applied.
    """
    return text.translate(_CONTROL)


_JSON_ESCAPES = str.maketrans({c: f"\\u{c:04x}" for c in [0x7F, *range(0x80, 0xA0), *_BIDI]})


def json_safe(text: str) -> str:
    """JSON text (``orjson``'s, which escapes C0 controls) with DEL, the C1 controls and
    the direction controls written as ``\\uNNNN`` escapes: the same JSON value, shown
    rather than applied by the terminal."""
    return text.translate(_JSON_ESCAPES)
