"""``ScriptedModel``: a deterministic streaming model for tests and the demo.

A script is a list of responses, one per model call, each a list of steps:
chunks to stream, pauses, and failures. Helpers build the usual ones::

    model = ScriptedModel([
        call("run_shell_command", {"command": "pytest -q"}, reasoning="Run the tests."),
        reply("All 5 tests pass."),
    ])

Tool-call arguments are streamed in fragments and text in pieces, as real
providers do, so the runtime's assembly is exercised. A script may also be a
function of the request, for models that must react to what they see.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs
import orjson
import trio

from runtime import (
    Chunk,
    MessageFinish,
    MessageStart,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
)

from ._errors import InvalidConfig, ModelFailure, ScriptExhausted

__all__ = [
    "Delay",
    "Fail",
    "Response",
    "ScriptedModel",
    "call",
    "calls",
    "empty",
    "error",
    "reply",
]


@attrs.frozen
class Delay:
    """Pause the stream (``trio.sleep``): a slow model, or a window for interrupts."""

    seconds: float
    """How long."""


@attrs.frozen
class Fail:
    """Raise ``ModelFailure`` at this point of the stream."""

    message: str = "scripted model failure"
    """The error text."""


Step = Chunk | Delay | Fail
"""One step of a scripted response."""


def _steps(value: Iterable[Step]) -> tuple[Step, ...]:
    return tuple(value)


@attrs.frozen
class Response:
    """One model call's worth of steps."""

    steps: tuple[Step, ...] = attrs.field(converter=_steps)
    """Streamed in order."""

    def then(self, *more: Step) -> Response:
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
    steps: list[Step] = [MessageStart(id=id)]
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
    steps: list[Step] = [MessageStart(id=id)]
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


def error(message: str = "scripted model failure", *, after: Iterable[Step] = ()) -> Response:
    """A call that fails (after streaming ``after``, if given)."""
    return Response((*after, Fail(message)))


def empty() -> Response:
    """A call that answers nothing at all (the runtime nudges and retries)."""
    return Response((MessageStart(), MessageFinish(usage=Usage(), stop_reason="end_turn")))


def _usage(written: str) -> Usage:
    return Usage(input_tokens=0, output_tokens=max(1, len(written) // 4))


Script = Sequence[Response] | Callable[[ModelRequest], Response]
"""A list of responses (one per call, in order) or a function of the request."""


class ScriptedModel:
    """A deterministic ``Model`` that streams scripted responses.

    Args:
        script: the responses, one per model call in order, or a function
            that picks the response for each request.
        fallback: what to answer once a list script is used up; None raises
            ``ScriptExhausted`` in the stream (the turn ends as error).
        keep_requests: how many of the latest requests ``requests`` keeps
            (each holds a state and a view); None keeps them all.

    ``requests`` records the requests it got (thread-safe), so a test can
    check what the model was shown.
    """

    name = "scripted"
    """The model's name (recorded in model-call audit rows)."""

    def __init__(
        self, script: Script, *, fallback: Response | None = None, keep_requests: int | None = 1000
    ) -> None:
        if not callable(script):
            script = list(script)
            for position, item in enumerate(script):
                if not isinstance(item, Response):
                    raise InvalidConfig(
                        f"ScriptedModel script item {position} must be a Response (built with "
                        f"reply(), call(), error() …); got {item!r}."
                    )
        self._script = script
        self._fallback = fallback
        self._lock = threading.Lock()
        self._next = 0
        self.requests: deque[ModelRequest] = deque(maxlen=keep_requests)
        self._calls = 0

    @property
    def calls_made(self) -> int:
        """How many times the model was called."""
        with self._lock:
            return self._calls

    def _pick(self, request: ModelRequest) -> Response:
        with self._lock:
            self.requests.append(request)
            self._calls += 1
            if callable(self._script):
                picked: Response | None = None
            else:
                position = self._next
                self._next += 1
                picked = self._script[position] if position < len(self._script) else None
                if picked is None and self._fallback is None:
                    raise ScriptExhausted(
                        f"The ScriptedModel's script has {len(self._script)} responses and this "
                        f"is call {position + 1}; add responses or pass fallback=reply(...)."
                    )
                picked = picked or self._fallback
        if picked is None:
            assert callable(self._script)
            picked = self._script(request)
            if not isinstance(picked, Response):
                raise InvalidConfig(
                    f"The ScriptedModel's script function must return a Response; got {picked!r}."
                )
        return picked

    async def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        """Stream the next scripted response."""
        response = self._pick(request)
        for step in response.steps:
            if isinstance(step, Delay):
                await trio.sleep(step.seconds)
            elif isinstance(step, Fail):
                raise ModelFailure(step.message)
            else:
                await trio.lowlevel.checkpoint()
                yield step
