"""Model-call audit rows in the core: events, reducer rules, isolation, JSON, snapshots."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from conftest import Session

from runtime import (
    AuditCall,
    AuditConflict,
    AuditStatus,
    Event,
    InvalidEvent,
    ModelCallFinished,
    ModelCallStarted,
    OrphanRecovered,
    SessionState,
    Status,
    TurnConflict,
    TurnOutcome,
    Usage,
    apply,
    clean_history,
    from_json,
    session_history,
    to_anthropic,
    to_gemini,
    to_json,
    to_openai,
)
from runtime.store import MemoryStore, SQLiteStore
from runtime.testing import InvariantViolation, check_audit, check_invariants


def start(session: Session, op: str = "op1", key: str = "t1#0", seq: int = 1, **kw: Any) -> None:
    session.do(
        ModelCallStarted, operation_id=op, source_key=key, turn_id=kw.pop("turn_id", "t1"),
        sequence=seq, **kw,
    )  # fmt: skip


def finish(session: Session, op: str = "op1", **kw: Any) -> None:
    kw.setdefault("status", AuditStatus.COMPLETED)
    session.do(ModelCallFinished, operation_id=op, **kw)


def rejects(session: Session, error: type[Exception], text: str, cls: type, **fields: Any) -> None:
    before = session.state
    with pytest.raises(error, match=f"^{re.escape(text)}$"):
        apply(before, session.event(cls, **fields))
    assert session.state is before


@pytest.fixture
def turn(session: Session) -> Session:
    session.ask()
    session.start()
    return session


class TestStartAndFinish:
    def test_two_calls_in_order_with_usage(self, turn: Session) -> None:
        """Two calls of a turn become two rows, ordered, with usage and content."""
        start(turn)
        finish(turn, usage=Usage(input_tokens=10, output_tokens=5), content="calling a tool",
               tool_calls=[AuditCall(id="c1", name="sh", arguments_json='{"a"')], duration_ms=12.5)  # fmt: skip
        start(turn, "op2", "t1#1", 2)
        finish(turn, "op2", usage=Usage(input_tokens=30, output_tokens=7), content="done")
        rows = turn.state.model_calls()
        assert [(r.operation_id, r.sequence, r.status) for r in rows] == [
            ("op1", 1, AuditStatus.COMPLETED),
            ("op2", 2, AuditStatus.COMPLETED),
        ]
        assert rows[0].usage == Usage(input_tokens=10, output_tokens=5)
        assert rows[0].tool_calls[0].arguments_json == '{"a"'
        assert rows[0].duration_ms == 12.5
        assert rows[0].started_seq == 3 and rows[0].ended_seq == 4  # noqa: PT018

    def test_next_turn_does_not_copy_operations(self, turn: Session) -> None:
        """Rows belong to their turn; a new turn starts its own."""
        start(turn)
        finish(turn)
        turn.reply("r1")
        turn.end()
        turn.ask("u2")
        turn.start("t2")
        start(turn, "op2", "t2#0", 2, turn_id="t2")
        assert [r.operation_id for r in turn.state.model_calls("t2")] == ["op2"]
        assert [r.operation_id for r in turn.state.model_calls("t1")] == ["op1"]

    def test_replayed_start_changes_nothing(self, turn: Session) -> None:
        """The same start again (same key, id and sequence) leaves the rows as they were."""
        start(turn)
        rows = turn.state.audit
        start(turn)
        assert turn.state.audit is rows

    def test_replayed_finish_changes_nothing(self, turn: Session) -> None:
        """The same finish again is a no-op; a completed row never returns to running."""
        start(turn)
        finish(turn, content="x")
        rows = turn.state.audit
        finish(turn, content="x")
        start(turn)
        assert turn.state.audit is rows
        assert turn.state.model_calls()[0].status is AuditStatus.COMPLETED

    def test_conflicting_start_is_refused(self, turn: Session) -> None:
        """The same source key with another operation id or sequence fails loudly."""
        start(turn)
        rejects(
            turn, AuditConflict,
            "ModelCallStarted seq 4 starts call 't1#0' as operation 'op9' #1, but that call "
            "already started as operation 'op1' #1; one call has one operation id and one "
            "sequence.",
            ModelCallStarted, operation_id="op9", source_key="t1#0", turn_id="t1", sequence=1,
        )  # fmt: skip
        rejects(
            turn, AuditConflict,
            "ModelCallStarted seq 4 starts call 't1#0' as operation 'op1' #2, but that call "
            "already started as operation 'op1' #1; one call has one operation id and one "
            "sequence.",
            ModelCallStarted, operation_id="op1", source_key="t1#0", turn_id="t1", sequence=2,
        )  # fmt: skip

    def test_operation_ids_are_unique_per_turn_and_role(self, turn: Session) -> None:
        """Another call of the same turn and role cannot reuse an operation id."""
        start(turn)
        rejects(
            turn, AuditConflict,
            "ModelCallStarted seq 4: operation 'op1' is already call 't1#0' of turn 't1' "
            "(assistant); operation ids are unique per turn and role.",
            ModelCallStarted, operation_id="op1", source_key="t1#1", turn_id="t1", sequence=2,
        )  # fmt: skip

    def test_another_role_may_reuse_an_operation_id(self, turn: Session) -> None:
        """Uniqueness is per turn and role: a summarizer's call may share the agent's id."""
        start(turn)
        start(turn, "op1", "t1#summary", 2, role="summarizer")
        assert [(r.role, r.operation_id) for r in turn.state.model_calls()] == [
            ("assistant", "op1"), ("summarizer", "op1"),
        ]  # fmt: skip
        finish(turn, "op1", source_key="t1#summary")
        assert turn.state.audit["t1#summary"].status is AuditStatus.COMPLETED
        assert turn.state.audit["t1#0"].status is AuditStatus.RUNNING
        rejects(
            turn, AuditConflict,
            "ModelCallFinished seq 6 finishes call 't1#0' as operation 'op9', but it started "
            "as 'op1'.",
            ModelCallFinished, operation_id="op9", status=AuditStatus.COMPLETED,
            source_key="t1#0",
        )  # fmt: skip

    def test_a_provider_id_reused_in_a_later_turn_is_accepted(self, turn: Session) -> None:
        """Issue 14 case 3: a provider that reuses its message ids across turns keeps working."""
        start(turn, "msg_01")
        finish(turn, "msg_01", content="first answer")
        turn.end()
        turn.ask("u2")
        turn.start("t2")
        start(turn, "msg_01", "t2#0", 2, turn_id="t2")
        finish(turn, "msg_01", content="second answer")
        rows = turn.state.model_calls()
        assert [(r.turn_id, r.operation_id, r.content) for r in rows] == [
            ("t1", "msg_01", "first answer"), ("t2", "msg_01", "second answer"),
        ]  # fmt: skip
        check_audit(turn.state)
        assert from_json(to_json(turn.state), SessionState) == turn.state

    def test_sequence_is_gapless(self, turn: Session) -> None:
        """A sequence that skips is refused."""
        rejects(
            turn, AuditConflict,
            "ModelCallStarted seq 3 has sequence 2 but the session's next model call is #1; "
            "sequences are strict and gapless.",
            ModelCallStarted, operation_id="op1", source_key="t1#0", turn_id="t1", sequence=2,
        )  # fmt: skip

    def test_start_needs_its_active_turn(self, session: Session) -> None:
        """A call starts inside its running turn."""
        session.ask()
        rejects(
            session, TurnConflict,
            "ModelCallStarted seq 2 names turn 't1' but no turn is active; a model call starts "
            "inside its running turn.",
            ModelCallStarted, operation_id="op1", source_key="t1#0", turn_id="t1", sequence=1,
        )  # fmt: skip

    def test_finish_of_unknown_operation(self, turn: Session) -> None:
        """Finishing a call that never started is refused."""
        rejects(
            turn, AuditConflict,
            "ModelCallFinished seq 3 finishes operation 'op1', which no call of the active turn "
            "of session 'sess' started; start it with ModelCallStarted.",
            ModelCallFinished, operation_id="op1", status=AuditStatus.COMPLETED,
        )  # fmt: skip
        rejects(
            turn, AuditConflict,
            "ModelCallFinished seq 3 finishes call 't1#0', which session 'sess' never started; "
            "start it with ModelCallStarted.",
            ModelCallFinished, operation_id="op1", status=AuditStatus.COMPLETED,
            source_key="t1#0",
        )  # fmt: skip

    def test_finished_row_never_changes(self, turn: Session) -> None:
        """A different finish of a finished row is refused."""
        start(turn)
        finish(turn, content="x")
        rejects(
            turn, AuditConflict,
            "ModelCallFinished seq 5 finishes operation 'op1' as failed, but it is completed "
            "already (since seq 4); a finished model call never changes.",
            ModelCallFinished, operation_id="op1", status=AuditStatus.FAILED,
        )  # fmt: skip

    def test_finish_status_is_completed_or_failed(self) -> None:
        """Interrupted and abandoned come only from the end of the turn."""
        with pytest.raises(InvalidEvent, match=r"^ModelCallFinished.status must be completed"):
            ModelCallFinished(
                session_id="s", seq=1, at=Session().at(), operation_id="op",
                status=AuditStatus.INTERRUPTED,
            )  # fmt: skip

    @pytest.mark.parametrize("cost", [float("inf"), float("nan"), -0.5])
    def test_a_cost_is_a_finite_number_of_dollars(self, cost: float) -> None:
        """A cost JSON cannot hold (infinity: stored as null, it read back as no cost; the
        summary row's exact sum cannot hold it either: SQLiteStore.append raised
        OverflowError) is refused when the event is made, naming the field."""
        with pytest.raises(InvalidEvent, match=r"^ModelCallFinished.cost_usd must be a finite"):
            ModelCallFinished(
                session_id="s", seq=1, at=Session().at(), operation_id="op",
                status=AuditStatus.COMPLETED, cost_usd=cost,
            )  # fmt: skip


class TestTerminalReconcile:
    @pytest.mark.parametrize(
        ("outcome", "status"),
        [
            (TurnOutcome.ERROR, AuditStatus.FAILED),
            (TurnOutcome.INTERRUPTED, AuditStatus.INTERRUPTED),
            (TurnOutcome.PROCESSED, AuditStatus.ABANDONED),
        ],
    )
    def test_turn_end_closes_running_rows(
        self, turn: Session, outcome: TurnOutcome, status: AuditStatus
    ) -> None:
        """The event that ends a turn closes its running rows; finished ones stay."""
        start(turn)
        finish(turn)
        start(turn, "op2", "t1#1", 2)
        if outcome is TurnOutcome.PROCESSED:
            turn.reply("r1")
        turn.end(outcome=outcome)
        rows = turn.state.model_calls()
        assert [r.status for r in rows] == [AuditStatus.COMPLETED, status]
        assert rows[1].ended_seq == turn.state.seq
        assert turn.state.audit_running == ()
        check_invariants(turn.timeline)

    def test_dead_runner_abandons_rows(self, turn: Session) -> None:
        """Orphan recovery closes the turn's running rows as abandoned."""
        start(turn)
        turn.do(OrphanRecovered, turn_id="t1", reason="runner died")
        (row,) = turn.state.model_calls()
        assert row.status is AuditStatus.ABANDONED
        assert row.error == "runner died"


class TestIsolation:
    def test_rows_never_reach_history_views_or_counts(self, turn: Session) -> None:
        """Audit rows stay out of history, the model's view, provider views and counts."""
        start(turn)
        finish(turn, content="SECRET AUDIT TEXT")
        turn.reply("r1", text="visible")
        turn.end()
        state = turn.state
        assert len(state.messages) == 2
        assert sum(state.counts) == 2
        assert all("SECRET" not in m.content for m in session_history(state))
        assert "SECRET" not in repr(clean_history(state))
        for view in (to_openai(state), to_anthropic(state), to_gemini(state)):
            assert "SECRET" not in repr(view)
        assert state.model_calls()[0].content == "SECRET AUDIT TEXT"


class TestPersistence:
    def _session(self) -> Session:
        session = Session()
        session.ask()
        session.start()
        start(session)
        finish(session, usage=Usage(input_tokens=1, output_tokens=2), content="c",
               tool_calls=[AuditCall(id="c1", name="sh", arguments_json="{}")])  # fmt: skip
        start(session, "op2", "t1#1", 2)
        return session

    def test_json_round_trip(self) -> None:
        """Audit events and states with rows survive JSON unchanged."""
        session = self._session()
        for event in session.timeline.events():
            assert from_json(to_json(event), Event) == event
        assert from_json(to_json(session.state), SessionState) == session.state

    @pytest.mark.parametrize("kind", ["memory", "sqlite"])
    def test_stores_rehydrate_rows(self, kind: str, tmp_path: Path) -> None:
        """Rows come back from snapshots and from replay alike, running ones included."""
        session = self._session()
        store = (
            MemoryStore(snapshot_every=2)
            if kind == "memory"
            else SQLiteStore(tmp_path / "a.db", snapshot_every=2)
        )
        with store:
            store.append(session.timeline.events())
            assert store.load_state("sess") == session.state
            assert store.load_state("sess").model_calls()[1].status is AuditStatus.RUNNING
            store.verify("sess")
        if kind == "sqlite":
            with SQLiteStore(tmp_path / "a.db") as again:
                assert again.load_state("sess") == session.state
                assert again.session("sess").counts[Status.PROCESSING] == 1


class TestChecks:
    def test_check_audit_catches_a_running_row_of_an_ended_turn(self, turn: Session) -> None:
        """Invariant 4: a hand-made state with a running row of an ended turn is caught."""
        start(turn)
        finish(turn)
        turn.reply("r1")
        turn.end()
        row = turn.state.model_calls()[0]
        from runtime._replace import replace

        broken = replace(
            turn.state, audit=turn.state.audit.set("t1#0", replace(row, status=AuditStatus.RUNNING))
        )
        with pytest.raises(InvariantViolation, match=r"^Invariant 4 \(nothing of an ended turn"):
            check_audit(broken)

    def test_check_audit_catches_a_changed_finished_row(self, turn: Session) -> None:
        """Invariant 10: a finished row that changes is caught."""
        start(turn)
        finish(turn, content="a")
        before = turn.state
        from runtime._replace import replace

        after = replace(
            before, audit=before.audit.set("t1#0", replace(before.audit["t1#0"], content="b"))
        )
        with pytest.raises(InvariantViolation, match=r"^Invariant 10 \(finished rows never change"):
            check_audit(after, before)


class TestDiff:
    def test_diff_lists_model_call_changes(self, turn: Session) -> None:
        """diff() reports rows that started, finished or were closed."""
        start(turn)
        before = turn.state.seq
        finish(turn)
        start(turn, "op2", "t1#1", 2)
        turn.end(outcome=TurnOutcome.INTERRUPTED)
        changes = turn.timeline.diff(before, turn.state.seq).model_calls
        assert [(c.operation_id, c.before, c.after) for c in changes] == [
            ("op1", AuditStatus.RUNNING, AuditStatus.COMPLETED),
            ("op2", None, AuditStatus.INTERRUPTED),
        ]
