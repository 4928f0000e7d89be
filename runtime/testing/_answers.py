"""Hypothesis strategies for model answers, turn plans and streamed responses."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from hypothesis import strategies as st

from .. import Response, ToolSpec
from ._plans import Answer, RaiseError, Say, SayNothing, Stall, TurnPlan, UseTools
from ._schema import arguments_for, invalid_arguments_for

__all__ = ["answers", "model_responses", "tool_uses", "turn_plans"]

_TEXT = st.sampled_from(
    ["ok", "done", "here you go", "sure, 42", "🙂", "line\nbreak", "# Title\n\n- a\n- b", "a" * 300]
)
_ARGUMENT_TEXT = st.sampled_from(["", "a b a", "hello world", "ünïcödé", "x" * 100]) | st.text(
    max_size=12
)
_PAUSES = st.sampled_from([0.0, 0.0, 0.0, 0.0, 0.002, 0.01])


PLAN_OPTIONS = ("errors", "empty", "invalid_calls", "pauses", "stalls")
"""The options of ``answers`` (and ``turn_plans``): each True or False."""

HasSpec = Any
"""A tool: a ``ToolSpec``, or anything with a ``spec()`` method giving one (``actors.Tool``)."""


def _specs(tools: Iterable[HasSpec]) -> list[ToolSpec]:
    return [t if isinstance(t, ToolSpec) else t.spec() for t in tools]


def tool_uses(
    tools: Iterable[HasSpec] = (),
    *,
    max_calls: int = 3,
    invalid: bool = True,
    call_ids: st.SearchStrategy[str | None] | None = None,
) -> st.SearchStrategy[UseTools]:
    """Responses that call ``tools`` (in parallel, up to ``max_calls``).

    Arguments are drawn from each tool's schema (``arguments_for``); with
    ``invalid`` some break it, some are not JSON at all, and some calls name
    a tool that does not exist. ``call_ids`` draws the provider's call ids
    (None: the runtime makes unique ones).
    """
    specs = _specs(tools)
    one: list[st.SearchStrategy[tuple[str, Any]]] = [
        st.tuples(st.just(s.name), arguments_for(s.parameters, text=_ARGUMENT_TEXT)) for s in specs
    ]
    if invalid or not specs:
        bad: list[st.SearchStrategy[tuple[str, Any]]] = [
            st.tuples(st.just("no_such_tool"), st.just({})),
        ]
        for s in specs:
            bad.append(
                st.tuples(st.just(s.name), invalid_arguments_for(s.parameters, text=_ARGUMENT_TEXT))
            )
            bad.append(st.tuples(st.just(s.name), st.sampled_from(['{"unclosed": ', "[1, 2]"])))
        one.append(st.one_of(bad))
    calls = st.lists(st.one_of(one), min_size=1, max_size=max_calls)
    ids = (
        st.none()
        if call_ids is None
        else st.lists(call_ids, min_size=max_calls, max_size=max_calls)
    )

    def build(
        drawn: list[tuple[str, Any]],
        reasoning: str,
        fragments: int,
        pause: float,
        id_list: list[str | None] | None,
    ) -> UseTools:
        return UseTools(
            *drawn,
            reasoning=reasoning,
            fragments=fragments,
            pause=pause,
            call_ids=None if id_list is None else tuple(id_list[: len(drawn)]),
        )

    return st.builds(
        build,
        calls,
        st.sampled_from(["", "", "Let me check."]),
        st.sampled_from([3, 1, 4]),
        _PAUSES,
        ids,
    )


def answers(
    tools: Iterable[HasSpec] = (),
    *,
    errors: bool = True,
    empty: bool = True,
    invalid_calls: bool = True,
    pauses: bool = True,
    stalls: bool = False,
) -> st.SearchStrategy[Answer]:
    """One model call's answer: text (with reasoning, in pieces, paused), tool calls,
    a failure (before or mid-stream), nothing at all, or (with ``stalls``) a stream that
    never ends (on simulated time; a real runtime waits out ``model_timeout``).
    """
    pause = _PAUSES if pauses else st.just(0.0)
    options: list[st.SearchStrategy[Any]] = [
        st.builds(
            Say,
            _TEXT,
            reasoning=st.sampled_from(["", "", "thinking it over"]),
            piece=st.sampled_from([16, 16, 3, 1]),
            pause=pause,
        ),
    ]
    specs = _specs(tools)
    if specs or invalid_calls:
        options.append(tool_uses(specs, invalid=invalid_calls))
    if errors:
        options.append(
            st.builds(RaiseError, st.just("scripted outage"), st.sampled_from(["", "par"]))
        )
    if empty:
        options.append(st.builds(SayNothing, pause))
    if stalls:
        options.append(st.builds(Stall, st.sampled_from(["", "Let me th"])))
    return st.one_of(options)


def turn_plans(
    tools: Iterable[HasSpec] = (), *, max_answers: int = 3, **options: bool
) -> st.SearchStrategy[TurnPlan]:
    """A turn's answers, one per model call (``answers(tools, **options)`` each).

    Plans lean towards calling tools first and answering after, as agents do.
    """
    specs = _specs(tools)
    each = answers(specs, **options)
    rest = st.lists(each, max_size=max(0, max_answers - 1))
    plans: list[st.SearchStrategy[TurnPlan]] = [
        # The default plan first: examples shrink towards "the model just answers".
        st.just(TurnPlan()),
        st.builds(lambda head, more: TurnPlan(head, *more), each, rest),
    ]
    if specs:  # agents mostly call a tool first, then answer
        uses = tool_uses(specs, invalid=options.get("invalid_calls", True))
        plans += [st.builds(lambda head, more: TurnPlan(head, *more), uses, rest)] * 2
    return st.one_of(plans)


def model_responses(tools: Sequence[HasSpec] = (), **options: bool) -> st.SearchStrategy[Response]:
    """Streamed model responses for a ``ScriptedModel``: text, reasoning, fragmented tool
    calls, errors, empty answers and pauses (``answers(...).map(Answer.response)``).
    """
    return answers(tools, **options).map(lambda answer: answer.response())
