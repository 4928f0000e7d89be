"""What the turn machine decides: events to commit and commands for the shell to run.

``step`` returns a ``Decision``. The shell stores its ``events`` durably,
adopts its ``machine`` (the next state, with the events applied), then runs
its ``commands`` in order: start a model call or a tool run, cancel a run,
set or clear a timer, announce a changed message, stream a live delta, ask
to be stepped again, ask to be passivated, log a warning. Commands are
values: a simulator runs the same ones on simulated time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from ._events import Event
from ._stream import ModelRequest
from ._updates import Delta, Update

if TYPE_CHECKING:
    from ._machine import SessionMachine

__all__ = [
    "Announce",
    "CallModel",
    "CancelRun",
    "ClearTimer",
    "Command",
    "Decision",
    "Passivate",
    "ResumeSoon",
    "RunTool",
    "SetTimer",
    "StreamDelta",
    "Warn",
]


@attrs.frozen(kw_only=True)
class CallModel:
    """Stream the model's answer to ``request``; report ``ModelChunk``s, then ``ModelEnded``."""

    run_id: str
    """The run's id (its chunks and end carry it; the stream id of its deltas)."""
    request: ModelRequest
    """What to send."""


@attrs.frozen(kw_only=True)
class RunTool:
    """Run one tool call; report ``ToolDone``."""

    call_id: str
    """The tool call id (also the run's id for ``CancelRun``)."""
    name: str
    """The tool."""
    arguments: Mapping[str, Any]
    """Parsed arguments (a JSON object)."""


@attrs.frozen(kw_only=True)
class CancelRun:
    """Cancel a model call or tool run (an interrupt, a failed turn, a timeout)."""

    run_id: str
    """A model run id or a tool call id."""


@attrs.frozen(kw_only=True)
class SetTimer:
    """Report ``TimerFired(name)`` after ``seconds``; replaces a timer of the same name."""

    name: str
    """The timer (``idle``, ``orphan``, ``model:<run id>``)."""
    seconds: float
    """Delay from now."""


@attrs.frozen(kw_only=True)
class ClearTimer:
    """Drop the timer ``name`` if it has not fired."""

    name: str
    """The timer."""


@attrs.frozen(kw_only=True)
class Announce:
    """Tell adapters and subscribers that a message joined the session or changed."""

    update: Update
    """The change."""


@attrs.frozen(kw_only=True)
class StreamDelta:
    """Forward a live piece of a streaming model message (never stored)."""

    delta: Delta
    """The piece."""


@attrs.frozen(kw_only=True)
class ResumeSoon:
    """Step the machine with ``Resume`` after what is already queued for it."""


@attrs.frozen(kw_only=True)
class Passivate:
    """The session has been idle for ``passivate_after``: stop its actor if nothing changed."""

    seq: int
    """The head's seq when idle (passivation is refused if it moved)."""


@attrs.frozen(kw_only=True)
class Warn:
    """Log a warning (a failed turn, say)."""

    text: str
    """What to log."""
    turn_id: str | None = None
    """The turn that failed, when the warning says so (a front end that shows failed
    turns itself, as ``amber chat`` does, leaves these out)."""


Command = (
    CallModel
    | RunTool
    | CancelRun
    | SetTimer
    | ClearTimer
    | Announce
    | StreamDelta
    | ResumeSoon
    | Passivate
    | Warn
)
"""Anything a decision asks the shell to do."""


@attrs.frozen(kw_only=True)
class Decision:
    """What one input leads to."""

    events: tuple[Event, ...]
    """To store durably, in order, before anything else happens."""
    commands: tuple[Command, ...]
    """To run once the events are stored, in order."""
    machine: SessionMachine
    """The machine's next state (the events applied)."""
