"""assemble_state builds the state build_state builds from the same parts, sound or not."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import AuditRow, AuditStatus, Message, Status
from runtime._state import build_state, check_consistent
from runtime.store._assemble import FAST_STATES, assemble_state
from runtime.testing import timelines

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def both(
    state: Any, messages: list[Any], turns: list[Any], audit: tuple[Any, ...] = ()
) -> tuple[Any, Any]:
    parts = {
        "session_id": state.session_id,
        "seq": state.seq,
        "updated_at": state.updated_at,
        "messages": messages,
        "turns": turns,
        "audit": audit,
    }
    return assemble_state(**parts), build_state(**parts)


@st.composite
def audit_rows(draw: st.DrawFn) -> AuditRow:
    """Audit rows whose ids, keys and sequences may clash."""
    return AuditRow(
        operation_id=draw(st.sampled_from(["op1", "op2", "op3"])),
        source_key=draw(st.sampled_from(["t#0", "t#1"])),
        turn_id=draw(st.sampled_from(["t", "u"])),
        role="assistant",
        sequence=draw(st.integers(1, 4)),
        status=draw(st.sampled_from(AuditStatus)),
        started_at=T0,
        started_seq=1,
    )


class TestAssembleState:
    def test_knows_the_state_fields(self) -> None:
        """The column-wise path is on: it knows every field of SessionState (teach it new ones)."""
        assert FAST_STATES

    @settings(max_examples=100, deadline=None)
    @given(timelines(max_steps=40, rich=True), st.data())
    def test_equals_build_state(self, timeline: Any, data: st.DataObject) -> None:
        """Any state of a legal session, rebuilt from its parts, is equal either way (and to itself)."""
        state = timeline.at(data.draw(st.integers(0, timeline.last_seq)))
        assembled, built = both(state, state.messages.tolist(), state.turn_list())
        assert assembled == built == state
        assert check_consistent(assembled) == []

    @settings(max_examples=200, deadline=None)
    @given(timelines(max_steps=40), st.data())
    def test_unsound_parts(self, timeline: Any, data: st.DataObject) -> None:
        """Parts that disagree (items repeated, dropped, reordered or altered: ids, statuses,
        call ids shared; audit rows that clash) give the same state either way, with the
        same problems."""
        pool = st.sampled_from(["a", "b"])

        def alter(message: Message) -> Message:
            changes: dict[str, Any] = {
                "status": data.draw(st.sampled_from(Status)),
                "active": data.draw(st.booleans()),
            }
            if data.draw(st.booleans()):
                changes["id"] = data.draw(pool)
            if message.tool_call is not None:
                changes["tool_call"] = attrs.evolve(message.tool_call, id=data.draw(pool))
            if message.tool_call_id is not None:
                changes["tool_call_id"] = data.draw(pool)
            return attrs.evolve(message, **changes)

        messages = timeline.head.messages.tolist()
        turns = timeline.head.turn_list()
        if messages:
            messages = data.draw(st.lists(st.sampled_from(messages), max_size=30))
            messages = [alter(m) if data.draw(st.booleans()) else m for m in messages]
        if turns:
            turns = data.draw(st.lists(st.sampled_from(turns), max_size=8))
        audit = tuple(data.draw(st.lists(audit_rows(), max_size=4)))
        assembled, built = both(timeline.head, messages, turns, audit)
        assert assembled == built
        assert check_consistent(assembled) == check_consistent(built)
