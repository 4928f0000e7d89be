"""runtime.testing: the checks catch hand-corrupted values; the strategies draw what they say."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime import (
    Category,
    EventRejected,
    InvalidInput,
    MessageAdded,
    SessionState,
    Status,
    Timeline,
    ToolCall,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
    TurnStatus,
    apply,
    new_message,
    validate_input,
)
from runtime.testing import (
    IllegalEvent,
    InvariantViolation,
    PastStates,
    TimelineChecker,
    check_invariants,
    check_phased_order,
    check_provider_view,
    check_provider_views,
    check_settled,
    check_single_turn,
    check_tool_pairing,
    check_turn_ends,
    illegal_events,
    invalid_arguments_for,
    mixed_session_events,
    timelines,
    user_inputs,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
FAST = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


def session_with_a_call() -> Timeline:
    """s: a question, a turn, a tool call and its result, a reply; the turn ended processed."""
    q = new_message(
        Category.USER_QUESTION, id="q", session_id="s", created_at=T0, content="hi", sender="Chii"
    )
    events = [
        MessageAdded(session_id="s", seq=1, at=T0, message=q),
        TurnStarted(session_id="s", seq=2, at=T0, turn_id="t1"),
        MessageAdded(session_id="s", seq=3, at=T0, message=new_message(
            Category.TOOL_CALL, id="c", session_id="s", created_at=T0, turn_id="t1",
            tool_call=ToolCall(id="call_1", name="sh"))),
        MessageAdded(session_id="s", seq=4, at=T0, message=new_message(
            Category.TOOL_RESULT, id="r", session_id="s", created_at=T0, turn_id="t1", sender="sh",
            tool_call_id="call_1", parent_id="c", content="ok")),
        MessageAdded(session_id="s", seq=5, at=T0, message=new_message(
            Category.REPLY, id="a", session_id="s", created_at=T0, turn_id="t1", content="done")),
        TurnEnded(session_id="s", seq=6, at=T0, turn_id="t1", outcome=TurnOutcome.PROCESSED),
    ]  # fmt: skip
    return Timeline.start("s").extend(events)


def with_message(state: SessionState, message_id: str, **changes: object) -> SessionState:
    """``state`` with one message changed behind the reducer's back."""
    position = state.index[message_id]
    changed = attrs.evolve(state.messages[position], **changes)
    return attrs.evolve(state, messages=state.messages.set(position, changed))


class TestCorruptedStatesAreCaught:
    """Invariants the core enforces by construction, broken by hand: the checks name them."""

    def test_processing_outside_the_active_turn(self) -> None:
        """Invariant 2: an input processing with no active turn."""
        state = with_message(session_with_a_call().head, "q", status=Status.PROCESSING)
        with pytest.raises(
            InvariantViolation,
            match=r"^Invariant 2 \(processing iff its turn is active\) broken at seq 6: message 'q' is processing and not claimed by the active turn$",
        ) as caught:
            check_single_turn(state)
        assert (caught.value.invariant, caught.value.seq, caught.value.message_id) == (2, 6, "q")

    def test_result_for_an_unknown_call(self) -> None:
        """Invariant 3: a result whose call does not exist."""
        state = with_message(session_with_a_call().head, "r", tool_call_id="call_9")
        with pytest.raises(
            InvariantViolation,
            match=r"^Invariant 3 \(results answer a call\) broken at seq 6: result 'r' answers unknown call 'call_9'$",
        ):
            check_tool_pairing(state)

    def test_result_of_another_turn(self) -> None:
        """Invariant 3: a result that names another turn than its call."""
        state = with_message(session_with_a_call().head, "r", turn_id="t0")
        with pytest.raises(
            InvariantViolation, match=r"^Invariant 3 \(results answer a call of the same turn\)"
        ):
            check_tool_pairing(state)

    def test_ended_turn_with_an_open_call(self) -> None:
        """Invariant 4: a processed turn that still has an open call."""
        state = session_with_a_call().head
        turn = attrs.evolve(state.turns["t1"], open_calls={"call_1": "c"})
        state = attrs.evolve(state, turns=state.turns.set("t1", turn))
        with pytest.raises(
            InvariantViolation,
            match=r"^Invariant 4 \(after a turn ends nothing of it is processing\) broken at seq 6: turn 't1' ended processed with tool calls \['call_1'\] still open$",
        ):
            check_turn_ends(state)
        assert turn.status is TurnStatus.PROCESSED

    def test_seq_gap_and_replay_mismatch(self) -> None:
        """Invariant 5: a gap in the fed log, and a state that is not the replay."""
        timeline = session_with_a_call()
        checker = TimelineChecker("s")
        with pytest.raises(
            InvariantViolation,
            match=r"^Invariant 5 \(gapless seq\) broken at seq 2: expected seq 1$",
        ):
            checker.feed(timeline.events()[1:])
        checker = TimelineChecker("s")
        checker.feed(timeline.events())
        corrupted = with_message(timeline.head, "a", content="something else")
        with pytest.raises(
            InvariantViolation,
            match=r"^Invariant 5 \(replay reproduces every state\) broken at seq 6: the runtime's state differs from the replay of the log; message 'a'",
        ):
            checker.compare(corrupted, who="the runtime")

    def test_a_kept_state_changed_in_place(self) -> None:
        """Invariant 6: a past state forced open and changed."""
        timeline = session_with_a_call()
        past = PastStates()
        past.remember(timeline.at(5))
        object.__setattr__(timeline.at(5).message("a"), "content", "rewritten")
        with pytest.raises(
            InvariantViolation, match=r"^Invariant 6 \(past states never change\) broken at seq 5"
        ):
            past.check(session_with_a_call())

    def test_invalid_provider_view(self) -> None:
        """Invariant 7: a view with an unanswered tool call."""
        view = [
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "sh", "arguments": "{}"}}
                ],
            }
        ]
        with pytest.raises(
            InvariantViolation,
            match=r"^Invariant 7 \(the openai view is valid for its API\) broken at seq 0: tool calls \['c1'\] are never answered$",
        ):
            check_provider_view(view, "openai")

    def test_history_out_of_phase(self) -> None:
        """Invariant 8: a history with the reply before the tool call."""
        state = session_with_a_call().head
        history = [state.message(i) for i in ("q", "a", "c", "r")]
        with pytest.raises(
            InvariantViolation,
            match=r"^Invariant 8 \(session_history keeps the phased order\) broken at seq 6: message 'c' \(phase 1\) comes after phase 3 in turn 't1'$",
        ):
            check_phased_order(state, history)

    def test_unsettled_and_lost_inputs(self) -> None:
        """Invariant 9: an accepted input not final, and one missing from the session."""
        timeline = session_with_a_call()
        with pytest.raises(
            InvariantViolation,
            match=r"^Invariant 9 \(every accepted user message reaches a final status\) broken at seq 2: input 'q' is processing \(turn 't1'\), not processed, interrupted or error$",
        ):
            check_settled(timeline.at(2))
        with pytest.raises(
            InvariantViolation, match=r"accepted input 'zz' is not in the session \(lost\)"
        ):
            check_settled(timeline.head, ["q", "zz"])
        check_settled(timeline.head, ["q"])


class TestLegalSessionsPass:
    @FAST
    @given(timelines())
    def test_checker_agrees_with_check_invariants(self, timeline: Timeline) -> None:
        """Every legal session passes both the full and the incremental checks, and 7 on its head."""
        check_invariants(timeline)
        checker = TimelineChecker("s", views=check_provider_views)
        checker.check(timeline)
        assert checker.seq == timeline.last_seq

    @FAST
    @given(mixed_session_events(rich=True))
    def test_illegal_events_are_refused(self, items: list[object]) -> None:
        """Each IllegalEvent raises the error it names and leaves the state as it was."""
        state = SessionState.empty("s")
        for item in items:
            if isinstance(item, IllegalEvent):
                with pytest.raises(item.error):
                    apply(state, item.event)
            else:
                state = apply(state, item)  # type: ignore[arg-type]

    @FAST
    @given(st.data())
    def test_illegal_events_of_any_state(self, data: st.DataObject) -> None:
        """illegal_events(state) draws events the reducer rejects."""
        timeline = data.draw(timelines())
        illegal = data.draw(illegal_events(timeline.head))
        assert issubclass(illegal.error, EventRejected)


class TestStrategies:
    @FAST
    @given(user_inputs(valid=False))
    def test_invalid_inputs_are_refused(self, bad: object) -> None:
        """user_inputs(valid=False) only draws input validate_input refuses."""
        with pytest.raises(InvalidInput):
            validate_input(bad)  # type: ignore[arg-type]

    @FAST
    @given(
        invalid_arguments_for(
            {
                "type": "object",
                "properties": {"n": {"type": "integer"}},
                "required": ["n"],
                "additionalProperties": False,
            }
        )
    )
    def test_invalid_arguments_break_the_schema(self, arguments: object) -> None:
        """Each invalid argument object lacks n, has a wrong n, an extra key, or is no object."""
        assert not (
            isinstance(arguments, dict)
            and set(arguments) == {"n"}
            and isinstance(arguments["n"], int)
        )
