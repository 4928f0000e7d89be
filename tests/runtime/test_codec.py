"""The JSON codec: to_json / from_json (and to_data / from_data) for every stored value."""

from __future__ import annotations

import ast
import pickle
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from pyrsistent import PMap, PVector, pmap, pvector

import runtime
from runtime import (
    EVENT_TYPES,
    ApprovalDecided,
    ApprovalRequested,
    Attachment,
    AuditCall,
    AuditStatus,
    BranchImported,
    BrowserElement,
    Category,
    DecodeError,
    Event,
    InvalidArgument,
    Message,
    MessageAdded,
    MetadataUpdated,
    ModelCallFinished,
    ModelCallStarted,
    OrphanRecovered,
    RolledBack,
    SessionState,
    Status,
    StatusChanged,
    Timeline,
    ToolCall,
    Turn,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
    TurnStatus,
    Usage,
    from_data,
    from_json,
    new_message,
    to_data,
    to_json,
)
from runtime.testing import events, messages, timelines

T0 = datetime(2026, 5, 27, 12, 50, tzinfo=UTC)
KINDS = ", ".join(sorted(EVENT_TYPES))


def at(seconds: int) -> datetime:
    """T0 plus ``seconds``."""
    return T0 + timedelta(seconds=seconds)


def exact(text: str) -> str:
    """A regex matching exactly ``text``."""
    return f"^{re.escape(text)}$"


def question(id: str = "msg_q1", session_id: str = "sess", **fields: Any) -> Message:
    """A user question with an attachment, a browser element and metadata."""
    return new_message(
        Category.USER_QUESTION,
        id=id,
        session_id=session_id,
        created_at=T0,
        content="what is in data.csv?",
        sender="Chii",
        chatbot_id="discord",
        channel_id="general",
        attachments=[
            Attachment(
                id="art_1",
                name="data.csv",
                kind="file",
                media_type="text/csv",
                size=2048,
                sha256="ab" * 32,
            ),
            Attachment(
                id="art_2",
                name="chart.png",
                kind="image",
                media_type="image/png",
                size=9,
                width=640,
                height=480,
            ),
        ],
        browser_elements=[
            BrowserElement(
                url="https://a.example/",
                title="A",
                tag="td",
                selector="#p",
                text="3",
                html="<td>3</td>",
            )
        ],
        metadata={
            "discord_message_id": "991",
            "mentions": ["amber"],
            "score": 0.5,
            "big": 2**64 - 1,
        },
        **fields,
    )


def partial_thought() -> Message:
    """Reasoning cut short by an interrupt."""
    return new_message(
        Category.THOUGHT,
        id="msg_th_part",
        session_id="sess",
        created_at=at(30),
        content="Let me think ab",
        turn_id="t2",
        parent_id="msg_q2",
    )


def partial_reply() -> Message:
    """Reply text cut short by an interrupt."""
    return new_message(
        Category.REPLY,
        id="msg_reply_part",
        session_id="sess",
        created_at=at(31),
        content="The file has",
        turn_id="t2",
        parent_id="msg_q2",
        metadata={"stream": {"chunks": 3}},
    )


def ended_turn() -> Turn:
    """An ended turn with every optional field set."""
    return Turn(
        id="t1",
        status=TurnStatus.PROCESSED,
        started_at=at(1),
        started_seq=2,
        input_ids=["msg_q1"],
        open_calls={},
        ended_at=at(9),
        ended_seq=9,
        reason=None,
        metrics={"tool_calls": 1, "tokens": {"input": 1200, "output": 80}, "model": "scripted"},
        duration_ms=812.5,
    )


def active_turn() -> Turn:
    """An active turn with an open tool call."""
    return Turn(
        id="t2",
        status=TurnStatus.ACTIVE,
        started_at=at(11),
        started_seq=11,
        input_ids=["msg_q2"],
        open_calls={"call_2": "msg_call2"},
    )


# One hand-built event of every kind (not necessarily applicable in sequence).
EXAMPLES: dict[str, Event] = {
    "message_added": MessageAdded(session_id="sess", seq=1, at=T0, message=question()),
    "status_changed": StatusChanged(
        session_id="sess",
        seq=8,
        at=at(8),
        message_id="msg_reply1",
        expected="pending",
        status="delivered",
    ),
    "metadata_updated": MetadataUpdated(
        session_id="sess",
        seq=9,
        at=at(9),
        message_id="msg_reply1",
        metadata={"discord_message_id": "992", "edits": [{"at": 1, "ok": True}], "none": None},
    ),
    "turn_started": TurnStarted(session_id="sess", seq=2, at=at(2), turn_id="t1"),
    "model_call_started": ModelCallStarted(
        session_id="sess",
        seq=3,
        at=at(3),
        operation_id="msg_01XFDUDYJgAACzvnptvVoYEL",
        source_key="t1#0",
        turn_id="t1",
        sequence=1,
        model="claude-x",
    ),
    "model_call_finished": ModelCallFinished(
        session_id="sess",
        seq=4,
        at=at(5),
        operation_id="msg_01XFDUDYJgAACzvnptvVoYEL",
        status=AuditStatus.COMPLETED,
        duration_ms=1234.5,
        usage=Usage(input_tokens=900, output_tokens=41, cache_read_tokens=512),
        content="Let me run the tests.",
        reasoning="The user wants tests run.",
        tool_calls=[
            AuditCall(id="call_1", name="run_shell_command", arguments_json='{"command": "ls"')
        ],
        stop_reason="tool_use",
    ),
    "approval_requested": ApprovalRequested(
        session_id="sess", seq=5, at=at(6), turn_id="t1", call_id="call_1"
    ),
    "approval_decided": ApprovalDecided(
        session_id="sess",
        seq=6,
        at=at(7),
        turn_id="t1",
        call_id="call_1",
        approved=False,
        reason="not on a Friday",
        by="Chii",
    ),
    "turn_ended": TurnEnded(
        session_id="sess",
        seq=12,
        at=at(32),
        turn_id="t2",
        outcome=TurnOutcome.INTERRUPTED,
        reason="interrupted by msg_q3",
        metrics={"tool_calls": 2, "tokens": {"input": 900, "output": 41}, "latency_ms": [12.5, 40]},
        duration_ms=20_000.25,
        partial=[partial_thought(), partial_reply()],
    ),
    "orphan_recovered": OrphanRecovered(
        session_id="sess",
        seq=14,
        at=at(400),
        turn_id="t3",
        reason="processing for 412 s after restart",
    ),
    "branch_imported": BranchImported(
        session_id="fork",
        seq=1,
        at=at(500),
        source_session_id="sess",
        source_seq=11,
        messages=[question(session_id="fork", event_seq=1), question("msg_q2", session_id="fork")],
        turns=[ended_turn(), active_turn()],
    ),
    "rolled_back": RolledBack(session_id="sess", seq=15, at=at(600), to_seq=4, reason="undo"),
}


def story() -> Timeline:
    """A session that exercises every event kind the reducer applies in sequence."""
    timeline = Timeline.start("sess")

    def do(cls: type[Event], **fields: Any) -> None:
        nonlocal timeline
        seq = timeline.last_seq + 1
        timeline = timeline.append(cls(session_id="sess", seq=seq, at=at(seq), **fields))

    def msg(category: Category, id: str, **fields: Any) -> Message:
        return new_message(
            category, id=id, session_id="sess", created_at=at(timeline.last_seq + 1), **fields
        )

    do(MessageAdded, message=question())
    do(TurnStarted, turn_id="t1")
    do(
        MessageAdded,
        message=msg(
            Category.THOUGHT, "msg_th1", content="read the file", turn_id="t1", parent_id="msg_q1"
        ),
    )
    call = ToolCall(
        id="call_1", name="sh", arguments={"argv": ["head", "data.csv"], "timeout": 5.5}
    )
    do(
        MessageAdded,
        message=msg(
            Category.TOOL_CALL, "msg_call1", tool_call=call, turn_id="t1", parent_id="msg_q1"
        ),
    )
    do(
        MessageAdded,
        message=msg(
            Category.TOOL_RESULT,
            "msg_res1",
            sender="sh",
            tool_call_id="call_1",
            parent_id="msg_call1",
            turn_id="t1",
            content="a,b\n1,2",
            is_error=False,
            metadata={"exit_code": 0},
        ),
    )
    do(
        MessageAdded,
        message=msg(
            Category.REPLY, "msg_reply1", content="Two columns.", turn_id="t1", parent_id="msg_q1"
        ),
    )
    do(StatusChanged, message_id="msg_th1", expected=Status.RESPONDED, status=Status.DELIVERED)
    do(StatusChanged, message_id="msg_reply1", expected=Status.PENDING, status=Status.DELIVERED)
    do(MetadataUpdated, message_id="msg_reply1", metadata={"discord_message_id": "992"})
    do(
        TurnEnded,
        turn_id="t1",
        outcome=TurnOutcome.PROCESSED,
        metrics={"tool_calls": 1},
        duration_ms=812.5,
    )
    do(
        MessageAdded,
        message=msg(Category.USER_QUESTION, "msg_q2", content="and now?", sender="Chii"),
    )
    do(MessageAdded, message=msg(Category.CRON_PROMPT, "msg_cron", content="daily report"))
    do(TurnStarted, turn_id="t2")
    call2 = ToolCall(id="call_2", name="search", arguments={"q": "amber"}, index=1)
    do(MessageAdded, message=msg(Category.TOOL_CALL, "msg_call2", tool_call=call2, turn_id="t2"))
    do(
        TurnEnded,
        turn_id="t2",
        outcome=TurnOutcome.INTERRUPTED,
        reason="interrupted by msg_q3",
        metrics={"tool_calls": 1},
        partial=[
            new_message(
                Category.THOUGHT,
                id="msg_th_part",
                session_id="sess",
                created_at=at(15),
                content="hm",
                turn_id="t2",
            ),
            new_message(
                Category.REPLY,
                id="msg_reply_part",
                session_id="sess",
                created_at=at(15),
                content="The",
                turn_id="t2",
            ),
        ],
    )
    do(MessageAdded, message=msg(Category.USER_QUESTION, "msg_q3", content="stop", sender="Chii"))
    do(TurnStarted, turn_id="t3")
    do(OrphanRecovered, turn_id="t3", reason="runner died")
    do(TurnStarted, turn_id="t4")
    do(
        MessageAdded,
        message=msg(Category.CRASH_NOTICE, "msg_crash", content="model failed", turn_id="t4"),
    )
    do(TurnEnded, turn_id="t4", outcome=TurnOutcome.ERROR, reason="HTTP 500", duration_ms=3.0)
    do(RolledBack, to_seq=18, reason="drop the crash")
    return timeline


STORY = story()


class TestEventRoundTrip:
    def test_every_kind_has_an_example(self) -> None:
        """The hand-built examples cover every event kind the runtime defines."""
        assert set(EXAMPLES) == set(EVENT_TYPES)
        for kind, event in EXAMPLES.items():
            assert type(event) is EVENT_TYPES[kind]

    @pytest.mark.parametrize("kind", sorted(EVENT_TYPES))
    def test_round_trip(self, kind: str) -> None:
        """An event encodes to JSON and decodes back equal, with its own class."""
        event = EXAMPLES[kind]
        decoded = from_json(to_json(event), Event)
        assert type(decoded) is type(event)
        assert decoded == event

    @pytest.mark.parametrize("kind", sorted(EVENT_TYPES))
    def test_decodes_as_its_own_class(self, kind: str) -> None:
        """Asking for the event's concrete class decodes it too."""
        event = EXAMPLES[kind]
        assert from_json(to_json(event), type(event)) == event

    @pytest.mark.parametrize("kind", sorted(EVENT_TYPES))
    def test_kind_comes_first(self, kind: str) -> None:
        """Encoded events start with their kind, so a reader can dispatch on a prefix."""
        raw = to_json(EXAMPLES[kind])
        assert raw.startswith(b'{"kind":"' + kind.encode() + b'",')
        assert next(iter(orjson.loads(raw))) == "kind"

    def test_turn_ended_keeps_partial_and_metrics(self) -> None:
        """TurnEnded's partial messages, metrics and duration survive, frozen and typed."""
        decoded = from_json(to_json(EXAMPLES["turn_ended"]), Event)
        assert isinstance(decoded, TurnEnded)
        assert [m.id for m in decoded.partial] == ["msg_th_part", "msg_reply_part"]
        assert all(isinstance(m, Message) for m in decoded.partial)
        assert isinstance(decoded.partial, PVector)
        assert decoded.partial[1].metadata == pmap({"stream": pmap({"chunks": 3})})
        assert isinstance(decoded.metrics["tokens"], PMap)
        assert decoded.metrics["latency_ms"] == pvector([12.5, 40])
        assert decoded.outcome is TurnOutcome.INTERRUPTED
        assert decoded.duration_ms == 20_000.25

    def test_branch_imported_keeps_messages_and_turns(self) -> None:
        """BranchImported's messages and Turn values survive with their types."""
        decoded = from_json(to_json(EXAMPLES["branch_imported"]), Event)
        assert isinstance(decoded, BranchImported)
        assert [type(t) for t in decoded.turns] == [Turn, Turn]
        assert decoded.turns[0] == ended_turn()
        assert decoded.turns[1].open_calls == pmap({"call_2": "msg_call2"})
        assert decoded.turns[1].status is TurnStatus.ACTIVE
        assert decoded.messages[0].attachments[1].width == 640
        assert decoded.messages[0].event_seq == 1

    def test_message_added_keeps_attachments_and_elements(self) -> None:
        """Attachments and browser elements decode to their classes, equal field by field."""
        decoded = from_json(to_json(EXAMPLES["message_added"]), Event)
        assert isinstance(decoded, MessageAdded)
        assert all(isinstance(a, Attachment) for a in decoded.message.attachments)
        assert all(isinstance(b, BrowserElement) for b in decoded.message.browser_elements)
        assert decoded.message.metadata["big"] == 2**64 - 1

    def test_applied_events_round_trip(self) -> None:
        """Every event of a real session round-trips equal."""
        for event in STORY.events():
            assert from_json(to_json(event), Event) == event

    def test_decoded_log_replays_to_the_same_states(self) -> None:
        """A log decoded from JSON rebuilds states equal to the originals."""
        log = [from_json(to_json(event), Event) for event in STORY.events()]
        replayed = Timeline.start("sess").extend(log)
        assert list(replayed.states()) == list(STORY.states())

    def test_asking_for_another_event_class_fails(self) -> None:
        """Decoding a message_added as a StatusChanged is a DecodeError, not a MessageAdded."""
        with pytest.raises(
            DecodeError, match=r"^Cannot decode StatusChanged from JSON: .*message_added"
        ):
            from_json(to_json(EXAMPLES["message_added"]), StatusChanged)


class TestValueRoundTrip:
    def test_message(self) -> None:
        """A message with every kind of field round-trips equal and hashes equal."""
        message = question(parent_id="msg_0", event_seq=3)
        decoded = from_json(to_json(message), Message)
        assert decoded == message
        assert hash(decoded) == hash(message)

    def test_tool_messages(self) -> None:
        """Tool calls and error results round-trip equal."""
        state = STORY.head
        for message_id in ("msg_call1", "msg_res1", "msg_call2"):
            message = state.message(message_id)
            assert from_json(to_json(message), Message) == message
        error = new_message(
            Category.TOOL_RESULT,
            id="msg_err",
            session_id="sess",
            created_at=T0,
            sender="sh",
            tool_call_id="call_9",
            is_error=True,
            error_type="timeout",
            content="timed out",
        )
        assert from_json(to_json(error), Message) == error

    def test_non_utc_time_keeps_the_instant(self) -> None:
        """A created_at with a non-UTC offset decodes to the same instant and offset."""
        local = attrs.evolve(
            question(),
            created_at=datetime(2026, 5, 27, 20, 50, tzinfo=timezone(timedelta(hours=8))),
        )
        decoded = from_json(to_json(local), Message)
        assert decoded.created_at == T0
        assert decoded.created_at.utcoffset() == timedelta(hours=8)

    @pytest.mark.parametrize("turn", [ended_turn(), active_turn()], ids=["ended", "active"])
    def test_turn(self, turn: Turn) -> None:
        """Turns, ended or active, round-trip equal."""
        assert from_json(to_json(turn), Turn) == turn

    def test_every_story_state(self) -> None:
        """Every state of a real session round-trips equal, indexes and counters included."""
        for state in STORY.states():
            decoded = from_json(to_json(state), SessionState)
            assert decoded == state
            assert hash(decoded) == hash(state)

    def test_state_details(self) -> None:
        """The head state's derived parts come back: turns, counts, rolled-back messages."""
        state = STORY.head
        decoded = from_json(to_json(state), SessionState)
        assert decoded.active_turn_id is None
        assert decoded.status_counts() == state.status_counts()
        assert decoded.message("msg_crash").active is False
        assert decoded.turns["t3"].status is TurnStatus.RECOVERED
        assert decoded.message("msg_reply_part").metadata["interrupted"] is True

    def test_mid_turn_state(self) -> None:
        """A state with an active turn and an open tool call round-trips equal."""
        state = STORY.at(14)
        assert state.active_turn_id == "t2"
        decoded = from_json(to_json(state), SessionState)
        assert decoded == state
        assert decoded.active_turn == state.active_turn

    def test_empty_state(self) -> None:
        """The state before any event round-trips equal."""
        empty = SessionState.empty("sess")
        assert from_json(to_json(empty), SessionState) == empty

    def test_fork_event_round_trips(self) -> None:
        """The BranchImported a fork produces round-trips and rebuilds the same state."""
        fork = STORY.fork(14, "sess_fork", at=at(900))
        event = fork.event(1)
        decoded = from_json(to_json(event), Event)
        assert decoded == event
        assert Timeline.start("sess_fork").append(decoded).head == fork.head

    def test_to_data_is_plain(self) -> None:
        """to_data gives plain dicts and lists that orjson encodes, and from_data reads back."""
        event = EXAMPLES["turn_ended"]
        data = to_data(event)
        assert type(data) is dict
        assert type(data["partial"]) is list
        assert type(data["metrics"]) is dict
        assert data["at"] == "2026-05-27T12:50:32+00:00"
        assert from_data(data, Event) == event

    def test_from_json_accepts_str_and_bytes(self) -> None:
        """from_json reads JSON given as bytes or as text."""
        raw = to_json(EXAMPLES["rolled_back"])
        assert isinstance(raw, bytes)
        assert from_json(raw, Event) == from_json(raw.decode(), Event) == EXAMPLES["rolled_back"]


class TestProperties:
    @given(messages())
    def test_random_messages_round_trip(self, message: Message) -> None:
        """Any message of a stored category round-trips equal."""
        decoded = from_json(to_json(message), Message)
        assert decoded == message
        assert hash(decoded) == hash(message)

    @given(events())
    def test_random_events_round_trip(self, event: Event) -> None:
        """Any event round-trips equal, as its own class."""
        decoded = from_json(to_json(event), Event)
        assert type(decoded) is type(event)
        assert decoded == event

    @settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(timelines())
    def test_random_timeline_states_round_trip(self, timeline: Timeline) -> None:
        """Every state of a legal session round-trips equal."""
        for state in timeline.states():
            assert from_json(to_json(state), SessionState) == state

    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(timelines())  # plain sessions: the cache keeps their turns as compact blocks
    def test_a_model_view_s_data_is_its_messages(self, timeline: Timeline) -> None:
        """A view's data names its messages, whether a ``ViewCache`` built them lazily or
        ``clean_history`` eagerly; not the prefix the cache shares between views."""
        cache = runtime.ViewCache.empty()
        for state in timeline.states():
            cache, cached = runtime.cached_view(cache, state)
            fresh = runtime.clean_history(state)
            data = to_data(cached)
            assert data == to_data(fresh)
            assert list(data) == ["session_id", "seq", "messages", "truncated", "tokens"]
            assert data["messages"] == [to_data(message) for message in fresh.messages]


def _message_added_data() -> dict[str, Any]:
    return to_data(EXAMPLES["message_added"])  # type: ignore[no-any-return]


def _state_data() -> dict[str, Any]:
    return to_data(STORY.at(5))  # type: ignore[no-any-return]


class TestDecodeErrors:
    def test_arguments_in_the_wrong_order(self) -> None:
        """from_data(Event, data) said 'unhashable type: 'dict''; from_json(Event, raw) that
        it expected bytes: both name the order (an InvalidArgument, so a TypeError)."""
        data = to_data(question())
        with pytest.raises(
            InvalidArgument,
            match=exact(
                "from_data() takes the data first and the type to decode into second: "
                "from_data(data, Message); got the type Message first and a 'dict' second."
            ),
        ):
            from_data(Message, data)  # type: ignore[arg-type]
        with pytest.raises(
            TypeError,
            match=exact(
                "from_json() takes the data first and the type to decode into second: "
                "from_json(raw, list[Message]); got the type list[Message] first and a "
                "'bytes' second."
            ),
        ):
            from_json(list[Message], b"[]")  # type: ignore[arg-type]
        assert from_data(data, Message) == question()

    def test_invalid_json(self) -> None:
        """Text that is not JSON is a DecodeError saying so."""
        with pytest.raises(DecodeError, match=r"^Cannot decode Event: not valid JSON \(.+\)\.$"):
            from_json(b'{"kind": ', Event)

    def test_invalid_json_text(self) -> None:
        """Invalid JSON given as str is reported the same way."""
        with pytest.raises(DecodeError, match=r"^Cannot decode Message: not valid JSON \(.+\)\.$"):
            from_json("{nope", Message)

    def test_pickle_is_not_accepted(self) -> None:
        """A pickled message is not JSON, so it is refused rather than unpickled."""
        payload = pickle.dumps(question())
        with pytest.raises(DecodeError, match=r"^Cannot decode Message: not valid JSON \(.+\)\.$"):
            from_json(payload, Message)

    def test_unknown_event_kind(self) -> None:
        """An unknown kind lists the known ones."""
        data = _message_added_data()
        data["kind"] = "message_deleted"
        with pytest.raises(
            DecodeError,
            match=exact(
                f"Cannot decode Event from JSON: unknown event kind 'message_deleted'; expected "
                f"one of {KINDS} @ $."
            ),
        ):
            from_data(data, Event)

    def test_missing_kind(self) -> None:
        """An event without a kind is refused the same way."""
        data = _message_added_data()
        del data["kind"]
        with pytest.raises(
            DecodeError,
            match=exact(
                f"Cannot decode Event from JSON: unknown event kind None; expected one of "
                f"{KINDS} @ $."
            ),
        ):
            from_json(orjson.dumps(data), Event)

    def test_event_must_be_an_object(self) -> None:
        """A JSON array is not an event."""
        with pytest.raises(
            DecodeError,
            match=exact(
                "Cannot decode Event from JSON: expected an object with a 'kind', got [] @ $."
            ),
        ):
            from_json(b"[]", Event)

    def test_missing_field(self) -> None:
        """A missing nested field is reported by its path."""
        data = _message_added_data()
        del data["message"]["role"]
        with pytest.raises(
            DecodeError,
            match=exact("Cannot decode Event from JSON: required field missing @ $.message.role."),
        ):
            from_json(orjson.dumps(data), Event)

    def test_wrong_type(self) -> None:
        """A seq given as a string is not coerced."""
        data = _message_added_data()
        data["seq"] = "1"
        with pytest.raises(
            DecodeError,
            match=exact("Cannot decode Event from JSON: expected an int, got '1' @ $.seq."),
        ):
            from_json(orjson.dumps(data), Event)

    def test_bool_is_not_an_int(self) -> None:
        """true is not accepted for an int field."""
        data = _message_added_data()
        data["message"]["event_seq"] = True
        with pytest.raises(
            DecodeError,
            match=exact(
                "Cannot decode Event from JSON: expected an int, got True @ $.message.event_seq."
            ),
        ):
            from_json(orjson.dumps(data), Event)

    def test_int_is_not_a_str(self) -> None:
        """A number is not accepted for a str field."""
        data = _message_added_data()
        data["message"]["content"] = 7
        with pytest.raises(
            DecodeError,
            match=exact(
                "Cannot decode Event from JSON: expected a str, got 7 @ $.message.content."
            ),
        ):
            from_json(orjson.dumps(data), Event)

    def test_unknown_status(self) -> None:
        """An unknown enum value lists the allowed ones at its path."""
        data = _message_added_data()
        data["message"]["status"] = "done"
        with pytest.raises(
            DecodeError,
            match=exact(
                "Cannot decode Event from JSON: 'done' is not a Status (expected one of "
                "'pending_agent', 'processing', 'processed', 'interrupted', 'error', 'pending', "
                "'responded', 'delivered') @ $.message.status."
            ),
        ):
            from_json(orjson.dumps(data), Event)

    def test_unknown_key(self) -> None:
        """An extra top-level key is refused."""
        data = _message_added_data()
        data["priority"] = 1
        with pytest.raises(
            DecodeError,
            match=exact("Cannot decode Event from JSON: unknown field(s) ['priority'] @ $."),
        ):
            from_json(orjson.dumps(data), Event)

    def test_unknown_nested_key(self) -> None:
        """An extra key inside a message is refused at the message's path."""
        data = _message_added_data()
        data["message"]["priority"] = 1
        with pytest.raises(
            DecodeError,
            match=exact(
                "Cannot decode Event from JSON: unknown field(s) ['priority'] @ $.message."
            ),
        ):
            from_json(orjson.dumps(data), Event)

    def test_naive_datetime(self) -> None:
        """A timestamp without a UTC offset is refused."""
        data = _message_added_data()
        data["at"] = "2026-05-27T12:50:00"
        with pytest.raises(
            DecodeError,
            match=exact(
                "Cannot decode Event from JSON: expected a UTC offset in '2026-05-27T12:50:00' "
                "(like +00:00) @ $.at."
            ),
        ):
            from_json(orjson.dumps(data), Event)

    def test_naive_created_at(self) -> None:
        """A naive created_at inside a message is refused at its path."""
        data = _message_added_data()
        data["message"]["created_at"] = "2026-05-27T12:50:00"
        with pytest.raises(
            DecodeError,
            match=r"^Cannot decode Event from JSON: expected a UTC offset in '2026-05-27T12:50:00' "
            r"\(like \+00:00\) @ \$\.message\.created_at\.$",
        ):
            from_json(orjson.dumps(data), Event)

    def test_message_checks_apply(self) -> None:
        """A decoded message whose fields contradict each other is a DecodeError."""
        data = to_data(question())
        data["tool_call_id"] = "call_1"
        with pytest.raises(
            DecodeError,
            match=r"^Cannot decode Message from JSON: Message 'msg_q1' of type text must not "
            r"carry a tool_call_id\.? @ \$\.$",
        ):
            from_data(data, Message)

    def test_inconsistent_state(self) -> None:
        """A state holding two messages with one id is refused."""
        data = _state_data()
        data["messages"].append(data["messages"][0])
        with pytest.raises(
            DecodeError,
            match=exact(
                "Cannot decode SessionState from JSON: inconsistent session state: message ids "
                "are not unique @ $."
            ),
        ):
            from_json(orjson.dumps(data), SessionState)

    def test_state_with_two_active_turns(self) -> None:
        """Two turns marked active (one kept as ended) make a state inconsistent."""
        data = _state_data()
        extra = dict(data["turns"][0], id="t0", started_seq=0, input_ids=[])
        data["turns"].insert(0, extra)
        with pytest.raises(DecodeError, match=r"more than one active turn: \['t0', 't1'\]"):
            from_json(orjson.dumps(data), SessionState)

    def test_state_with_unclaimed_processing_input(self) -> None:
        """A processing input that no active turn claims makes a state inconsistent."""
        data = _state_data()
        data["turns"] = []
        with pytest.raises(
            DecodeError,
            match=exact(
                "Cannot decode SessionState from JSON: inconsistent session state: message "
                "'msg_q1' is processing but is not claimed by the active turn; message "
                "'msg_q1' names unknown turn 't1'; message 'msg_th1' names unknown turn 't1'; "
                "message 'msg_call1' names unknown turn 't1'; message 'msg_res1' names unknown "
                "turn 't1' @ $."
            ),
        ):
            from_json(orjson.dumps(data), SessionState)

    def test_state_unknown_key(self) -> None:
        """An extra key in a state is refused."""
        data = _state_data()
        data["index"] = {}
        with pytest.raises(
            DecodeError,
            match=exact("Cannot decode SessionState from JSON: unknown field(s) ['index'] @ $."),
        ):
            from_json(orjson.dumps(data), SessionState)

    def test_state_missing_field(self) -> None:
        """A state without its seq names the missing field by path."""
        data = _state_data()
        del data["seq"]
        with pytest.raises(
            DecodeError,
            match=exact("Cannot decode SessionState from JSON: required field missing @ $.seq."),
        ):
            from_json(orjson.dumps(data), SessionState)

    def test_state_wrong_type_names_path(self) -> None:
        """A state's seq given as a string is reported at $.seq."""
        data = _state_data()
        data["seq"] = "5"
        with pytest.raises(
            DecodeError,
            match=exact("Cannot decode SessionState from JSON: expected an int, got '5' @ $.seq."),
        ):
            from_json(orjson.dumps(data), SessionState)

    def test_state_bad_message_names_path(self) -> None:
        """A bad field of a state's message is reported under $.messages[i]."""
        data = _state_data()
        del data["messages"][0]["role"]
        with pytest.raises(
            DecodeError,
            match=exact(
                "Cannot decode SessionState from JSON: required field missing @ $.messages[0].role."
            ),
        ):
            from_json(orjson.dumps(data), SessionState)

    def test_event_validator_error_names_path(self) -> None:
        """An event field its class rejects (seq 0) is reported at its path."""
        data = _message_added_data()
        data["seq"] = 0
        with pytest.raises(
            DecodeError,
            match=r"^Cannot decode Event from JSON: MessageAdded\.seq must be at least 1 "
            r"\(got 0\).* @ \$\.seq\.$",
        ):
            from_json(orjson.dumps(data), Event)


class TestNoPickle:
    def test_runtime_never_imports_pickle(self) -> None:
        """No module of runtime imports pickle or another object serializer (DESIGN §9)."""
        banned = {
            "pickle",
            "cPickle",
            "_pickle",
            "dill",
            "cloudpickle",
            "shelve",
            "marshal",
            "copyreg",
        }
        root = Path(runtime.__file__).parent
        offenders = []
        for path in sorted(root.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in banned]
        assert offenders == []

    def test_encoded_values_are_json(self) -> None:
        """What to_json writes is plain UTF-8 JSON that any JSON reader parses."""
        import json

        for event in STORY.events():
            assert json.loads(to_json(event).decode("utf-8"))["kind"] == event.kind
        assert json.loads(to_json(STORY.head))["session_id"] == "sess"
