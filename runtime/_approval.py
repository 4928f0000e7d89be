"""Approvals in the turn machine: a call waits for a person, who approves or denies it.

A tool call that needs approval waits (``request_approval``, with its time
limit); a decision given here, one another process stored for the session's
owner (``DECISION_KEY``), or the time limit decides it (``decide``): an
approved call runs, a denied one is answered with an error, and the model is
called once nothing else runs or waits. After a (re)load a turn that only
waits for a person goes on waiting (``resume_waiting``).
"""

from __future__ import annotations

from typing import Any, cast

from ._category import Category
from ._commands import ClearTimer, RunTool, SetTimer
from ._decisions import stored_decision
from ._events import ApprovalDecided, ApprovalRequested, MessageAdded
from ._json import thaw
from ._machine import TurnSettings
from ._message import Message
from ._replace import replace
from ._step import Step
from ._turn_ops import continue_after_tools, stored_run

__all__ = [
    "APPROVAL_TIMER",
    "decide",
    "request_approval",
    "resume_waiting",
    "take_stored_decisions",
    "takes_decision",
]

APPROVAL_TIMER = "approval:"
"""Prefix of the timers that deny a call left waiting for approval (``approval:<call id>``)."""
DENIED = "The user denied this tool call"


def request_approval(s: Step, call_id: str) -> None:
    """Record that ``call_id`` waits for a person's approval (and set its time limit)."""
    run = s.run
    assert run is not None
    s.emit(ApprovalRequested, turn_id=run.turn_id, call_id=call_id)
    timeout = s.settings.approval_timeout
    if timeout is not None:
        s.command(SetTimer(name=APPROVAL_TIMER + call_id, seconds=timeout))


def decide(
    s: Step,
    call_id: str,
    approved: bool,
    reason: str | None,
    by: str | None,
    *,
    timed_out: float | None = None,
) -> bool:
    """Approve (run it) or deny (answer it with an error) a call that waits; False if none.

    A stop that waits for the turn's runs (``TurnRun.stopping``) takes no decision (one
    another process stored meanwhile is adopted then): no tool run starts, no model is
    called during a stop; the call waits on, and the next start takes the stored decision.

    ``timed_out``: no one answered within that many seconds (``approval_timeout``); the
    result says so instead of saying the user denied it.
    """
    run, turn = s.run, s.state.active_turn
    if run is None or turn is None or call_id not in turn.awaiting_approval:
        return False
    if run.stopping is not None:
        return False
    message = s.state.message(turn.awaiting_approval[call_id])
    call = message.tool_call
    assert call is not None
    s.emit(ApprovalDecided, turn_id=turn.id, call_id=call_id, approved=approved, reason=reason,
           by=by)  # fmt: skip
    s.command(ClearTimer(name=APPROVAL_TIMER + call_id))
    if approved:
        arguments = cast(dict[str, Any], thaw(call.arguments))
        s.command(RunTool(call_id=call_id, name=call.name, arguments=arguments))
        s.run = replace(run, tools=run.tools.set(call_id, s.mono))
        return True
    if timed_out is not None:
        why = (
            f"No one approved this tool call within {timed_out:g} s "
            "(Settings.approval_timeout), so it did not run."
        )
    else:
        why = f"{DENIED}: {reason}." if reason else f"{DENIED}."
    result = s.output(
        Category.TOOL_RESULT,
        f"{why} Do not call it again with these arguments unless the user asks; answer "
        "without it, or ask the user what to do.",
        parent_id=message.id,
        sender=call.name,
        tool_call_id=call_id,
        is_error=True,
        error_type="denied",
        metadata={"tool_name": call.name, "denied_by": by or "user", "duration_ms": 0.0},
    )
    s.emit(MessageAdded, message=result)
    continue_after_tools(s)
    return True


def take_stored_decisions(s: Step) -> None:
    """Take the decisions another process stored for calls that wait (``DECISION_KEY``),
    in the order of the calls: each is decided here as if it were given here."""
    turn = s.state.active_turn
    if turn is None or not turn.awaiting_approval:
        return
    index = s.state.index
    for call_id, message_id in sorted(
        turn.awaiting_approval.items(), key=lambda item: index[item[1]]
    ):
        message = s.state.message(message_id)
        stored = stored_decision(message)
        if stored is not None and takes_decision(s.settings, message, approved=stored[0]):
            decide(s, call_id, *stored)


def takes_decision(settings: TurnSettings, message: Message, *, approved: bool) -> bool:
    """Whether a runner with ``settings`` takes a decision stored for the call ``message``:
    a denial runs nothing, so any runner does; an approval runs the tool, so only a runner
    that has it (the others leave it stored, for a worker that has the tool)."""
    call = message.tool_call
    if not approved or call is None:
        return True
    return any(spec.name == call.name for spec in settings.tools)


def resume_waiting(s: Step) -> bool:
    """After a (re)load: a turn that only waited for approval goes on waiting, as if the
    runner had never left; False if the turn had work in flight, or input came meanwhile
    (stored by another process, which interrupts it as input does): it is an orphan.

    Decisions another process stored for its calls meanwhile are taken now (the
    approved calls run, the denied ones are answered)."""
    if s.state.active_turn is None or not s.state.waits_for_approval:
        return False
    state = s.state
    s.run = stored_run(s)
    take_stored_decisions(s)
    turn = s.state.active_turn
    if turn is None or s.run is None:
        return True  # a denial taken, and the turn could not go on (max_model_calls): ended
    timeout = s.settings.approval_timeout
    if timeout is not None:
        for call_id, message_id in turn.awaiting_approval.items():
            asked = state.message(message_id).created_at
            left = max(0.0, timeout - (s.at - asked).total_seconds())
            s.command(SetTimer(name=APPROVAL_TIMER + call_id, seconds=left))
    return True
