"""A scripted agent session that continues from any state (for store tests and the crash child).

``next_event(state, at)`` looks only at the state, so a writer that crashed
can reload its head and go on where the log ends. One cycle is eleven
events: a question, a turn that thinks, calls a tool, gets the result and
replies, then four deliveries. Every third turn is interrupted after its tool
call instead (the call becomes interrupted, the partial reply is kept).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from runtime import (
    Category,
    Event,
    MessageAdded,
    SessionState,
    Status,
    StatusChanged,
    ToolCall,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
    new_message,
)

T0 = datetime(2026, 5, 27, 12, 50, tzinfo=UTC)


def next_event(state: SessionState, at: datetime) -> Event:
    """The next event of the scripted session whose head is ``state``."""
    sid, seq = state.session_id, state.seq + 1
    common = {"session_id": sid, "seq": seq, "at": at}

    def add(category: Category, **fields: object) -> MessageAdded:
        message = new_message(category, id=f"m{seq}", session_id=sid, created_at=at, **fields)
        return MessageAdded(message=message, **common)

    turn = state.active_turn
    if turn is None:
        if state.queued:
            return TurnStarted(turn_id=f"t{seq}", **common)
        for message in state.messages[-6:]:
            if message.status in (Status.PENDING, Status.RESPONDED):
                return StatusChanged(
                    message_id=message.id, expected=message.status, status="delivered", **common
                )
        return add(Category.USER_QUESTION, sender="Chii", content=f"question {seq}: run the tests")
    step = seq - turn.started_seq
    interrupted = turn.started_seq % 3 == 0
    if step == 1:
        return add(Category.THOUGHT, turn_id=turn.id, content="I should run pytest.")
    if step == 2:
        call = ToolCall(id=f"call{seq}", name="sh", arguments={"command": "pytest -q"})
        return add(Category.TOOL_CALL, turn_id=turn.id, tool_call=call)
    if step == 3 and interrupted:
        partial = new_message(
            Category.REPLY, id=f"m{seq}", session_id=sid, created_at=at, turn_id=turn.id,
            content="The tests are ru",
        )  # fmt: skip
        return TurnEnded(
            turn_id=turn.id, outcome=TurnOutcome.INTERRUPTED, reason="new input",
            partial=[partial], **common,
        )  # fmt: skip
    if step == 3:
        call_id, call_message = next(iter(turn.open_calls.items()))
        return add(
            Category.TOOL_RESULT, turn_id=turn.id, tool_call_id=call_id, parent_id=call_message,
            sender="sh", content="5 passed in 0.42s",
        )  # fmt: skip
    if step == 4:
        return add(Category.REPLY, turn_id=turn.id, content="All five tests pass.")
    return TurnEnded(
        turn_id=turn.id, outcome=TurnOutcome.PROCESSED, metrics={"tool_calls": 1},
        duration_ms=1234.5, **common,
    )  # fmt: skip


def continue_session(state: SessionState, count: int) -> tuple[list[Event], SessionState]:
    """``count`` more events of the scripted session, and the state after them."""
    from runtime import apply

    events = []
    for _ in range(count):
        event = next_event(state, T0 + timedelta(seconds=state.seq + 1))
        state = apply(state, event)
        events.append(event)
    return events, state


def conversation(session_id: str = "s", count: int = 11) -> list[Event]:
    """The first ``count`` events of the scripted session ``session_id``."""
    return continue_session(SessionState.empty(session_id), count)[0]
