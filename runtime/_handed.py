"""Tool calls handed to their tools when their turn is given back: they may have run.

The log records no event when a tool starts: a call is handed to its tool
(``RunTool``) in the decision that adds it, unless it must wait for a
person's approval (``ApprovalRequested`` in that same decision), and then in
the decision that approves it (``ApprovalDecided``). So a call of the active
turn that has no result and does not wait for approval was handed to its
tool, and may have run, in part or in full (or not at all: the runner may
have died before the tool began); one that waits for approval never started.

When a turn is given back with such calls (a stop cut them, ``_shutdown.py``;
or its runner died and recovery takes it back, ``_orphans.orphaned`` and
``store.recover_orphans``), each is marked ``MAY_HAVE_RUN`` before the
``OrphanRecovered``, so the result the model's view makes up for it says it may
have run, and the turn's reason names them. (A runner that reloads its session
because another process wrote to it records first the results it held,
``Loaded.results``: only the calls still running are marked.) So is a call still running when its
turn ends otherwise (an interrupt, new input, a failure: ``_turn_ops.end_turn``),
before the ``TurnEnded``: a sync tool's abandoned thread runs on to the end, and a
cancelled async tool may have done part of its work.
"""

from __future__ import annotations

from collections.abc import Iterable

from ._clean import MAY_HAVE_RUN
from ._events import MetadataUpdated
from ._state import SessionState
from ._step import Step

__all__ = [
    "handed_calls",
    "mark_may_have_run",
    "marked_messages",
    "named_calls",
    "reloaded_text",
    "started_text",
]


def handed_calls(state: SessionState) -> list[str]:
    """The active turn's calls handed to their tools that have no result, sorted by id."""
    turn = state.active_turn
    if turn is None:
        return []
    return sorted(
        call_id
        for call_id in turn.open_calls
        if call_id not in turn.awaiting_approval and call_id not in state.tool_results
    )


def marked_messages(state: SessionState, call_ids: Iterable[str]) -> list[str]:
    """The ids of the tool call messages to mark ``MAY_HAVE_RUN``: those of ``call_ids``
    that have no result."""
    marked = []
    for call_id in call_ids:
        message_id = state.tool_calls.get(call_id)
        if message_id is not None and call_id not in state.tool_results:
            marked.append(message_id)
    return marked


def mark_may_have_run(s: Step, call_ids: Iterable[str]) -> None:
    """Mark those of ``call_ids`` that have no result ``MAY_HAVE_RUN`` (the view's result
    for each says it may have run); before the ``OrphanRecovered`` that interrupts them."""
    for message_id in marked_messages(s.state, call_ids):
        s.emit(MetadataUpdated, message_id=message_id, metadata={MAY_HAVE_RUN: True})


def named_calls(state: SessionState, call_ids: Iterable[str]) -> str:
    """``c0 (lookup), c1 (fetch)``: each call's id and its tool's name."""
    calls = []
    for call_id in call_ids:
        message_id = state.tool_calls.get(call_id)
        called = state.message(message_id).tool_call if message_id is not None else None
        calls.append(f"{call_id} ({called.name})" if called is not None else call_id)
    return ", ".join(calls)


def started_text(state: SessionState, call_ids: list[str]) -> str:
    """What a recovered turn's reason adds for the calls that had started when its runner
    died: they may have run, so check before running them again."""
    one = len(call_ids) == 1
    return (
        f"tool call{'' if one else 's'} {named_calls(state, call_ids)} had started; "
        f"{'it' if one else 'they'} may have run, so check before running "
        f"{'it' if one else 'them'} again"
    )


def reloaded_text(state: SessionState, call_ids: list[str]) -> str:
    """What the reason of a turn its own runner recovered on reloading the session (another
    process wrote to it) adds for the calls it had handed to their tools: they may still
    run in that runner, and a result they give is dropped, so check before running them."""
    one = len(call_ids) == 1
    return (
        f"tool call{'' if one else 's'} {named_calls(state, call_ids)} had no result when the "
        f"session was reloaded: {'it' if one else 'they'} may have run or still run here, and "
        f"a result that comes is not recorded, so check before running "
        f"{'it' if one else 'them'} again"
    )
