"""The ``Store`` protocol, run against ``MemoryStore``, ``SQLiteStore`` and ``PostgresStore`` alike."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import attrs
import orjson
import pytest

from runtime import (
    Category,
    DecodeError,
    EventRejected,
    MessageAdded,
    OrphanRecovered,
    Status,
    StatusChanged,
    StatusConflict,
    TurnStarted,
    new_message,
    replay,
    to_data,
)
from runtime.store import (
    EXPORT_FORMAT,
    MemoryStore,
    PostgresStore,
    SeqConflict,
    SessionExists,
    SessionInfo,
    SQLiteStore,
    Store,
    StoreClosed,
    UnknownSession,
)

from .scenario import T0, continue_session, conversation

UNKNOWN = r"^The (memory store|store '.*') has no session 'nope'; list_sessions\(\) shows the sessions it holds\.$"


def question(session_id: str, seq: int, id: str = "q") -> MessageAdded:
    message = new_message(
        Category.USER_QUESTION, id=id, session_id=session_id, created_at=T0, sender="Chii"
    )
    return MessageAdded(session_id=session_id, seq=seq, at=T0, message=message)


class TestProtocol:
    def test_every_store_is_a_store(self, store: Store) -> None:
        """MemoryStore, SQLiteStore and PostgresStore satisfy the Store protocol."""
        assert isinstance(store, Store)
        assert isinstance(store, (MemoryStore, SQLiteStore, PostgresStore))


class TestAppend:
    def test_returns_the_new_heads(self, store: Store) -> None:
        """append() returns each touched session's head, equal to a replay of its log."""
        events = conversation("s", 12)
        heads = store.append(events)
        assert heads == {"s": replay(events).head}

    def test_one_batch_may_mix_sessions(self, store: Store) -> None:
        """A batch holds events of several sessions, each in its own seq order."""
        a, b = conversation("a", 4), conversation("b", 3)
        heads = store.append([a[0], b[0], a[1], b[1], b[2], a[2], a[3]])
        assert heads["a"].seq == 4
        assert heads["b"].seq == 3
        assert store.events("a") == a
        assert store.events("b") == b

    def test_batches_continue_the_log(self, store: Store) -> None:
        """Successive batches extend the session gaplessly."""
        events = conversation("s", 30)
        for start in range(0, 30, 7):
            store.append(events[start : start + 7])
        assert store.events("s") == events

    def test_empty_batch_stores_nothing(self, store: Store) -> None:
        """An empty batch is a no-op."""
        assert store.append([]) == {}
        assert store.list_sessions() == []

    def test_a_gap_is_refused_and_nothing_is_stored(self, store: Store) -> None:
        """An event that skips a seq refuses the whole batch."""
        events = conversation("s", 5)
        store.append(events[:2])
        with pytest.raises(
            SeqConflict,
            match=r"^Cannot append \w+ seq 5 to session 's': the head is at seq 3, so the next event must have seq 4; a gap would lose events\. Nothing in this batch was stored\.$",
        ):
            store.append([events[2], events[4]])
        assert store.events("s") == events[:2]

    def test_a_taken_seq_is_refused(self, store: Store) -> None:
        """An event whose seq is already stored (another writer won) is a SeqConflict."""
        events = conversation("s", 3)
        store.append(events)
        with pytest.raises(
            SeqConflict,
            match=r"^Cannot append MessageAdded seq 2 to session 's': the store already holds seq 2 \(the head is at seq 3\); another writer got there first: load the session again and rebuild the event\. Nothing in this batch was stored\.$",
        ):
            store.append([question("s", 2, id="late")])
        assert store.events("s") == events

    def test_a_fork_into_a_taken_id_says_the_id_is_taken(self, store: Store) -> None:
        """A fork stored under the id of a session that exists is a SeqConflict that says
        the id is taken (not that another writer won: loading again would not help)."""
        store.append(conversation("s", 3))
        store.append(conversation("taken", 7))
        fork = store.load_timeline("s").fork(2, "taken", at=T0)
        with pytest.raises(
            SeqConflict,
            match=r"^Cannot append BranchImported seq 1 to session 'taken': the store already "
            r"holds a session 'taken' \(its head is at seq 7\), and a fork starts a new "
            r"session; pick another id for the fork \(one that is not in the store\)\. "
            r"Nothing in this batch was stored\.$",
        ):
            store.append(fork.events())
        assert len(store.events("taken")) == 7

    def test_an_illegal_event_is_never_stored(self, store: Store) -> None:
        """An event that does not apply refuses the batch, events before it included."""
        ok = question("s", 1)
        bad = StatusChanged(
            session_id="s",
            seq=2,
            at=T0,
            message_id="q",
            expected=Status.PENDING,
            status="delivered",
        )
        with pytest.raises(StatusConflict):
            store.append([ok, bad])
        assert "s" not in store
        assert store.list_sessions() == []
        store.append([ok])
        with pytest.raises(EventRejected):
            store.append([TurnStarted(session_id="s", seq=2, at=T0, turn_id="t"), bad.__class__(
                session_id="s", seq=3, at=T0, message_id="q", expected=Status.PENDING_AGENT,
                status="delivered")])  # fmt: skip
        assert store.events("s") == [ok]
        assert store.load_state("s") == replay([ok]).head

    def test_a_single_event_must_be_wrapped(self, store: Store) -> None:
        """append() takes an iterable; a bare event is a TypeError that says how to fix it."""
        with pytest.raises(
            TypeError,
            match=r"^append\(\) takes an iterable of events; wrap a single event in a list: append\(\[event\]\)\.$",
        ):
            store.append(question("s", 1))  # type: ignore[arg-type]

    def test_items_must_be_events(self, store: Store) -> None:
        """A non-event in the batch is a TypeError naming its position."""
        with pytest.raises(
            TypeError,
            match=r"^append\(\) takes Amber events; item 1 is \{'seq': 2\} that is a 'dict'\. Nothing was stored\.$",
        ):
            store.append([question("s", 1), {"seq": 2}])  # type: ignore[list-item]
        assert "s" not in store


class TestForks:
    def test_a_fork_is_stored_like_any_session(self, store: Store) -> None:
        """A fork (BranchImported first) is stored, snapshotted and reloaded equal."""
        events = conversation("s", 30)
        store.append(events)
        fork = store.load_timeline("s").fork(11, "f", at=T0)
        more = [
            question("f", 2, id="fork_q"),
            TurnStarted(session_id="f", seq=3, at=T0, turn_id="fork_t"),
        ]
        store.append([*fork.events(), *more])
        assert store.load_state("f") == fork.extend(more).head
        assert store.load_timeline("f", from_snapshot=True).head == fork.extend(more).head

    def test_an_empty_fork(self, store: Store) -> None:
        """A fork with no messages (a falsy state: it has length 0) takes the next events."""
        store.append(conversation("s", 1))
        fork = store.load_timeline("s").fork(0, "f", at=T0)
        assert len(fork.head) == 0
        store.append(fork.events())
        store.append([question("f", 2)])
        assert store.load_state("f").seq == 2


class TestLoadState:
    @pytest.mark.parametrize("every", [1, 2, 5, 13, 1000])
    def test_equals_a_full_replay(self, make_store: Callable[..., Store], every: int) -> None:
        """The snapshot-plus-tail state equals replaying the whole log, whatever K is."""
        store = make_store(snapshot_every=every)
        events = conversation("s", 60)
        for start in range(0, 60, 9):
            store.append(events[start : start + 9])
        assert store.load_state("s") == replay(events).head

    def test_unknown_session(self, store: Store) -> None:
        """Loading a session the store does not hold is UnknownSession (also a KeyError)."""
        with pytest.raises(UnknownSession, match=UNKNOWN):
            store.load_state("nope")
        with pytest.raises(KeyError):
            store.load_state("nope")

    def test_session_id_must_be_a_string(self, store: Store) -> None:
        """A session id that is not a non-empty str is a TypeError."""
        with pytest.raises(
            TypeError, match=r"^session_id must be a non-empty str \(got 7 that is an 'int'\)\.$"
        ):
            store.load_state(7)  # type: ignore[arg-type]


class TestLoadTimeline:
    def test_reaches_every_state(self, store: Store) -> None:
        """The full timeline holds every state: at(k) equals a replay of the first k events."""
        events = conversation("s", 25)
        store.append(events)
        timeline = store.load_timeline("s")
        assert timeline.first_seq == 0
        assert timeline.events() == events
        for k in range(1, 26):
            assert timeline.at(k) == replay(events[:k]).head

    def test_from_snapshot_starts_at_the_latest_snapshot(self, store: Store) -> None:
        """from_snapshot=True starts at the latest snapshot and ends at the same head."""
        events = conversation("s", 23)
        store.append(events[:12])
        store.append(events[12:])
        timeline = store.load_timeline("s", from_snapshot=True)
        assert timeline.first_seq == store.session("s").snapshot_seq == 23
        assert timeline.head == replay(events).head
        store.append(continue_session(timeline.head, 2)[0])
        partial = store.load_timeline("s", from_snapshot=True)
        assert (partial.first_seq, partial.last_seq) == (23, 25)

    def test_from_snapshot_without_one_is_the_whole_log(
        self, make_store: Callable[..., Store]
    ) -> None:
        """With no snapshot yet, from_snapshot=True replays from the start."""
        store = make_store(snapshot_every=100)
        store.append(conversation("s", 4))
        assert store.load_timeline("s", from_snapshot=True).first_seq == 0

    def test_unknown_session(self, store: Store) -> None:
        """A timeline of a session the store does not hold is UnknownSession."""
        with pytest.raises(UnknownSession, match=UNKNOWN):
            store.load_timeline("nope")


class TestEvents:
    def test_after(self, store: Store) -> None:
        """events(after=k) returns the events with seq above k."""
        events = conversation("s", 10)
        store.append(events)
        assert store.events("s") == events
        assert store.events("s", after=7) == events[7:]
        assert store.events("s", after=10) == []
        assert store.events("s", after=99) == []

    def test_after_must_be_a_seq(self, store: Store) -> None:
        """after must be a non-negative int."""
        store.append(conversation("s", 1))
        with pytest.raises(
            ValueError, match=r"^after must be a non-negative int seq \(got -1\)\.$"
        ):
            store.events("s", after=-1)

    def test_unknown_session(self, store: Store) -> None:
        """Events of a session the store does not hold is UnknownSession."""
        with pytest.raises(UnknownSession, match=UNKNOWN):
            store.events("nope")


class TestSessions:
    def test_summary(self, store: Store) -> None:
        """A session's summary has its seq, times, counts by status and active turn."""
        events = conversation("s", 13)  # mid-turn: the second question is processing
        store.append(events)
        head = replay(events).head
        info = store.session("s")
        assert info == SessionInfo(
            session_id="s",
            seq=13,
            created_at=events[0].at,
            updated_at=events[-1].at,
            messages=len(head.messages),
            counts=info.counts,
            active_turn_id="t13",
            active_turn_started_at=events[12].at,
            snapshot_seq=13,  # one batch: snapshotted at its end
        )
        assert dict(info.counts) == head.status_counts()
        assert info.counts[Status.PROCESSING] == 1

    def test_listed_most_recent_first(self, store: Store) -> None:
        """list_sessions() orders by last activity, newest first."""
        store.append(conversation("old", 3))
        store.append(conversation("late", 5))  # its last event is later than old's
        assert [info.session_id for info in store.list_sessions()] == ["late", "old"]
        assert [info.seq for info in store.list_sessions()] == [5, 3]

    def test_contains(self, store: Store) -> None:
        """``in`` tells whether the store holds a session."""
        store.append(conversation("s", 1))
        assert "s" in store
        assert "nope" not in store
        assert 3 not in store

    def test_unknown_session(self, store: Store) -> None:
        """The summary of a session the store does not hold is UnknownSession."""
        with pytest.raises(UnknownSession, match=UNKNOWN):
            store.session("nope")


class TestSnapshot:
    def test_taken_every_k_events(self, make_store: Callable[..., Store]) -> None:
        """A snapshot is written once K events have been stored since the last one."""
        store = make_store(snapshot_every=4)
        events = conversation("s", 11)
        store.append(events[:3])
        assert store.session("s").snapshot_seq == 0
        store.append(events[3:5])
        assert store.session("s").snapshot_seq == 5
        store.append(events[5:8])
        assert store.session("s").snapshot_seq == 5
        store.append(events[8:])
        assert store.session("s").snapshot_seq == 11

    def test_on_demand(self, store: Store) -> None:
        """snapshot() snapshots the head now and returns its seq."""
        store.append(conversation("s", 3))
        assert store.snapshot("s") == 3
        assert store.session("s").snapshot_seq == 3
        assert store.snapshot("s", rebuild=True) == 3
        assert store.verify("s").head == store.load_state("s")

    def test_unknown_session(self, store: Store) -> None:
        """Snapshotting a session the store does not hold is UnknownSession."""
        with pytest.raises(UnknownSession, match=UNKNOWN):
            store.snapshot("nope")


class TestExportImport:
    def test_round_trip(self, make_store: Callable[..., Store], store: Store) -> None:
        """A session exported and imported into another store is equal, event for event."""
        events = conversation("s", 40)
        store.append(events)
        data = store.export_session("s")
        assert data["format"] == EXPORT_FORMAT
        assert data["seq"] == 40
        other = make_store()
        head = other.import_session(data)
        assert head == store.load_state("s")
        assert other.events("s") == events
        assert other.export_session("s") == data

    def test_json_text(self, make_store: Callable[..., Store], store: Store) -> None:
        """The export is JSON-ready; its JSON text imports too."""
        store.append(conversation("s", 9))
        text = orjson.dumps(store.export_session("s"))
        other = make_store()
        other.import_session(text)
        other.import_session(text.decode().replace('"s"', '"s2"'))
        assert other.load_state("s").seq == 9
        assert other.load_state("s2").session_id == "s2"

    def test_existing_session_is_refused(self, store: Store) -> None:
        """Importing a session the store already holds is SessionExists."""
        store.append(conversation("s", 2))
        with pytest.raises(
            SessionExists,
            match=r"^Cannot import session 's': the store already holds it \(at seq 2\)\. Import it into another store, or fork it under a new id\.$",
        ):
            store.import_session(store.export_session("s"))

    @pytest.mark.parametrize(
        ("mutate", "message"),
        [
            (lambda d: b"{", r"the text is not JSON \(.*\)"),
            (lambda d: [d], r"expected an object, got list .*"),
            (
                lambda d: {**d, "format": "langgraph"},
                r"expected format 'amber\.session', got 'langgraph'",
            ),
            (
                lambda d: {**d, "version": 2},
                r"the export has version 2, newer than this Amber reads \(1\); upgrade amber to import it",
            ),
            (
                lambda d: {**d, "extra": 1},
                r"expected the keys \['events', 'format', 'seq', 'session_id', 'version'\] \(missing \[\], unknown \['extra'\]\)",
            ),
            (lambda d: {**d, "seq": 3}, r"seq is 3 but the export holds 2 events"),
            (lambda d: {**d, "events": []}, r"expected a non-empty list of events, got \[\]"),
            (
                lambda d: {**d, "events": d["events"][1:], "seq": 1},
                r"event \[0\] should be session 's' seq 1, but it is session 's' seq 2",
            ),
            (
                lambda d: {**d, "events": [{**d["events"][0], "kind": "bogus"}, d["events"][1]]},
                r"event \[0\] \(seq 1\) does not decode: Cannot decode Event from JSON: unknown event kind 'bogus'; .* @ \$",
            ),
        ],
    )
    def test_bad_exports(
        self, store: Store, mutate: Callable[[dict], object], message: str
    ) -> None:
        """An export that is not one, or is damaged, is a DecodeError saying what is wrong."""
        source = MemoryStore()
        source.append(conversation("s", 2))
        data = source.export_session("s")
        with pytest.raises(
            DecodeError,
            match=rf"^Cannot import session: {message}\. Pass what export_session\(\) returned \(a dict, or its JSON text\)\.$",
        ):
            store.import_session(mutate(data))  # type: ignore[arg-type]
        assert store.list_sessions() == []

    def test_an_export_leaves_out_a_turn_end_without_a_notice(self, store: Store) -> None:
        """`TurnEnded.notice` is newer than export version 1: left out when None, an Amber
        from before it reads the export (its decoder refuses unknown keys)."""
        events = conversation("s", 30)
        store.append(events)
        data = store.export_session("s")
        ended = [e for e in data["events"] if e["kind"] == "turn_ended"]
        assert ended
        assert all("notice" not in e for e in ended)
        copy = MemoryStore()
        copy.import_session(data)
        assert copy.load_state("s") == store.load_state("s")

    @pytest.mark.parametrize("interrupted", [False, True])
    def test_an_export_leaves_out_calls_interrupted_when_false(
        self, store: Store, interrupted: bool
    ) -> None:
        """`OrphanRecovered.calls_interrupted` is newer than export version 1: left out when
        False (an Amber from before it reads the export), kept when True; both import back."""
        events = conversation("s", 4)  # a turn left active after its tool call
        state = store.append(events)["s"]
        assert state.active_turn is not None
        recovered = OrphanRecovered(
            session_id="s", seq=5, at=state.updated_at, turn_id=state.active_turn.id,
            calls_interrupted=interrupted,
        )  # fmt: skip
        store.append([recovered])
        data = store.export_session("s")
        (exported,) = [e for e in data["events"] if e["kind"] == "orphan_recovered"]
        assert ("calls_interrupted" in exported) is interrupted
        copy = MemoryStore()
        copy.import_session(data)
        assert copy.load_state("s") == store.load_state("s")
        assert copy.events("s")[-1] == recovered

    def test_an_export_that_does_not_apply_stores_nothing(self, store: Store) -> None:
        """An export whose events decode but do not apply is refused whole."""
        events = conversation("s", 3)
        broken = {
            "format": "amber.session", "version": 1, "session_id": "s", "seq": 3,
            "events": [to_data(events[0]), to_data(events[1]), to_data(events[1]) | {"seq": 3}],
        }  # fmt: skip
        with pytest.raises(EventRejected):
            store.import_session(broken)
        assert "s" not in store

    def test_unknown_session(self, store: Store) -> None:
        """Exporting a session the store does not hold is UnknownSession."""
        with pytest.raises(UnknownSession, match=UNKNOWN):
            store.export_session("nope")


class TestClose:
    def test_closed_store_refuses_calls(self, store: Store) -> None:
        """After close() every call raises StoreClosed; closing twice is fine."""
        store.append(conversation("s", 1))
        store.close()
        store.close()
        with pytest.raises(StoreClosed, match=r"^The (memory store|store '.*') is closed; .*$"):
            store.load_state("s")
        with pytest.raises(StoreClosed):
            store.append(conversation("t", 1))

    def test_context_manager(self, make_store: Callable[..., Store]) -> None:
        """A store is a context manager that closes on exit."""
        with make_store() as store:
            store.append(conversation("s", 1))
        with pytest.raises(StoreClosed):
            store.list_sessions()


class TestTimes:
    def test_updated_at_is_the_last_event_time(self, store: Store) -> None:
        """updated_at is the ``at`` of the session's last event, as given (no clock read)."""
        event = question("s", 1)
        store.append([attrs.evolve(event, at=T0 + timedelta(days=3))])
        assert store.session("s").updated_at == T0 + timedelta(days=3)
