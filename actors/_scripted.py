"""``ScriptedModel``: a deterministic streaming model for tests and the demo.

A script (``runtime.Response`` values, built with ``reply``, ``call`` …) is
a list of responses, one per model call, each a list of steps: chunks to
stream, pauses, failures, stalls. Helpers build the usual ones::

    model = ScriptedModel([
        call("run_shell_command", {"command": "pytest -q"}, reasoning="Run the tests."),
        reply("All 5 tests pass."),
    ])

Tool-call arguments are streamed in fragments and text in pieces, as real
providers do, so the runtime's assembly is exercised. A script may also be a
function of the request, for models that must react to what they see.
"""

from __future__ import annotations

import inspect
import threading
from collections import deque
from collections.abc import AsyncIterator

import trio

from runtime import Chunk, Delay, Fail, Hang, ModelRequest, Response, Script

from ._errors import InvalidConfig, ModelFailure, ScriptExhausted

__all__ = ["ScriptedModel"]


class ScriptedModel:
    """A deterministic ``Model`` that streams scripted responses.

    Args:
        script: the responses, one per model call in order, or a (plain, not
            async) function that picks the response for each request.
        fallback: what to answer once a list script is used up; None raises
            ``ScriptExhausted`` in the stream (the turn ends as error).
        keep_requests: how many of the latest requests ``requests`` keeps
            (each holds a state and a view); None keeps them all.

    ``requests`` records the requests it got (thread-safe), so a test can
    check what the model was shown. ``respond`` picks a request's response
    without streaming it (the simulator in ``runtime.testing`` streams it on
    simulated time).
    """

    name = "scripted"
    """The model's name (recorded in model-call audit rows)."""

    def __init__(
        self, script: Script, *, fallback: Response | None = None, keep_requests: int | None = 1000
    ) -> None:
        if inspect.iscoroutinefunction(script):
            raise InvalidConfig(
                "ScriptedModel takes a plain function of the request that returns a Response "
                f"(got the async function {getattr(script, '__name__', script)!r}). Drop the "
                "async: a pause is a step of the Response (reply(..., delay=), "
                "response.after(seconds)); a model that awaits is a Model with async def "
                "stream(request)."
            )
        if not callable(script):
            script = list(script)
            for position, item in enumerate(script):
                if not isinstance(item, Response):
                    raise InvalidConfig(
                        f"ScriptedModel script item {position} must be a Response (built with "
                        f"reply(), call(), error() …); got {item!r}."
                    )
        if fallback is not None and not isinstance(fallback, Response):
            hint = (
                " To answer each request with a function, pass it as the script: "
                "ScriptedModel(lambda request: reply(...))."
                if callable(fallback)
                else ""
            )
            raise InvalidConfig(
                "ScriptedModel fallback must be a Response (built with reply(), call(), "
                f"error() …) or None; got {fallback!r}.{hint}"
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

    def respond(self, request: ModelRequest) -> Response:
        """The scripted response to ``request`` (recorded as a call).

        Raises:
            ScriptExhausted: a list script is used up and there is no fallback.
            InvalidConfig: a script function returned something else than a Response.
        """
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
        response = self.respond(request)
        for step in response.steps:
            if isinstance(step, Delay):
                await trio.sleep(step.seconds)
            elif isinstance(step, Fail):
                raise ModelFailure(step.message)
            elif isinstance(step, Hang):
                await trio.sleep_forever()
            else:
                await trio.lowlevel.checkpoint()
                yield step
