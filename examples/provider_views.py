"""The same session as the model sees it through three APIs.

Builds a short session (a question answered with a tool, then a question
interrupted while its tool ran, then a correction) and prints what
``session_history``, ``to_openai``, ``to_anthropic`` and ``to_gemini`` make
of it, and how a WeChat-like channel treats each message.

Run: python examples/provider_views.py
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from runtime import (
    Category,
    MessageAdded,
    Timeline,
    ToolCall,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
    category_of,
    new_message,
    session_history,
    to_anthropic,
    to_gemini,
    to_openai,
    visibility,
)

SESSION = "sess_views"
START = datetime(2026, 5, 27, 12, 50, tzinfo=UTC)


def main() -> None:
    timeline = Timeline.start(SESSION)

    def emit(cls: type, **fields: Any) -> None:
        nonlocal timeline
        seq = timeline.last_seq + 1
        at = START + timedelta(seconds=seq)
        timeline = timeline.append(cls(session_id=SESSION, seq=seq, at=at, **fields))

    def add(category: Category, id: str, **fields: Any) -> None:
        at = START + timedelta(seconds=timeline.last_seq + 1)
        message = new_message(category, id=id, session_id=SESSION, created_at=at, **fields)
        emit(MessageAdded, message=message)

    def call(id: str, call_id: str, turn: str, command: str) -> None:
        tool = ToolCall(id=call_id, name="run_shell_command", arguments={"command": command})
        add(Category.TOOL_CALL, id, turn_id=turn, tool_call=tool)

    add(Category.USER_QUESTION, "u1", sender="Chii", content="Run the history tests.")
    emit(TurnStarted, turn_id="t1")
    add(Category.THOUGHT, "th1", turn_id="t1", content="I will run pytest.")
    call("c1", "call_1", "t1", "uv run pytest tests/test_history.py")
    add(
        Category.TOOL_RESULT, "r1", turn_id="t1", sender="run_shell_command",
        tool_call_id="call_1", content="5 passed in 0.42s",
    )  # fmt: skip
    add(Category.NOTIFICATION, "n1", turn_id="t1", content="Chat history compacted.")
    add(Category.REPLY, "a1", turn_id="t1", content="All 5 tests passed.")
    emit(TurnEnded, turn_id="t1", outcome=TurnOutcome.PROCESSED)
    add(Category.USER_QUESTION, "u2", sender="Chii", content="Now deploy.")
    emit(TurnStarted, turn_id="t2")
    call("c2", "call_2", "t2", "make deploy")
    add(Category.USER_QUESTION, "u3", sender="Chii", content="Stop, wrong branch!")
    emit(TurnEnded, turn_id="t2", outcome=TurnOutcome.INTERRUPTED, reason="new input")
    emit(TurnStarted, turn_id="t3")
    state = timeline.head

    print("session_history (phased), and what a WeChat-like channel does with each:")
    for message in session_history(state):
        category = category_of(message)
        print(f"  {message.id:<4} {category.label:<15} {visibility('silent', message)}")
    system = "You are Amber, a careful coding agent."
    for name, view in [
        ("to_openai", to_openai(state, system=system)),
        ("to_anthropic", to_anthropic(state, system=system)),
        ("to_gemini", to_gemini(state, system=system)),
    ]:
        print(f"\n{name}:")
        print(json.dumps(view, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
