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

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs
import orjson

from ._chunks import describe_chunk
from ._errors import InvalidArgument
from ._message import Usage
from ._stream import (
    Chunk,
    MessageFinish,
    MessageStart,
    ModelRequest,
    ModelRetry,
    ReasoningDelta,
    RequestSent,
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


_NOT_A_RESPONSE = (
    "must be a Response (built with reply(), call(), error() … or Response([step, …]))"
)
_KINDS = (
    "a chunk (MessageStart, TextDelta, ReasoningDelta, ToolCallDelta, MessageFinish, "
    "RequestSent, ModelRetry), a Delay, a Fail or a Hang"
)
_STR, _OPTIONAL_STR, _OPTIONAL_INT = "a str", "a str or None", "an int or None"
_FIELDS: dict[type, tuple[tuple[str, str], ...]] = {
    MessageStart: (("id", _OPTIONAL_STR), ("model", _OPTIONAL_STR), ("provider", _OPTIONAL_STR)),
    TextDelta: (
        ("text", _STR), ("part", _OPTIONAL_INT), ("signature", _OPTIONAL_STR),
        ("item_id", _OPTIONAL_STR),
    ),
    ReasoningDelta: (
        ("text", _STR), ("part", _OPTIONAL_INT), ("signature", _OPTIONAL_STR),
        ("redacted", "a bool"), ("item_id", _OPTIONAL_STR),
    ),
    ToolCallDelta: (
        ("index", "an int >= 0"), ("id", _OPTIONAL_STR), ("name", _OPTIONAL_STR),
        ("arguments", _STR), ("signature", _OPTIONAL_STR), ("item_id", _OPTIONAL_STR),
    ),
    MessageFinish: (("usage", "a Usage or None"), ("stop_reason", _OPTIONAL_STR)),
    Fail: (("message", _STR), ("error_type", _STR)),
    RequestSent: (),
    ModelRetry: (),
    Hang: (),
}  # fmt: skip
"""The fields of each step a script may hold, and what each must be."""


def _fits(value: object, expected: str) -> bool:
    if expected == _STR:
        return isinstance(value, str)
    if expected == _OPTIONAL_STR:
        return value is None or isinstance(value, str)
    if expected == _OPTIONAL_INT:
        return value is None or (isinstance(value, int) and not isinstance(value, bool))
    if expected == "an int >= 0":
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0
    if expected == "a bool":
        return isinstance(value, bool)
    return value is None or isinstance(value, Usage)  # "a Usage or None"


def _delay_fits(seconds: object) -> bool:
    return (
        isinstance(seconds, int | float)
        and not isinstance(seconds, bool)
        and math.isfinite(seconds)
        and seconds >= 0
    )


def _step_problem(step: object) -> str | None:
    """What is wrong with one step of a scripted response (None: nothing)."""
    if isinstance(step, Delay):
        if _delay_fits(step.seconds):
            return None
        return f": Delay.seconds must be a finite number of seconds >= 0; got {step.seconds!r}."
    fields = _FIELDS.get(type(step))
    if fields is None:
        return f" must be {_KINDS}; got {describe_chunk(step)}."
    for name, expected in fields:
        value = getattr(step, name)
        if not _fits(value, expected):
            field = f"{type(step).__name__}.{name}"
            return f": {field} must be {expected}; got {describe_chunk(value)}."
    return None


def check_response(value: object, where: str, *, strict: bool = True) -> Response:
    """``value`` if it is a response a script may hold; else ``InvalidArgument`` naming
    ``where`` (``"ScriptModel script[2]"``), the step at fault, what it must be and what
    it is.

    ``strict``: check every step (its kind and its fields, and that none follows a ``Fail``
    or a ``Hang``, where it would never be streamed); else only that ``value`` is a
    ``Response`` and its ``Delay``s are finite seconds >= 0 (the chunks a model yields are
    the runtime's to judge, as a real model's are).

    What a real model may answer (a tool that does not exist, arguments that do not fit,
    malformed JSON, an empty answer, a stream cut short) is a valid script: the runtime
    answers it as it answers a real model.
    """
    if not isinstance(value, Response):
        raise InvalidArgument(f"{where} {_NOT_A_RESPONSE}; got {describe_chunk(value)}.")
    ended: int | None = None
    for position, step in enumerate(value.steps):
        if not strict:
            if isinstance(step, Delay) and not _delay_fits(step.seconds):
                raise InvalidArgument(f"{where}.steps[{position}]{_step_problem(step)}")
            continue
        if ended is not None:
            stop = type(value.steps[ended]).__name__
            raise InvalidArgument(
                f"{where}.steps[{position}] comes after the {stop} at steps[{ended}] and is "
                f"never streamed; end the response at that {stop}, or move the step before "
                "it."
            )
        problem = _step_problem(step)
        if problem is not None:
            raise InvalidArgument(f"{where}.steps[{position}]{problem}")
        if isinstance(step, Fail | Hang):
            ended = position
    return value
