"""The simulator's parts: models, tools and adapters that act on simulated time.

A part is a plain object with one method the simulator calls:

- a model ``respond(request) -> Response``: the script of one call (chunks,
  ``Delay`` pauses, a ``Fail`` or a ``Hang``). ``actors.ScriptedModel`` is
  one; ``ScriptModel`` and ``PlanModel`` here need no ``actors``.
- a tool ``run(arguments) -> ToolRun``: how long it takes and its outcome
  (None: it never returns), plus ``name`` and ``spec()`` (and ``cancellable``,
  False if it has none: a draining stop waits for its calls).
- an adapter ``on_update(update) -> Sequence[Report]``: what it reports
  delivered (and after how long), plus ``platform``, ``kind`` and ``label``.

``actors.testing`` turns your real ``Tool``s, ``Model``s and ``Adapter``s
into such parts (running them under trio's mock clock), so the simulator
tests them too.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from .. import (
    ChannelKind,
    ModelRequest,
    Response,
    Status,
    ToolOutcome,
    ToolSpec,
    Update,
    Visibility,
    awaits_delivery,
    channel_rule,
)
from .._article import type_named
from ._plans import TurnPlan, plan_for

__all__ = [
    "FakeChannel",
    "FakeTool",
    "PlanModel",
    "Report",
    "ScriptModel",
    "SimAdapter",
    "SimModel",
    "SimTool",
    "ToolBehaviour",
    "ToolRun",
    "fake_tools",
]


class SimModel(Protocol):
    """A model the simulator can call."""

    def respond(self, request: ModelRequest) -> Response:
        """The script of the call answering ``request``."""
        ...


@attrs.frozen(kw_only=True)
class ToolRun:
    """How one simulated tool run goes."""

    seconds: float = 0.0
    """Simulated time it takes."""
    outcome: ToolOutcome | None = None
    """What it gives back; None: it never returns (until cancelled)."""


class SimTool(Protocol):
    """A tool the simulator can run.

    It may also have ``cancellable`` (a bool, False when missing): True, a stop cuts its
    running calls at once, as an async tool's; False, ``Simulation.stop(drain=True)`` waits
    for them, as ``Runtime.stop`` does for a sync tool's.
    """

    @property
    def name(self) -> str:
        """The name the model calls it by."""
        ...

    def spec(self) -> ToolSpec:
        """What the model is told about it."""
        ...

    def run(self, arguments: Mapping[str, Any]) -> ToolRun:
        """How a call with ``arguments`` goes."""
        ...


@attrs.frozen(kw_only=True)
class Report:
    """An adapter's delivery report, after ``seconds``."""

    message_id: str
    """The message reported delivered."""
    expected: Status
    """The status the adapter saw."""
    seconds: float = 0.0
    """Simulated time until the report reaches the session."""


class SimAdapter(Protocol):
    """An adapter the simulator can tell updates."""

    @property
    def platform(self) -> str:
        """The ``chatbot_id`` it serves."""
        ...

    @property
    def kind(self) -> ChannelKind:
        """How its channel renders."""
        ...

    @property
    def label(self) -> str:
        """Its name in failures."""
        ...

    def on_update(self, update: Update) -> Sequence[Report]:
        """Show ``update``; the reports it makes."""
        ...


class ScriptModel:
    """A model that answers by script: a list (one response per call) or a function.

    Like ``actors.ScriptedModel`` without trio: a used-up list answers
    ``fallback``, or fails the call when there is none.
    """

    name = "scripted"

    def __init__(
        self,
        script: Sequence[Response] | Callable[[ModelRequest], Response],
        *,
        fallback: Response | None = None,
    ) -> None:
        """
        Raises:
            InvalidArgument: the script is not a list of responses or a function, or one
                of its responses (or ``fallback``) is not one the simulator can stream; the
                error names the response and step (``script[2].steps[1]``), what it must
                be and what it is. A function's responses are checked as the simulator
                takes them.
        """
        from .. import InvalidArgument
        from .._script import check_response

        if isinstance(script, Response):
            raise InvalidArgument(
                "ScriptModel takes a list of Responses (one per model call) or a function of "
                "the request; got one Response. Pass [response], or fallback=response to "
                "answer every call with it."
            )
        if not callable(script):
            if isinstance(script, str | bytes) or not isinstance(script, Iterable):
                raise InvalidArgument(
                    "ScriptModel takes a list of Responses (one per model call) or a function "
                    f"of the request; got {script!r} that is {type_named(script)}."
                )
            script = tuple(script)
            for position, response in enumerate(script):
                check_response(response, f"ScriptModel script[{position}]")
        if fallback is not None:
            check_response(fallback, "ScriptModel fallback")
        self._script = script
        self._fallback = fallback
        self._next = 0
        self.requests: list[ModelRequest] = []
        """Every request, in order."""

    def respond(self, request: ModelRequest) -> Response:
        """The next scripted response."""
        from .. import Fail

        self.requests.append(request)
        if callable(self._script):
            return self._script(request)
        position = self._next
        self._next += 1
        if position < len(self._script):
            return self._script[position]
        if self._fallback is not None:
            return self._fallback
        return Response((Fail(f"the script has {len(self._script)} responses; this is call "
                              f"{position + 1}"),))  # fmt: skip


class PlanModel:
    """A model that answers each turn by the ``TurnPlan`` its input names (``PLAN_KEY``)."""

    name = "planned"

    def __init__(self, plans: Mapping[str, TurnPlan] | None = None) -> None:
        self.plans: dict[str, TurnPlan] = dict(plans or {})
        """Plan key -> plan; the simulator adds a plan with each input it sends."""

    def respond(self, request: ModelRequest) -> Response:
        """The answer the plan gives to this call of the turn."""
        return plan_for(request.state, self.plans).answer(request.call_index).response()


class ToolBehaviour(enum.StrEnum):
    """How a ``FakeTool`` behaves."""

    OK = "ok"
    """Answers its arguments back, at once."""
    ERROR = "error"
    """Fails with an error the model reads."""
    SLOW = "slow"
    """Answers after ``seconds``."""
    TIMEOUT = "timeout"
    """Runs into its time limit: a ``timeout`` error after ``seconds``."""
    HANG = "hang"
    """Never returns (until its turn is interrupted)."""
    HUGE = "huge"
    """Answers 100,000 characters."""


@attrs.frozen
class FakeTool:
    """A simulated tool of one ``ToolBehaviour``; its one parameter is ``text``."""

    name: str
    """Its name."""
    behaviour: ToolBehaviour = ToolBehaviour.OK
    """What it does."""
    seconds: float = 5.0
    """How long a ``slow`` or ``timeout`` run takes."""
    approval: bool = False
    """Each call waits for a person's approval before it runs."""
    cancellable: bool = False
    """A stop cuts its running calls at once, as an async tool's (``Tool.cancellable``);
    False, a draining stop (``Simulation.stop(drain=True)``) waits for them, as
    ``Runtime.stop`` does for a sync tool's."""

    def spec(self) -> ToolSpec:
        """An object schema with one optional string ``text``."""
        return ToolSpec(
            name=self.name,
            description=f"A simulated tool that is {self.behaviour}.",
            parameters={
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "additionalProperties": False,
            },
            needs_approval=self.approval,
        )

    def run(self, arguments: Mapping[str, Any]) -> ToolRun:
        """How a call goes."""
        text = str(arguments.get("text", ""))
        behaviour = self.behaviour
        if behaviour is ToolBehaviour.HANG:
            return ToolRun(seconds=0.0, outcome=None)
        if behaviour is ToolBehaviour.ERROR:
            outcome = ToolOutcome(
                content=f"{self.name} failed on {text!r}", is_error=True, error_type="exception"
            )
            return ToolRun(seconds=0.01, outcome=outcome)
        if behaviour is ToolBehaviour.TIMEOUT:
            outcome = ToolOutcome(
                content=f"{self.name} did not finish within {self.seconds} s",
                is_error=True,
                error_type="timeout",
            )
            return ToolRun(seconds=self.seconds, outcome=outcome)
        if behaviour is ToolBehaviour.HUGE:
            return ToolRun(seconds=0.01, outcome=ToolOutcome(content="x" * 100_000))
        seconds = self.seconds if behaviour is ToolBehaviour.SLOW else 0.01
        return ToolRun(seconds=seconds, outcome=ToolOutcome(content=f"{self.name}: {text}"))


def fake_tools(*, hang: bool = False) -> tuple[FakeTool, ...]:
    """One tool of each behaviour, named after it (``ok``, ``error``, ``slow`` …),
    ``guarded``, an ``ok`` tool whose calls wait for approval, and ``slow_async``, a
    ``slow`` tool a stop cuts at once (``cancellable``, as an async tool): the others are
    sync tools, whose calls a draining stop waits for.

    ``hang`` adds the tool that never returns: it breaks the tool contract, so
    a run with it settles only if something interrupts its turn.
    """
    tools = [FakeTool(str(b), b) for b in ToolBehaviour if hang or b is not ToolBehaviour.HANG]
    return (
        *tools,
        FakeTool("guarded", ToolBehaviour.OK, approval=True),
        FakeTool("slow_async", ToolBehaviour.SLOW, cancellable=True),
    )


class FakeChannel:
    """A simulated adapter that follows the channel's visibility rule.

    Args:
        platform: the ``chatbot_id`` it serves.
        kind: how its channel renders.
        seconds: how long a delivery report takes to reach the session.
        fails: messages whose ids end with one of these never render (they
            stay undelivered: a platform refusing them), by content.
        label: its name in failures.
    """

    def __init__(
        self,
        platform: str,
        kind: ChannelKind = ChannelKind.LIVE,
        *,
        seconds: float = 0.05,
        fails: Callable[[Update], bool] | None = None,
        label: str | None = None,
    ) -> None:
        self.platform = platform
        self.kind = kind
        self.seconds = seconds
        self._fails = fails
        self.label = label or f"FakeChannel({platform!r}, {kind})"

    def on_update(self, update: Update) -> Sequence[Report]:
        """Report new output this channel shows or absorbs, unless rendering it fails."""
        message = update.message
        if message.chatbot_id != self.platform or not update.is_new:
            return ()
        if channel_rule(self.kind, message).visibility is Visibility.HIDDEN:
            return ()
        if not awaits_delivery(message):
            return ()
        if self._fails is not None and self._fails(update):
            return ()
        return (Report(message_id=message.id, expected=message.status, seconds=self.seconds),)
