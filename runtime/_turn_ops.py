"""The turn machine's moves: start a turn, call the model, open its audit row, end a turn.

Each takes the ``Step`` being built and changes it: emits events, adds
commands, replaces the running turn's bookkeeping. Handlers of inputs
(``_turnloop``, ``_responses``) are made of these, and of the moves of
approvals (``_approval``) and of orphan recovery (``_orphans``).
"""

from __future__ import annotations

from ._assembly import Assembly
from ._audit import AuditStatus, operation_key
from ._category import Category
from ._chunks import ModelRetry, RequestSent
from ._commands import CallModel, CancelRun, ClearTimer, ResumeSoon, SetTimer, Warn
from ._errors import AmberError, AuditConflict
from ._events import (
    ModelCallFinished,
    ModelCallStarted,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
)
from ._handed import mark_may_have_run, started_text
from ._machine import TurnRun
from ._message import Message
from ._notices import NOTICES
from ._parts import response_metadata
from ._replace import replace
from ._replay import request_record, stored_digests
from ._request import RequestRecord
from ._step import Step
from ._stream import ModelRequest
from ._view_cache import cached_view

__all__ = [
    "MODEL_CALL_KEY",
    "NOTICES",
    "call_model",
    "cancel_runs",
    "continue_after_tools",
    "end_turn",
    "fail",
    "maybe_start_turn",
    "model_failed",
    "model_timer",
    "open_call",
    "open_cut_call",
    "turn_metrics",
]

MODEL_CALL_KEY = "model_call"
"""Metadata key on every message made from a model response: the call's audit source key
(``<turn id>#<call index>``), so the model's view can keep one response together."""


def model_timer(run_id: str) -> str:
    """The name of the timer that fails model run ``run_id`` at ``model_timeout``."""
    return f"model:{run_id}"


def maybe_start_turn(s: Step) -> None:
    """Start a turn that claims every waiting input, if none runs; then call the model.

    A turn a dead runner left active blocks new turns until it is recovered
    (its input and the new one are then claimed together).
    """
    state = s.state
    if s.run is not None or state.active_turn is not None or not state.queued:
        return
    turn_id = s.turn_id()
    s.emit(TurnStarted, turn_id=turn_id, runner=s.settings.runner)
    turn = s.state.active_turn
    assert turn is not None
    last = s.state.message(turn.input_ids[-1])
    s.run = TurnRun(
        turn_id=turn_id,
        started_mono=s.mono,
        parent_id=last.id,
        chatbot_id=last.chatbot_id,
        channel_id=last.channel_id,
    )
    claimed = set(turn.input_ids)
    if s.cancelled:
        withdrawn = claimed <= s.cancelled
        # Kept for this turn: once the callers of its other inputs give up too, it ends. A
        # turn claims every waiting input, so what else is noted belonged to an ended turn.
        s.cancelled = frozenset() if withdrawn else s.cancelled & claimed
        if withdrawn:  # every caller gave up: no model call for nobody
            end_turn(s, TurnOutcome.INTERRUPTED, "cancelled by the caller")
            return
    call_model(s)


def call_model(s: Step) -> None:
    """Call the model with the view of the head state (or fail the turn if it cannot be)."""
    run = s.run
    assert run is not None
    settings = s.settings
    if run.calls >= settings.max_model_calls:
        fail(
            s,
            f"the turn reached {settings.max_model_calls} model calls without a final answer "
            "(Settings.max_model_calls)",
            cause="steps",
        )
        return
    try:
        s.views, view = cached_view(
            s.views,
            s.state,
            window=settings.window,
            artifacts=settings.artifacts,
            max_result_chars=settings.max_result_chars,
        )
    except AmberError as exc:
        fail(s, f"the model's view could not be built: {exc}", cause="view")
        return
    run_id = s.run_id()
    request = ModelRequest(
        session_id=s.session_id,
        turn_id=run.turn_id,
        call_index=run.calls,
        state=s.state,
        view=view,
        tools=settings.tools,
        system=settings.system_prompt,
        window=settings.window,
        max_result_chars=settings.max_result_chars,
    )
    s.run = replace(
        run,
        calls=run.calls + 1,
        model_run=run_id,
        model_started=s.mono,
        model_started_at=s.at,
        source_key=f"{run.turn_id}#{run.calls}",
        operation_id=None,
        stream_id=run_id,
        assembly=Assembly(),
        view=view,
        # Counting the view's tokens costs a walk of it: without a window it is done
        # once, when the turn ends, and only if the model reports no usage.
        context_tokens=view.tokens,
    )
    s.command(CallModel(run_id=run_id, request=request))
    if settings.model_timeout is not None:
        s.command(SetTimer(name=model_timer(run_id), seconds=settings.model_timeout))


def open_call(
    s: Step, operation_id: str, sent: RequestSent | None = None, *, chunkless: bool = False
) -> bool:
    """Open (or, the same again, confirm) the audit row of the current model call.

    ``sent`` is what the model reported sending: the row records what the
    request was built from, so it can be rebuilt (``rebuild_request``). An
    operation id the turn used already (a provider that reuses its ids) gives
    way to the call's source key. A start that contradicts the call's row
    fails the turn; returns False then. A row opened by a chunk of the stream
    starts then; ``chunkless``: no chunk opens it (the call failed or ended
    before its first one), so it starts when the model was called.
    """
    try:
        _start_call(s, operation_id, sent, chunkless=chunkless)
    except AuditConflict as exc:
        fail(s, f"the model-call audit refused the call's start: {exc}")
        return False
    return True


def _start_call(
    s: Step, operation_id: str, sent: RequestSent | None, *, chunkless: bool = False
) -> None:
    """``open_call``'s event (``AuditConflict`` if the audit refuses it)."""
    run = s.run
    assert run is not None
    state = s.state
    row = state.audit.get(run.source_key)
    if row is not None:
        sequence = row.sequence
    else:
        sequence = len(state.audit) + 1
        if operation_key(run.turn_id, "assistant", operation_id) in state.audit_ops:
            operation_id = run.source_key
    s.emit(
        ModelCallStarted,
        operation_id=operation_id,
        source_key=run.source_key,
        turn_id=run.turn_id,
        sequence=sequence,
        model=s.settings.model_name,
        request=None if row is not None else _record(s, sent),
        started_at=run.model_started_at if chunkless and row is None else None,
    )
    s.run = replace(run, operation_id=run.operation_id or operation_id)


def open_cut_call(s: Step) -> None:
    """Open the audit row of a model call its turn's end cuts off before its stream started.

    A row opens at the stream's first chunk; a call the model reported sent
    (``RequestSent``), or refused and retried (``ModelRetry``), and then cut
    off by an interrupt, a failure or a stop before that chunk was still
    made (and may be billed), so it gets its row here, under the run's id,
    for the event that ends the turn to close (``interrupted``, ``failed``,
    ``abandoned``). Its ``started_at`` is when the model was called (the time of
    that step's input), its ``finished_at`` when it was cut off. The attempts
    refused before it are not kept: only a finished call records them. A call
    the model never reported sending leaves no row, as before.
    """
    run = s.run
    if run is None or run.model_run is None or run.operation_id is not None:
        return
    assembly = run.assembly
    if assembly is None or (assembly.request is None and not assembly.retries):
        return
    try:
        _start_call(s, run.stream_id, assembly.request, chunkless=True)
    except AuditConflict as exc:  # the turn ends anyway: say why the call has no row
        s.command(
            Warn(
                text=f"session {s.session_id}: no audit row for the cut-off model call: {exc}",
                turn_id=run.turn_id,
            )
        )


def _record(s: Step, sent: RequestSent | None) -> RequestRecord | None:
    """What the current call's request was built from, if the model reported sending it."""
    run = s.run
    if sent is None or run is None or run.view is None:
        return None
    settings = s.settings
    return request_record(
        view=run.view,
        window=settings.window,
        max_result_chars=settings.max_result_chars,
        system=settings.system_prompt,
        tools=settings.tools,
        provider=sent.provider,
        model=sent.model,
        params=sent.params,
        payload_digest=sent.payload_digest,
        base_url=sent.base_url,
        known_digests=stored_digests(s.state.audit.values()),
    )


def model_failed(
    s: Step,
    reason: str,
    duration_ms: float | None,
    *,
    retries: tuple[ModelRetry, ...] = (),
    cause: str = "model",
    notice: str | None = None,
) -> None:
    """Close the current call's audit row as failed, then fail the turn (keeping, marked,
    what the model streamed before it failed); the user is told ``notice``, by default
    that of ``cause``."""
    run = s.run
    assert run is not None
    sent = run.assembly.request if run.assembly is not None else None
    if run.operation_id is None and not open_call(s, run.stream_id, sent, chunkless=True):
        return
    run = s.run
    assert run is not None
    s.emit(
        ModelCallFinished,
        operation_id=run.operation_id,
        source_key=run.source_key,
        status=AuditStatus.FAILED,
        duration_ms=duration_ms,
        error=reason,
        retries=retries,
    )
    fail(s, reason, cause=cause, model_error=reason, notice=notice)


def cancel_runs(s: Step, run: TurnRun) -> None:
    """Cancel the turn's model call and tool runs still in flight."""
    if run.model_run is not None:
        s.command(CancelRun(run_id=run.model_run))
        s.command(ClearTimer(name=model_timer(run.model_run)))
    for call_id in run.tools:
        s.command(CancelRun(run_id=call_id))


def end_turn(
    s: Step,
    outcome: TurnOutcome,
    reason: str,
    *,
    notice: str | None = None,
    model_error: str | None = None,
) -> None:
    """End the running turn (interrupted or error): cancel its runs, keep partial output.

    Partial output keeps the provider data of what streamed (``model_parts``);
    when the model failed, ``model_error`` says why on it. A tool call still running
    was handed to its tool and may have run (a sync tool's thread runs on): it is
    marked ``MAY_HAVE_RUN`` before the ``TurnEnded``, whose reason names it.
    """
    open_cut_call(s)
    run = s.run
    assert run is not None
    cancel_runs(s, run)
    handed = sorted({*run.tools, *(run.stopping or ())} - set(s.state.tool_results))
    if handed:
        reason = f"{reason}; {started_text(s.state, handed)}"
    mark_may_have_run(s, handed)
    elapsed = max(0.0, s.mono - run.started_mono)
    partial: list[Message] = []
    assembly = run.assembly
    if assembly is not None:
        meta = response_metadata(
            assembly.segments(), provider=assembly.provider, source_key=run.source_key
        )
        for category, text, extra in (
            (Category.THOUGHT, assembly.reasoning, meta.thought),
            (Category.REPLY, assembly.text, meta.text),
        ):
            if text.strip():
                metadata = {MODEL_CALL_KEY: run.source_key, **extra}
                if model_error is not None:
                    metadata["model_error"] = model_error
                partial.append(s.output(category, text, part=len(partial) + 1, metadata=metadata))
    # The notice after what streamed: a channel posts the text, then says the turn failed.
    crash = s.output(Category.CRASH_NOTICE, notice) if notice is not None else None
    s.emit(
        TurnEnded,
        turn_id=run.turn_id,
        outcome=outcome,
        reason=reason,
        duration_ms=elapsed * 1000,
        partial=partial,
        notice=crash,
        metrics=turn_metrics(run, elapsed),
    )
    s.run = None


def turn_metrics(run: TurnRun, elapsed: float) -> dict[str, object]:
    """The metrics every ended turn carries (a finished one adds its own)."""
    metrics: dict[str, object] = {
        "turn_tool_calls": run.tool_calls,
        "turn_tokens": run.tokens,
        "turn_time": round(elapsed, 3),
    }
    if run.cost_usd is not None:
        metrics["turn_cost_usd"] = round(run.cost_usd, 6)
        if not run.priced:
            metrics["turn_cost_partial"] = True  # some call of the turn had no known price
    return metrics


def fail(
    s: Step,
    reason: str,
    *,
    cause: str = "runtime",
    model_error: str | None = None,
    notice: str | None = None,
) -> None:
    """End the running turn as error with a crash notice; a waiting input starts the next.

    ``reason`` (the detail) is recorded with the turn and logged; the user
    sees ``notice``, by default the short notice of ``cause`` (a key of ``NOTICES``).
    ``model_error`` marks the partial output of a failed model call with why it failed.
    """
    turn_id = s.state.active_turn_id
    s.command(Warn(text=f"session {s.session_id}: turn failed: {reason}", turn_id=turn_id))
    told = NOTICES[cause] if notice is None else notice
    end_turn(s, TurnOutcome.ERROR, reason, notice=told, model_error=model_error)
    # A failed turn does not retry by itself; new input starts the next one.
    maybe_start_turn(s)


def continue_after_tools(s: Step) -> None:
    """The last result of a tool step is in (nothing runs, nothing waits): call the model."""
    run, turn = s.run, s.state.active_turn
    if run is None or run.tools or (turn is not None and turn.awaiting_approval):
        return
    if run.stopping is not None:  # a stop drained the runs: it calls no model
        return
    call_model(s)


def stored_run(s: Step) -> TurnRun:
    """The bookkeeping of the active turn rebuilt from the head (after a reload), with
    nothing in flight."""
    state = s.state
    turn = state.active_turn
    assert turn is not None
    last = state.message(turn.input_ids[-1])
    rows = state.model_calls(turn.id)
    return TurnRun(
        turn_id=turn.id,
        started_mono=s.mono,
        parent_id=last.id,
        chatbot_id=last.chatbot_id,
        channel_id=last.channel_id,
        calls=len(rows),
        source_key=rows[-1].source_key if rows else "",
        tool_calls=sum(len(row.tool_calls) for row in rows),
        tokens=sum(r.usage.total_tokens for r in rows if r.usage is not None),
    )


def resume_soon(s: Step) -> None:
    """Ask to be stepped with ``Resume`` after what is queued (a new turn may start then)."""
    s.command(ResumeSoon())
