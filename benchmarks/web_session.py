"""A long, realistic agent session for the web viewer's benchmark and tests.

``agent_session(count)`` returns the events of one session of about
``count`` events, in the shapes the runtime writes: each turn claims a user
question, makes a model call (audit rows with usage and duration), writes a
thought and a tool call, gets the tool's result (with its duration in the
metadata), makes a second model call and replies; deliveries follow. Every
seventh tool fails, every thirteenth turn is interrupted by the next
question. Ids, times and durations are deterministic.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from runtime import (
    AuditCall,
    Category,
    Event,
    MessageAdded,
    ModelCallFinished,
    ModelCallStarted,
    SessionState,
    Status,
    StatusChanged,
    ToolCall,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
    Usage,
    apply,
    new_message,
)

__all__ = ["T0", "agent_session", "store_session"]

T0 = datetime(2026, 5, 27, 12, 0, tzinfo=UTC)


def agent_session(count: int, session_id: str = "long") -> list[Event]:
    """About ``count`` events (whole turns) of one session; see the module docstring."""
    state = SessionState.empty(session_id)
    events: list[Event] = []
    clock = [T0]

    def emit(make: Callable[..., Event], ms: float = 3.0) -> None:
        nonlocal state
        clock[0] += timedelta(milliseconds=ms)
        event = make(session_id=session_id, seq=state.seq + 1, at=clock[0])
        state = apply(state, event)
        events.append(event)

    def add(category: Category, mid: str, ms: float = 3.0, **fields: Any) -> None:
        message = new_message(
            category, id=mid, session_id=session_id, created_at=clock[0], **fields
        )
        emit(lambda **kw: MessageAdded(message=message, **kw), ms)

    def deliver(mid: str, old: Status) -> None:
        emit(
            lambda **kw: StatusChanged(message_id=mid, expected=old, status=Status.DELIVERED, **kw),
            1.0,
        )

    call_number = 0

    def model_call(turn: str, index: int, tokens_in: int, tokens_out: int, ms: float) -> str:
        nonlocal call_number
        call_number += 1
        run = f"run_{call_number:06d}"
        emit(
            lambda **kw: ModelCallStarted(
                operation_id=run,
                source_key=f"{turn}#{index}",
                turn_id=turn,
                sequence=call_number,
                model="claude-sonnet-4-5",
                **kw,
            )
        )
        emit(
            lambda **kw: ModelCallFinished(
                operation_id=run,
                status="completed",
                duration_ms=ms,
                usage=Usage(input_tokens=tokens_in, output_tokens=tokens_out),
                content="" if index == 0 else "The tests pass.",
                tool_calls=[AuditCall(id=f"{run}_call_0", name="run_shell_command")]
                if index == 0
                else [],
                stop_reason="tool_use" if index == 0 else "end_turn",
                **kw,
            ),
            ms,
        )
        return run

    n = 0
    while len(events) < count:
        n += 1
        turn = f"turn_{n:06d}"
        question = f"q{n:06d}"
        add(
            Category.USER_QUESTION,
            question,
            sender="Chii",
            content=f"Please run the unit tests of module {n} and tell me what failed.",
            ms=2_000.0,
        )
        emit(lambda turn=turn, **kw: TurnStarted(turn_id=turn, **kw))
        context = 120 + 60 * n
        run = model_call(turn, 0, context, 40 + n % 17, 400.0 + (n * 37) % 900)
        add(
            Category.THOUGHT,
            f"th{n:06d}",
            turn_id=turn,
            parent_id=question,
            content="I will run pytest on the module with the shell tool, then read the output.",
        )
        call = ToolCall(
            id=f"{run}_call_0",
            name="run_shell_command",
            arguments={"command": f"pytest tests/test_module_{n}.py -q"},
        )
        add(
            Category.TOOL_CALL,
            f"tc{n:06d}",
            turn_id=turn,
            parent_id=question,
            tool_call=call,
            metadata={"tool_name": "run_shell_command"},
        )
        deliver(f"th{n:06d}", Status.RESPONDED)
        deliver(f"tc{n:06d}", Status.RESPONDED)
        if n % 13 == 0:
            # The next question interrupts the turn while the tool runs.
            add(
                Category.USER_QUESTION,
                f"q{n:06d}b",
                sender="Chii",
                content="Stop, that's enough.",
                ms=300.0,
            )
            emit(
                lambda turn=turn, n=n, **kw: TurnEnded(
                    turn_id=turn,
                    outcome=TurnOutcome.INTERRUPTED,
                    reason=f"interrupted by q{n:06d}b",
                    duration_ms=1_500.0,
                    **kw,
                )
            )
            turn = f"turn_{n:06d}b"
            emit(lambda turn=turn, **kw: TurnStarted(turn_id=turn, **kw))
            model_call(turn, 1, context + 100, 12, 350.0)
            add(
                Category.REPLY,
                f"a{n:06d}b",
                turn_id=turn,
                parent_id=f"q{n:06d}b",
                content="Stopped.",
            )
            emit(
                lambda turn=turn, **kw: TurnEnded(
                    turn_id=turn, outcome=TurnOutcome.PROCESSED, duration_ms=360.0, **kw
                )
            )
            deliver(f"a{n:06d}b", Status.PENDING)
            continue
        failed = n % 7 == 0
        tool_ms = 200.0 + (n * 53) % 1_500
        add(
            Category.TOOL_RESULT,
            f"tr{n:06d}",
            turn_id=turn,
            parent_id=f"tc{n:06d}",
            tool_call_id=call.id,
            sender="run_shell_command",
            is_error=failed,
            error_type="exception" if failed else None,
            content="ConnectionError: the test runner is unreachable"
            if failed
            else f"collected 5 items\n\ntests/test_module_{n}.py ..... [100%]\n5 passed",
            metadata={"tool_name": "run_shell_command", "duration_ms": tool_ms},
            ms=tool_ms,
        )
        deliver(f"tr{n:06d}", Status.RESPONDED)
        model_call(turn, 1, context + 80, 25 + n % 11, 500.0 + (n * 41) % 700)
        add(
            Category.REPLY,
            f"a{n:06d}",
            turn_id=turn,
            parent_id=question,
            content="The runner is down." if failed else "All five tests pass.",
        )
        total = sum(e.duration_ms or 0.0 for e in events[-12:] if isinstance(e, ModelCallFinished))
        emit(
            lambda turn=turn, total=total, tool_ms=tool_ms, **kw: TurnEnded(
                turn_id=turn,
                outcome=TurnOutcome.PROCESSED,
                duration_ms=total + tool_ms + 25.0,
                metrics={"turn_tool_calls": 1},
                **kw,
            )
        )
        deliver(f"a{n:06d}", Status.PENDING)
    return events


def store_session(path: Any, count: int, session_id: str = "long") -> int:
    """Write ``agent_session(count)`` into the SQLite store at ``path``; returns its seq."""
    from runtime.store import SQLiteStore

    events = agent_session(count, session_id)
    with SQLiteStore(path) as store:
        for start in range(0, len(events), 500):
            store.append(events[start : start + 500])
    return len(events)
