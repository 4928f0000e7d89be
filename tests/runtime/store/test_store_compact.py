"""Compact event bodies: every event round-trips, and stores of the previous format still read."""

from __future__ import annotations

import importlib.util
import pathlib
import shutil
import sqlite3
from datetime import UTC, datetime, timedelta, timezone

import attrs
import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from runtime import (
    EVENT_TYPES,
    AuditStatus,
    Category,
    DecodeError,
    Event,
    Message,
    MessageAdded,
    ModelCallFinished,
    TurnEnded,
    TurnOutcome,
    replay,
    reports_error,
    to_data,
    to_json,
)
from runtime._turn import Turn
from runtime.store import SCHEMA_VERSION, SQLiteStore
from runtime.store._compact import decode_body, encode_body
from runtime.store._fast import MESSAGE_FIELDS
from runtime.store._rowcodec import message_values
from runtime.store._rows import ERROR_MARKERS, _fits
from runtime.testing import events, messages, session_events

from .scenario import continue_session, conversation

FIXTURES = pathlib.Path(__file__).parent / "fixtures"


def _codec_examples() -> dict[str, Event]:
    """The codec tests' hand-built event of every kind (model calls and approvals too)."""
    path = pathlib.Path(__file__).parent.parent / "test_codec.py"
    spec = importlib.util.spec_from_file_location("_codec_examples", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    examples: dict[str, Event] = module.EXAMPLES
    return examples


EXAMPLES = _codec_examples()
_OFFSETS = st.sampled_from([UTC, timezone(timedelta(hours=2)), timezone(timedelta(hours=-7))])


def roundtrip(event: Event) -> Event:
    return decode_body(event.kind, event.session_id, event.seq, encode_body(event))


class TestRoundTrip:
    @settings(max_examples=300, deadline=None)
    @given(event=events(), offset=_OFFSETS, micro=st.integers(0, 999_999))
    def test_any_event(self, event: Event, offset: timezone, micro: int) -> None:
        """decode(encode(e)) == e, and the full JSON is the same, for events of every kind."""
        event = attrs.evolve(event, at=event.at.astimezone(offset).replace(microsecond=micro))
        back = roundtrip(event)
        assert back == event
        assert to_json(back) == to_json(event)

    @settings(max_examples=40, deadline=None)
    @given(log=session_events(max_steps=40, rich=True))
    def test_sessions(self, log: list[Event]) -> None:
        """Every event of rich sessions round-trips; the compact body is never larger."""
        for event in log:
            assert roundtrip(event) == event
            assert len(encode_body(event)) < len(to_json(event))

    @pytest.mark.parametrize("kind", sorted(EXAMPLES))
    def test_every_kind(self, kind: str) -> None:
        """The codec's examples of every kind (model calls and approvals too) round-trip."""
        event = EXAMPLES[kind]
        assert roundtrip(event) == event
        assert encode_body(event) == encode_body(roundtrip(event))  # deterministic

    @settings(max_examples=200, deadline=None)
    @given(event=events(), offset=_OFFSETS)
    def test_message_lists_as_the_codec_writes_them(self, event: Event, offset: timezone) -> None:
        """A fork's or a cut turn's messages are written without the codec (``message_values``):
        the same bytes as through ``to_data``, keys in the same order."""
        event = attrs.evolve(event, at=event.at.astimezone(offset))
        assert encode_body(event) == _body_through_the_codec(event)

    def test_a_fork_event_as_the_codec_writes_it(self) -> None:
        """The fork of a session with tool calls: the same bytes as through ``to_data``."""
        log = conversation("long", 60)
        line = replay(log)
        head = line.head
        fork = line.fork(head.seq, "fork", at=datetime(2026, 6, 1, tzinfo=UTC)).events()[0]
        assert len(fork.messages) > 5  # type: ignore[attr-defined]
        assert any(m.tool_call is not None for m in fork.messages)  # type: ignore[attr-defined]
        assert encode_body(fork) == _body_through_the_codec(fork)

    def test_a_message_is_one_short_array(self) -> None:
        """A message_added body is [at, *row] with the defaults that end the row left out."""
        event = EXAMPLES["message_added"]
        assert isinstance(event, MessageAdded)
        body = orjson.loads(encode_body(event))
        assert type(body) is list
        assert body[0] == (event.at - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
        assert body[1] == event.message.id
        assert len(body) < 2 + 21

    def test_the_full_format_still_decodes(self) -> None:
        """A body an older Amber wrote (the codec's full JSON, with its kind) decodes as before."""
        for event in EXAMPLES.values():
            assert decode_body(event.kind, event.session_id, event.seq, to_json(event)) == event


def _body_through_the_codec(event: Event) -> bytes:
    """``encode_body`` as it was written before messages lists skipped the codec."""
    from runtime.store import _compact

    if type(event) is MessageAdded:
        return encode_body(event)
    data = to_data(event)
    at = data["at"]
    for name in ("kind", "session_id", "seq"):
        del data[name]
    data = _compact._omit_defaults(data, type(event))
    offset = event.at.utcoffset()
    if offset is not None and not offset:
        data["at"] = (event.at - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
    for name in ("message", "notice"):
        if type(data.get(name)) is dict:
            data[name] = _compact._data_row(data[name], event.session_id, at)
    for name in ("messages", "partial"):
        if type(data.get(name)) is list:
            data[name] = [_compact._data_row(m, event.session_id, at) for m in data[name]]
    if type(data.get("turns")) is list:
        data["turns"] = [_compact._omit_defaults(turn, Turn) for turn in data["turns"]]
    return orjson.dumps(data)


_FAILED_CALL = attrs.evolve(
    EXAMPLES["model_call_finished"], status=AuditStatus.FAILED, error="overloaded"
)


def _holds_its_marker(event: Event) -> None:
    """If ``event`` reports an error, both of its bodies hold its kind's marker."""
    if reports_error(event):
        marker = ERROR_MARKERS.get(event.kind)
        assert marker is not None, f"{event.kind} can report an error: give it a marker"
        assert marker in encode_body(event)
        assert marker in to_json(event)


class TestErrorMarkers:
    """``SqlStore.error_flags`` decodes only the bodies that hold their kind's marker: every
    event that reports an error must hold it, in both body formats."""

    @settings(max_examples=200, deadline=None)
    @given(
        result=messages(Category.TOOL_RESULT),
        outcome=st.sampled_from(list(TurnOutcome)),
        at=st.datetimes(timezones=_OFFSETS),
    )
    def test_tool_results_and_turn_ends(
        self, result: Message, outcome: TurnOutcome, at: datetime
    ) -> None:
        added = MessageAdded(session_id="s", seq=1, at=at, message=result)
        ended = TurnEnded(session_id="s", seq=2, at=at, turn_id="t1", outcome=outcome)
        assert reports_error(added) is result.is_error
        assert reports_error(ended) is (outcome is TurnOutcome.ERROR)
        _holds_its_marker(added)
        _holds_its_marker(ended)

    @pytest.mark.parametrize("status", list(AuditStatus))
    def test_model_calls(self, status: AuditStatus) -> None:
        try:
            event = attrs.evolve(_FAILED_CALL, status=status)
        except Exception:  # not a status a call can finish with
            return
        _holds_its_marker(event)

    def test_a_failed_call_reports_an_error(self) -> None:
        assert reports_error(_FAILED_CALL)
        assert not reports_error(EXAMPLES["model_call_finished"])

    def test_the_kinds_that_can_report_one(self) -> None:
        """A marker for each kind ``reports_error`` looks at: a kind given one later without
        a marker would never be decoded, so its errors would never be marked."""
        assert set(ERROR_MARKERS) == {
            MessageAdded.kind,
            TurnEnded.kind,
            ModelCallFinished.kind,
        }

    @settings(max_examples=200, deadline=None)
    @given(event=events())
    def test_any_event(self, event: Event) -> None:
        _holds_its_marker(event)

    @settings(max_examples=300, deadline=None)
    @given(
        event=st.one_of(events(), st.sampled_from([*EXAMPLES.values(), _FAILED_CALL])),
        kind=st.sampled_from(sorted(EVENT_TYPES)),
    )
    def test_a_body_fits_its_kind_and_no_kind_that_would_not_decode_it(
        self, event: Event, kind: str
    ) -> None:
        """A compact body has its own kind's shape; a row relabelled to a kind whose shape
        it has decodes as that kind (so a changed kind column never passes ``error_flags``
        unread when reading it whole would fail)."""
        body = encode_body(event)
        assert _fits(event.kind, body)
        if _fits(kind, body):
            decode_body(kind, event.session_id, event.seq, body)

    @settings(max_examples=30, deadline=None)
    @given(log=session_events(max_steps=40, rich=True))
    def test_sessions(self, log: list[Event]) -> None:
        for event in log:
            _holds_its_marker(event)


class TestBadBodies:
    @pytest.mark.parametrize(
        ("kind", "body", "problem"),
        [
            ("message_added", b"[", r"not valid JSON"),
            ("message_added", b"[1779886200000000]", r"expected a row of up to 21 values"),
            ("message_added", b'[1779886200000000,"m1"]', r"ends before its required fields"),
            (
                "message_added",
                b'[1779886200000000,"m1",0,9,0,0,0,"hi"]',
                r"role code 9 is not one of 0 to 3",
            ),
            ("message_added", b'["yesterday","m1",0,0,0,0,0,"hi"]', r"at must be microseconds"),
            ("turn_started", b'{"at":1779886200000000}', r"required field missing @ \$\.turn_id"),
            ("bogus", b'{"at":1779886200000000}', r"unknown event kind 'bogus'"),
            ("turn_started", b"[1779886200000000]", r"expected an object with a 'kind'"),
        ],
    )
    def test_named(self, kind: str, body: bytes, problem: str) -> None:
        with pytest.raises(DecodeError, match=problem):
            decode_body(kind, "s", 1, body)


class TestPreviousFormat:
    """A store written by the Amber before compact bodies (full JSON, plain chunks)."""

    @pytest.fixture
    def old_store(self, tmp_path: pathlib.Path) -> pathlib.Path:
        path = tmp_path / "plain.db"
        shutil.copyfile(FIXTURES / "plain_bodies.db", path)
        return path

    def expected(self) -> dict[str, list[Event]]:
        found: dict[str, list[Event]] = {}
        for line in (FIXTURES / "plain_bodies.jsonl").read_bytes().splitlines():
            event = decode_body("", "", 0, line)
            found.setdefault(event.session_id, []).append(event)
        return found

    def test_reads_migrates_and_continues(self, old_store: pathlib.Path) -> None:
        """Every session reads back equal; new rows are compact; old rows stay as written."""
        logs = self.expected()
        before = sqlite3.connect(old_store)
        version = "SELECT value FROM amber_meta WHERE key = 'schema_version'"
        assert before.execute(version).fetchone() == ("2",)
        old_rows = before.execute("SELECT session_id, seq, body FROM events").fetchall()
        before.close()
        with SQLiteStore(old_store, snapshot_every=7, chunk_size=4) as store:
            assert store.check().ok
            for session_id, log in logs.items():
                assert store.events(session_id) == log
                assert store.load_state(session_id) == replay(log).head
                store.verify(session_id)
            more, _ = continue_session(store.load_state("scripted"), 30)
            store.append(more[:10])
            store.append(more[10:])
        with SQLiteStore(old_store, snapshot_every=7, chunk_size=4) as store:
            full = logs["scripted"] + more
            assert store.events("scripted") == full
            assert store.load_state("scripted") == replay(full).head
            assert store.load_timeline("scripted").head == replay(full).head
            store.verify("scripted")
            assert store.check().ok
            flags = [(event.kind, reports_error(event)) for event in full]
            assert store.error_flags("scripted", 1, len(full)) == flags  # both formats
        db = sqlite3.connect(old_store)
        assert db.execute(version).fetchone() == (str(SCHEMA_VERSION),)
        rows = {(s, q): b for s, q, b in db.execute("SELECT session_id, seq, body FROM events")}
        db.close()
        for session_id, seq, body in old_rows:
            assert rows[session_id, seq] == body  # nothing rewritten
            assert "kind" in orjson.loads(body)
        for event in more:
            body = rows["scripted", event.seq]
            assert body.encode() == encode_body(event)


class TestRows:
    @settings(max_examples=200, deadline=None)
    @given(message=messages())
    def test_fast_rows_are_the_codecs(self, message: Message) -> None:
        """``message_values`` gives the codec's values, in field order, for any message."""
        data = to_data(message)
        expected = [data[name] for name in MESSAGE_FIELDS]
        assert orjson.dumps(message_values(message)) == orjson.dumps(expected)


_ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1), st.floats(allow_nan=False),
    st.text(max_size=5), st.sampled_from(["processed", "interrupted", "error", ""]),
    st.dictionaries(st.text(max_size=3), st.integers(-(2**63), 2**64 - 1), max_size=2),
    st.lists(st.integers(-(2**63), 2**63 - 1), max_size=2),
)  # fmt: skip


_TURN_ENDS = st.builds(
    TurnEnded,
    session_id=st.just("s"),
    seq=st.integers(1, 10**9),
    at=st.datetimes(timezones=_OFFSETS),
    turn_id=st.text(min_size=1, max_size=8),
    outcome=st.sampled_from(list(TurnOutcome)),
    reason=st.none() | st.text(max_size=8),
    metrics=st.dictionaries(
        st.text(max_size=4), st.integers(0, 9) | st.text(max_size=3), max_size=3
    ),
    duration_ms=st.none() | st.floats(min_value=0, max_value=1e9),
    partial=st.lists(messages(Category.REPLY, session_id="s"), max_size=1),
)


class TestTurnEndedFastPath:
    @settings(max_examples=400, deadline=None)
    @example(  # found by a run: ``inf`` is stored as null, and null is a reason's default
        event=TurnEnded(session_id="s", seq=1, at=datetime(2026, 1, 1, tzinfo=UTC),
                        turn_id="t", outcome=TurnOutcome.PROCESSED),
        field="reason", value=float("inf"), change=True,
    )  # fmt: skip
    @given(
        event=_TURN_ENDS,
        field=st.sampled_from(["turn_id", "outcome", "reason", "metrics", "duration_ms", "x"]),
        value=_ODD_VALUES,
        change=st.booleans(),
    )
    def test_agrees_with_the_codec(
        self, event: Event, field: str, value: object, change: bool
    ) -> None:
        """A turn_ended body, as stored or with one field changed to any JSON value, decodes
        (by the constructor when its fields are plain) as the codec decodes its full form:
        the same event, or a DecodeError from both."""
        from runtime._converter import structure

        data = orjson.loads(encode_body(event))
        if change:
            data[field] = value
        body = orjson.dumps(data)
        data = orjson.loads(body)  # what is stored: JSON has no inf (orjson writes null)
        full = {"kind": "turn_ended", "session_id": event.session_id, "seq": event.seq, **data}
        at = data.get("at")
        if type(at) is int:
            full["at"] = (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=at)).isoformat()
        if type(full.get("partial")) is list and not (change and field == "partial"):
            full["partial"] = [to_data(m) for m in event.partial]
        try:
            expected: Event | None = structure(full, Event)
        except DecodeError:
            expected = None
        if expected is None:
            with pytest.raises(DecodeError):
                decode_body("turn_ended", event.session_id, event.seq, body)
            return
        got = decode_body("turn_ended", event.session_id, event.seq, body)
        assert got == expected
        assert to_json(got) == to_json(expected)
