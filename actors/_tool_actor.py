"""Tool actors: one pykka actor per tool runs its calls as trio effects.

A session actor tells a ``ToolRequest`` to the tool's actor with an effect
handle it keeps (so an interrupt cancels the run even before it starts); the
run tells the session a ``ToolDone`` (a turn-machine input, stamped when the
run ended) with the outcome. A tool's failure, timeout or bad arguments are
outcomes, never exceptions that reach the session.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import pykka

from runtime import ToolDone, ToolOutcome

from ._effects import EffectHandle, Effects
from ._errors import InvalidConfig
from ._tools import Tool, passes_through

__all__ = ["ToolActor", "ToolRequest", "ToolStats"]

log = logging.getLogger("amber.tools")


@attrs.frozen(kw_only=True)
class ToolRequest:
    """Run one tool call and tell ``reply_to`` a ``ToolDone``."""

    session_id: str
    """The session whose turn made the call."""
    call_id: str
    """The tool call id."""
    arguments: Mapping[str, Any]
    """Parsed arguments."""
    reply_to: pykka.ActorRef[Any]
    """Who gets the ``ToolDone``."""
    handle: EffectHandle
    """The effect handle the caller cancels on interrupt."""
    stamp: Callable[[], dict[str, Any]]
    """Gives ``at`` and ``mono`` for the ``ToolDone`` (the runtime's clocks)."""


@attrs.frozen(kw_only=True)
class ToolStats:
    """Counts for one tool since its actor started."""

    name: str
    """The tool."""
    calls: int
    """Runs started."""
    errors: int
    """Runs that ended with an error outcome."""
    cancelled: int
    """Runs cancelled (interrupts, shutdown)."""
    in_flight: int
    """Runs not finished yet."""


class ToolActor(pykka.ThreadingActor):
    """Runs the calls of one tool on the effects loop."""

    use_daemon_thread = True  # a runtime never stopped must not keep the process alive

    def __init__(self, tool: Tool, effects: Effects) -> None:
        super().__init__()
        self.tool = tool
        self._effects = effects
        self._lock = threading.Lock()
        self._calls = self._errors = self._cancelled = self._in_flight = 0

    def on_receive(self, message: Any) -> Any:
        """Handle a ``ToolRequest``."""
        if not isinstance(message, ToolRequest):
            raise InvalidConfig(f"ToolActor takes ToolRequest messages; got {message!r}.")
        self._effects.submit(
            lambda: self._run(message), name=f"tool {self.tool.name}", handle=message.handle
        )
        return None

    async def _run(self, request: ToolRequest) -> None:
        with self._lock:
            self._calls += 1
            self._in_flight += 1
        finished = False
        try:
            try:
                with self._effects.running_tool(
                    request.session_id, self.tool.name, request.call_id
                ):
                    outcome = await self.tool.invoke(request.arguments)
            except BaseException as exc:  # a Tool of its own, whatever it raised but cancellation
                if passes_through(exc):
                    raise
                log.exception(
                    "tool %s: invoke raised instead of returning an outcome", self.tool.name
                )
                outcome = ToolOutcome(
                    content=f"The tool {self.tool.name!r} failed: {type(exc).__name__}: {exc}",
                    is_error=True,
                    error_type="exception",
                )
            finished = True
        finally:
            with self._lock:
                self._in_flight -= 1
                if not finished:
                    self._cancelled += 1
                elif outcome.is_error:
                    self._errors += 1
        try:
            request.reply_to.tell(
                ToolDone(call_id=request.call_id, outcome=outcome, **request.stamp())
            )
        except pykka.ActorDeadError:
            log.debug("tool %s finished for a session that has stopped", self.tool.name)

    def stats(self) -> ToolStats:
        """The tool's counts."""
        with self._lock:
            return ToolStats(
                name=self.tool.name,
                calls=self._calls,
                errors=self._errors,
                cancelled=self._cancelled,
                in_flight=self._in_flight,
            )
