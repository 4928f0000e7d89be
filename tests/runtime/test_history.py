"""session_history: active messages, turn by turn, each turn in phased order."""

from __future__ import annotations

import pytest
from conftest import T0, Session
from hypothesis import given, settings
from pyrsistent import pvector

import runtime._history
from runtime import (
    Category,
    OrphanRecovered,
    RolledBack,
    Timeline,
    TurnOutcome,
    ViewCache,
    cached_view,
    session_history,
    ui_segments,
)
from runtime._history import newest_first
from runtime._state import new_vector
from runtime.testing import InvariantViolation, check_phased_order, timelines


def ids(session: Session) -> list[str]:
    return [m.id for m in session_history(session.state)]


class TestPhasedOrder:
    def test_async_tools_are_put_back_in_phase_order(self, session: Session) -> None:
        """Thoughts, calls, results and text are sorted into phases 0-3 whatever their order."""
        session.ask("u1")
        session.start("t1")
        session.add(Category.THOUGHT, "th1", turn_id="t1", content="first")
        session.call("c1", "call_1")
        session.result("r1", "call_1")
        session.add(Category.THOUGHT, "th2", turn_id="t1", content="second")
        session.call("c2", "call_2")
        session.reply("a1", text="interim")
        session.result("r2", "call_2")
        session.reply("a2")
        session.end()
        assert ids(session) == ["u1", "th1", "th2", "c1", "c2", "r1", "r2", "a1", "a2"]

    def test_inputs_come_first_in_their_turn(self, session: Session) -> None:
        """An input that arrived during the previous turn opens the turn that claimed it."""
        session.ask("u1")
        session.start("t1")
        session.add(Category.THOUGHT, "th1", turn_id="t1")
        session.ask("u2", "wait")
        session.reply("a1")
        session.end(outcome=TurnOutcome.INTERRUPTED)
        session.start("t2")
        session.reply("a2", turn_id="t2")
        session.end("t2")
        assert ids(session) == ["u1", "th1", "a1", "u2", "a2"]

    def test_partial_output_joins_its_phase(self, session: Session) -> None:
        """Partial reasoning kept by an interrupt sorts with the thoughts, before the calls."""
        session.ask("u1")
        session.start("t1")
        session.call("c1", "call_1")
        partial = session.message(Category.THOUGHT, "p1", turn_id="t1", content="half")
        session.end(outcome=TurnOutcome.INTERRUPTED, partial=[partial])
        assert ids(session) == ["u1", "p1", "c1"]

    def test_nudges_crash_notices_and_notifications_are_final_text(self, session: Session) -> None:
        """Messages of phase 3 keep their stored order after the tool results."""
        session.ask("u1")
        session.start("t1")
        session.add(Category.NUDGE, "n1", turn_id="t1", content="empty reply")
        session.add(Category.NOTIFICATION, "note", turn_id="t1", content="compacted")
        session.call("c1", "call_1")
        session.result("r1", "call_1")
        session.add(Category.CRASH_NOTICE, "x1", turn_id="t1", content="crashed")
        session.end(outcome=TurnOutcome.ERROR)
        assert ids(session) == ["u1", "c1", "r1", "n1", "note", "x1"]


class TestTurnsAndLooseMessages:
    def test_messages_outside_turns_keep_their_place(self, session: Session) -> None:
        """A notification between turns and input still waiting stand at their positions."""
        session.ask("u1")
        session.start("t1")
        session.reply("a1")
        session.end()
        session.add(Category.NOTIFICATION, "note", content="compacted")
        session.ask("u2")
        assert ids(session) == ["u1", "a1", "note", "u2"]

    def test_input_waiting_during_a_turn_comes_after_it(self, session: Session) -> None:
        """Input that arrived mid-turn and is not claimed yet follows the whole active turn."""
        session.ask("u1")
        session.start("t1")
        session.ask("u2")
        session.reply("a1")
        assert ids(session) == ["u1", "a1", "u2"]

    def test_rolled_back_messages_are_left_out(self, session: Session) -> None:
        """Only active messages appear."""
        session.ask("u1")
        session.start("t1")
        session.reply("a1")
        session.end()
        keep = session.state.seq
        session.ask("u2")
        session.start("t2")
        session.reply("a2", turn_id="t2")
        session.end("t2")
        session.do(RolledBack, to_seq=keep)
        assert ids(session) == ["u1", "a1"]

    def test_a_recovered_turns_work_follows_its_question(self, session: Session) -> None:
        """A turn whose runner died keeps the input it first claimed, then the rerun follows."""
        session.ask("u1")
        session.start("t1")
        session.call("c1", "call_1")
        session.do(OrphanRecovered, turn_id="t1", reason="runner died")
        assert ids(session) == ["u1", "c1"]
        session.start("t2")
        session.reply("a2", turn_id="t2")
        session.end("t2")
        assert ids(session) == ["u1", "c1", "a2"]

    def test_turn_order_survives_a_fork(self, session: Session) -> None:
        """Imported turns keep the source's seqs; new turns still come after them."""
        for n in range(1, 4):
            session.ask(f"u{n}")
            session.start(f"t{n}")
            session.reply(f"a{n}", turn_id=f"t{n}")
            session.end(f"t{n}")
        fork = Session("fork")
        fork.timeline = session.timeline.fork(session.state.seq, "fork", at=session.at())
        fork.ask("u4")
        fork.start("t4")
        fork.reply("a4", turn_id="t4")
        fork.end("t4")
        assert fork.state.turns["t4"].started_seq < fork.state.turns["t3"].started_seq
        assert ids(fork) == ["u1", "a1", "u2", "a2", "u3", "a3", "u4", "a4"]
        check_phased_order(fork.state)


class TestCost:
    def test_turns_are_ranked_only_when_they_share_an_input(
        self, session: Session, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The walk, the view and the segments look up where a turn started (a search of
        ``turn_order`` from its end) only for turns that share their first input; ranking
        every turn made a cold view quadratic in the number of turns (217 ms at 1,000)."""
        for n in range(40):
            session.ask(f"u{n}")
            session.start(f"t{n}")
            session.call(f"c{n}", f"call_{n}", turn_id=f"t{n}", parent=f"u{n}")
            session.result(f"r{n}", f"call_{n}", turn_id=f"t{n}")
            session.reply(f"a{n}", turn_id=f"t{n}")
            session.end(f"t{n}")
        ranked: list[str] = []
        real = runtime._history.start_rank

        def counting(state: object, turn: object) -> int:
            ranked.append(turn.id)  # type: ignore[attr-defined]
            return real(state, turn)  # type: ignore[arg-type]

        monkeypatch.setattr(runtime._history, "start_rank", counting)
        assert len(ids(session)) == 160
        cached_view(ViewCache.empty(), session.state)
        ui_segments(session.state)
        assert ranked == []


class TestContract:
    def test_returns_the_stored_messages_untouched(self, session: Session) -> None:
        """The history is a tuple of the very message objects the state holds."""
        session.ask("u1")
        session.start("t1")
        session.reply("a1")
        history = session_history(session.state)
        assert isinstance(history, tuple)
        assert all(m is session.state.message(m.id) for m in history)

    def test_rejects_a_timeline(self, session: Session) -> None:
        """Passing something else than a state says what to pass."""
        with pytest.raises(
            TypeError,
            match=r"^session_history\(\) takes a SessionState \(got .* that is a 'Timeline'\); pass timeline\.head or timeline\.at\(seq\)\.$",
        ):
            session_history(session.timeline)  # type: ignore[arg-type]


class TestCheckPhasedOrder:
    def test_flags_a_history_out_of_phase(self, session: Session) -> None:
        """check_phased_order names the message that breaks the order."""
        session.ask("u1")
        session.start("t1")
        session.call("c1", "call_1")
        session.result("r1", "call_1")
        history = list(session_history(session.state))
        history[1], history[2] = history[2], history[1]
        with pytest.raises(
            InvariantViolation,
            match=r"^Invariant 8 \(session_history keeps the phased order\) broken at seq 4: message 'c1' \(phase 1\) comes after phase 2 in turn 't1'$",
        ):
            check_phased_order(session.state, history)

    def test_flags_a_missing_message(self, session: Session) -> None:
        """A history that loses a message is caught."""
        session.ask("u1")
        session.start("t1")
        session.reply("a1")
        with pytest.raises(InvariantViolation, match=r"missing \['a1'\]"):
            check_phased_order(session.state, session_history(session.state)[:1])

    def test_flags_split_turns(self, session: Session) -> None:
        """Output of one turn interleaved with another's is caught."""
        session.ask("u1")
        session.start("t1")
        session.reply("a1")
        session.reply("a1b")
        session.end()
        session.ask("u2")
        session.start("t2")
        session.reply("a2", turn_id="t2")
        history = list(session_history(session.state))
        assert [m.id for m in history] == ["u1", "a1", "a1b", "u2", "a2"]
        history = [history[i] for i in (0, 1, 3, 4, 2)]
        with pytest.raises(
            InvariantViolation,
            match=r"output of turn 't1' is split by output of turn 't2' at message 'a1b'$",
        ):
            check_phased_order(session.state, history)


class TestProperties:
    @settings(max_examples=80, deadline=None)
    @given(timelines(rich=True))
    def test_every_state_keeps_the_phased_order(self, timeline: Timeline) -> None:
        """Invariant 8 holds for every state of random sessions (forks of the head too)."""
        for state in timeline.states():
            check_phased_order(state)
        head = timeline.head
        fork = timeline.fork(head.seq, "forked", at=head.updated_at or T0)
        check_phased_order(fork.head)
        assert [m.id for m in session_history(fork.head)] == [m.id for m in session_history(head)]


class TestNewestFirst:
    @pytest.mark.parametrize("size", [0, 1, 31, 32, 33, 64, 1000, 1057, 33 * 32 + 5])
    def test_reads_every_position_backwards(self, size: int) -> None:
        """The leaf-wise walk yields what indexing would, for any trie shape."""
        vector = new_vector(range(size))
        assert list(newest_first(vector)) == [(i, i) for i in reversed(range(size))]

    def test_other_vectors_are_indexed(self) -> None:
        """A vector without pyrsistent's internals (the C pvector) still works."""
        assert list(newest_first(pvector("abc"))) == [(2, "c"), (1, "b"), (0, "a")]  # type: ignore[arg-type]
