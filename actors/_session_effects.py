"""What the effects loop tells a session actor: a model's answer, chunk by chunk
(``_model_effect``), and its timers firing (``_Wake``).

Both are told with ``_tell``, which drops what is told to an actor that has stopped
(a session passivated or closed while its model streamed or its timer slept).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import attrs
import pykka
import trio

from runtime import ModelChunk, ModelEnded, ModelRequest, ModelRetry
from runtime._notices import model_error_type

from ._services import Services


@attrs.frozen
class _Wake:
    """A timer of this actor fired (told by the effects loop)."""

    name: str
    """The timer's name."""
    token: int
    """Which setting of that timer fired; an older one is stale and ignored."""


def _tell(ref: pykka.ActorRef[Any], message: Any) -> None:
    with contextlib.suppress(pykka.ActorDeadError):
        ref.tell(message)


def _model_effect(
    model: Any, request: ModelRequest, ref: pykka.ActorRef[Any], run_id: str, svc: Services
) -> Callable[[], Any]:
    """Stream ``model``'s answer, telling each chunk (stamped when it came), then the end."""

    async def effect() -> None:
        error: str | None = None
        error_type: str | None = None
        retries: tuple[ModelRetry, ...] = ()
        try:
            stream: AsyncIterator[Any] = model.stream(request)
            try:
                async for chunk in stream:
                    _tell(ref, ModelChunk(run_id=run_id, chunk=chunk, **svc.stamp()))
            finally:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    # Close the stream (an HTTP response, say) even when cancelled; bounded,
                    # so a stream that will not close cannot hold the loop.
                    with trio.move_on_after(1.0) as scope, contextlib.suppress(Exception):
                        scope.shield = True
                        await aclose()
        except Exception as exc:
            error = f"{type(exc).__name__}: {str(exc) or type(exc).__name__}"
            error_type = model_error_type(exc)
            retries = tuple(r for r in getattr(exc, "retries", ()) if isinstance(r, ModelRetry))
        _tell(
            ref,
            ModelEnded(
                run_id=run_id, error=error, error_type=error_type, retries=retries, **svc.stamp()
            ),
        )

    return effect
