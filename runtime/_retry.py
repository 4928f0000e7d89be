"""``ModelRetry``: an attempt the provider refused, as streamed and as audit rows keep it.

Apart from the other chunks (``runtime._chunks``, which re-exports it) because audit
rows and events hold it: reading a store loads this class, not the stream's.
"""

from __future__ import annotations

import attrs

from ._repr import value_repr

__all__ = ["ModelRetry"]


@attrs.frozen(kw_only=True)
class ModelRetry:
    """The provider refused an attempt (rate limit, overload, 5xx); the SDK tries again."""

    __repr__ = value_repr

    attempt: int
    """The attempt that failed: 1 for the first request."""
    status: int | None = None
    """Its HTTP status; None for a connection error or a timeout."""
    error: str = ""
    """What went wrong, in the provider's words when it gave any."""
    delay: float | None = None
    """Seconds waited before the next attempt (``retry-after`` when the provider sent one)."""
