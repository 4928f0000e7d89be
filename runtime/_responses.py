"""The turn machine and the model: chunks as they stream, the answer once it ends, tool results.

A chunk of the current model run is folded into the run's ``Assembly`` and
forwarded as a live delta; the first one opens the call's audit row. When
the run ends, its answer decides what follows: tool calls are recorded and
run (calls the model may not make get an error result at once), a final text
ends the turn with metrics, an empty answer is nudged and retried. Each tool
result is recorded as it comes; the model is called again once the last one
is in.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from ._approval import request_approval
from ._audit import AuditCall, AuditStatus
from ._category import Category, new_message
from ._chunks import ModelRetry, RequestSent
from ._commands import ClearTimer, RunTool, StreamDelta
from ._errors import StreamError
from ._events import MessageAdded, ModelCallFinished, TurnEnded, TurnOutcome
from ._inputs import ModelChunk, ModelEnded, ToolDone
from ._message import Message, ToolCall
from ._notices import model_error_notice
from ._outcome import ToolOutcome
from ._parts import ReasoningSegment, ResponseMetadata, TextSegment, response_metadata
from ._replace import replace
from ._shutdown import drained
from ._step import Step
from ._stops import stopped_short
from ._stream import (
    AssembledCall,
    MessageStart,
    ModelResponse,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
)
from ._turn_ops import (
    MODEL_CALL_KEY,
    call_model,
    continue_after_tools,
    fail,
    maybe_start_turn,
    model_failed,
    model_timer,
    open_call,
    turn_metrics,
)
from ._updates import Delta, DeltaKind
from ._view_cache import approx_view_tokens

__all__ = ["model_chunk", "model_ended", "record_held", "tool_done"]

_NUDGE = (
    "[Empty response] Your last response was empty. Continue the task: answer the user or "
    "call a tool."
)


def model_chunk(s: Step, input: ModelChunk) -> None:
    """Fold a chunk of the current run into its assembly and forward it live."""
    run = s.run
    if run is None or input.run_id != run.model_run or run.assembly is None:
        return  # a chunk of a run that was cancelled or has ended
    chunk = input.chunk
    kind_of = type(chunk)
    if kind_of is RequestSent or kind_of is ModelRetry:
        # What was sent, and the attempts refused before the stream opened: kept for the
        # audit row, which opens when the message starts.
        try:
            s.run = replace(run, assembly=run.assembly.feed(chunk))
        except StreamError as exc:
            model_failed(s, f"the model's stream is malformed: {exc}", None)
        return
    sent = run.assembly.request
    if isinstance(chunk, MessageStart):
        if chunk.id:
            s.run = run = replace(run, stream_id=chunk.id)
        if not open_call(s, chunk.id or run.stream_id, sent):
            return
    elif run.operation_id is None and not open_call(s, run.stream_id, sent):
        return  # a stream without MessageStart: the row opens at its first chunk
    run = s.run
    assert run is not None
    assert run.assembly is not None
    try:
        assembly = run.assembly.feed(chunk)
    except StreamError as exc:
        model_failed(s, f"the model's stream is malformed: {exc}", None)
        return
    s.run = replace(run, assembly=assembly)
    index = name = None
    if kind_of is TextDelta:
        kind, text = DeltaKind.TEXT, chunk.text  # type: ignore[union-attr]
        if not text:
            return  # a part's start, or a signature: nothing to show
    elif kind_of is ReasoningDelta:
        kind, text = DeltaKind.REASONING, chunk.text  # type: ignore[union-attr]
        if not text:
            return
    elif kind_of is ToolCallDelta:
        assert isinstance(chunk, ToolCallDelta)
        kind, text, index, name = DeltaKind.TOOL_CALL, chunk.arguments, chunk.index, chunk.name
    else:
        return
    s.command(
        StreamDelta(
            delta=Delta(
                session_id=s.session_id,
                turn_id=run.turn_id,
                stream_id=run.stream_id,
                kind=kind,
                text=text,
                chatbot_id=run.chatbot_id,
                channel_id=run.channel_id,
                index=index,
                name=name,
            )
        )
    )


def model_ended(s: Step, input: ModelEnded) -> None:
    """The current run ended: record its answer and decide what follows."""
    run = s.run
    if run is None or input.run_id != run.model_run:
        return
    s.command(ClearTimer(name=model_timer(input.run_id)))
    duration = max(0.0, s.mono - run.model_started) * 1000
    s.run = run = replace(run, model_run=None)
    if input.error is not None:
        model_failed(
            s, f"the model call failed: {input.error}", duration, retries=input.retries,
            notice=model_error_notice(input.error_type),
        )  # fmt: skip
        return
    assert run.assembly is not None
    try:
        response = run.assembly.response(fallback_id=run.stream_id)
    except StreamError as exc:
        model_failed(s, f"the model's stream is malformed: {exc}", duration)
        return
    if not response.finished:
        # Cut short (a custom model that stopped mid-answer; the adapters raise their own
        # error): what arrived is kept, marked, and no tool call of it runs.
        model_failed(
            s,
            "the model call failed: its stream ended before MessageFinish, so the answer "
            "was cut short (a Model yields MessageFinish last: docs/providers.md)",
            duration,
        )
        return
    assembly = run.assembly
    s.run = run = replace(run, assembly=None)
    opened = run.operation_id is not None
    if not opened and not open_call(
        s, response.id or run.stream_id, response.request, chunkless=True
    ):
        return
    run = s.run
    assert run is not None
    cost = _cost(s, response)
    finished: dict[str, Any] = {
        "operation_id": run.operation_id,
        "source_key": run.source_key,
        "response_model": response.model,
        "retries": response.retries,
        "cost_usd": cost,
        "status": AuditStatus.COMPLETED,
        "duration_ms": duration,
        "usage": response.usage,
        "content": response.text,
        "reasoning": response.reasoning,
        "tool_calls": [
            AuditCall(id=c.id, name=c.name, arguments_json=c.arguments_json)
            for c in response.tool_calls
        ],
        "stop_reason": response.stop_reason,
    }
    usage = response.usage
    if usage is not None:
        s.run = run = replace(
            run,
            tokens=run.tokens + usage.total_tokens,
            context_tokens=usage.input_tokens or run.context_tokens,
        )
    if cost is not None:
        s.run = replace(run, cost_usd=(run.cost_usd or 0.0) + cost)
    elif s.settings.prices is not None and usage is not None:
        s.run = replace(run, priced=False)
    stopped = stopped_short(response.stop_reason)
    if stopped is not None:
        # Cut off or blocked: no whole answer, and asking again would stop the same way.
        cause, reason = stopped
        s.emit(ModelCallFinished, **{**finished, "status": AuditStatus.FAILED, "error": reason})
        s.run = replace(s.run, assembly=assembly)  # what it wrote: the turn's partial output
        fail(s, reason, cause=cause, model_error=reason)
    elif response.is_empty:
        _empty(s, finished)
    elif response.tool_calls:
        _record_calls(s, response, finished)
    else:
        _finish(s, response, finished)


def _cost(s: Step, response: ModelResponse) -> float | None:
    """What the call cost by the settings' prices: the model that answered (a dated
    snapshot is priced as its model), else the one asked."""
    prices = s.settings.prices
    if prices is None or response.usage is None:
        return None
    asked = response.request.model if response.request is not None else s.settings.model_name
    for name in (response.model, asked):
        cost = prices.cost(response.usage, name)
        if cost is not None:
            return round(cost, 9)
    return None


def _metadata(response: ModelResponse, key: str) -> ResponseMetadata:
    """The metadata that keeps the response's parts and provider data on its messages."""
    return response_metadata(response.parts, provider=response.provider, source_key=key)


def tool_call_text(name: str, shown: str) -> str:
    """The content of a tool call message: the tool's name and its arguments as JSON."""
    return f"Calling tool `{name}` with arguments:\n```json\n{shown}\n```"


def _carries(response: ModelResponse, kind: type) -> bool:
    """True when a part of ``kind`` carries provider data to send back (a redacted block)."""
    return any(
        isinstance(part, kind) and (part.signature is not None or part.item_id is not None)
        for part in response.parts
    )


def _empty(s: Step, finished: dict[str, Any]) -> None:
    run = s.run
    assert run is not None
    s.emit(ModelCallFinished, **finished)
    if run.nudges >= s.settings.max_nudges:
        fail(s, f"the model answered with nothing {run.nudges + 1} times in a row", cause="empty")
        return
    s.run = replace(run, nudges=run.nudges + 1)
    nudge = s.output(Category.NUDGE, _NUDGE, sender="System", metadata={"nudge": run.nudges + 1})
    s.emit(MessageAdded, message=nudge)
    call_model(s)


def _record_calls(s: Step, response: ModelResponse, finished: dict[str, Any]) -> None:
    run = s.run
    assert run is not None
    key = run.source_key
    s.emit(ModelCallFinished, **finished)
    meta = _metadata(response, key)
    if response.reasoning.strip() or _carries(response, ReasoningSegment):
        thought = s.output(
            Category.THOUGHT, response.reasoning, metadata={MODEL_CALL_KEY: key, **meta.thought}
        )
        s.emit(MessageAdded, message=thought)
    if response.text.strip() or _carries(response, TextSegment):
        text = s.output(Category.REPLY, response.text, metadata={MODEL_CALL_KEY: key, **meta.text})
        s.emit(MessageAdded, message=text)
    immediate: list[tuple[Message, ToolOutcome]] = []
    runnable: list[tuple[Message, dict[str, Any]]] = []
    taken: set[str] = set()
    for assembled in response.tool_calls:
        original = assembled.id
        if original in s.state.tool_calls or original in taken:
            # Some providers number calls per response (call_0, call_1 …); ids must be
            # unique in a session, so a reused one gets a fresh id (the original is kept).
            assembled = replace(assembled, id=s.call_id(taken))
        taken.add(assembled.id)
        message, arguments, problem = _call_message(
            s, assembled, original, key, meta.calls.get(assembled.index, {})
        )
        s.emit(MessageAdded, message=message)
        if problem is not None:
            immediate.append((message, problem))
        elif assembled.name not in s.settings.tool_names:
            immediate.append((message, _unknown_tool(s, assembled.name)))
        else:
            runnable.append((message, arguments))
    for message, outcome in immediate:
        s.emit(MessageAdded, message=_result_message(s, message, outcome, 0.0))
    tools = run.tools
    waiting = False
    for message, arguments in runnable:
        call = message.tool_call
        assert call is not None
        if call.name in s.settings.approval_tools:
            request_approval(s, call.id)
            waiting = True
            continue
        s.command(RunTool(call_id=call.id, name=call.name, arguments=arguments))
        tools = tools.set(call.id, s.mono)
    s.run = replace(run, tool_calls=run.tool_calls + len(response.tool_calls), tools=tools)
    if not runnable or (not tools and not waiting):
        call_model(s)


def _call_message(
    s: Step, assembled: AssembledCall, original_id: str, key: str, parts: dict[str, Any]
) -> tuple[Message, dict[str, Any], ToolOutcome | None]:
    problem: ToolOutcome | None = None
    try:
        arguments = assembled.arguments()
        tool_call = ToolCall(
            id=assembled.id, name=assembled.name, arguments=arguments, index=assembled.index
        )
    except (ValueError, TypeError) as exc:
        arguments = {}
        tool_call = ToolCall(id=assembled.id, name=assembled.name, index=assembled.index)
        problem = ToolOutcome(
            content=f"{exc}", is_error=True, error_type="invalid_arguments", summary=None
        )
    metadata: dict[str, Any] = {"tool_name": assembled.name, MODEL_CALL_KEY: key, **parts}
    if original_id != assembled.id:
        metadata["provider_call_id"] = original_id
    if problem is None:
        metadata["tool_arguments"] = dict(tool_call.arguments)
        shown = orjson.dumps(arguments, option=orjson.OPT_INDENT_2).decode()
    else:
        metadata["raw_arguments"] = assembled.arguments_json
        shown = assembled.arguments_json
    content = tool_call_text(assembled.name, shown)
    message = s.output(Category.TOOL_CALL, content, tool_call=tool_call, metadata=metadata)
    return message, arguments, problem


def _result_message(s: Step, call: Message, outcome: ToolOutcome, duration_ms: float) -> Message:
    assert call.tool_call is not None
    metadata: dict[str, Any] = {
        "tool_name": call.tool_call.name,
        "duration_ms": round(duration_ms, 3),
    }
    if outcome.summary is not None:
        metadata["tool_result"] = outcome.summary
    if outcome.truncated:
        metadata["truncated"] = True
    fields: dict[str, Any] = {
        "parent_id": call.id,
        "sender": call.tool_call.name,
        "tool_call_id": call.tool_call.id,
        "is_error": outcome.is_error,
        "error_type": outcome.error_type if outcome.is_error else None,
        "metadata": metadata,
    }
    if s.run is not None:
        return s.output(Category.TOOL_RESULT, outcome.content, **fields)
    # A result held over a reload (``record_held``): no turn runs here, the call's says
    # where it belongs.
    return new_message(
        Category.TOOL_RESULT,
        id=s.message_id(),
        session_id=s.state.session_id,
        created_at=s.at,
        content=outcome.content,
        turn_id=call.turn_id,
        chatbot_id=call.chatbot_id,
        channel_id=call.channel_id,
        **fields,
    )


def _unknown_tool(s: Step, name: str) -> ToolOutcome:
    known = ", ".join(sorted(s.settings.tool_names)) or "none"
    return ToolOutcome(
        content=(
            f"There is no tool named {name!r}. The tools you can call are: {known}. Call one "
            "of them, or answer without a tool."
        ),
        is_error=True,
        error_type="unknown_tool",
    )


def record_held(s: Step, results: Iterable[tuple[ToolDone, float]]) -> None:
    """Record the results a runner held when it reloaded its session (``Loaded.results``):
    each answers its call, if the active turn still waits for it, before the turn is
    recovered."""
    state = s.state
    turn = state.active_turn
    for done, started in results:
        call_id = done.call_id
        if turn is None or call_id not in turn.open_calls or call_id in state.tool_results:
            continue  # the reloaded head answered it, or its turn ended meanwhile
        call = state.message(state.tool_calls[call_id])
        duration = max(0.0, done.mono - started) * 1000
        s.emit(MessageAdded, message=_result_message(s, call, done.outcome, duration))
        state = s.state


def tool_done(s: Step, input: ToolDone) -> None:
    """Record a tool's result; call the model again once the turn's last result is in."""
    run = s.run
    if run is None or input.call_id not in run.tools:
        return  # a run of an ended turn, or reported twice
    started = run.tools[input.call_id]
    s.run = run = replace(run, tools=run.tools.remove(input.call_id))
    call = s.state.message(s.state.tool_calls[input.call_id])
    duration = max(0.0, s.mono - started) * 1000
    s.emit(MessageAdded, message=_result_message(s, call, input.outcome, duration))
    if run.stopping is not None:
        drained(s)  # a stop waits for the turn's runs: no model call after them
    else:
        continue_after_tools(s)


def _finish(s: Step, response: ModelResponse, finished: dict[str, Any]) -> None:
    run = s.run
    assert run is not None
    key = run.source_key
    s.emit(ModelCallFinished, **finished)
    meta = _metadata(response, key)
    if response.reasoning.strip() or _carries(response, ReasoningSegment):
        thought = s.output(
            Category.THOUGHT, response.reasoning, metadata={MODEL_CALL_KEY: key, **meta.thought}
        )
        s.emit(MessageAdded, message=thought)
    elapsed = max(0.0, s.mono - run.started_mono)
    context = run.context_tokens
    if context is None:
        context = approx_view_tokens(run.view) if run.view else 0
    metrics = {
        "session_turns": len(s.state.turns) + 1,
        "context_tokens": context,
        **turn_metrics(run, elapsed),
    }
    reply = s.output(
        Category.REPLY,
        response.text,
        metadata={"turn_metrics": metrics, MODEL_CALL_KEY: key, **meta.text},
    )
    s.emit(MessageAdded, message=reply)
    s.emit(
        TurnEnded,
        turn_id=run.turn_id,
        outcome=TurnOutcome.PROCESSED,
        metrics=metrics,
        duration_ms=elapsed * 1000,
    )
    s.run = None
    maybe_start_turn(s)
