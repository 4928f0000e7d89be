"""What is accepted can be stored: the findings of the fuzzing run (issue 15), pinned.

Each test is one finding: a value that was accepted and then could not be
stored, a decoder that was lenient, a crash instead of a clean refusal.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import attrs
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime import (
    EVENT_TYPES,
    MAX_DEPTH,
    AmberError,
    ApprovalDecided,
    Attachment,
    AuditCall,
    Category,
    DecodeError,
    Event,
    InvalidArgument,
    InvalidEvent,
    InvalidInput,
    InvalidMessage,
    Message,
    MessageAdded,
    MetadataUpdated,
    ModelCallFinished,
    ModelCallStarted,
    OrphanRecovered,
    RolledBack,
    SessionState,
    ToolCall,
    Turn,
    TurnEnded,
    TurnStatus,
    UserInput,
    check_session_id,
    freeze,
    from_data,
    from_json,
    new_message,
    storable_text,
    to_data,
    to_json,
    validate_input,
)
from runtime.testing import json_values, messages, timelines

T0 = datetime(2026, 5, 27, 12, 50, tzinfo=UTC)
LONE = "hello \ud800"
ESCAPED = "report-\udcff.txt"  # how os.listdir shows a file name byte that is not UTF-8


def nested(depth: int) -> Any:
    """A dict nested ``depth`` levels deep."""
    value: Any = {}
    for _ in range(depth):
        value = {"k": value}
    return value


def question(**fields: Any) -> Message:
    return new_message(
        Category.USER_QUESTION,
        id=fields.pop("id", "m1"),
        session_id=fields.pop("session_id", "s"),
        created_at=T0,
        sender=fields.pop("sender", "Chii"),
        content=fields.pop("content", "hi"),
        **fields,
    )


class TestLoneSurrogates:
    """Finding 1: text with a lone surrogate passed validation and failed in the store."""

    def test_user_input_text_is_refused(self) -> None:
        """validate_input refuses a lone surrogate, naming the field and the position."""
        with pytest.raises(
            InvalidInput,
            match=r"^Input text must be valid Unicode text \(got a lone surrogate '\\ud800' at index 6\); ",
        ):
            validate_input(UserInput(text=LONE))

    @pytest.mark.parametrize("field", ["sender", "chatbot_id", "channel_id", "command"])
    def test_other_input_fields_are_refused(self, field: str) -> None:
        """Every text field of an input is checked the same way."""
        with pytest.raises(InvalidInput, match=rf"^Input {field} must be valid Unicode text"):
            UserInput(text="hi", **{field: "x\udc80"})

    def test_input_metadata_is_refused(self) -> None:
        """A surrogate in the metadata (a value or a key) is refused with its path."""
        with pytest.raises(InvalidInput, match=r"\$\.metadata\.name must be valid Unicode text"):
            UserInput(text="hi", metadata={"name": ESCAPED})
        with pytest.raises(InvalidInput, match=r"\$\.metadata keys must be valid Unicode text"):
            UserInput(text="hi", metadata={ESCAPED: 1})

    @pytest.mark.parametrize("field", ["content", "sender", "chatbot_id", "channel_id"])
    def test_message_text_is_refused(self, field: str) -> None:
        """A message cannot be built with text that does not encode."""
        with pytest.raises(InvalidMessage, match=rf"^Message\.{field} must be valid Unicode text"):
            question(**{field: LONE})

    def test_tool_call_arguments_are_refused(self) -> None:
        with pytest.raises(InvalidArgument, match=r"^\$\.arguments\.path must be valid Unicode"):
            ToolCall(id="c1", name="ls", arguments={"path": ESCAPED})

    def test_event_text_is_refused(self) -> None:
        """Event fields without a message around them are checked too."""
        with pytest.raises(InvalidEvent, match=r"^TurnEnded\.reason must be valid Unicode"):
            TurnEnded(session_id="s", seq=2, at=T0, turn_id="t", outcome="error", reason=LONE)
        with pytest.raises(InvalidEvent, match=r"^ModelCallFinished\.content must be valid"):
            ModelCallFinished(
                session_id="s", seq=3, at=T0, operation_id="o", status="completed", content=LONE
            )
        with pytest.raises(InvalidEvent, match=r"^AuditCall\.arguments_json must be valid"):
            AuditCall(id="c", name="ls", arguments_json=LONE)

    def test_turn_text_is_refused(self) -> None:
        with pytest.raises(InvalidEvent, match=r"^Turn\.reason must be valid Unicode"):
            Turn(id="t", status=TurnStatus.ERROR, started_at=T0, started_seq=1, reason=LONE)

    def test_from_data_refuses_them(self) -> None:
        """Decoding plain data (not JSON text) refuses a surrogate with the field's path."""
        data = to_data(question())
        data["content"] = LONE
        with pytest.raises(DecodeError, match=r"expected valid Unicode text, got a lone surrogate"):
            from_data(data, Message)

    def test_storable_text_shows_what_was_there(self) -> None:
        """System-made text is made storable, visibly: escaped bytes become \\xNN."""
        assert storable_text(ESCAPED) == "report-\\xff.txt"
        assert storable_text(LONE) == "hello \\ud800"
        text = "fine ✓"
        assert storable_text(text) is text
        assert orjson.dumps(storable_text(ESCAPED + LONE))

    @given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
    def test_storable_text_always_encodes(self, text: str) -> None:
        """Whatever the text, storable_text's result encodes as UTF-8 and keeps valid text."""
        made = storable_text(text)
        made.encode("utf-8")
        if not any(0xD800 <= ord(c) <= 0xDFFF for c in text):
            assert made == text


class TestIntegers:
    """Finding 1: integers beyond 64 bits were accepted by from_data, then failed to encode."""

    @pytest.mark.parametrize(
        "value", [2**64, -(2**63) - 1, 10**5000], ids=["2**64", "-2**63-1", "10**5000"]
    )
    def test_metadata(self, value: int) -> None:
        with pytest.raises(InvalidArgument, match=r"must be an integer that fits in 64 bits"):
            question(metadata={"n": value})

    def test_count_fields_from_data(self) -> None:
        """A count field (attachment size) beyond 64 bits is refused when decoded."""
        data = to_data(question(attachments=[Attachment(id="a", name="a.csv", size=1)]))
        data["attachments"][0]["size"] = 2**64
        with pytest.raises(DecodeError, match=r"size"):
            from_data(data, Message)

    def test_seqs_fit_a_signed_column(self) -> None:
        """A seq must fit the store's signed 64-bit column."""
        with pytest.raises(InvalidEvent, match=r"below 2\*\*63"):
            RolledBack(session_id="s", seq=2**63, at=T0, to_seq=1)
        with pytest.raises(InvalidMessage, match=r"below 2\*\*63"):
            question(event_seq=2**63)


class TestDepth:
    """Finding 3: deep nesting crashed with RecursionError instead of being refused."""

    def test_freeze(self) -> None:
        with pytest.raises(InvalidArgument, match=rf"nests more than {MAX_DEPTH} levels deep"):
            freeze(nested(1000))

    def test_exactly_the_limit_is_fine(self) -> None:
        freeze(nested(MAX_DEPTH - 1))  # MAX_DEPTH dicts, one in another
        with pytest.raises(InvalidArgument):
            freeze(nested(MAX_DEPTH))

    def test_message_metadata(self) -> None:
        with pytest.raises(InvalidArgument, match=r"^\$\.metadata\.k\.k.*nests more than"):
            question(metadata=nested(1000))

    def test_from_json(self) -> None:
        """Deep metadata in JSON is a DecodeError, not a RecursionError."""
        data = to_data(question())
        text = orjson.dumps(data).replace(
            b'"metadata":{}', b'"metadata":' + b'{"k":' * 900 + b"1" + b"}" * 900
        )
        with pytest.raises(DecodeError, match=r"nests more than"):
            from_json(text, Message)

    def test_deeper_than_json_allows(self) -> None:
        """Beyond orjson's own limit it is a DecodeError too."""
        with pytest.raises(DecodeError, match=r"not valid JSON"):
            from_json(b"[" * 5000 + b"]" * 5000, Event)

    def test_deep_value_in_a_wrong_place(self) -> None:
        """A deep list where a str belongs is refused without recursing through it."""
        data = to_data(question())
        deep: Any = []
        for _ in range(100_000):
            deep = [deep]
        data["content"] = deep
        with pytest.raises(
            DecodeError, match=r"expected a str, got \[\[\[\.\.\.\]\]\] @ \$\.content"
        ):
            from_data(data, Message)


class TestStrictDecoding:
    """Finding 4: decoding accepted wrong containers, nulls and lossy floats."""

    def state_data(self) -> dict[str, Any]:
        return {"session_id": "s", "seq": 0, "updated_at": None, "messages": [], "turns": []}

    @pytest.mark.parametrize("field", ["messages", "turns", "audit"])
    @pytest.mark.parametrize("value", ["", {}, None, "ab"])
    def test_lists_must_be_lists(self, field: str, value: object) -> None:
        data = {**self.state_data(), field: value}
        with pytest.raises(DecodeError, match=rf"expected a list, got .* @ \$\.{field}"):
            from_data(data, SessionState)

    def test_unknown_keys_of_mixed_types(self) -> None:
        """Unknown keys 1 and 'zz' are reported (sorting them raised TypeError; found by fuzzing)."""
        with pytest.raises(DecodeError, match=r"unknown field\(s\) \['zz', 1\] @ \$"):
            from_data({1: 2, "zz": 3, "id": "x"}, Message)

    def test_maps_must_be_maps(self) -> None:
        """null where a map belongs is refused (it used to decode as an empty map)."""
        data = to_data(question())
        data["metadata"] = None
        with pytest.raises(DecodeError, match=r"expected an object, got None @ \$\.metadata"):
            from_data(data, Message)

    def test_a_float_field_never_rounds(self) -> None:
        """An integer too big for a float is refused, not silently rounded."""
        event = TurnEnded(session_id="s", seq=2, at=T0, turn_id="t", outcome="processed")
        data = to_data(event)
        data["duration_ms"] = 9223372036854775807
        with pytest.raises(
            DecodeError,
            match=r"a number a float holds exactly, got 9223372036854775807 @ \$\.duration_ms",
        ):
            from_data(data, Event)

    def test_a_float_field_reads_a_small_integer(self) -> None:
        """A small integer in a float field is read exactly (older stores wrote them)."""
        event = TurnEnded(session_id="s", seq=2, at=T0, turn_id="t", outcome="processed")
        data = {**to_data(event), "duration_ms": 12}
        assert from_data(data, Event).duration_ms == 12.0  # type: ignore[attr-defined]

    def test_durations_are_floats_however_given(self) -> None:
        """duration_ms=12 and 12.0 are one value, with one encoding."""
        a = TurnEnded(
            session_id="s", seq=2, at=T0, turn_id="t", outcome="processed", duration_ms=12
        )
        b = TurnEnded(
            session_id="s", seq=2, at=T0, turn_id="t", outcome="processed", duration_ms=12.0
        )
        assert to_json(a) == to_json(b)
        assert type(a.duration_ms) is float

    def test_rejecting_many_items_is_linear_and_bounded(self) -> None:
        """60,000 bad items: a message of bounded size that counts the rest, in linear time."""

        def reject(count: int) -> tuple[float, str]:
            data = {**self.state_data(), "messages": [{"id": 1}] * count}
            started = time.perf_counter()
            with pytest.raises(DecodeError) as caught:
                from_data(data, SessionState)
            return time.perf_counter() - started, str(caught.value)

        reject(100)  # warm up
        small, _ = reject(6_000)
        big, message = reject(60_000)
        assert len(message) < 2_000
        assert "and 59990 more item(s) that do not decode @ $.messages" in message
        # Ten times the items: well under a hundred times the time (it was quadratic).
        assert big < 30 * max(small, 0.01)


class TestCanonicalJSON:
    """Finding 5 (what to build): to_json is the same however the value was built."""

    def test_metadata_key_order(self) -> None:
        a = question(metadata={"b": 1, "a": {"y": 2, "x": 3}})
        b = question(metadata={"a": {"x": 3, "y": 2}, "b": 1})
        assert to_json(a) == to_json(b)
        assert to_json(a).index(b'"a"') < to_json(a).index(b'"b"')

    @given(messages())
    def test_messages_re_encode_identically(self, message: Message) -> None:
        once = to_json(message)
        assert to_json(from_json(once, Message)) == once

    @given(timelines())
    def test_events_and_states_re_encode_identically(self, timeline: Any) -> None:
        for event in timeline.events():
            once = to_json(event)
            assert to_json(from_json(once, Event)) == once
        once = to_json(timeline.head)
        assert to_json(from_json(once, SessionState)) == once

    @given(st.dictionaries(st.text(max_size=5), json_values(), max_size=6))
    def test_any_metadata_re_encodes_identically(self, metadata: dict[str, Any]) -> None:
        event = MetadataUpdated(session_id="s", seq=2, at=T0, message_id="m", metadata=metadata)
        once = to_json(event)
        assert to_json(from_json(once, Event)) == once


class TestSessionIds:
    """Finding 5 and 7: odd session ids gave misleading errors."""

    @pytest.mark.parametrize(
        ("value", "why"),
        [
            ("", "it must not be empty"),
            (" ", "it is blank \\(only white space\\)"),
            (" \u3000", "it is blank \\(only white space\\)"),
            ("\x00s", r"it holds the control character '\\x00' at index 0"),
            ("s\ud800", r"it holds a lone surrogate '\\ud800' at index 1"),
            ("a\nb", r"it holds the control character '\\n' at index 1"),
            ("x" * 257, "it has 257 characters, more than the limit of 256"),
            (7, r"it must be a str \(got 7 that is an 'int'\)"),
            (None, r"it must be a str \(got None that is a 'NoneType'\)"),
        ],
    )
    def test_check_session_id(self, value: object, why: str) -> None:
        with pytest.raises(InvalidInput, match=rf"^Session id .* cannot be used: {why}\. "):
            check_session_id(value)

    @pytest.mark.parametrize("value", ["s", "chat-42", "会话", "x" * 256, "a b"])
    def test_good_ids(self, value: str) -> None:
        assert check_session_id(value) == value

    def test_a_blank_session_already_stored_stays_readable(self) -> None:
        """Blank ids are refused for new input (as "" is), but a store written before that
        keeps its events: they decode, and the store reads the session."""
        from runtime.store import MemoryStore

        message = UserInput(text="hi").to_message(id="m", session_id="s", created_at=T0)
        event = MessageAdded(
            session_id=" ", seq=1, at=T0, message=attrs.evolve(message, session_id=" ")
        )
        assert from_json(to_json(event), Event) == event
        store = MemoryStore()
        store.append([event])
        assert [m.content for m in store.load_state(" ").messages] == ["hi"]

    def test_to_message_checks_the_session_id(self) -> None:
        with pytest.raises(InvalidInput, match=r"^Session id '\\x00s' cannot be used"):
            UserInput(text="hi").to_message(id="m", session_id="\x00s", created_at=T0)

    def test_events_check_it(self) -> None:
        with pytest.raises(
            InvalidEvent, match=r"^OrphanRecovered\.session_id must be a session id"
        ):
            OrphanRecovered(session_id="\x00s", seq=2, at=T0, turn_id="t")

    @pytest.mark.parametrize(
        ("field", "value"),
        [
            ("sender", 5),
            ("chatbot_id", None),
            ("channel_id", b"x"),
            ("command", 1),
            ("attachments", 5),
            ("browser_elements", "ab"),
            ("metadata", [1]),
        ],
    )
    def test_wrong_field_types_are_invalid_input(self, field: str, value: object) -> None:
        """Every field of a UserInput of the wrong type is InvalidInput (it was TypeError)."""
        with pytest.raises(InvalidInput):
            UserInput(text="hi", **{field: value})


class TestDeepValuesInErrors:
    """A value too deep to repr in an error message (found by the fuzz suite: RecursionError)."""

    def test_user_input_attachments(self) -> None:
        deep: Any = []
        for _ in range(100_000):
            deep = [deep]
        with pytest.raises(InvalidInput, match=r"^attachments\[0\] must be an Attachment"):
            validate_input(UserInput(text="hi", attachments=[deep]))
        with pytest.raises(InvalidMessage, match=r"^Message\.attachments\[0\] must be"):
            question(attachments=[deep])


class TestEveryValueEncodes:
    """Finding 1: every event kind, Message, Turn and SessionState built must encode."""

    @given(timelines())
    def test_built_values_encode(self, timeline: Any) -> None:
        for event in timeline.events():
            to_json(event)
        to_json(timeline.head)

    @pytest.mark.parametrize("kind", sorted(EVENT_TYPES))
    def test_no_event_kind_takes_a_surrogate_session_id(self, kind: str) -> None:
        fields: dict[str, dict[str, Any]] = {
            "approval_decided": {"turn_id": "t", "call_id": "c", "approved": False},
            "approval_requested": {"turn_id": "t", "call_id": "c"},
            "branch_imported": {"source_session_id": "a", "source_seq": 1},
            "message_added": {"message": question()},
            "metadata_updated": {"message_id": "m", "metadata": {}},
            "model_call_finished": {"operation_id": "o", "status": "completed"},
            "model_call_started": {
                "operation_id": "o", "source_key": "k", "turn_id": "t", "sequence": 1,
            },
            "orphan_recovered": {"turn_id": "t"},
            "rolled_back": {"to_seq": 0},
            "status_changed": {"message_id": "m", "expected": "pending", "status": "delivered"},
            "turn_ended": {"turn_id": "t", "outcome": "processed"},
            "turn_started": {"turn_id": "t"},
        }  # fmt: skip
        assert sorted(fields) == sorted(EVENT_TYPES)
        with pytest.raises(AmberError, match=r"session_id must be"):
            EVENT_TYPES[kind](session_id="s\ud800", seq=1, at=T0, **fields[kind])

    def test_approval_texts(self) -> None:
        """The approval events (added after the fuzzing run) refuse lone surrogates too."""
        with pytest.raises(InvalidEvent, match=r"^ApprovalDecided\.reason must be valid"):
            ApprovalDecided(
                session_id="s", seq=2, at=T0, turn_id="t", call_id="c", approved=False,
                reason=LONE,
            )  # fmt: skip

    def test_model_call_started_model_name(self) -> None:
        with pytest.raises(InvalidEvent, match=r"^ModelCallStarted\.model must be valid"):
            ModelCallStarted(
                session_id="s", seq=2, at=T0, operation_id="o", source_key="k", turn_id="t",
                sequence=1, model=LONE,
            )  # fmt: skip

    def test_message_added_round_trips(self) -> None:
        event = MessageAdded(session_id="s", seq=1, at=T0, message=question(content="会话 ✓"))
        assert from_json(to_json(event), Event) == event
