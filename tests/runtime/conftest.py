"""Shared builders for hand-made sessions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from runtime import (
    Category,
    Event,
    Message,
    MessageAdded,
    StatusChanged,
    Timeline,
    ToolCall,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
    new_message,
)

T0 = datetime(2026, 5, 27, 12, 50, tzinfo=UTC)


class Session:
    """Builds events for one session and keeps the timeline they make."""

    def __init__(self, session_id: str = "sess") -> None:
        self.session_id = session_id
        self.timeline = Timeline.start(session_id)

    @property
    def state(self) -> Any:
        return self.timeline.head

    @property
    def next_seq(self) -> int:
        return self.timeline.last_seq + 1

    def at(self) -> datetime:
        return T0 + timedelta(seconds=self.next_seq)

    def event(self, cls: type[Event], **fields: Any) -> Event:
        """An event of ``cls`` with the next seq (not applied)."""
        return cls(session_id=self.session_id, seq=self.next_seq, at=self.at(), **fields)

    def do(self, cls: type[Event], **fields: Any) -> Event:
        """Build and apply an event."""
        event = self.event(cls, **fields)
        self.timeline = self.timeline.append(event)
        return event

    def message(self, category: Category, id: str, **fields: Any) -> Message:
        if category is Category.USER_QUESTION:
            fields.setdefault("sender", "Chii")
        if category is Category.TOOL_RESULT:
            fields.setdefault("sender", "sh")
        return new_message(
            category, id=id, session_id=self.session_id, created_at=self.at(), **fields
        )

    def add(self, category: Category, id: str, **fields: Any) -> Message:
        message = self.message(category, id, **fields)
        self.do(MessageAdded, message=message)
        return self.state.message(id)

    def ask(self, id: str = "u1", text: str = "hi") -> Message:
        return self.add(Category.USER_QUESTION, id, content=text)

    def start(self, turn_id: str = "t1") -> None:
        self.do(TurnStarted, turn_id=turn_id)

    def call(self, id: str, call_id: str, turn_id: str = "t1", parent: str = "u1") -> Message:
        return self.add(
            Category.TOOL_CALL,
            id,
            turn_id=turn_id,
            parent_id=parent,
            tool_call=ToolCall(id=call_id, name="sh", arguments={"command": "ls"}),
        )

    def result(
        self, id: str, call_id: str, turn_id: str = "t1", parent: str | None = None
    ) -> Message:
        return self.add(
            Category.TOOL_RESULT,
            id,
            turn_id=turn_id,
            tool_call_id=call_id,
            parent_id=parent,
            content="ok",
        )

    def reply(
        self, id: str, turn_id: str = "t1", text: str = "done", parent: str | None = None
    ) -> Message:
        return self.add(Category.REPLY, id, turn_id=turn_id, content=text, parent_id=parent)

    def deliver(self, id: str) -> None:
        self.do(
            StatusChanged, message_id=id, expected=self.state.message(id).status, status="delivered"
        )

    def end(
        self, turn_id: str = "t1", outcome: TurnOutcome = TurnOutcome.PROCESSED, **fields: Any
    ) -> None:
        self.do(TurnEnded, turn_id=turn_id, outcome=outcome, **fields)


@pytest.fixture
def session() -> Session:
    """A fresh session builder."""
    return Session()
