"""Forks that share their source's state: provenance, the old copying forks, codecs."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from conftest import T0, Session
from hypothesis import given, settings
from hypothesis import strategies as st
from test_timeline import seed_trace

from runtime import (
    Announce,
    BranchImported,
    Category,
    Delivered,
    Event,
    EventRejected,
    Loaded,
    MessageAdded,
    OrphanRecovered,
    RolledBack,
    SessionMachine,
    SessionState,
    Status,
    Timeline,
    TurnEnded,
    TurnSettings,
    TurnStarted,
    added_seq,
    apply,
    from_json,
    inherited,
    new_message,
    reply_of,
    session_history,
    step,
    to_json,
)
from runtime._fork import TurnsInOrder, lineage
from runtime._replace import replace
from runtime._state import check_consistent, new_vector
from runtime.store._compact import decode_body, encode_body
from runtime.testing import EPOCH, check_invariants, session_events


def copying_fork(timeline: Timeline, seq: int, new_id: str) -> Timeline:
    """The fork as it was before forks shared their source: every message rewritten."""
    source = timeline.at(seq)
    event = BranchImported(
        session_id=new_id,
        seq=1,
        at=EPOCH,
        source_session_id=timeline.session_id,
        source_seq=seq,
        messages=[replace(m, session_id=new_id, event_seq=1) for m in source.messages],
        turns=source.turn_list(),
    )
    return Timeline.start(new_id).append(event)


def without_provenance(state: SessionState) -> SessionState:
    """``state`` with every message's session and seq those of the session that holds it."""
    messages = [
        replace(m, session_id=state.session_id, event_seq=added_seq(state, m))
        for m in state.messages
    ]
    return attrs.evolve(state, messages=new_vector(messages))


def moved(event: Event, session_id: str, seq: int) -> Event:
    """``event`` (and the messages it carries) moved to another session and seq."""
    changes: dict[str, Any] = {"session_id": session_id, "seq": seq}
    if isinstance(event, MessageAdded):
        changes["message"] = attrs.evolve(event.message, session_id=session_id, event_seq=None)
    if isinstance(event, TurnEnded):
        changes["partial"] = [attrs.evolve(m, session_id=session_id) for m in event.partial]
        if event.notice is not None:
            changes["notice"] = attrs.evolve(event.notice, session_id=session_id)
    return attrs.evolve(event, **changes)


def continuation(log: list[Event], seq: int, session_id: str) -> list[Event]:
    """The source's events after ``seq``, moved to the fork, up to a rollback past the fork."""
    out = []
    for event in log[seq:]:
        if isinstance(event, RolledBack):
            if event.to_seq < seq:
                break
            event = attrs.evolve(event, to_seq=event.to_seq - seq + 1)
        out.append(moved(event, session_id, len(out) + 2))
    return out


@st.composite
def forked(draw: st.DrawFn) -> tuple[list[Event], Timeline, int]:
    log = draw(session_events("s", 30, rich=True))
    timeline = Timeline.start("s").extend(log)
    return log, timeline, draw(st.integers(0, timeline.last_seq))


def test_recovered_turns_across_the_fork_point_keep_their_start_order() -> None:
    """Found by the property test below (on Python 3.13): turns that share their first input
    (the first recovered before the fork point, the next recovered in the fork) were ordered
    by ``started_seq``, which for an inherited turn is a seq of the source, so the fork's own
    turn came first. They are ordered by where they started (``turn_order``)."""

    def add(session: str, seq: int, category: Category, id: str, **fields: Any) -> MessageAdded:
        message = new_message(category, id=id, session_id=session, created_at=EPOCH, **fields)
        return MessageAdded(session_id=session, seq=seq, at=EPOCH, message=message)

    source = [add("s", n, Category.NOTIFICATION, f"n{n}") for n in range(1, 9)]
    source += [
        add("s", 9, Category.USER_QUESTION, "q", sender="Chii"),
        TurnStarted(session_id="s", seq=10, at=EPOCH, turn_id="ta"),
        add("s", 11, Category.THOUGHT, "tha", turn_id="ta"),
        OrphanRecovered(session_id="s", seq=12, at=EPOCH, turn_id="ta"),
    ]
    fork = Timeline.start("s").extend(source).fork(12, "f", at=EPOCH)
    fork = fork.extend([
        TurnStarted(session_id="f", seq=2, at=EPOCH, turn_id="tb"),
        add("f", 3, Category.THOUGHT, "thb", turn_id="tb"),
        OrphanRecovered(session_id="f", seq=4, at=EPOCH, turn_id="tb"),
        TurnStarted(session_id="f", seq=5, at=EPOCH, turn_id="tc"),
    ])  # fmt: skip
    order = [m.turn_id for m in session_history(fork.head) if m.id in ("tha", "thb")]
    assert order == ["ta", "tb"]
    assert [t.id for t in fork.head.turn_list()] == ["ta", "tb", "tc"]
    check_invariants(fork)


class TestSharedFork:
    @settings(max_examples=60, deadline=None)
    @given(forked())
    def test_equals_the_copying_fork_but_for_provenance(
        self, case: tuple[list[Event], Timeline, int]
    ) -> None:
        """A shared fork, and the same events after it, make the states the copying fork made,
        once each message's session and seq are those of the fork; inherited messages keep
        their provenance, and the fork's own carry the fork's id."""
        log, timeline, seq = case
        shared, copied = timeline.fork(seq, "f", at=EPOCH), copying_fork(timeline, seq, "f")
        assert shared.head.messages is timeline.at(seq).messages
        more = continuation(log, seq, "f")
        shared, copied = shared.extend(more), copied.extend(more)
        for a, b in zip(shared.states(), copied.states(), strict=True):
            assert without_provenance(a) == b
        source = {m.id: m for m in timeline.at(seq).messages}
        for message in shared.head.messages:
            if inherited(shared.head, message):
                assert message.session_id == "s"
                assert message.event_seq == source[message.id].event_seq
            else:
                assert message.session_id == "f"
        check_invariants(shared)

    @settings(max_examples=40, deadline=None)
    @given(forked(), st.sampled_from([0, 1]))
    def test_a_rollback_treats_inherited_messages_as_added_at_seq_1(
        self, case: tuple[list[Event], Timeline, int], to_seq: int
    ) -> None:
        """Rolling a fork back to seq 0 hides what it inherited, to seq 1 keeps it; the same
        as with the copying fork."""
        _, timeline, seq = case
        shared, copied = timeline.fork(seq, "f", at=EPOCH), copying_fork(timeline, seq, "f")
        # Not an input: a rollback refuses to hide input still waiting for a turn.
        notice = new_message(Category.NOTIFICATION, id="fork_n", session_id="f", created_at=EPOCH)
        added = MessageAdded(session_id="f", seq=2, at=EPOCH, message=notice)
        back = RolledBack(session_id="f", seq=3, at=EPOCH, to_seq=to_seq)
        source_ids = {m.id for m in timeline.at(seq) if m.active}
        shared, copied = shared.append(added), copied.append(added)
        try:
            expected = copied.append(back).head
        except EventRejected as exc:
            with pytest.raises(EventRejected, match=f"^{str(exc)[:40]}"):
                shared.append(back)
            return
        head = shared.append(back).head
        assert without_provenance(head) == expected
        assert not head.message("fork_n").active
        assert all(m.active == (to_seq == 1) for m in head if m.id in source_ids)

    @settings(max_examples=40, deadline=None)
    @given(forked())
    def test_the_replies_of_inherited_turns(self, case: tuple[list[Event], Timeline, int]) -> None:
        """reply_of() reads a reply in a fork as in its source (messages and turns keep the
        source's seqs)."""
        _, timeline, seq = case
        source = timeline.at(seq)
        fork = timeline.fork(seq, "f", at=EPOCH).head
        for message in source.messages:
            try:
                expected = reply_of(source, message.id)
            except ValueError:
                continue
            got = reply_of(fork, message.id)
            # The fork's own session and seq, and no audit rows (a fork starts without them).
            assert (got.session_id, got.seq, got.model_calls) == ("f", 1, ())
            assert attrs.evolve(got, session_id="s", seq=seq, model_calls=()) == attrs.evolve(
                expected, model_calls=()
            )

    @settings(max_examples=40, deadline=None)
    @given(forked())
    def test_the_stored_event_makes_the_fork(self, case: tuple[list[Event], Timeline, int]) -> None:
        """The fork's BranchImported, through JSON and the compact store encoding, applies to
        the fork's state, and equals (and hashes equal to) the event it was made from."""
        _, timeline, seq = case
        fork = timeline.fork(seq, "f", at=EPOCH)
        event = fork.event(1)
        assert isinstance(event, BranchImported)
        assert isinstance(event.turns, TurnsInOrder)
        for decoded in (
            from_json(to_json(event), Event),
            decode_body(event.kind, "f", 1, encode_body(event)),
        ):
            assert decoded == event
            assert event == decoded
            assert hash(decoded) == hash(event)
            assert apply(SessionState.empty("f"), decoded) == fork.head

    @settings(max_examples=30, deadline=None)
    @given(forked(), st.data())
    def test_forks_of_forks(self, case: tuple[list[Event], Timeline, int], data: Any) -> None:
        """A fork of a fork shares the same vector; its messages name the session each was
        added in, and forking back into an ancestor's id copies (no two sessions' messages
        share an id and seq numbering)."""
        log, timeline, seq = case
        first = timeline.fork(seq, "f", at=EPOCH).extend(continuation(log, seq, "f"))
        at = data.draw(st.integers(first.first_seq, first.last_seq))
        second = first.fork(at, "g", at=EPOCH)
        assert second.head.messages is first.at(at).messages
        assert apply(SessionState.empty("g"), second.event(1)) == second.head
        assert set(lineage(second.head.messages)) <= {"s", "f"}
        back = first.fork(at, "s", at=EPOCH)  # named like the source's source
        if "s" in lineage(first.at(at).messages):  # it would inherit messages of "s": copied
            assert all(m.session_id == "s" and m.event_seq == 1 for m in back.head.messages)
        else:
            assert back.head.messages is first.at(at).messages
        assert apply(SessionState.empty("s"), back.event(1)) == back.head
        renamed = without_provenance(back.head)
        renamed = attrs.evolve(
            renamed,
            session_id="g",
            messages=new_vector(replace(m, session_id="g") for m in renamed.messages),
        )
        assert without_provenance(second.head) == renamed


class TestConsistency:
    def test_inherited_messages_come_first(self) -> None:
        """check_consistent() names a message of another session after one of this session's."""
        own = new_message(
            Category.USER_QUESTION, id="a", session_id="f", created_at=EPOCH, sender="Chii"
        )
        other = attrs.evolve(own, id="b", session_id="s")
        state = apply(
            SessionState.empty("f"),
            BranchImported(
                session_id="f", seq=1, at=EPOCH, source_session_id="s", source_seq=1,
                messages=[other],
            ),
        )  # fmt: skip
        assert inherited(state, state.message("b"))
        assert added_seq(state, state.message("b")) == 1
        with pytest.raises(
            EventRejected,
            match=r"^BranchImported seq 1 from session 's' seq 1 is not a consistent state: "
            r"message 'b' of session 's' comes after message 'a' of this session \(messages "
            r"inherited by a fork come first\)\.$",
        ):
            apply(
                SessionState.empty("f"),
                BranchImported(
                    session_id="f", seq=1, at=EPOCH, source_session_id="s", source_seq=1,
                    messages=[own, other],
                ),
            )  # fmt: skip
        assert check_consistent(state) == []

    def test_a_later_import_is_rewritten(self) -> None:
        """An import after an empty one (seq 2) takes its messages into this session."""
        other = new_message(
            Category.USER_QUESTION, id="b", session_id="s", created_at=EPOCH, sender="Chii"
        )
        common = {"session_id": "f", "at": EPOCH, "source_session_id": "s", "source_seq": 0}
        state = apply(SessionState.empty("f"), BranchImported(seq=1, **common))
        state = apply(state, BranchImported(seq=2, messages=[other], **common))
        assert (state.message("b").session_id, state.message("b").event_seq) == ("f", 2)


class TestForkDelivery:
    def test_inherited_output_is_announced_and_delivered_as_the_forks(
        self, session: Session
    ) -> None:
        """A fork loaded with output its source had not delivered announces it under the
        fork's id (adapters route and acknowledge by ``session_id``), and delivering it is an
        event of the fork."""
        seed_trace(session)
        fork = session.timeline.fork(10, "f", at=T0)
        assert inherited(fork.head, fork.head.message("msg_reply_001"))
        machine = SessionMachine.load(fork.head)
        decision = step(machine, TurnSettings(), Loaded(at=T0, mono=0.0))
        updates = [c.update for c in decision.commands if isinstance(c, Announce)]
        assert [u.message.id for u in updates] == ["msg_reply_001"]
        assert [(u.session_id, u.message.session_id, u.message.event_seq) for u in updates] == [
            ("f", "f", 1)
        ]
        delivered = step(
            decision.machine,
            TurnSettings(),
            Delivered(at=T0, mono=0.0, message_id="msg_reply_001", expected=Status.PENDING),
        )
        assert [(e.session_id, e.seq) for e in delivered.events] == [("f", 2)]
        assert delivered.machine.state.message("msg_reply_001").status is Status.DELIVERED
