"""Sessions whose model calls cost something and whose turns wait for approval (built by hand).

``costed_session`` gives a session of ``turns`` turns, each with one model call
finished at ``prices[i]`` US dollars (None: usage but no price), and, with
``waiting``, a last turn left waiting for approval of a tool call.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from runtime import (
    ApprovalRequested,
    AuditStatus,
    Category,
    Event,
    MessageAdded,
    ModelCallFinished,
    ModelCallStarted,
    SessionState,
    ToolCall,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
    Usage,
    apply,
    new_message,
)

T0 = datetime(2026, 5, 27, 12, 0, tzinfo=UTC)


def costed_session(
    session_id: str,
    prices: Sequence[float | None],
    *,
    waiting: bool = False,
    state: SessionState | None = None,
) -> tuple[list[Event], SessionState]:
    """The events of one turn per price (each a question, a model call, a reply), then a
    turn waiting for approval if ``waiting``; and the state after them."""
    state = state if state is not None else SessionState.empty(session_id)
    out: list[Event] = []

    def emit(cls: type[Event], **fields: object) -> None:
        nonlocal state
        seq = state.seq + 1
        event = cls(session_id=session_id, seq=seq, at=T0 + timedelta(seconds=seq), **fields)
        state = apply(state, event)
        out.append(event)

    def question() -> str:
        n = state.seq + 1
        message = new_message(
            Category.USER_QUESTION, id=f"u{n}", session_id=session_id,
            created_at=T0 + timedelta(seconds=n), sender="Chii", content=f"question {n}",
        )  # fmt: skip
        emit(MessageAdded, message=message)
        turn = f"t{state.seq + 1}"
        emit(TurnStarted, turn_id=turn)
        return turn

    def call(turn: str, price: float | None) -> None:
        sequence = len(state.audit) + 1
        key = f"{turn}#0"
        emit(ModelCallStarted, operation_id=f"op{sequence}", source_key=key, turn_id=turn,
             sequence=sequence, model="gpt-4.1")  # fmt: skip
        emit(ModelCallFinished, operation_id=f"op{sequence}", source_key=key,
             status=AuditStatus.COMPLETED, usage=Usage(input_tokens=100, output_tokens=10),
             cost_usd=price)  # fmt: skip

    for price in prices:
        turn = question()
        call(turn, price)
        reply = new_message(
            Category.REPLY, id=f"r{state.seq + 1}", session_id=session_id,
            created_at=T0 + timedelta(seconds=state.seq + 1), turn_id=turn, content="done",
        )  # fmt: skip
        emit(MessageAdded, message=reply)
        emit(TurnEnded, turn_id=turn, outcome=TurnOutcome.PROCESSED)
    if waiting:
        turn = question()
        tool = ToolCall(id=f"call{state.seq + 1}", name="pay", arguments={"amount": 20})
        message = new_message(
            Category.TOOL_CALL, id=f"c{state.seq + 1}", session_id=session_id,
            created_at=T0 + timedelta(seconds=state.seq + 1), turn_id=turn, tool_call=tool,
        )  # fmt: skip
        emit(MessageAdded, message=message)
        emit(ApprovalRequested, turn_id=turn, call_id=tool.id)
    return out, state
