"""Model scripts: what a scripted model streams, as data (``Response``, ``Delay``, ``Fail``).

A script is a list of responses, one per model call, each a list of steps:
chunks to stream, pauses, failures, or a stall that never ends. Helpers
build the usual ones::

    script = [
        call("run_shell_command", {"command": "pytest -q"}, reasoning="Run the tests."),
        reply("All 5 tests pass."),
    ]

Tool-call arguments are streamed in fragments and text in pieces, as real
providers do. ``actors.ScriptedModel`` streams a script on real time; the
simulator in ``runtime.testing`` streams the same script on simulated time,
so one scenario runs the same way in both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs
import orjson

from ._message import Usage
from ._stream import (
    Chunk,
    MessageFinish,
    MessageStart,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
)

__all__ = [
    "Delay",
    "Fail",
    "Hang",
    "Response",
    "Script",
    "ScriptStep",
    "call",
    "calls",
    "empty",
    "error",
    "hang",
    "reply",
]


@attrs.frozen
class Delay:
    """Pause the stream: a slow model, or a window for interrupts."""

    seconds: float
    """How long."""


@attrs.frozen
class Fail:
    """Fail the call at this point of the stream (a ``ModelFailure`` in ``ScriptedModel``)."""

    message: str = "scripted model failure"
    """The error text."""
    error_type: str = "ModelFailure"
    """The error's type name, as the runtime records it (``ModelFailure: <message>``)."""


@attrs.frozen
class Hang:
    """Stall here forever (until cancelled): a model that never finishes."""


ScriptStep = Chunk | Delay | Fail | Hang
"""One step of a scripted response."""


def _steps(value: Iterable[ScriptStep]) -> tuple[ScriptStep, ...]:
    return tuple(value)


@attrs.frozen
class Response:
    """One model call's worth of steps."""

    steps: tuple[ScriptStep, ...] = attrs.field(converter=_steps)
    """Streamed in order."""

    def then(self, *more: ScriptStep) -> Response:
        """This response with ``more`` steps appended."""
        return Response((*self.steps, *more))

    def after(self, seconds: float) -> Response:
        """This response, preceded by a pause of ``seconds``."""
        return Response((Delay(seconds), *self.steps))


def _pieces(text: str, size: int) -> list[str]:
    if not text:
        return []
    return [text[i : i + size] for i in range(0, len(text), size)]


def reply(
    text: str,
    *,
    reasoning: str = "",
    piece: int = 16,
    usage: Usage | None = None,
    id: str | None = None,
    delay: float = 0.0,
) -> Response:
    """A final text answer, streamed in pieces of ``piece`` characters.

    ``delay`` pauses between pieces (a window for interrupts mid-stream).
    """
    steps: list[ScriptStep] = [MessageStart(id=id)]
    for part in _pieces(reasoning, piece):
        steps.append(ReasoningDelta(text=part))
        if delay:
            steps.append(Delay(delay))
    for part in _pieces(text, piece):
        steps.append(TextDelta(text=part))
        if delay:
            steps.append(Delay(delay))
    steps.append(MessageFinish(usage=usage or _usage(text + reasoning), stop_reason="end_turn"))
    return Response(tuple(steps))


def calls(
    tool_calls: Sequence[tuple[str, Mapping[str, Any] | str]],
    *,
    reasoning: str = "",
    text: str = "",
    fragments: int = 3,
    usage: Usage | None = None,
    id: str | None = None,
) -> Response:
    """A response asking for several tools; arguments stream in ``fragments`` pieces.

    An argument given as a str is sent as is (use it for malformed JSON).
    """
    steps: list[ScriptStep] = [MessageStart(id=id)]
    steps += [ReasoningDelta(text=p) for p in _pieces(reasoning, 16)]
    steps += [TextDelta(text=p) for p in _pieces(text, 16)]
    written = reasoning + text
    for index, (name, arguments) in enumerate(tool_calls):
        raw = arguments if isinstance(arguments, str) else orjson.dumps(dict(arguments)).decode()
        written += name + raw
        size = max(1, -(-len(raw) // max(1, fragments)))
        parts = _pieces(raw, size) or [""]
        call_id = f"call_{id}_{index}" if id else None
        steps.append(ToolCallDelta(index=index, id=call_id, name=name, arguments=parts[0]))
        steps += [ToolCallDelta(index=index, arguments=p) for p in parts[1:]]
    steps.append(MessageFinish(usage=usage or _usage(written), stop_reason="tool_use"))
    return Response(tuple(steps))


def call(
    name: str,
    arguments: Mapping[str, Any] | str | None = None,
    *,
    reasoning: str = "",
    text: str = "",
    fragments: int = 3,
    usage: Usage | None = None,
    id: str | None = None,
) -> Response:
    """A response asking for one tool."""
    return calls(
        [(name, arguments if arguments is not None else {})],
        reasoning=reasoning,
        text=text,
        fragments=fragments,
        usage=usage,
        id=id,
    )


def error(message: str = "scripted model failure", *, after: Iterable[ScriptStep] = ()) -> Response:
    """A call that fails (after streaming ``after``, if given)."""
    return Response((*after, Fail(message)))


def empty() -> Response:
    """A call that answers nothing at all (the runtime nudges and retries)."""
    return Response((MessageStart(), MessageFinish(usage=Usage(), stop_reason="end_turn")))


def hang(*, after: Iterable[ScriptStep] = ()) -> Response:
    """A call that never finishes (after streaming ``after``, if given)."""
    return Response((*after, Hang()))


def _usage(written: str) -> Usage:
    return Usage(input_tokens=0, output_tokens=max(1, len(written) // 4))


Script = Sequence[Response] | Callable[[ModelRequest], Response]
"""A list of responses (one per call, in order) or a function of the request."""
