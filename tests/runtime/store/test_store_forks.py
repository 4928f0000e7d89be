"""Forks that share their source's state, written to every store and read back."""

from __future__ import annotations

from collections.abc import Callable

from runtime import (
    BranchImported,
    Category,
    MessageAdded,
    SessionState,
    Timeline,
    TurnStarted,
    apply,
    inherited,
    new_message,
    replay,
)
from runtime._replace import replace
from runtime.store import Store

from .scenario import T0, conversation


def question(session_id: str, seq: int, id: str) -> MessageAdded:
    message = new_message(
        Category.USER_QUESTION, id=id, session_id=session_id, created_at=T0, sender="Chii"
    )
    return MessageAdded(session_id=session_id, seq=seq, at=T0, message=message)


def forks() -> dict[str, Timeline]:
    """A source, a fork of it that goes on, and a fork of that fork that goes on."""
    source = Timeline.start("s").extend(conversation("s", 30))
    fork = source.fork(11, "f", at=T0).extend(
        [question("f", 2, "fq"), TurnStarted(session_id="f", seq=3, at=T0, turn_id="ft")]
    )
    again = fork.fork(2, "g", at=T0).extend([question("g", 2, "gq")])
    return {"s": source, "f": fork, "g": again}


def assert_holds(store: Store, timelines: dict[str, Timeline]) -> None:
    for session_id, timeline in timelines.items():
        assert store.load_state(session_id) == timeline.head
        loaded = store.load_timeline(session_id)
        assert list(loaded.states()) == list(timeline.states())
        assert store.load_timeline(session_id, from_snapshot=True).head == timeline.head
        assert store.verify(session_id).head == timeline.head
        # Provenance survives the store: inherited messages name the session that added them.
        head = store.load_state(session_id)
        assert [(m.session_id, m.event_seq) for m in head] == [
            (m.session_id, m.event_seq) for m in timeline.head
        ]


class TestSharedForks:
    def test_forks_of_forks_round_trip(self, make_store: Callable[..., Store]) -> None:
        """A fork and a fork of it are stored, snapshotted, reloaded, verified and exported
        equal, inherited messages keeping their source's session and seq."""
        timelines = forks()
        g = timelines["g"].head
        assert {m.session_id for m in g if inherited(g, m)} == {"s", "f"}
        for every in (1, 2, 1000):
            store = make_store(snapshot_every=every)
            for timeline in timelines.values():
                store.append(timeline.events())
            assert_holds(store, timelines)
            copy = make_store(snapshot_every=every)
            for session_id in timelines:
                copy.import_session(store.export_session(session_id))
            assert_holds(copy, timelines)

    def test_a_fork_is_snapshotted_when_written(self, make_store: Callable[..., Store]) -> None:
        """A fork's first event carries its whole state: the store snapshots it in the same
        write, so loads start from the snapshot instead of replaying that one big event
        (at 45,000 messages: 6.5 s to load a fork against 1.5 s for its source)."""
        timelines = forks()
        store = make_store(snapshot_every=1000)
        for timeline in timelines.values():
            store.append(timeline.events())
        assert store.load_timeline("s", from_snapshot=True).base.seq == 0  # none due yet
        for session_id in ("f", "g"):
            loaded = store.load_timeline(session_id, from_snapshot=True)
            assert loaded.base.seq == timelines[session_id].last_seq
            assert loaded.head == timelines[session_id].head
        store.append([question("f", 4, "fq2")])  # later events: the usual rhythm again
        assert store.load_timeline("f", from_snapshot=True).base.seq == 3

    def test_a_copied_fork_still_reads(self, make_store: Callable[..., Store]) -> None:
        """A fork written before forks shared their source (every message rewritten to the
        fork, event seq 1) reads back and replays as it did."""
        source = Timeline.start("s").extend(conversation("s", 30)).at(11)
        event = BranchImported(
            session_id="f",
            seq=1,
            at=T0,
            source_session_id="s",
            source_seq=11,
            messages=[replace(m, session_id="f", event_seq=1) for m in source.messages],
            turns=source.turn_list(),
        )
        more = [question("f", 2, "fq"), TurnStarted(session_id="f", seq=3, at=T0, turn_id="ft")]
        expected = replay([event, *more])
        assert all(m.session_id == "f" for m in expected.head)
        assert apply(SessionState.empty("f"), event).messages == event.messages
        store = make_store(snapshot_every=2)
        store.append([event, *more])
        assert_holds(store, {"f": expected})
