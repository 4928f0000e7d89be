"""``step``: the turn machine (DESIGN §7, functional core, imperative shell).

``step(machine, settings, input) -> Decision`` decides everything a session
does: when a turn starts (a new input, once nothing runs), what an interrupt
keeps (partial text and reasoning, marked; unanswered tool calls become
interrupted), when the model is called again (after the last tool result of
a step, after an empty answer is nudged), how a turn ends (a final text with
metrics, an error with a crash notice, an interrupt), what the audit records,
which tool-call ids are rewritten, when a turn a dead runner left is
recovered, and when an idle session may be passivated.

The shell (``actors.SessionActor``) stores the decision's events, adopts its
machine and runs its commands; ``runtime.testing``'s simulator runs the same
machine on simulated time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._approval import APPROVAL_TIMER, decide
from ._article import type_named
from ._category import new_message
from ._commands import Announce, Decision, Passivate
from ._errors import EventRejected
from ._events import MessageAdded, StatusChanged, TurnOutcome
from ._inputs import (
    ApprovalGiven,
    Delivered,
    Draft,
    Input,
    InputArrived,
    Interrupt,
    Loaded,
    ModelChunk,
    ModelEnded,
    OutputPosted,
    Resume,
    RunnerFailed,
    Stopping,
    TimerFired,
    ToolDone,
)
from ._machine import SessionMachine, TurnSettings
from ._message import Message, Status
from ._orphans import ORPHAN_TIMER, orphaned
from ._responses import model_chunk, model_ended, record_held, tool_done
from ._shutdown import reloaded, stopping
from ._state import as_own
from ._step import IDLE_TIMER, Step
from ._turn_ops import end_turn, fail, maybe_start_turn, model_failed, resume_soon
from ._updates import Update, awaits_delivery

__all__ = ["step"]


def step(machine: SessionMachine, settings: TurnSettings, input: Input) -> Decision:
    """Decide what ``input`` leads to: the events to store and the commands to run.

    Pure and deterministic: it reads nothing but its arguments, so the same
    arguments give the same decision in any process.

    Raises:
        TypeError: ``input`` is not one of the machine's inputs, or an
            ``InputArrived`` carries something that is not an input.
        EventRejected: a bug: the machine built an event its state refuses
            (the shell then steps ``RunnerFailed``).
    """
    handler = _HANDLERS.get(type(input))
    if handler is None:
        raise TypeError(
            "step() takes one of the machine's inputs (InputArrived, ModelChunk, ToolDone, "
            f"Interrupt, TimerFired, …); got {input!r} that is {type_named(input)}."
        )
    s = Step(machine, settings, input)
    handler(s, input)
    return s.decision()


def _message(s: Step, draft: Draft) -> Message:
    return new_message(
        draft.category,
        id=s.message_id(),
        session_id=s.session_id,
        created_at=s.at,
        content=draft.content,
        sender=draft.sender,
        chatbot_id=draft.chatbot_id,
        channel_id=draft.channel_id,
        attachments=draft.attachments,
        browser_elements=draft.browser_elements,
        metadata=draft.metadata,
    )


def _input_arrived(s: Step, input: InputArrived) -> None:
    if not input.draft.category.is_input:
        raise TypeError(
            f"InputArrived takes inputs (user questions, cron prompts, compaction requests, "
            f"alerts); got a {input.draft.category.label}. Post notifications with OutputPosted."
        )
    message = _message(s, input.draft)
    s.emit(MessageAdded, message=message)
    if s.run is not None:
        end_turn(s, TurnOutcome.INTERRUPTED, f"interrupted by {message.id}")
    # Building the model's view can take a while on a long session: the caller gets
    # its answer once the input is stored, and the turn starts on the next step.
    resume_soon(s)


def _output_posted(s: Step, input: OutputPosted) -> None:
    if input.draft.category.is_input:
        raise TypeError(
            f"OutputPosted takes output that needs no turn (notifications); got a "
            f"{input.draft.category.label}. Send inputs with InputArrived."
        )
    s.emit(MessageAdded, message=_message(s, input.draft))


def _resume(s: Step, input: Resume) -> None:
    maybe_start_turn(s)


def _interrupt(s: Step, input: Interrupt) -> None:
    target = input.input_id
    if target is not None:
        turn = s.state.active_turn
        claimed = s.run is not None and turn is not None and target in turn.input_ids
        if not claimed:
            if target in s.state.queued:
                s.cancelled = s.cancelled | {target}
            return
        assert turn is not None
        inputs = set(turn.input_ids)
        if not inputs <= s.cancelled | {target}:
            # Another input of the turn is still wanted (asked by someone who still waits,
            # or sent): it goes on for that one, as a turn about to start would.
            s.cancelled = s.cancelled | {target}
            return
        s.cancelled = s.cancelled - inputs
    if s.run is None:
        return
    end_turn(s, TurnOutcome.INTERRUPTED, input.reason)
    resume_soon(s)


def _quiet(s: Step) -> bool:
    return SessionMachine(state=s.state, run=s.run).is_quiet


def _passivatable(s: Step) -> bool:
    machine = SessionMachine(state=s.state, run=s.run)
    return machine.is_idle or (machine.is_waiting and s.settings.approval_timeout is None)


def _approval_given(s: Step, input: ApprovalGiven) -> None:
    decide(s, input.call_id, input.approved, input.reason, input.by)


def _timer_fired(s: Step, input: TimerFired) -> None:
    name = input.name
    if name.startswith(APPROVAL_TIMER):
        timeout = s.settings.approval_timeout
        assert timeout is not None  # only then is the timer set
        reason = f"no one answered within {timeout:g} s (Settings.approval_timeout)"
        decide(s, name.removeprefix(APPROVAL_TIMER), False, reason, "timeout", timed_out=timeout)
    elif name == IDLE_TIMER:
        s.idle_armed = None
        if _passivatable(s):
            # Refused if anything happens first (the seq moves); the timer is then armed
            # again by this decision, in case the shell could not passivate.
            s.command(Passivate(seq=s.state.seq))
    elif name == ORPHAN_TIMER:
        if s.state.active_turn is not None and s.run is None:
            orphaned(s)
    elif name.startswith("model:"):
        run = s.run
        if run is None or run.model_run != name.removeprefix("model:"):
            return  # the call ended (or its turn did) before the timer fired
        timeout = s.settings.model_timeout
        reason = (
            "the model call failed: ModelTimeout: the model did not finish within "
            f"{timeout} s (Settings.model_timeout)"
        )
        model_failed(s, reason, max(0.0, s.mono - run.model_started) * 1000, cause="timeout")


def _delivered(s: Step, input: Delivered) -> None:
    message = s.state.get(input.message_id)
    if message is None or message.status is not input.expected:
        return  # a stale or repeated report
    try:
        s.emit(
            StatusChanged,
            message_id=input.message_id,
            expected=input.expected,
            status=Status.DELIVERED,
        )
    except EventRejected:
        return  # not something that is delivered (an input, say): the reducer refuses it


def _loaded(s: Step, input: Loaded) -> None:
    state = s.state
    if input.cancelled:  # kept across the reload, for the inputs that still wait for a turn
        turn = state.active_turn
        live = set(state.queued) | set(turn.input_ids if turn is not None else ())
        s.cancelled = s.cancelled | (input.cancelled & live)
    if input.draining is not None:  # a stop waits for the turn's runs: nothing starts
        if state.active_turn is not None and s.run is None:
            record_held(s, input.results)
            reloaded(s, input.draining)
        return
    for message in state:
        if message.active and awaits_delivery(message):
            update = Update(
                session_id=state.session_id, seq=state.seq, message=as_own(state, message)
            )
            s.command(Announce(update=update))
    if state.active_turn is not None and s.run is None:
        record_held(s, input.results)
        orphaned(s, runner_gone=input.runner_gone, foreign_write=input.foreign_write)
    else:
        maybe_start_turn(s)


def _runner_failed(s: Step, input: RunnerFailed) -> None:
    if s.run is not None:
        fail(s, f"the runtime failed: {input.reason}")


_HANDLERS: dict[type[Input], Callable[[Step, Any], None]] = {
    InputArrived: _input_arrived,
    OutputPosted: _output_posted,
    Resume: _resume,
    ModelChunk: model_chunk,
    ModelEnded: model_ended,
    ToolDone: tool_done,
    Interrupt: _interrupt,
    TimerFired: _timer_fired,
    Delivered: _delivered,
    ApprovalGiven: _approval_given,
    Loaded: _loaded,
    Stopping: stopping,
    RunnerFailed: _runner_failed,
}
