"""apply(): every event kind, legal and illegal."""

from __future__ import annotations

import re

import pytest
from conftest import Session

from runtime import (
    INTERRUPTED_MARK,
    BranchImported,
    Category,
    DuplicateMessage,
    EventRejected,
    ForeignEvent,
    IllegalTransition,
    InvalidMessage,
    MessageAdded,
    MetadataUpdated,
    OrphanRecovered,
    RolledBack,
    SeqMismatch,
    SessionState,
    Status,
    StatusChanged,
    StatusConflict,
    TurnConflict,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
    TurnStatus,
    UnknownMessage,
    UnmatchedToolResult,
    apply,
    new_message,
)
from runtime.testing import check_invariants


def rejects(
    session: Session, error: type[Exception], text: str, cls: type, **fields: object
) -> None:
    """The event is rejected with exactly ``text`` and the head is unchanged."""
    before = session.state
    event = session.event(cls, **fields)
    with pytest.raises(error, match=f"^{re.escape(text)}$"):
        apply(before, event)
    assert session.state is before


class TestCommonChecks:
    def test_seq_must_be_next(self, session: Session) -> None:
        """An event whose seq is not the next one is rejected."""
        session.ask()
        event = TurnStarted(session_id="sess", seq=5, at=session.at(), turn_id="t1")
        with pytest.raises(
            SeqMismatch,
            match=r"^TurnStarted has seq 5 but session 'sess' is at seq 1; the next event must have seq 2\.$",
        ):
            apply(session.state, event)

    def test_event_of_another_session(self, session: Session) -> None:
        """An event for another session is rejected."""
        event = TurnStarted(session_id="other", seq=1, at=session.at(), turn_id="t1")
        with pytest.raises(
            ForeignEvent, match=r"^TurnStarted seq 1 belongs to session 'other', not 'sess'\.$"
        ):
            apply(session.state, event)

    def test_not_an_event(self, session: Session) -> None:
        """apply() names what it accepts when handed something else."""
        with pytest.raises(
            TypeError, match=r"^apply\(\) takes an Amber event .* got 3 that is an 'int'\.$"
        ):
            apply(session.state, 3)  # type: ignore[arg-type]


class TestMessageAdded:
    def test_input_is_queued(self, session: Session) -> None:
        """A user question joins as pending_agent, stamped with its event seq, and is queued."""
        message = session.ask()
        assert message.status is Status.PENDING_AGENT
        assert message.event_seq == 1
        assert dict(session.state.queued) == {"u1": 0}
        assert session.state.count(Status.PENDING_AGENT) == 1

    def test_duplicate_id(self, session: Session) -> None:
        """A second message with a used id is rejected."""
        session.ask()
        rejects(
            session, DuplicateMessage,
            "Session 'sess' already has a message 'u1'; give each message a new id.",
            MessageAdded, message=session.message(Category.USER_QUESTION, "u1", content="again"),
        )  # fmt: skip

    def test_wrong_initial_status(self, session: Session) -> None:
        """A message must be added in its category's initial status."""
        import attrs

        message = attrs.evolve(session.message(Category.REPLY, "r"), status=Status.DELIVERED)
        rejects(
            session, IllegalTransition, "Message 'r' (reply) must be added as pending (got delivered).",
            MessageAdded, message=message,
        )  # fmt: skip

    def test_system_prompt_is_not_stored(self, session: Session) -> None:
        """The system prompt is virtual."""
        rejects(
            session, InvalidMessage,
            "Message 'sys' is a system prompt, which is virtual and never stored; pass it to the "
            "projections instead.",
            MessageAdded, message=session.message(Category.SYSTEM_PROMPT, "sys", content="You are Amber"),
        )  # fmt: skip

    def test_turn_output_needs_active_turn(self, session: Session) -> None:
        """A thought cannot be added when no turn runs."""
        rejects(
            session, TurnConflict,
            "Message 'th' (thought) names turn 't1' but no turn is active; turn output is added "
            "while its turn runs.",
            MessageAdded, message=session.message(Category.THOUGHT, "th", turn_id="t1"),
        )  # fmt: skip

    def test_input_must_be_unclaimed(self, session: Session) -> None:
        """An input cannot arrive already claimed."""
        rejects(
            session, TurnConflict,
            "Input message 'u1' (user question) is added with turn_id 't9'; inputs are added "
            "unclaimed (turn_id=None) and a TurnStarted event claims them.",
            MessageAdded, message=session.message(Category.USER_QUESTION, "u1", turn_id="t9"),
        )  # fmt: skip

    def test_unknown_parent(self, session: Session) -> None:
        """A parent id must name a message of the session."""
        rejects(
            session, UnknownMessage,
            "Message 'n' names parent 'ghost', which session 'sess' does not have.",
            MessageAdded, message=session.message(Category.NOTIFICATION, "n", parent_id="ghost"),
        )  # fmt: skip

    def test_preset_event_seq_must_match(self, session: Session) -> None:
        """A caller may preset event_seq, but only to the adding event's seq."""
        rejects(
            session, EventRejected,
            "Message 'n' has event_seq 9 but is added by the event with seq 1; leave event_seq "
            "None and the reducer sets it.",
            MessageAdded, message=session.message(Category.NOTIFICATION, "n", event_seq=9),
        )  # fmt: skip

    def test_message_of_another_session(self, session: Session) -> None:
        """A message must belong to the event's session."""
        message = new_message(
            Category.NOTIFICATION, id="n", session_id="other", created_at=session.at()
        )
        rejects(
            session, ForeignEvent, "Message 'n' belongs to session 'other', not 'sess'.",
            MessageAdded, message=message,
        )  # fmt: skip

    def test_notification_outside_a_turn(self, session: Session) -> None:
        """Notifications need no turn."""
        assert session.add(Category.NOTIFICATION, "n", content="compacted").turn_id is None


class TestToolPairing:
    def test_result_closes_open_call(self, session: Session) -> None:
        """A result answers its call: the call leaves the turn's open calls."""
        session.ask()
        session.start()
        session.call("c1", "call_1")
        assert dict(session.state.active_turn.open_calls) == {"call_1": "c1"}
        session.result("r1", "call_1", parent="c1")
        assert dict(session.state.active_turn.open_calls) == {}
        assert session.state.tool_results["call_1"] == "r1"

    def test_second_result_rejected(self, session: Session) -> None:
        """A call is answered once."""
        session.ask()
        session.start()
        session.call("c1", "call_1")
        session.result("r1", "call_1")
        rejects(
            session, UnmatchedToolResult,
            "Tool result 'r2' answers tool call 'call_1', but it was already answered by message "
            "'r1'; a result answers exactly one open call of its own turn.",
            MessageAdded, message=session.message(Category.TOOL_RESULT, "r2", turn_id="t1", tool_call_id="call_1"),
        )  # fmt: skip

    def test_result_for_unknown_call(self, session: Session) -> None:
        """A result must answer a known call."""
        session.ask()
        session.start()
        rejects(
            session, UnmatchedToolResult,
            "Tool result 'r1' answers tool call 'nope', but no tool call has that id; a result "
            "answers exactly one open call of its own turn.",
            MessageAdded, message=session.message(Category.TOOL_RESULT, "r1", turn_id="t1", tool_call_id="nope"),
        )  # fmt: skip

    def test_result_for_call_of_earlier_turn(self, session: Session) -> None:
        """A result cannot answer a call of another turn."""
        session.ask()
        session.start()
        session.call("c1", "call_1")
        session.end(outcome=TurnOutcome.ERROR)
        session.ask("u2")
        session.start("t2")
        rejects(
            session, UnmatchedToolResult,
            "Tool result 'r1' answers tool call 'call_1', but that call belongs to another turn; "
            "a result answers exactly one open call of its own turn.",
            MessageAdded, message=session.message(Category.TOOL_RESULT, "r1", turn_id="t2", tool_call_id="call_1"),
        )  # fmt: skip

    def test_processed_turn_needs_every_result(self, session: Session) -> None:
        """A turn cannot end processed while one of its tool calls waits for a result."""
        session.ask()
        session.start()
        session.call("c1", "call_1")
        rejects(
            session, EventRejected,
            "TurnEnded seq 4 ends turn 't1' as processed while tool calls call_1 have no result; "
            "add their results first, or end the turn as interrupted or error.",
            TurnEnded, turn_id="t1", outcome=TurnOutcome.PROCESSED,
        )  # fmt: skip

    def test_result_parent_must_be_its_call(self, session: Session) -> None:
        """A result's parent, when given, is the call message."""
        session.ask()
        session.start()
        session.call("c1", "call_1")
        rejects(
            session, UnmatchedToolResult,
            "Tool result 'r1' answers call 'call_1' (message 'c1') but names parent 'u1'; a "
            "result's parent is its call.",
            MessageAdded,
            message=session.message(Category.TOOL_RESULT, "r1", turn_id="t1", tool_call_id="call_1", parent_id="u1"),
        )  # fmt: skip

    def test_tool_call_ids_unique(self, session: Session) -> None:
        """Two calls cannot share a tool call id."""
        session.ask()
        session.start()
        session.call("c1", "call_1")
        from runtime import ToolCall

        rejects(
            session, DuplicateMessage,
            "Tool call id 'call_1' of message 'c2' is already used by message 'c1'; tool call ids "
            "are unique in a session.",
            MessageAdded,
            message=session.message(Category.TOOL_CALL, "c2", turn_id="t1", tool_call=ToolCall(id="call_1", name="sh")),
        )  # fmt: skip


class TestStatusChanged:
    def test_delivery(self, session: Session) -> None:
        """pending -> delivered through StatusChanged."""
        session.add(Category.NOTIFICATION, "n")
        session.deliver("n")
        assert session.state.message("n").status is Status.DELIVERED
        assert session.state.count(Status.DELIVERED) == 1
        assert session.state.count(Status.PENDING) == 0

    def test_compare_and_set_lost(self, session: Session) -> None:
        """The expected status must be the current one."""
        session.add(Category.NOTIFICATION, "n")
        session.deliver("n")
        rejects(
            session, StatusConflict,
            "StatusChanged seq 3 expected message 'n' to be pending, but it is delivered; read the "
            "state again and retry.",
            StatusChanged, message_id="n", expected=Status.PENDING, status=Status.DELIVERED,
        )  # fmt: skip

    def test_claim_is_not_a_status_change(self, session: Session) -> None:
        """Claims belong to TurnStarted, so invariant 2 holds by construction."""
        session.ask()
        rejects(
            session, IllegalTransition,
            "Cannot move message 'u1' (user question) from pending_agent to processing with "
            "StatusChanged: only TurnStarted makes that change.",
            StatusChanged, message_id="u1", expected=Status.PENDING_AGENT, status=Status.PROCESSING,
        )  # fmt: skip

    def test_terminal_never_changes(self, session: Session) -> None:
        """A delivered reply stays delivered."""
        session.add(Category.NOTIFICATION, "n")
        session.deliver("n")
        rejects(
            session, IllegalTransition,
            "Cannot move message 'n' (notification) from delivered to pending: delivered is "
            "terminal for a notification.",
            StatusChanged, message_id="n", expected=Status.DELIVERED, status=Status.PENDING,
        )  # fmt: skip

    def test_unknown_message(self, session: Session) -> None:
        """A status change must name a known message."""
        rejects(
            session, UnknownMessage,
            "StatusChanged seq 1 names message 'ghost', which session 'sess' does not have.",
            StatusChanged, message_id="ghost", expected=Status.PENDING, status=Status.DELIVERED,
        )  # fmt: skip


class TestMetadataUpdated:
    def test_merges_keys(self, session: Session) -> None:
        """New keys are merged over the old ones; the old message object is untouched."""
        old = session.add(Category.NOTIFICATION, "n", metadata={"a": 1})
        session.do(MetadataUpdated, message_id="n", metadata={"discord_message_id": "42"})
        assert dict(session.state.message("n").metadata) == {"a": 1, "discord_message_id": "42"}
        assert dict(old.metadata) == {"a": 1}

    def test_category_flags_are_reserved(self, session: Session) -> None:
        """Setting a category flag would change what a message is."""
        session.ask()
        rejects(
            session, EventRejected,
            "MetadataUpdated seq 2 sets is_cronjob on message 'u1'; those keys fix a message's "
            "category and cannot change.",
            MetadataUpdated, message_id="u1", metadata={"is_cronjob": True},
        )  # fmt: skip


class TestTurnStarted:
    def test_claims_every_pending_input(self, session: Session) -> None:
        """All pending inputs, of every input category, are claimed in order."""
        session.ask("u1")
        session.add(Category.CRON_PROMPT, "cron", content="diagnostics")
        session.add(Category.BACKGROUND_ALERT, "alert", content="[System Alert] job done")
        session.start()
        state = session.state
        assert list(state.active_turn.input_ids) == ["u1", "cron", "alert"]
        assert all(state.message(i).status is Status.PROCESSING for i in ("u1", "cron", "alert"))
        assert all(state.message(i).turn_id == "t1" for i in ("u1", "cron", "alert"))
        assert not state.queued

    def test_one_active_turn(self, session: Session) -> None:
        """A second turn cannot start while one runs."""
        session.ask()
        session.start()
        session.ask("u2")
        rejects(
            session, TurnConflict,
            "TurnStarted seq 4 starts turn 't2' while turn 't1' is active; end it first (one "
            "active turn per session).",
            TurnStarted, turn_id="t2",
        )  # fmt: skip

    def test_nothing_to_claim(self, session: Session) -> None:
        """A turn needs pending input."""
        rejects(
            session, TurnConflict,
            "TurnStarted seq 1: session 'sess' has no pending input to claim; a turn starts only "
            "when input is waiting.",
            TurnStarted, turn_id="t1",
        )  # fmt: skip

    def test_turn_ids_unique(self, session: Session) -> None:
        """A turn id is used once."""
        session.ask()
        session.start()
        session.end()
        session.ask("u2")
        rejects(
            session, TurnConflict,
            "TurnStarted seq 5 reuses turn id 't1'; give each turn a new id.",
            TurnStarted, turn_id="t1",
        )  # fmt: skip


class TestTurnEnded:
    @pytest.mark.parametrize(
        ("outcome", "status"),
        [
            (TurnOutcome.PROCESSED, Status.PROCESSED),
            (TurnOutcome.INTERRUPTED, Status.INTERRUPTED),
            (TurnOutcome.ERROR, Status.ERROR),
        ],
    )
    def test_settles_inputs(self, session: Session, outcome: TurnOutcome, status: Status) -> None:
        """Claimed inputs take the outcome's status; the turn record ends."""
        session.ask()
        session.start()
        session.end(outcome=outcome, reason="why", metrics={"turn_tool_calls": 0}, duration_ms=12.5)
        state = session.state
        assert state.message("u1").status is status
        assert state.active_turn_id is None
        turn = state.turns["t1"]
        assert turn.status.value == outcome.value
        assert (turn.reason, turn.duration_ms, dict(turn.metrics)) == (
            "why",
            12.5,
            {"turn_tool_calls": 0},
        )
        assert turn.ended_seq == state.seq

    def test_interrupt_settles_unanswered_calls(self, session: Session) -> None:
        """On interrupt, unanswered calls (responded or delivered) become interrupted; answered ones stay."""
        session.ask()
        session.start()
        session.call("c1", "call_1")
        session.call("c2", "call_2")
        session.call("c3", "call_3")
        session.result("r1", "call_1")
        session.deliver("c2")
        session.end(outcome=TurnOutcome.INTERRUPTED)
        state = session.state
        assert state.message("c1").status is Status.RESPONDED
        assert state.message("c2").status is Status.INTERRUPTED
        assert state.message("c3").status is Status.INTERRUPTED
        assert not state.turns["t1"].open_calls

    def test_error_leaves_calls(self, session: Session) -> None:
        """Only an interrupt touches unanswered calls (DESIGN §3)."""
        session.ask()
        session.start()
        session.call("c1", "call_1")
        session.end(outcome=TurnOutcome.ERROR)
        assert session.state.message("c1").status is Status.RESPONDED

    def test_partial_output_kept_with_marker(self, session: Session) -> None:
        """Output cut short is kept, marked interrupted, stamped with the ending seq."""
        session.ask()
        session.start()
        partial = [
            session.message(Category.THOUGHT, "th", turn_id="t1", content="I was think"),
            session.message(Category.REPLY, "rp", turn_id="t1", content="The answ"),
        ]
        session.end(outcome=TurnOutcome.INTERRUPTED, partial=partial)
        state = session.state
        for message_id in ("th", "rp"):
            message = state.message(message_id)
            assert message.metadata[INTERRUPTED_MARK] is True
            assert message.event_seq == state.seq
        assert [m.id for m in state.messages] == ["u1", "th", "rp"]
        assert state.message("rp").status is Status.PENDING

    def test_partial_not_allowed_when_processed(self, session: Session) -> None:
        """A processed turn has no partial output."""
        session.ask()
        session.start()
        rejects(
            session, EventRejected,
            "TurnEnded seq 3 ends turn 't1' as processed but carries partial output; add finished "
            "output with MessageAdded, partial output only comes with interrupted or error.",
            TurnEnded, turn_id="t1", outcome=TurnOutcome.PROCESSED,
            partial=[session.message(Category.REPLY, "rp", turn_id="t1")],
        )  # fmt: skip

    def test_partial_must_be_thought_or_reply_of_turn(self, session: Session) -> None:
        """Partial output is this turn's thoughts and replies only."""
        session.ask()
        session.start()
        rejects(
            session, EventRejected,
            "TurnEnded seq 3: partial message 'n' must be a thought or reply of turn 't1' with a new "
            "id (got a notification of turn None).",
            TurnEnded, turn_id="t1", outcome=TurnOutcome.ERROR,
            partial=[session.message(Category.NOTIFICATION, "n")],
        )  # fmt: skip

    def test_crash_notice_comes_after_partial_output(self, session: Session) -> None:
        """A failed turn's notice is added after what streamed, stamped with the end's seq."""
        session.ask()
        session.start()
        half = session.message(Category.REPLY, "rp", turn_id="t1", content="Sunny in")
        notice = session.message(Category.CRASH_NOTICE, "cn", turn_id="t1")
        session.end(outcome=TurnOutcome.ERROR, partial=[half], notice=notice)
        state = session.state
        assert [m.id for m in state.messages] == ["u1", "rp", "cn"]
        assert state.message("cn").event_seq == state.seq
        assert INTERRUPTED_MARK not in state.message("cn").metadata

    @pytest.mark.parametrize(
        ("outcome", "category", "turn_id", "problem"),
        [
            (TurnOutcome.ERROR, Category.REPLY, "t1",
             "must be a crash notice of turn 't1' (got a reply of turn 't1')"),
            (TurnOutcome.ERROR, Category.CRASH_NOTICE, None,
             "must be a crash notice of turn 't1' (got a crash notice of turn None)"),
            (TurnOutcome.PROCESSED, Category.CRASH_NOTICE, "t1",
             "comes with a turn ended processed; a crash notice only comes with interrupted or "
             "error"),
        ],
    )  # fmt: skip
    def test_notice_must_be_a_crash_notice_of_a_failed_turn(
        self,
        session: Session,
        outcome: TurnOutcome,
        category: Category,
        turn_id: str | None,
        problem: str,
    ) -> None:
        """Only a crash notice of this turn, on a turn that did not process, rides its end."""
        session.ask()
        session.start()
        notice = session.message(category, "cn", turn_id=turn_id)
        with pytest.raises(EventRejected) as caught:
            session.end(outcome=outcome, notice=notice)
        assert str(caught.value) == f"TurnEnded seq 3: notice 'cn' {problem}."
        assert session.state.get("cn") is None

    def test_notice_id_must_be_new(self, session: Session) -> None:
        """A notice cannot reuse an id, not even one of this end's partial output."""
        session.ask()
        session.start()
        half = session.message(Category.REPLY, "cn", turn_id="t1")
        notice = session.message(Category.CRASH_NOTICE, "cn", turn_id="t1")
        with pytest.raises(EventRejected) as caught:
            session.end(outcome=TurnOutcome.ERROR, partial=[half], notice=notice)
        assert str(caught.value) == (
            "TurnEnded seq 3: notice 'cn' has the id of a partial message of this end; give it "
            "a new id."
        )

    def test_wrong_turn(self, session: Session) -> None:
        """Only the active turn can end."""
        session.ask()
        session.start()
        rejects(
            session, TurnConflict, "TurnEnded seq 3 names turn 'tx' but turn 't1' is active.",
            TurnEnded, turn_id="tx", outcome=TurnOutcome.PROCESSED,
        )  # fmt: skip


class TestOrphanRecovered:
    def test_inputs_back_to_pending(self, session: Session) -> None:
        """A dead turn's inputs go back to pending_agent, unclaimed; the turn is recovered."""
        session.ask()
        session.start()
        session.call("c1", "call_1")
        session.do(OrphanRecovered, turn_id="t1", reason="runner died")
        state = session.state
        message = state.message("u1")
        assert (message.status, message.turn_id) == (Status.PENDING_AGENT, None)
        assert dict(state.queued) == {"u1": 0}
        assert state.turns["t1"].status is TurnStatus.RECOVERED
        assert state.message("c1").status is Status.RESPONDED  # no invented result
        session.start("t2")
        assert list(session.state.active_turn.input_ids) == ["u1"]

    def test_a_log_from_before_calls_interrupted_leaves_the_calls_open(
        self, session: Session
    ) -> None:
        """Without ``calls_interrupted`` (logs written before it) the open calls stay as they
        were and the recovered turn still lists them: old logs replay unchanged."""
        session.ask()
        session.start()
        session.call("c1", "call_1")
        session.do(OrphanRecovered, turn_id="t1")
        state = session.state
        assert state.message("c1").status is Status.RESPONDED
        assert dict(state.turns["t1"].open_calls) == {"call_1": "c1"}

    def test_calls_interrupted_interrupts_the_open_calls(self, session: Session) -> None:
        """With ``calls_interrupted`` a dead turn's calls with no result become interrupted,
        as an interrupted turn's do (a channel edits their ⏳ lines to ⏹); answered calls
        keep their status, and the recovered turn lists no open call."""
        session.ask()
        session.start()
        session.call("c1", "call_1")
        session.call("c2", "call_2")
        session.do(
            StatusChanged, message_id="c2", expected=Status.RESPONDED, status=Status.DELIVERED
        )
        session.call("c3", "call_3")
        session.add(
            Category.TOOL_RESULT, "r3", turn_id="t1", parent_id="c3", tool_call_id="call_3",
            sender="sh", content="done",
        )  # fmt: skip
        session.do(OrphanRecovered, turn_id="t1", reason="runner died", calls_interrupted=True)
        state = session.state
        assert [state.message(m).status for m in ("c1", "c2", "c3")] == [
            Status.INTERRUPTED, Status.INTERRUPTED, Status.RESPONDED,
        ]  # fmt: skip
        assert state.message("u1").status is Status.PENDING_AGENT
        assert dict(state.turns["t1"].open_calls) == {}
        assert state.turns["t1"].status is TurnStatus.RECOVERED
        check_invariants(session.timeline)

    def test_needs_the_active_turn(self, session: Session) -> None:
        """Recovery names the active turn."""
        rejects(
            session, TurnConflict, "OrphanRecovered seq 1 names turn 't1' but no turn is active.",
            OrphanRecovered, turn_id="t1",
        )  # fmt: skip


class TestRolledBack:
    def test_marks_later_messages_inactive(self, session: Session) -> None:
        """Messages added after to_seq become inactive; payloads are unchanged."""
        session.ask()
        session.start()
        session.reply("r1")
        session.end()
        boundary = session.state.seq
        session.ask("u2", "second")
        session.start("t2")
        session.reply("r2", turn_id="t2")
        session.end("t2")
        before = session.state
        session.do(RolledBack, to_seq=boundary)
        state = session.state
        assert [m.id for m in state.messages if m.active] == ["u1", "r1"]
        for message_id in ("u2", "r2"):
            old, new = before.message(message_id), state.message(message_id)
            assert not new.active
            assert (old.content, old.status) == (new.content, new.status)

    def test_rolled_back_message_keeps_its_status(self, session: Session) -> None:
        """A rolled-back message is out of the lifecycle."""
        session.add(Category.NOTIFICATION, "n")
        session.add(Category.NOTIFICATION, "m")
        session.do(RolledBack, to_seq=1)
        rejects(
            session, IllegalTransition,
            "Cannot move message 'm' (notification) from pending to delivered: it was rolled back, "
            "and rolled-back messages keep the status they had.",
            StatusChanged, message_id="m", expected=Status.PENDING, status=Status.DELIVERED,
        )  # fmt: skip

    def test_not_during_a_turn(self, session: Session) -> None:
        """Rollback waits for the turn to end."""
        session.ask()
        session.start()
        rejects(
            session, TurnConflict,
            "RolledBack seq 3 while turn 't1' is active; end or interrupt the turn before rolling back.",
            RolledBack, to_seq=0,
        )  # fmt: skip

    def test_not_over_waiting_input(self, session: Session) -> None:
        """Input still waiting for a turn cannot be hidden."""
        session.ask()
        rejects(
            session, EventRejected,
            "RolledBack seq 2 would hide input still waiting for a turn ('u1'); let a turn settle "
            "it, then roll back.",
            RolledBack, to_seq=0,
        )  # fmt: skip

    def test_to_seq_below_current(self, session: Session) -> None:
        """to_seq must be in the past."""
        session.add(Category.NOTIFICATION, "n")
        rejects(
            session, EventRejected,
            "RolledBack seq 2 rolls back to seq 1, but session 'sess' is at seq 1; to_seq must be "
            "below the current seq.",
            RolledBack, to_seq=1,
        )  # fmt: skip


class TestBranchImported:
    def test_only_into_an_empty_session(self, session: Session) -> None:
        """A branch starts a session; it cannot land on one with history."""
        session.add(Category.NOTIFICATION, "n")
        rejects(
            session, EventRejected,
            "BranchImported seq 2 must start an empty session, but session 'sess' already has 1 "
            "messages; fork into a new session id.",
            BranchImported, source_session_id="src", source_seq=3,
        )  # fmt: skip

    def test_inconsistent_branch_rejected(self) -> None:
        """An imported state whose parts disagree is rejected, naming the problem."""
        source = Session("src")
        source.ask()
        source.start()
        processing = source.state.message("u1")
        import attrs

        event = BranchImported(
            session_id="dst", seq=1, at=source.at(), source_session_id="src", source_seq=2,
            messages=[attrs.evolve(processing, session_id="dst")], turns=[],
        )  # fmt: skip
        with pytest.raises(
            EventRejected,
            match=r"^BranchImported seq 1 from session 'src' seq 2 is not a consistent state: "
            r"message 'u1' is processing but is not claimed by the active turn; message 'u1' names "
            r"unknown turn 't1'\.$",
        ):
            apply(SessionState.empty("dst"), event)
