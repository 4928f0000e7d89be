"""UI segments: a turn's output in the order it streamed."""

from __future__ import annotations

import pytest
from conftest import Session
from hypothesis import given, settings

from runtime import (
    Category,
    OrphanRecovered,
    Segment,
    SegmentKind,
    Timeline,
    ToolState,
    TurnOutcome,
    UnknownTurn,
    category_of,
    ui_segments,
)
from runtime.testing import timelines


def kinds(segments: tuple[Segment, ...]) -> list[str]:
    return [s.kind.value for s in segments]


class TestInterleaving:
    def test_keeps_the_streamed_order(self, session: Session) -> None:
        """Reasoning, text, a call, its result, reasoning, text: as it happened, not phased."""
        session.ask("u1")
        session.start("t1")
        session.add(Category.THOUGHT, "th1", turn_id="t1", content="look first")
        session.reply("a1", text="Let me check.")
        session.call("c1", "call_1")
        session.result("r1", "call_1")
        session.add(Category.THOUGHT, "th2", turn_id="t1", content="fine")
        session.reply("a2", text="All good.")
        session.end()
        segments = ui_segments(session.state, "t1")
        assert kinds(segments) == [
            "reasoning",
            "text",
            "tool_call",
            "tool_result",
            "reasoning",
            "text",
        ]
        assert segments[2] == Segment(
            kind=SegmentKind.TOOL_CALL,
            message_ids=("c1",),
            text='sh({"command":"ls"})',
            tool_call_id="call_1",
            tool_name="sh",
            tool_state=ToolState.DONE,
        )

    def test_runs_of_one_kind_are_one_segment(self, session: Session) -> None:
        """Consecutive thoughts (or replies) group into one segment."""
        session.ask("u1")
        session.start("t1")
        session.add(Category.THOUGHT, "th1", turn_id="t1", content="one")
        session.add(Category.THOUGHT, "th2", turn_id="t1", content="two")
        (segment,) = ui_segments(session.state)
        assert segment.message_ids == ("th1", "th2")
        assert segment.text == "one\n\ntwo"

    def test_inputs_nudges_and_other_turns_are_left_out(self, session: Session) -> None:
        """Only this turn's user-visible output; the next question arriving mid-turn is not in it."""
        session.ask("u1")
        session.start("t1")
        session.add(Category.NUDGE, "n1", turn_id="t1", content="empty")
        session.ask("u2")
        session.reply("a1")
        session.end()
        session.start("t2")
        session.reply("a2", turn_id="t2")
        assert [s.message_ids for s in ui_segments(session.state, "t1")] == [("a1",)]
        assert [s.message_ids for s in ui_segments(session.state)] == [("a2",)]


class TestToolStates:
    def test_running_failed_and_interrupted(self, session: Session) -> None:
        """⏳ while the turn runs, ❌ on an error result, ⏹ when the turn ended without one."""
        session.ask("u1")
        session.start("t1")
        session.call("c1", "call_1")
        session.call("c2", "call_2")
        session.add(
            Category.TOOL_RESULT, "r2", turn_id="t1", tool_call_id="call_2", content="boom",
            is_error=True,
        )  # fmt: skip
        states = [s.tool_state for s in ui_segments(session.state) if s.tool_state]
        assert states == [ToolState.RUNNING, ToolState.FAILED]
        assert ui_segments(session.state)[-1].is_error
        session.end(outcome=TurnOutcome.INTERRUPTED)
        states = [s.tool_state for s in ui_segments(session.state, "t1") if s.tool_state]
        assert states == [ToolState.INTERRUPTED, ToolState.FAILED]

    def test_partial_and_crash_output_is_flagged(self, session: Session) -> None:
        """Cut-short text says so; a crash notice is an error notice."""
        session.ask("u1")
        session.start("t1")
        session.add(Category.CRASH_NOTICE, "x1", turn_id="t1", content="failed")
        half = session.message(Category.REPLY, "p1", turn_id="t1", content="The ans")
        session.end(outcome=TurnOutcome.ERROR, partial=[half])
        notice, text = ui_segments(session.state, "t1")
        assert (notice.kind, notice.is_error) == (SegmentKind.NOTICE, True)
        assert (text.kind, text.interrupted) == (SegmentKind.TEXT, True)


class TestChoosingTheTurn:
    def test_defaults_to_the_latest_turn(self, session: Session) -> None:
        """Without an active turn, the latest one; with none at all, nothing."""
        assert ui_segments(session.state) == ()
        session.ask("u1")
        session.start("t1")
        session.reply("a1")
        session.end()
        session.ask("u2")
        assert [s.message_ids for s in ui_segments(session.state)] == [("a1",)]

    def test_recovered_turn_and_its_rerun(self, session: Session) -> None:
        """A dead turn's output and its rerun's stay apart."""
        session.ask("u1")
        session.start("t1")
        session.call("c1", "call_1")
        session.do(OrphanRecovered, turn_id="t1", reason="died")
        session.start("t2")
        session.reply("a2", turn_id="t2")
        assert [s.message_ids for s in ui_segments(session.state, "t1")] == [("c1",)]
        assert [s.message_ids for s in ui_segments(session.state, "t2")] == [("a2",)]
        assert ui_segments(session.state, "t1")[0].tool_state is ToolState.INTERRUPTED

    def test_unknown_turn(self, session: Session) -> None:
        """A turn the session does not have is named."""
        with pytest.raises(
            UnknownTurn,
            match=r"^Session 'sess' has no turn 'nope' at seq 0; pass the id of one of its turns, or None for the latest\.$",
        ):
            ui_segments(session.state, "nope")

    def test_state_must_be_a_state(self, session: Session) -> None:
        """A timeline is not a state."""
        with pytest.raises(TypeError, match=r"^ui_segments\(\) takes a SessionState"):
            ui_segments(session.timeline)  # type: ignore[arg-type]


class TestProperties:
    @settings(max_examples=60, deadline=None)
    @given(timelines(rich=True))
    def test_segments_cover_each_turns_visible_output_in_order(self, timeline: Timeline) -> None:
        """Each turn's segments hold exactly its active output (nudges aside), in stored order."""
        state = timeline.head
        for turn_id in state.turns:
            expected = [
                m.id
                for m in state.messages
                if m.active
                and m.turn_id == turn_id
                and not category_of(m).is_input
                and category_of(m) is not Category.NUDGE
            ]
            got = [i for s in ui_segments(state, turn_id) for i in s.message_ids]
            assert got == expected
