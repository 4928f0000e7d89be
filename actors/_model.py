"""The model protocol: a request in, a stream of chunks out (DESIGN §7).

A model is anything with an async ``stream(request)`` that yields the chunks
of ``runtime`` (``MessageStart``, ``TextDelta``, ``ReasoningDelta``,
``ToolCallDelta``, ``MessageFinish``). An exception raised by the stream is a
model failure. The turn machine assembles the chunks (``StreamAssembler``),
forwards the deltas live and stores only the assembled result.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from runtime import Chunk, ModelRequest

__all__ = ["Model"]


@runtime_checkable
class Model(Protocol):
    """A streaming chat model."""

    def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        """Stream the answer to ``request`` (runs in the trio effects thread)."""
        ...
