"""The snapshot decoders' fast path agrees with the codec on valid and damaged input."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import (
    Category,
    DecodeError,
    Message,
    MessageType,
    Role,
    ToolCall,
    Turn,
    from_data,
    new_message,
    to_data,
)
from runtime.store import _fast
from runtime.store._fast import (
    MESSAGE_FIELDS,
    TURN_FIELDS,
    decode_message,
    decode_message_row,
    decode_message_rows,
    decode_turn,
    decode_turn_row,
    decode_turn_rows,
)
from runtime.testing import messages, timelines

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ODD_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    7,
    2**53,
    2**63,
    -(2**63) - 1,
    2**70,
    1.5,
    1e300,
    float("inf"),
    "\x00",
    "",
    "x",
    "processing",
    [],
    ["x"],
    {},
    {"a": 1},
    "2026-01-01T00:00:00",
    "2026-01-01T00:00:00+00:00",
]


def outcome(decode: Any, data: Any, kind: type) -> tuple[str, Any]:
    try:
        return "ok", decode(data)
    except DecodeError as exc:
        return "error", str(exc)


def agree(decode: Any, data: Any, kind: type) -> None:
    assert outcome(decode, data, kind) == outcome(lambda d: from_data(d, kind), data, kind)


def sample_message() -> dict[str, Any]:
    return to_data(
        new_message(
            Category.TOOL_CALL, id="c1", session_id="s", created_at=T0, turn_id="t1",
            tool_call=ToolCall(id="call_1", name="sh", arguments={"command": "ls", "n": [1, 2]}),
            metadata={"tool_name": "sh"}, event_seq=4,
        )
    )  # fmt: skip


def sample_turn() -> dict[str, Any]:
    turn = Turn(
        id="t1", status="processed", started_at=T0, started_seq=2, input_ids=["u1", "u2"],
        open_calls={"call_1": "c1"}, ended_at=T0, ended_seq=9, reason="done",
        metrics={"tokens": 12}, duration_ms=12.5,
    )  # fmt: skip
    return to_data(turn)


class TestFastPath:
    def test_knows_the_current_fields(self) -> None:
        """The fast path is on: it knows every field of Message and Turn (teach it new ones)."""
        assert _fast.FAST_MESSAGES
        assert _fast.FAST_TURNS

    @settings(max_examples=200, deadline=None)
    @given(messages())
    def test_messages_round_trip(self, message: Message) -> None:
        """Every message decodes to itself, as the codec decodes it."""
        data = to_data(message)
        assert decode_message(data) == from_data(data, Message) == message

    @settings(max_examples=50, deadline=None)
    @given(timelines(max_steps=30))
    def test_turns_round_trip(self, timeline: Any) -> None:
        """Every turn of a legal session decodes to itself."""
        for turn in timeline.head.turns.values():
            data = to_data(turn)
            assert decode_turn(data) == turn

    def test_fast_path_is_taken(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Valid input never reaches the codec (or the speed-up would be lost)."""

        def refuse(data: object, kind: type) -> object:
            raise AssertionError(f"the codec was called for {kind.__name__}")

        monkeypatch.setattr(_fast, "from_data", refuse)
        assert decode_message(sample_message()).id == "c1"
        assert decode_turn(sample_turn()).id == "t1"


class TestDamagedInput:
    @pytest.mark.parametrize("field", sorted(sample_message()))
    @pytest.mark.parametrize("value", ODD_VALUES, ids=repr)
    def test_message_fields(self, field: str, value: Any) -> None:
        """A message with any field replaced decodes (or fails, same message) as with the codec."""
        agree(decode_message, {**sample_message(), field: value}, Message)

    @pytest.mark.parametrize("field", sorted(sample_message()))
    def test_message_missing_field(self, field: str) -> None:
        """A message missing a field decodes (or fails) as with the codec."""
        data = sample_message()
        del data[field]
        agree(decode_message, data, Message)

    @pytest.mark.parametrize("field", ["id", "name", "arguments", "index"])
    @pytest.mark.parametrize("value", ODD_VALUES, ids=repr)
    def test_tool_call_fields(self, field: str, value: Any) -> None:
        """A tool call with any field replaced decodes (or fails) as with the codec."""
        data = sample_message()
        data["tool_call"] = {**data["tool_call"], field: value}
        agree(decode_message, data, Message)

    @pytest.mark.parametrize("field", sorted(sample_turn()))
    @pytest.mark.parametrize("value", ODD_VALUES, ids=repr)
    def test_turn_fields(self, field: str, value: Any) -> None:
        """A turn with any field replaced decodes (or fails, same message) as with the codec."""
        agree(decode_turn, {**sample_turn(), field: value}, Turn)

    @pytest.mark.parametrize("value", ODD_VALUES, ids=repr)
    def test_turn_awaiting_without_open_calls(self, value: Any) -> None:
        """With no open calls, a damaged ``awaiting_approval`` is still checked (the fast path
        skips the loop only when both are empty)."""
        agree(decode_turn, {**sample_turn(), "open_calls": {}, "awaiting_approval": value}, Turn)
        agree(decode_turn, {**sample_turn(), "open_calls": value, "awaiting_approval": {}}, Turn)

    @pytest.mark.parametrize("data", [None, [], "x", {"extra": 1}], ids=repr)
    def test_not_objects(self, data: Any) -> None:
        """Input that is not an object fails as with the codec."""
        agree(decode_message, data, Message)
        agree(decode_turn, data, Turn)

    def test_cross_field_rules(self) -> None:
        """Every mix of role, type, tool call, call id and error fields agrees with the codec.

        The fast path checks Message.__attrs_post_init__'s rules inline: this pins
        that it accepts exactly the messages the class accepts.
        """
        call = sample_message()["tool_call"]
        for role, type_, tool_call, tool_call_id, is_error, error_type in itertools.product(
            [*Role, "robot"], [*MessageType, "poem"], [call, None], ["call_1", None],
            [True, False], ["timeout", None],
        ):  # fmt: skip
            data = {
                **sample_message(), "role": role, "type": type_, "tool_call": tool_call,
                "tool_call_id": tool_call_id, "is_error": is_error, "error_type": error_type,
            }  # fmt: skip
            agree(decode_message, data, Message)

    @given(
        st.dictionaries(
            st.sampled_from(sorted(sample_message())), st.sampled_from(ODD_VALUES), max_size=3
        )
    )
    @settings(max_examples=200, deadline=None)
    def test_several_fields_at_once(self, changes: dict[str, Any]) -> None:
        """Several fields replaced at once still agree with the codec."""
        agree(decode_message, {**sample_message(), **changes}, Message)


class TestRows:
    def test_row_in_field_order(self) -> None:
        """A row of values in the known field order decodes like its dict."""
        data = sample_message()
        assert decode_message_row(MESSAGE_FIELDS, [data[f] for f in MESSAGE_FIELDS]) == from_data(
            data, Message
        )
        turn = sample_turn()
        assert decode_turn_row(TURN_FIELDS, [turn[f] for f in TURN_FIELDS]) == from_data(turn, Turn)

    def test_other_field_order(self) -> None:
        """Rows written with another field order (another version) decode through the codec."""
        data = sample_message()
        fields = sorted(MESSAGE_FIELDS, reverse=True)
        assert decode_message_row(fields, [data[f] for f in fields]) == from_data(data, Message)

    def test_unknown_field(self) -> None:
        """A row naming a field Message does not have fails as the codec does."""
        data = sample_message()
        fields = [*MESSAGE_FIELDS, "colour"]
        with pytest.raises(
            DecodeError,
            match=r"^Cannot decode Message from JSON: unknown field\(s\) \['colour'\] @ \$\.$",
        ):
            decode_message_row(fields, [*(data[f] for f in MESSAGE_FIELDS), "red"])

    @pytest.mark.parametrize("row", [None, {}, ["x"], "row"], ids=repr)
    def test_wrong_rows(self, row: Any) -> None:
        """A row that is not a list of the right length is a DecodeError saying what was expected."""
        with pytest.raises(
            DecodeError,
            match=r"^Cannot decode Turn from JSON: expected a row of 13 values \(id, status, started_at, .*, awaiting_approval\), got .*\.$",
        ):
            decode_turn_row(TURN_FIELDS, row)

    @pytest.mark.parametrize("field", MESSAGE_FIELDS)
    @pytest.mark.parametrize("value", ODD_VALUES, ids=repr)
    def test_damaged_row_agrees_with_the_codec(self, field: str, value: Any) -> None:
        """A row with any value replaced decodes (or fails, same message) as with the codec."""
        data = {**sample_message(), field: value}
        agree(
            lambda d: decode_message_row(MESSAGE_FIELDS, [d[f] for f in MESSAGE_FIELDS]),
            data,
            Message,
        )


def as_row(value: Any, fields: list[str]) -> list[Any]:
    data = to_data(value)
    return [data[name] for name in fields]


class TestChunkRows:
    @settings(max_examples=100, deadline=None)
    @given(st.lists(messages(), max_size=8))
    def test_messages_at_once(self, values: list[Message]) -> None:
        """A chunk's rows decode at once to the messages, as row by row; each is a Message."""
        rows: list[object] = [as_row(m, MESSAGE_FIELDS) for m in values]
        decoded = decode_message_rows(MESSAGE_FIELDS, rows)
        assert decoded == [decode_message_row(MESSAGE_FIELDS, row) for row in rows] == values
        assert decoded is not None
        assert all(type(m) is Message for m in decoded)

    @settings(max_examples=30, deadline=None)
    @given(timelines(max_steps=30))
    def test_turns_at_once(self, timeline: Any) -> None:
        """A chunk's turn rows decode at once to the turns."""
        turns = timeline.head.turn_list()
        rows: list[object] = [as_row(t, TURN_FIELDS) for t in turns]
        assert decode_turn_rows(TURN_FIELDS, rows) == turns

    @pytest.mark.parametrize("field", MESSAGE_FIELDS)
    @pytest.mark.parametrize("value", ODD_VALUES, ids=repr)
    def test_a_doubtful_row_declines(self, field: str, value: Any) -> None:
        """A chunk with a row the codec refuses goes row by row (None); what it takes is equal."""
        data = {**sample_message(), field: value}
        good = [as_row(from_data(sample_message(), Message), MESSAGE_FIELDS)] * 2
        decoded = decode_message_rows(MESSAGE_FIELDS, [*good, [data[f] for f in MESSAGE_FIELDS]])
        verdict, expected = outcome(lambda d: from_data(d, Message), data, Message)
        if verdict == "error":
            assert decoded is None
        else:
            assert decoded is None or decoded[-1] == expected

    def test_other_fields_decline(self) -> None:
        """Rows written with another field list go row by row."""
        rows: list[object] = [as_row(from_data(sample_message(), Message), MESSAGE_FIELDS)]
        assert decode_message_rows(sorted(MESSAGE_FIELDS), rows) is None
        assert decode_message_rows(MESSAGE_FIELDS, [*rows, ["x"]]) is None
        assert decode_turn_rows(TURN_FIELDS, [None]) is None
