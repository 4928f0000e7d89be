"""Recovery after a crash (seed 000 §4.4): orphaned turns give their inputs back."""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from datetime import datetime, timedelta

import attrs
import pytest

from runtime import (
    ApprovalDecided,
    ApprovalRequested,
    MessageType,
    MetadataUpdated,
    SessionState,
    Status,
    ToolResultPart,
    TurnStatus,
    clean_history,
)
from runtime._clean import MAY_HAVE_RUN
from runtime.store import (
    DEFAULT_ORPHAN_AGE,
    SQLiteStore,
    Store,
    recover_orphans,
    waits_for_approval,
)

from .scenario import T0, continue_session, conversation

OpenStore = Callable[..., SQLiteStore]


def mid_tool_call(store: Store, session_id: str = "s") -> SessionState:
    """Store a session whose turn has called a tool and died waiting for the result."""
    events = conversation(session_id, 4)  # question, turn start, thought, tool call
    return store.append(events)[session_id]


def waiting_for_approval(store: Store, session_id: str = "s") -> SessionState:
    """Store a session whose turn waits for a person to approve its one tool call."""
    head = mid_tool_call(store, session_id)
    turn = head.active_turn
    assert turn is not None
    (call_id,) = turn.open_calls
    asked = ApprovalRequested(
        session_id=session_id, seq=head.seq + 1, at=head.updated_at, turn_id=turn.id,
        call_id=call_id,
    )  # fmt: skip
    return store.append([asked])[session_id]


class TestApprovalIsNoOrphan:
    """A turn that waits only for a person logs nothing while it waits: however long
    that is, it is no orphan (before the fix recovery interrupted its call, put its input
    back to pending and lost the approval)."""

    def test_a_turn_waiting_for_approval_is_left_alone(self, store: Store) -> None:
        head = waiting_for_approval(store)
        now = head.updated_at + timedelta(days=2)
        assert waits_for_approval(store, store.session("s"))
        assert recover_orphans(store, now=now, older_than=timedelta(0)) == []
        state = store.load_state("s")
        assert state == head
        assert state.active_turn is not None
        assert list(state.active_turn.awaiting_approval)

    def test_an_approved_call_without_result_is_an_orphan(self, store: Store) -> None:
        """Once approved, the call runs: a turn whose runner died then is an orphan."""
        head = waiting_for_approval(store)
        turn = head.active_turn
        assert turn is not None
        (call_id,) = turn.awaiting_approval
        decided = ApprovalDecided(
            session_id="s", seq=head.seq + 1, at=head.updated_at, turn_id=turn.id,
            call_id=call_id, approved=True,
        )  # fmt: skip
        store.append([decided])
        assert not waits_for_approval(store, store.session("s"))
        (event,) = recover_orphans(store, now=head.updated_at + timedelta(hours=1))
        assert event.turn_id == turn.id

    def test_others_are_recovered_beside_it(self, store: Store) -> None:
        waiting_for_approval(store, "w")
        mid_tool_call(store, "a")
        recovered = recover_orphans(store, now=T0 + timedelta(days=1))
        assert [e.session_id for e in recovered] == ["a"]
        assert not waits_for_approval(store, store.session("a"))


class Unloadable:
    """A store whose sessions cannot be loaded: what is answered through it came from the
    summary rows alone."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def load_state(self, session_id: str) -> SessionState:
        raise AssertionError(f"load_state({session_id!r}): the summary row held the answer")


class TestWaitsForApprovalFromTheRow:
    """``waits_for_approval`` reads the flag the summary row holds (schema 4, PostgreSQL 2)
    instead of loading the session's head (it loaded the head of every stale session
    ``amber recover`` looked at); a row without it (an older Amber's, not filled) loads the
    head as before."""

    @pytest.mark.parametrize("waiting", [True, False])
    def test_a_row_with_the_flag_is_not_loaded(self, store: Store, waiting: bool) -> None:
        head = waiting_for_approval(store) if waiting else mid_tool_call(store)
        assert head.waits_for_approval is waiting
        info = store.session("s")
        assert waits_for_approval(Unloadable(store), info) is waiting  # type: ignore[arg-type]

    def test_a_row_without_it_loads_the_head(self, store: Store) -> None:
        head = waiting_for_approval(store)
        older = attrs.evolve(store.session("s"), cost=None, waits_for_approval=False)
        assert waits_for_approval(store, older) is True
        with pytest.raises(AssertionError, match=r"^load_state\('s'\)"):
            waits_for_approval(Unloadable(store), older)  # type: ignore[arg-type]
        assert head.waits_for_approval

    def test_an_unfilled_sqlite_row(self, tmp_path: pathlib.Path) -> None:
        """As an older Amber wrote it: no cost, no flag (NULL), its digest over the rest."""
        import sqlite3

        from runtime.store._summaries import SUMMARY_COLUMNS, summary_row_digest

        path = tmp_path / "old.db"
        with SQLiteStore(path) as store:
            waiting_for_approval(store)
        with sqlite3.connect(path) as db:
            row = db.execute(f"SELECT {SUMMARY_COLUMNS} FROM sessions").fetchone()
            db.execute(
                "UPDATE sessions SET cost = NULL, waits = NULL, row_digest = ?",
                (summary_row_digest((*row[:8], None, None)),),
            )
        db.close()
        with SQLiteStore(path) as store:
            info = store.session("s")
            assert (info.cost, info.waits_for_approval) == (None, False)
            assert waits_for_approval(store, info) is True


class TestRecoverOrphans:
    def test_idle_turn_gives_its_inputs_back(self, store: Store) -> None:
        """An active turn idle for longer than the threshold is recovered: inputs go back to pending_agent."""
        head = mid_tool_call(store)
        now = head.updated_at + timedelta(seconds=301)
        (event,) = recover_orphans(store, now=now)
        assert (event.session_id, event.seq, event.at) == ("s", 6, now)  # after the marking
        assert (event.turn_id, event.calls_interrupted) == ("t2", True)
        assert event.reason is not None
        assert event.reason.startswith(
            "no activity for 301 s (more than 300 s) when recover_orphans() ran; its runner "
            "is presumed dead; tool call "
        )
        state = store.load_state("s")
        assert state.message("m1").status is Status.PENDING_AGENT
        assert state.message("m1").turn_id is None
        assert "m1" in state.queued
        assert state.turns["t2"].status is TurnStatus.RECOVERED
        assert state.active_turn_id is None
        assert store.events("s")[-1] == event

    def test_the_reason_names_who_recovered(self, store: Store) -> None:
        """``by``: who ran the recovery (``amber recover``), not "the runtime"."""
        head = mid_tool_call(store)
        now = head.updated_at + timedelta(seconds=301)
        (event,) = recover_orphans(store, now=now, by="amber recover")
        assert event.reason is not None
        assert event.reason.startswith(
            "no activity for 301 s (more than 300 s) when amber recover ran; its runner is "
            "presumed dead;"
        )

    def test_no_invented_tool_results(self, store: Store) -> None:
        """A tool call left without a result gets no stored result; it becomes interrupted,
        as an interrupted turn's unanswered call does (marked as one that may have run),
        and the turn lists no open call."""
        head = mid_tool_call(store)
        call = next(m for m in head.messages if m.type is MessageType.TOOL_CALL)
        (event,) = recover_orphans(store, now=head.updated_at + timedelta(hours=1))
        state = store.load_state("s")
        assert [m for m in state.messages if m.type is MessageType.TOOL_RESULT] == []
        assert state.message(call.id) == attrs.evolve(
            call, status=Status.INTERRUPTED, metadata={**call.metadata, MAY_HAVE_RUN: True}
        )
        assert dict(state.turns[event.turn_id].open_calls) == {}
        assert len(state.messages) == len(head.messages)

    def test_a_call_handed_to_its_tool_may_have_run(self, store: Store) -> None:
        """The call had been handed to its tool (it waited for no approval): it is marked
        ``may_have_run`` (stored before the recovery, in its batch), so the model's view
        says it may have run, and the reason names it."""
        head = mid_tool_call(store)
        call = next(m for m in head.messages if m.type is MessageType.TOOL_CALL)
        assert call.tool_call is not None
        now = head.updated_at + timedelta(hours=1)
        (event,) = recover_orphans(store, now=now, older_than=timedelta(seconds=300))
        assert event.seq == head.seq + 2
        assert event.reason == (
            "no activity for 3600 s (more than 300 s) when recover_orphans() ran; its runner "
            f"is presumed dead; tool call {call.tool_call.id} ({call.tool_call.name}) had "
            "started; it may have run, so check before running it again"
        )
        marked = store.events("s")[-2]
        assert marked == MetadataUpdated(
            session_id="s", seq=head.seq + 1, at=now, message_id=call.id,
            metadata={MAY_HAVE_RUN: True},
        )  # fmt: skip
        (result,) = [
            part
            for message in clean_history(store.load_state("s")).messages
            for part in message.parts
            if isinstance(part, ToolResultPart)
        ]
        assert "it may have run, in part or in full. Check before calling it again" in (result.text)

    def test_recent_activity_is_left_alone(self, store: Store) -> None:
        """A turn whose session had an event within the threshold is not recovered."""
        head = mid_tool_call(store)
        assert recover_orphans(store, now=head.updated_at + timedelta(seconds=299)) == []
        assert recover_orphans(store, now=head.updated_at + DEFAULT_ORPHAN_AGE) != []

    def test_threshold_is_configurable(self, store: Store) -> None:
        """older_than sets the threshold."""
        head = mid_tool_call(store)
        now = head.updated_at + timedelta(seconds=30)
        assert recover_orphans(store, now=now, older_than=timedelta(minutes=1)) == []
        assert len(recover_orphans(store, now=now, older_than=timedelta(seconds=10))) == 1

    def test_long_turn_with_recent_output_is_left_alone(self, store: Store) -> None:
        """Idleness counts from the session's last event: a turn that started long ago but
        stored output recently is alive, not orphaned."""
        head = mid_tool_call(store)
        assert head.active_turn is not None
        result = continue_session(head, 1)[0][0]  # the tool's result, an hour later
        store.append([attrs.evolve(result, at=head.active_turn.started_at + timedelta(hours=1))])
        now = head.active_turn.started_at + timedelta(hours=1, seconds=10)
        assert recover_orphans(store, now=now) == []
        assert len(recover_orphans(store, now=now + timedelta(seconds=300))) == 1

    def test_only_sessions_with_an_active_turn(self, store: Store) -> None:
        """Sessions with no active turn are untouched; all recoveries share one batch."""
        store.append(conversation("done", 11))
        mid_tool_call(store, "a")
        mid_tool_call(store, "b")
        now = T0 + timedelta(days=1)
        recovered = recover_orphans(store, now=now)
        assert sorted(e.session_id for e in recovered) == ["a", "b"]
        assert store.load_state("done").seq == 11
        assert recover_orphans(store, now=now) == []  # nothing left to recover

    def test_only_the_sessions_given(self, store: Store) -> None:
        """``sessions=`` limits recovery to those summaries (amber recover passes the sound
        ones when another session is damaged)."""
        mid_tool_call(store, "a")
        mid_tool_call(store, "b")
        now = T0 + timedelta(days=1)
        (event,) = recover_orphans(store, now=now, sessions=[store.session("b")])
        assert event.session_id == "b"
        assert store.load_state("a").active_turn_id is not None

    def test_after_reopening(self, open_store: OpenStore, db_path: pathlib.Path) -> None:
        """A store reopened after a crash recovers the turn its dead writer left active."""
        head = mid_tool_call(open_store())
        store = open_store()
        recover_orphans(store, now=head.updated_at + timedelta(minutes=10))
        assert store.load_state("s").message("m1").status is Status.PENDING_AGENT
        assert open_store().load_state("s") == store.load_state("s")

    def test_now_must_be_aware(self, store: Store) -> None:
        """``now`` must carry a UTC offset (the store reads no clock)."""
        with pytest.raises(
            ValueError,
            match=r"^now must be a timezone-aware datetime \(got datetime\.datetime\(2026, 1, 1, 0, 0\)\); use datetime\.now\(timezone\.utc\)\.$",
        ):
            recover_orphans(store, now=datetime(2026, 1, 1))

    def test_threshold_must_not_be_negative(self, store: Store) -> None:
        """older_than must be a non-negative timedelta."""
        with pytest.raises(
            ValueError,
            match=r"^older_than must be a non-negative timedelta \(got datetime\.timedelta\(days=-1, seconds=86399\)\), like timedelta\(seconds=300\)\.$",
        ):
            recover_orphans(store, now=T0, older_than=timedelta(seconds=-1))
