"""Text that is safe to print on a terminal: stored content is untrusted."""

from __future__ import annotations

__all__ = ["safe"]

_CONTROL = str.maketrans(
    {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if c not in (0x09, 0x0A)}
)


def safe(text: str) -> str:
    """``text`` with control characters (but tabs and newlines) spelled out as ``\\xNN``.

    Tool output and model text may hold escape sequences that clear the
    screen, retitle the window or forge hyperlinks; they are shown, never run.
    """
    return text.translate(_CONTROL)
