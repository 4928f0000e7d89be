"""The timeline against a dead-simple model, over random legal and illegal events.

Like pyrsistent's list-vs-pvector test: the real ``Timeline`` runs beside a
model that is a plain list of accepted events and a dict of expected
statuses. After every step: invariants 1, 2, 3 and 5 hold, every state held
from earlier is still equal (and hashes equal) to what it was (invariant 6),
and a rejected event left the head untouched.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from runtime import (
    Category,
    EventRejected,
    MessageAdded,
    OrphanRecovered,
    SessionState,
    Status,
    StatusChanged,
    Timeline,
    ToolCall,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
    new_message,
    replay,
    to_json,
)
from runtime.testing import check_lifecycle, check_single_turn, check_tool_pairing

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SID = "sess"
_OUTBOUND = {Category.REPLY, Category.NOTIFICATION, Category.CRASH_NOTICE}
_INTERMEDIATE = {Category.THOUGHT, Category.TOOL_CALL, Category.TOOL_RESULT}
_OUTCOME_STATUS = {
    TurnOutcome.PROCESSED: Status.PROCESSED,
    TurnOutcome.INTERRUPTED: Status.INTERRUPTED,
    TurnOutcome.ERROR: Status.ERROR,
}


class TimelineMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.timeline = Timeline.start(SID)
        self.log: list[Any] = []
        # The model: what each message's status must be, and the turn bookkeeping.
        self.status: dict[str, Status] = {}
        self.category: dict[str, Category] = {}
        self.queue: list[str] = []
        self.turn: str | None = None
        self.claimed: list[str] = []
        self.open_calls: dict[str, str] = {}
        self.counter = 0
        self.held: list[tuple[int, SessionState, int, bytes]] = []

    # -- helpers ---------------------------------------------------------------

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def make(self, cls: type, **fields: Any) -> Any:
        seq = self.timeline.last_seq + 1
        return cls(session_id=SID, seq=seq, at=T0 + timedelta(seconds=seq), **fields)

    def accept(self, event: Any) -> None:
        before = self.timeline.head
        self.timeline = self.timeline.append(event)
        self.log.append(event)
        check_lifecycle(before, self.timeline.head)

    def reject(self, event: Any, error: type[Exception]) -> None:
        head = self.timeline.head
        try:
            self.timeline.append(event)
        except error:
            pass
        else:  # pragma: no cover - a failing test reports this
            raise AssertionError(f"{event!r} should have been rejected with {error.__name__}")
        assert self.timeline.head is head

    def add(self, category: Category, **fields: Any) -> str:
        message_id = self.fresh("m")
        if category in (Category.USER_QUESTION, Category.TOOL_RESULT):
            fields.setdefault("sender", "who")
        message = new_message(category, id=message_id, session_id=SID, created_at=T0, **fields)
        self.accept(self.make(MessageAdded, message=message))
        self.status[message_id] = category.spec.initial
        self.category[message_id] = category
        return message_id

    # -- rules -----------------------------------------------------------------

    @rule(
        category=st.sampled_from(
            [Category.USER_QUESTION, Category.CRON_PROMPT, Category.BACKGROUND_ALERT]
        )
    )
    def input_arrives(self, category: Category) -> None:
        self.queue.append(self.add(category, content="question"))

    @rule()
    def notification(self) -> None:
        self.add(Category.NOTIFICATION, content="note")

    @rule()
    def start_turn(self) -> None:
        event = self.make(TurnStarted, turn_id=self.fresh("t"))
        if self.turn is not None or not self.queue:
            self.reject(event, EventRejected)
            return
        self.accept(event)
        self.turn = event.turn_id
        self.claimed, self.queue = self.queue, []
        for message_id in self.claimed:
            self.status[message_id] = Status.PROCESSING

    @precondition(lambda self: self.turn is not None)
    @rule(category=st.sampled_from([Category.THOUGHT, Category.REPLY, Category.NUDGE]))
    def output(self, category: Category) -> None:
        self.add(category, turn_id=self.turn, content="out")

    @precondition(lambda self: self.turn is not None)
    @rule()
    def tool_call(self) -> None:
        call_id = self.fresh("call")
        message_id = self.add(
            Category.TOOL_CALL, turn_id=self.turn, tool_call=ToolCall(id=call_id, name="sh")
        )
        self.open_calls[call_id] = message_id

    @precondition(lambda self: self.turn is not None)
    @rule(data=st.data())
    def tool_result(self, data: st.DataObject) -> None:
        known = [*sorted(self.open_calls), "call_bogus"]
        call_id = data.draw(st.sampled_from(known))
        if call_id not in self.open_calls:
            message = new_message(
                Category.TOOL_RESULT, id=self.fresh("m"), session_id=SID, created_at=T0,
                sender="sh", turn_id=self.turn, tool_call_id=call_id,
            )  # fmt: skip
            self.reject(self.make(MessageAdded, message=message), EventRejected)
            return
        self.add(Category.TOOL_RESULT, turn_id=self.turn, tool_call_id=call_id, content="ok")
        del self.open_calls[call_id]

    @precondition(lambda self: bool(self.status))
    @rule(data=st.data(), expected=st.sampled_from(list(Status)))
    def deliver(self, data: st.DataObject, expected: Status) -> None:
        message_id = data.draw(st.sampled_from(sorted(self.status)))
        event = self.make(
            StatusChanged, message_id=message_id, expected=expected, status=Status.DELIVERED
        )
        current, category = self.status[message_id], self.category[message_id]
        legal = (current is Status.PENDING and category in _OUTBOUND) or (
            current is Status.RESPONDED and category in _INTERMEDIATE
        )
        if expected is not current or not legal:
            self.reject(event, EventRejected)
            return
        self.accept(event)
        self.status[message_id] = Status.DELIVERED

    @rule(outcome=st.sampled_from(list(TurnOutcome)))
    def end_turn(self, outcome: TurnOutcome) -> None:
        event = self.make(TurnEnded, turn_id=self.turn or "t_none", outcome=outcome)
        if self.turn is None or (self.open_calls and outcome is TurnOutcome.PROCESSED):
            self.reject(event, EventRejected)
            return
        self.accept(event)
        for message_id in self.claimed:
            self.status[message_id] = _OUTCOME_STATUS[outcome]
        if outcome is TurnOutcome.INTERRUPTED:
            for message_id in self.open_calls.values():
                self.status[message_id] = Status.INTERRUPTED
        self.turn, self.claimed, self.open_calls = None, [], {}

    @precondition(lambda self: self.turn is not None)
    @rule()
    def runner_dies(self) -> None:
        self.accept(self.make(OrphanRecovered, turn_id=self.turn, reason="crash"))
        for message_id in self.claimed:
            self.status[message_id] = Status.PENDING_AGENT
        self.queue = self.claimed + self.queue
        self.queue.sort(key=lambda i: self.timeline.head.index[i])
        self.turn, self.claimed, self.open_calls = None, [], {}

    @rule(offset=st.sampled_from([0, 2, -1]))
    def wrong_seq(self, offset: int) -> None:
        seq = self.timeline.last_seq + 1 + offset
        if seq < 1:
            return
        message = new_message(
            Category.NOTIFICATION, id=self.fresh("m"), session_id=SID, created_at=T0
        )
        event = MessageAdded(session_id=SID, seq=seq, at=T0, message=message)
        if offset == 0:
            self.accept(event)
            self.status[message.id] = Status.PENDING
            self.category[message.id] = Category.NOTIFICATION
        else:
            self.reject(event, EventRejected)

    @rule()
    def hold_state(self) -> None:
        state = self.timeline.head
        self.held.append((state.seq, state, hash(state), to_json(state)))

    # -- invariants ------------------------------------------------------------

    @invariant()
    def statuses_match_model(self) -> None:
        head = self.timeline.head
        assert {m.id: m.status for m in head.messages} == self.status

    @invariant()
    def single_turn_and_pairing(self) -> None:
        check_single_turn(self.timeline.head)
        check_tool_pairing(self.timeline.head)
        assert self.timeline.head.active_turn_id == self.turn

    @invariant()
    def log_matches_model(self) -> None:
        assert self.timeline.events() == self.log
        assert [e.seq for e in self.log] == list(range(1, len(self.log) + 1))

    @invariant()
    def past_states_never_change(self) -> None:
        for seq, state, digest, encoded in self.held:
            assert self.timeline.at(seq) is state
            assert hash(state) == digest
            assert to_json(state) == encoded

    def teardown(self) -> None:
        replayed = replay(self.log, base=SessionState.empty(SID)) if self.log else None
        for k in range(1, len(self.log) + 1):
            assert replayed is not None
            assert replayed.at(k) == self.timeline.at(k)


TimelineMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None
)
TestTimeline = TimelineMachine.TestCase
