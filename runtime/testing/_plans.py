"""What the model answers, as data: ``Say``, ``UseTools``, ``RaiseError``, ``SayNothing``.

A ``TurnPlan`` lists a turn's answers, one per model call. The simulator
(``SimulationMachine``) and the ``LifecycleMachine`` draw a plan with each
input they send, and their model follows it, so a failing example prints
the plan in full::

    state.send(session='s1', text='hi', channel='discord',
               plan=TurnPlan(UseTools(('word_count', {'text': 'a b'})), Say('2 words')))

Each answer's ``response()`` is the script ``Response`` it streams (text and
reasoning in pieces, tool-call arguments in fragments, pauses, failures), so
the same values drive a plain ``ScriptedModel`` too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import orjson

from .. import (
    Delay,
    MessageFinish,
    MessageStart,
    ReasoningDelta,
    Response,
    ScriptStep,
    SessionState,
    TextDelta,
    Usage,
    error,
    hang,
    reply,
)
from .. import ToolCallDelta as _ToolCallDelta
from .. import empty as _empty

__all__ = [
    "PLAN_KEY",
    "Answer",
    "RaiseError",
    "Say",
    "SayNothing",
    "Stall",
    "TurnPlan",
    "UseTools",
    "plan_for",
]

PLAN_KEY = "amber_plan"
"""The input metadata key that names the plan of the turn the input starts."""


@attrs.frozen(repr=False)
class Say:
    """A final text answer (with optional reasoning), streamed in pieces."""

    text: str
    """The reply."""
    reasoning: str = ""
    """Reasoning streamed before it."""
    piece: int = 16
    """Characters per streamed piece."""
    pause: float = 0.0
    """Seconds between pieces (a window for interrupts mid-stream)."""

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        _pretty(self, printer, cycle)

    def __repr__(self) -> str:
        return _short_repr(self, ("text",))

    def response(self) -> Response:
        """The scripted response."""
        return reply(self.text, reasoning=self.reasoning, piece=self.piece, delay=self.pause)


@attrs.frozen(init=False, repr=False)
class UseTools:
    """A response that calls tools; each argument object streams in ``fragments`` pieces.

    ``calls`` are ``(tool name, arguments)`` pairs; arguments given as a str
    are sent as they are (malformed JSON, a list). ``call_ids`` are the ids
    the provider gives each call (None: the runtime makes them).
    """

    calls: tuple[tuple[str, Any], ...]
    """``(name, arguments)`` per call."""
    reasoning: str = ""
    """Reasoning streamed first."""
    text: str = ""
    """Text streamed alongside the calls."""
    fragments: int = 3
    """Pieces per argument object."""
    call_ids: tuple[str | None, ...] | None = None
    """Provider call ids, one per call."""
    pause: float = 0.0
    """Seconds before the response starts."""

    def __init__(self, *calls: tuple[str, Any], **fields: Any) -> None:
        self.__attrs_init__(calls=tuple(calls), **fields)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        _pretty(self, printer, cycle)

    def __repr__(self) -> str:
        return _short_repr(self, ("calls",))

    def response(self) -> Response:
        """The scripted response."""
        steps: list[ScriptStep] = [MessageStart()]
        steps += [ReasoningDelta(text=p) for p in _pieces(self.reasoning, 16)]
        steps += [TextDelta(text=p) for p in _pieces(self.text, 16)]
        written = self.reasoning + self.text
        for index, (name, arguments) in enumerate(self.calls):
            raw = arguments if isinstance(arguments, str) else _json(arguments)
            written += name + raw
            size = max(1, -(-len(raw) // max(1, self.fragments)))
            parts = _pieces(raw, size) or [""]
            call_id = self.call_ids[index] if self.call_ids else None
            steps.append(_ToolCallDelta(index=index, id=call_id, name=name, arguments=parts[0]))
            steps += [_ToolCallDelta(index=index, arguments=p) for p in parts[1:]]
        usage = Usage(input_tokens=0, output_tokens=max(1, len(written) // 4))
        steps.append(MessageFinish(usage=usage, stop_reason="tool_use"))
        response = Response(tuple(steps))
        return response.after(self.pause) if self.pause else response


@attrs.frozen(repr=False)
class RaiseError:
    """A model call that fails, after streaming ``text`` (a provider outage mid-stream)."""

    message: str = "scripted outage"
    """The error's text."""
    text: str = ""
    """Reply text streamed before the failure."""

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        _pretty(self, printer, cycle)

    def __repr__(self) -> str:
        return _short_repr(self)

    def response(self) -> Response:
        """The scripted response."""
        after: tuple[ScriptStep, ...] = (MessageStart(),) if self.text else ()
        after += tuple(TextDelta(text=p) for p in _pieces(self.text, 16))
        return error(self.message, after=after)


@attrs.frozen(repr=False)
class SayNothing:
    """An empty answer: no text, no reasoning, no call (the runtime nudges and retries)."""

    pause: float = 0.0
    """Seconds before it."""

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        _pretty(self, printer, cycle)

    def __repr__(self) -> str:
        return _short_repr(self)

    def response(self) -> Response:
        """The scripted response."""
        response = _empty()
        return Response((Delay(self.pause), *response.steps)) if self.pause else response


@attrs.frozen(repr=False)
class Stall:
    """A call that streams ``text``, then never finishes (the model's time limit ends it)."""

    text: str = ""
    """Reply text streamed before it stalls."""

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        _pretty(self, printer, cycle)

    def __repr__(self) -> str:
        return _short_repr(self)

    def response(self) -> Response:
        """The scripted response."""
        after: tuple[ScriptStep, ...] = (MessageStart(),)
        after += tuple(TextDelta(text=p) for p in _pieces(self.text, 16))
        return hang(after=after)


Answer = Say | UseTools | RaiseError | SayNothing | Stall
"""One model call's answer."""


@attrs.frozen(init=False, repr=False)
class TurnPlan:
    """A turn's answers, one per model call; once they run out the model says ``then``."""

    answers: tuple[Answer, ...]
    """In call order (nudged retries count as calls)."""
    then: Answer = Say("done")
    """The answer to every later call."""

    def __init__(self, *answers: Answer, then: Answer = Say("done")) -> None:
        self.__attrs_init__(answers=tuple(answers), then=then)

    def answer(self, call_index: int) -> Answer:
        """The answer to the turn's ``call_index``-th model call."""
        return self.answers[call_index] if call_index < len(self.answers) else self.then

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        _pretty(self, printer, cycle)

    def __repr__(self) -> str:
        inner = ", ".join(repr(a) for a in self.answers)
        then = "" if self.then == Say("done") else f", then={self.then!r}"
        return f"TurnPlan({inner}{then})"


def _pretty(self: Any, printer: Any, cycle: bool) -> None:
    """Hypothesis's pretty printer prints attrs values field by field; use our repr."""
    printer.text(repr(self))


def _short_repr(value: Any, positional: Sequence[str] = ()) -> str:
    """``Name(a, b=…)`` with only the fields that differ from their defaults."""
    parts: list[str] = []
    for field in attrs.fields(type(value)):
        current = getattr(value, field.name)
        if field.name in positional:
            if field.name == "calls":
                parts += [repr(c) for c in current]
            else:
                parts.append(repr(current))
            continue
        default = field.default
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            default = default.factory()
        if current != default:
            parts.append(f"{field.name}={current!r}")
    return f"{type(value).__name__}({', '.join(parts)})"


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] if text else []


def _json(arguments: Any) -> str:
    value = dict(arguments) if isinstance(arguments, Mapping) else arguments
    return orjson.dumps(value).decode()


def plan_of(answers: Sequence[Answer]) -> TurnPlan:
    """A ``TurnPlan`` of ``answers`` (for ``map`` in strategies)."""
    return TurnPlan(*answers)


def plan_for(
    state: SessionState, plans: Mapping[str, TurnPlan], default: TurnPlan | None = None
) -> TurnPlan:
    """The plan of ``state``'s active turn: named by its latest input with ``PLAN_KEY``."""
    turn = state.active_turn
    for input_id in reversed(turn.input_ids if turn else ()):
        key = state.message(input_id).metadata.get(PLAN_KEY)
        if isinstance(key, str) and key in plans:
            return plans[key]
    return default or TurnPlan()
