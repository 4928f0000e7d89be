"""Timeline: append, at, head, diff, fork, replay and verify."""

from __future__ import annotations

import attrs
import pytest
from conftest import T0, Session
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import (
    BranchImported,
    Category,
    EventRejected,
    ReplayMismatch,
    SeqOutOfRange,
    SessionState,
    Status,
    Timeline,
    TurnOutcome,
    TurnStarted,
    TurnStatus,
    added_seq,
    apply,
    diff,
    inherited,
    replay,
    verify,
)
from runtime.testing import check_invariants, session_events, timelines


def seed_trace(session: Session) -> Session:
    """Seed 000 §6.1: a question, a thought, a tool call, its result, the reply."""
    session.ask("msg_user_001", "run the history tests")
    session.start("turn_1")
    session.add(Category.THOUGHT, "msg_thought_001", turn_id="turn_1", parent_id="msg_user_001")
    session.call("msg_call_001", "call_1", turn_id="turn_1", parent="msg_user_001")
    session.deliver("msg_thought_001")
    session.deliver("msg_call_001")
    session.result("msg_result_001", "call_1", turn_id="turn_1", parent="msg_call_001")
    session.deliver("msg_result_001")
    session.reply("msg_reply_001", turn_id="turn_1", parent="msg_user_001")
    session.end("turn_1", metrics={"turn_tool_calls": 1})
    session.deliver("msg_reply_001")
    return session


class TestAppendAndAt:
    def test_at_every_seq(self, session: Session) -> None:
        """at(k) is the state right after event k; at(0) is the empty base."""
        seed_trace(session)
        timeline = session.timeline
        assert timeline.at(0) == SessionState.empty("sess")
        assert timeline.at(1).message("msg_user_001").status is Status.PENDING_AGENT
        assert timeline.at(2).message("msg_user_001").status is Status.PROCESSING
        assert timeline.head is timeline.at(timeline.last_seq)
        assert timeline.head.message("msg_user_001").status is Status.PROCESSED
        assert [e.seq for e in timeline.events()] == list(range(1, 12))
        assert timeline.event(3).seq == 3

    def test_append_returns_new_timeline(self, session: Session) -> None:
        """append() leaves the old timeline as it was."""
        session.ask()
        old = session.timeline
        session.start()
        assert len(old) == 1
        assert len(session.timeline) == 2

    def test_rejected_event_leaves_timeline(self, session: Session) -> None:
        """A rejected event changes nothing."""
        session.ask()
        before = session.timeline
        with pytest.raises(EventRejected):
            before.append(session.event(BranchImported, source_session_id="x", source_seq=0))
        assert session.timeline is before

    @pytest.mark.parametrize("seq", [-1, 4])
    def test_seq_out_of_range(self, session: Session, seq: int) -> None:
        """at() names the range it holds."""
        session.ask()
        session.start()
        session.end()
        with pytest.raises(
            SeqOutOfRange,
            match=rf"^Session 'sess' has no state at seq {seq}; this timeline holds seq 0 to 3\.$",
        ):
            session.timeline.at(seq)

    def test_event_zero_out_of_range(self, session: Session) -> None:
        """There is no event 0."""
        with pytest.raises(
            SeqOutOfRange,
            match=r"^Session 'sess' has no event at seq 0; this timeline holds no events\.$",
        ):
            session.timeline.event(0)

    def test_from_snapshot(self, session: Session) -> None:
        """A timeline can start from a snapshot and holds seqs from there."""
        seed_trace(session)
        snapshot = session.timeline.at(5)
        tail = session.timeline.events()[5:]
        rebuilt = Timeline.from_state(snapshot).extend(tail)
        assert rebuilt.head == session.state
        assert rebuilt.first_seq == 5
        with pytest.raises(SeqOutOfRange):
            rebuilt.at(4)


class TestDiff:
    def test_added_and_status_changes(self, session: Session) -> None:
        """diff lists added messages, status changes and turn changes."""
        seed_trace(session)
        delta = session.timeline.diff(1, 3)
        assert [m.id for m in delta.added] == ["msg_thought_001"]
        assert [(c.message_id, c.field, c.before, c.after) for c in delta.changed] == [
            ("msg_user_001", "status", Status.PENDING_AGENT, Status.PROCESSING),
            ("msg_user_001", "turn_id", None, "turn_1"),
        ]
        assert [(t.turn_id, t.before, t.after) for t in delta.turns] == [
            ("turn_1", None, TurnStatus.ACTIVE)
        ]

    def test_metadata_changes_per_key(self, session: Session) -> None:
        """Metadata changes are reported per key."""
        from runtime import MetadataUpdated

        session.add(Category.NOTIFICATION, "n", metadata={"a": 1})
        session.do(MetadataUpdated, message_id="n", metadata={"a": 2, "b": True})
        delta = session.timeline.diff(1, 2)
        assert [(c.field, c.before, c.after) for c in delta.metadata_changes] == [
            ("metadata.a", 1, 2),
            ("metadata.b", None, True),
        ]

    def test_no_change(self, session: Session) -> None:
        """A state compared with itself has an empty diff."""
        seed_trace(session)
        assert not session.timeline.diff(4, 4)

    def test_fork_against_source(self, session: Session) -> None:
        """Two sessions compare by message id."""
        seed_trace(session)
        fork = session.timeline.fork(4, "fork", at=T0)
        delta = diff(fork.head, session.state)
        assert "msg_reply_001" in [m.id for m in delta.added]
        assert not delta.removed


class TestFork:
    def test_fork_starts_from_past_state(self, session: Session) -> None:
        """fork(seq) imports that state's messages and turns into a new session."""
        seed_trace(session)
        fork = session.timeline.fork(4, "sess_fork", at=T0)
        assert fork.session_id == "sess_fork"
        assert fork.last_seq == 1
        event = fork.event(1)
        assert isinstance(event, BranchImported)
        assert (event.source_session_id, event.source_seq) == ("sess", 4)
        source = session.timeline.at(4)
        assert [m.id for m in fork.head.messages] == [m.id for m in source.messages]
        # Shared, not copied: inherited messages keep their provenance (session, event seq).
        assert fork.head.messages is source.messages
        assert all(inherited(fork.head, m) and added_seq(fork.head, m) == 1 for m in fork.head)
        assert fork.head.active_turn_id == "turn_1"
        assert session.timeline.at(4) is source  # the source is untouched

    def test_fork_continues_independently(self, session: Session) -> None:
        """A fork takes new events of its own; the source is unaffected."""
        seed_trace(session)
        fork = Session("sess_fork")
        fork.timeline = session.timeline.fork(4, "sess_fork", at=T0)
        fork.end("turn_1", outcome=TurnOutcome.INTERRUPTED)
        assert fork.state.message("msg_call_001").status is Status.INTERRUPTED
        assert session.state.message("msg_call_001").status is Status.DELIVERED
        check_invariants(fork.timeline)

    @settings(max_examples=40, deadline=None)
    @given(timelines(rich=True), st.data())
    def test_fork_state_is_what_its_event_makes(
        self, timeline: Timeline, data: st.DataObject
    ) -> None:
        """fork() builds the new state from the source's indexes; it equals the state that
        applying its BranchImported makes (what a replay of the stored fork does), and the
        fork of a fork too."""
        seq = data.draw(st.integers(timeline.first_seq, timeline.last_seq))
        fork = timeline.fork(seq, "forked", at=T0)
        applied = apply(SessionState.empty("forked"), fork.event(1))
        assert fork.head == applied
        # The fields left out of equality too (a snapshot writes from them).
        assert list(fork.head.audit_rows) == list(applied.audit_rows)
        assert list(fork.head.turn_order) == list(applied.turn_order)
        assert replay(fork.events()).head == fork.head
        check_invariants(fork)
        again = fork.fork(1, "forked-again", at=T0)
        assert again.head == apply(SessionState.empty("forked-again"), again.event(1))
        assert [m.id for m in again.head.messages] == [m.id for m in timeline.at(seq).messages]

    def test_fork_needs_new_id(self, session: Session) -> None:
        """Forking into the same session id is refused."""
        session.ask()
        with pytest.raises(
            ValueError,
            match=r"^fork\(\) needs a new session id; got 'sess', the source's own id\.$",
        ):
            session.timeline.fork(1, "sess", at=T0)


class TestReplayAndVerify:
    def test_replay_equals_timeline(self, session: Session) -> None:
        """Replaying the log reproduces every state."""
        seed_trace(session)
        replayed = replay(session.timeline.events())
        assert all(replayed.at(k) == session.timeline.at(k) for k in range(12))

    def test_replay_needs_session(self) -> None:
        """An empty log with no base is refused with a reason."""
        with pytest.raises(
            ValueError, match=r"^replay\(\) needs at least one event or a base state"
        ):
            replay([])

    def test_verify_accepts_true_snapshots(self, session: Session) -> None:
        """verify() passes when recorded states match the replay."""
        seed_trace(session)
        verify(session.timeline.events(), [session.timeline.at(3), session.timeline.at(9)])

    def test_verify_reports_divergence(self, session: Session) -> None:
        """A tampered snapshot is reported with its seq and the difference."""
        seed_trace(session)
        good = session.timeline.at(9)
        position = good.index["msg_user_001"]
        bad = attrs.evolve(
            good,
            messages=good.messages.set(
                position, attrs.evolve(good.messages[position], content="tampered")
            ),
        )
        with pytest.raises(
            ReplayMismatch,
            match=r"^Replaying session 'sess' does not reproduce the recorded state at seq 9 \(recorded "
            r"-> replayed: 0 added; 0 removed; msg_user_001\.content: 'tampered' -> 'run the history "
            r"tests'\)\.$",
        ):
            verify(session.timeline.events(), [bad])


class TestProperties:
    @settings(max_examples=60, deadline=None)
    @given(timelines())
    def test_random_sessions_keep_invariants(self, timeline: Timeline) -> None:
        """Invariants 1, 2, 3 and 5 hold over random legal sessions."""
        check_invariants(timeline)

    @settings(max_examples=60, deadline=None)
    @given(session_events(), st.data())
    def test_fork_replays_source_state(self, log: list, data: st.DataObject) -> None:
        """A fork at k has the source's messages at k, with the same statuses and payloads."""
        timeline = Timeline.start("s").extend(log)
        k = data.draw(st.integers(min_value=0, max_value=timeline.last_seq))
        fork = timeline.fork(k, "f", at=T0)
        source = timeline.at(k)
        assert [attrs.evolve(m, session_id="s", event_seq=None) for m in fork.head.messages] == [
            attrs.evolve(m, event_seq=None) for m in source.messages
        ]
        assert fork.head.active_turn_id == source.active_turn_id
        check_invariants(fork)


class TestVersions:
    def test_old_version_branches_without_touching_newer(self, session: Session) -> None:
        """Appending to an older version leaves every other version as it was."""
        session.ask("u1")
        old = session.timeline
        session.start("t1")
        newer = session.timeline
        branch = old.append(TurnStarted(session_id="sess", seq=2, at=T0, turn_id="other"))
        assert newer.head.active_turn_id == "t1"
        assert branch.head.active_turn_id == "other"
        assert len(old) == 1
        assert old.at(1) is newer.at(1) is branch.at(1)
        assert [e.seq for e in branch.events()] == [1, 2]

    def test_equal_timelines(self, session: Session) -> None:
        """Timelines compare by what they hold, not by how they were built."""
        seed_trace(session)
        rebuilt = replay(session.timeline.events())
        assert rebuilt == session.timeline
        assert hash(rebuilt) == hash(session.timeline)
        assert rebuilt != replay(session.timeline.events()[:5])

    def test_entries_view(self, session: Session) -> None:
        """entries is a read-only sequence of (event, state) pairs."""
        seed_trace(session)
        entries = session.timeline.entries
        assert len(entries) == 11
        assert entries[0] == (session.timeline.event(1), session.timeline.at(1))
        assert entries[-1][1] is session.timeline.head
        assert [e.seq for e, _ in entries[2:4]] == [3, 4]
        with pytest.raises(IndexError):
            entries[11]


class TestForkOfFork:
    def test_turns_stay_in_order(self, session: Session) -> None:
        """A fork of a fork lists its turns in the order they ran, whatever their source seqs."""
        seed_trace(session)
        session.ask("u2")
        session.start("t2")
        session.end("t2")
        fork = Session("f1")
        fork.timeline = session.timeline.fork(session.timeline.last_seq, "f1", at=T0)
        fork.ask("u3")
        fork.start("t3")
        fork.end("t3")
        again = fork.timeline.fork(fork.timeline.last_seq, "f2", at=T0)
        assert [t.id for t in again.head.turn_list()] == ["turn_1", "t2", "t3"]
        check_invariants(again)
