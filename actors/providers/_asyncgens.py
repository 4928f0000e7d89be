"""Close the SDKs' own async generators when a stream ends, instead of leaving them to GC.

The SDKs' streams are chains of async generators (the SSE decoder over the
response's bytes over the connection's). Some links are left suspended when
a stream finishes early on purpose (OpenAI's and Anthropic's stop at the end
marker without closing the generator below), fails, or is cancelled. An
abandoned async generator is finalized whenever the garbage collector gets
to it; trio then warns (``ResourceWarning``), and closing httpcore's
generator out of order can even fail (``aclose(): asynchronous generator is
already running``, printed to stderr).

``Tracked`` notes every async generator first iterated while it is
``active`` (only in the task that activated it: the hook reads a context
variable), holds it, and ``aclose``s them all in the order they started
when the stream is done — each runs its ``finally`` (closing the response)
at a known time, and none is left for the collector. The hook wraps the
running loop's own (trio's or asyncio's) and is installed once per thread.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from collections.abc import AsyncGenerator, Iterator
from typing import Any

import anyio

__all__ = ["Tracked"]

_TRACKED: contextvars.ContextVar[list[AsyncGenerator[Any, Any]] | None] = contextvars.ContextVar(
    "amber_tracked_asyncgens", default=None
)


def _install() -> None:
    """Wrap the thread's ``firstiter`` hook so ``Tracked`` sees new generators (once)."""
    hooks = sys.get_asyncgen_hooks()
    previous = hooks.firstiter
    if previous is not None and getattr(previous, "_amber_tracking", False):
        return

    def firstiter(agen: AsyncGenerator[Any, Any]) -> None:
        tracked = _TRACKED.get()
        if tracked is not None:
            tracked.append(agen)
        if previous is not None:
            previous(agen)

    firstiter._amber_tracking = True  # type: ignore[attr-defined]
    sys.set_asyncgen_hooks(firstiter=firstiter, finalizer=hooks.finalizer)


class Tracked:
    """The async generators one stream started (see the module docstring)."""

    __slots__ = ("generators",)

    def __init__(self) -> None:
        self.generators: list[AsyncGenerator[Any, Any]] = []

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """Note the generators first iterated inside this block (in this task only)."""
        token = self.enter()
        try:
            yield
        finally:
            self.leave(token)

    def enter(self) -> contextvars.Token[list[AsyncGenerator[Any, Any]] | None]:
        """Start noting (the fast form of ``active``, for a loop); ``leave`` with the token."""
        _install()
        return _TRACKED.set(self.generators)

    @staticmethod
    def leave(token: contextvars.Token[list[AsyncGenerator[Any, Any]] | None]) -> None:
        """Stop noting."""
        _TRACKED.reset(token)

    async def aclose(self) -> None:
        """Close every noted generator, outermost first, even while cancelled (bounded)."""
        generators, self.generators = self.generators, []
        if not generators:
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            for agen in generators:
                with contextlib.suppress(Exception):
                    await agen.aclose()
