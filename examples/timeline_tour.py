"""A tour of Amber's pure core: build a session timeline, then travel in it.

Replays a short trace (a question, a thought, a tool call and its result,
the reply), then a second question interrupted mid-tool, and prints the
timeline, a past state, a diff, a fork and a verified replay.

Run: python examples/timeline_tour.py
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from runtime import (
    Category,
    Event,
    MessageAdded,
    StatusChanged,
    Timeline,
    ToolCall,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
    UserInput,
    new_message,
    to_json,
    verify,
)

SESSION = "sess_agent_history"
START = datetime(2026, 5, 27, 12, 50, tzinfo=UTC)


class Recorder:
    """Stamps events with the next seq and a clock, as a session actor would."""

    def __init__(self) -> None:
        self.timeline = Timeline.start(SESSION)

    def now(self) -> datetime:
        return START + timedelta(seconds=2 * self.timeline.last_seq)

    def __call__(self, cls: type[Event], **fields: Any) -> None:
        event = cls(session_id=SESSION, seq=self.timeline.last_seq + 1, at=self.now(), **fields)
        self.timeline = self.timeline.append(event)

    def add(self, category: Category, id: str, **fields: Any) -> None:
        message = new_message(category, id=id, session_id=SESSION, created_at=self.now(), **fields)
        self(MessageAdded, message=message)

    def deliver(self, id: str) -> None:
        status = self.timeline.head.message(id).status
        self(StatusChanged, message_id=id, expected=status, status="delivered")


def build() -> Timeline:
    rec = Recorder()
    question = UserInput(
        text="Run the unit tests of the history module", sender="Chii", chatbot_id="discord"
    )
    rec(
        MessageAdded,
        message=question.to_message(id="msg_user_001", session_id=SESSION, created_at=rec.now()),
    )
    rec(TurnStarted, turn_id="turn_001")
    turn = {"turn_id": "turn_001", "parent_id": "msg_user_001"}
    rec.add(
        Category.THOUGHT,
        "msg_thought_001",
        content="I should run pytest on tests/test_history.py.",
        **turn,
    )
    call = ToolCall(
        id="call_001",
        name="run_shell_command",
        arguments={"command": "pytest tests/test_history.py"},
    )
    rec.add(
        Category.TOOL_CALL,
        "msg_call_001",
        tool_call=call,
        content="Calling run_shell_command",
        **turn,
    )
    rec.deliver("msg_thought_001")
    rec.deliver("msg_call_001")
    rec.add(
        Category.TOOL_RESULT, "msg_result_001", sender="run_shell_command", tool_call_id="call_001",
        turn_id="turn_001", parent_id="msg_call_001", content="5 passed in 0.42s",
    )  # fmt: skip
    rec.deliver("msg_result_001")
    rec.add(Category.REPLY, "msg_reply_001", content="All 5 history tests passed (0.42 s).", **turn)
    rec(
        TurnEnded,
        turn_id="turn_001",
        outcome=TurnOutcome.PROCESSED,
        metrics={"turn_tool_calls": 1},
        duration_ms=2100.0,
    )
    rec.deliver("msg_reply_001")

    # A second question; the user interrupts while the tool runs.
    rec.add(
        Category.USER_QUESTION, "msg_user_002", sender="Chii", content="Now run the whole suite"
    )
    rec(TurnStarted, turn_id="turn_002")
    call = ToolCall(id="call_002", name="run_shell_command", arguments={"command": "pytest"})
    rec.add(
        Category.TOOL_CALL,
        "msg_call_002",
        tool_call=call,
        turn_id="turn_002",
        parent_id="msg_user_002",
    )
    rec.add(
        Category.USER_QUESTION, "msg_user_003", sender="Chii", content="Stop, only the fast tests!"
    )
    partial = new_message(
        Category.REPLY, id="msg_reply_002", session_id=SESSION, created_at=rec.now(),
        turn_id="turn_002", content="Running the full suite, this may take",
    )  # fmt: skip
    rec(
        TurnEnded,
        turn_id="turn_002",
        outcome=TurnOutcome.INTERRUPTED,
        reason="interrupted by msg_user_003",
        partial=[partial],
    )
    return rec.timeline


def main() -> None:
    timeline = build()
    print(f"Session {timeline.session_id}: {timeline.last_seq} events\n")
    for event in timeline.events():
        print(f"  seq {event.seq:>2}  {event.at:%H:%M:%S}  {event.kind}")

    head = timeline.head
    print("\nMessages at the head:")
    for message in head.messages:
        marker = " [interrupted]" if message.metadata.get("interrupted") else ""
        kind = f"{message.role}/{message.type}"
        print(f"  {message.id:<16} {kind:<18} {message.status}{marker}")

    print("\nState at seq 2 (the first turn has just claimed the question):")
    for message in timeline.at(2).messages:
        print(f"  {message.id:<16} {message.status}  turn={message.turn_id}")

    last = timeline.last_seq
    print(f"\nWhat the interrupt changed (diff {last - 1} -> {last}):")
    delta = timeline.diff(last - 1, last)
    for change in delta.status_changes:
        print(f"  {change.message_id:<16} {change.before} -> {change.after}")
    for message in delta.added:
        print(f"  + {message.id} ({message.content!r})")

    fork = timeline.fork(14, "sess_fork", at=START + timedelta(hours=1))
    print(
        f"\nForked at seq 14 (mid-turn) into {fork.session_id}: {len(fork.head)} messages, active turn {fork.head.active_turn_id}"
    )

    verify(timeline.events(), [timeline.at(k) for k in range(0, timeline.last_seq + 1, 5)])
    size = sum(len(to_json(e)) for e in timeline.events())
    print(
        f"Replay verified against {timeline.last_seq // 5 + 1} states; the log is {size} bytes of JSON."
    )


if __name__ == "__main__":
    main()
