"""The message model: Message, its parts, and JSON-like freezing (DESIGN §2)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import attrs
import pytest
from pyrsistent import PMap, PVector, pmap, pvector

from runtime import (
    Attachment,
    BrowserElement,
    InvalidMessage,
    Message,
    MessageType,
    Role,
    Status,
    ToolCall,
    Usage,
    freeze,
    from_json,
    thaw,
    to_json,
)

T0 = datetime(2026, 5, 27, 12, 50, tzinfo=UTC)

ALLOWED = (
    "assistant/text, assistant/thought, system/text, tool/tool_call, tool/tool_result, user/text"
)


def make(**fields: Any) -> Message:
    """A pending user question, with ``fields`` overriding the defaults."""
    base: dict[str, Any] = {
        "id": "msg_1",
        "session_id": "sess",
        "role": "user",
        "type": "text",
        "status": "pending_agent",
        "created_at": T0,
        "content": "hi",
        "sender": "Chii",
    }
    return Message(**{**base, **fields})


def call(**fields: Any) -> Message:
    """A tool call message, with ``fields`` overriding the defaults."""
    base: dict[str, Any] = {
        "role": "tool",
        "type": "tool_call",
        "status": "responded",
        "tool_call": ToolCall(id="call_1", name="sh", arguments={"command": "ls"}),
    }
    return make(**{**base, **fields})


def result(**fields: Any) -> Message:
    """A tool result message, with ``fields`` overriding the defaults."""
    base: dict[str, Any] = {
        "role": "tool",
        "type": "tool_result",
        "status": "responded",
        "tool_call_id": "call_1",
        "sender": "sh",
    }
    return make(**{**base, **fields})


ATTACHMENT_HINT = (
    "An Attachment refers to bytes kept in an artifact store: Attachment(id=<their key "
    "there>, name='photo.png', kind='image', media_type='image/png'); only id and name are "
    "required."
)


def exact(text: str) -> str:
    """A regex matching exactly ``text``."""
    return f"^{re.escape(text)}$"


class TestRoleAndType:
    @pytest.mark.parametrize(
        ("role", "type_"),
        [
            ("user", "text"),
            ("system", "text"),
            ("assistant", "text"),
            ("assistant", "thought"),
        ],
    )
    def test_valid_text_like_combinations(self, role: str, type_: str) -> None:
        """Every role/type pair a category uses (besides tool ones) builds a message."""
        message = make(role=role, type=type_)
        assert message.role is Role(role)
        assert message.type is MessageType(type_)

    def test_strings_become_enums(self) -> None:
        """Role, type and status given as strings are stored as their enum members."""
        message = make()
        assert message.role is Role.USER
        assert message.type is MessageType.TEXT
        assert message.status is Status.PENDING_AGENT

    def test_tool_call_combination(self) -> None:
        """tool/tool_call with a ToolCall builds a message."""
        message = call()
        assert message.tool_call == ToolCall(id="call_1", name="sh", arguments={"command": "ls"})

    def test_tool_result_combination(self) -> None:
        """tool/tool_result with a tool_call_id builds a message."""
        assert result().tool_call_id == "call_1"

    @pytest.mark.parametrize(
        ("role", "type_"),
        [
            ("user", "thought"),
            ("system", "thought"),
            ("assistant", "tool_result"),
            ("tool", "text"),
            ("tool", "thought"),
        ],
    )
    def test_unused_combinations_are_rejected(self, role: str, type_: str) -> None:
        """A role/type pair no category uses raises InvalidMessage listing the allowed pairs."""
        with pytest.raises(
            InvalidMessage,
            match=exact(
                f"Message 'msg_1' has role/type {role}/{type_}, which no message category "
                f"uses; expected one of {ALLOWED}."
            ),
        ):
            make(role=role, type=type_)

    def test_user_tool_call_is_rejected_for_its_pair_first(self) -> None:
        """user/tool_call is refused as a pair before its missing ToolCall is noticed."""
        with pytest.raises(
            InvalidMessage,
            match=exact(
                "Message 'msg_1' has role/type user/tool_call, which no message category "
                f"uses; expected one of {ALLOWED}."
            ),
        ):
            make(type="tool_call")

    def test_unknown_role(self) -> None:
        """A role outside the enum names the allowed values."""
        with pytest.raises(
            InvalidMessage,
            match=exact("Role must be one of 'user', 'assistant', 'tool', 'system' (got 'bot')."),
        ):
            make(role="bot")

    def test_unknown_type(self) -> None:
        """A type outside the enum names the allowed values."""
        with pytest.raises(
            InvalidMessage,
            match=exact(
                "MessageType must be one of 'text', 'thought', 'tool_call', 'tool_result' "
                "(got 'image')."
            ),
        ):
            make(type="image")

    def test_unknown_status(self) -> None:
        """A status outside the enum names the allowed values."""
        with pytest.raises(
            InvalidMessage,
            match=exact(
                "Status must be one of 'pending_agent', 'processing', 'processed', "
                "'interrupted', 'error', 'pending', 'responded', 'delivered' (got 'done')."
            ),
        ):
            make(status="done")


class TestToolFields:
    def test_tool_call_type_needs_tool_call(self) -> None:
        """A tool_call message without a ToolCall is rejected."""
        with pytest.raises(
            InvalidMessage,
            match=exact("Message 'msg_1' of type tool_call must carry a ToolCall in tool_call."),
        ):
            call(tool_call=None)

    def test_other_types_cannot_carry_tool_call(self) -> None:
        """A text message carrying a ToolCall is rejected."""
        with pytest.raises(
            InvalidMessage,
            match=exact("Message 'msg_1' of type text must not carry a tool_call."),
        ):
            make(tool_call=ToolCall(id="call_1", name="sh"))

    def test_tool_result_cannot_carry_tool_call(self) -> None:
        """A tool result carrying a ToolCall is rejected."""
        with pytest.raises(
            InvalidMessage,
            match=exact("Message 'msg_1' of type tool_result must not carry a tool_call."),
        ):
            result(tool_call=ToolCall(id="call_1", name="sh"))

    def test_tool_call_must_be_a_tool_call(self) -> None:
        """tool_call given as a plain dict is refused (it is not converted)."""
        with pytest.raises(TypeError):
            call(tool_call={"id": "call_1", "name": "sh"})

    def test_tool_result_needs_tool_call_id(self) -> None:
        """A tool result that names no call is rejected."""
        with pytest.raises(
            InvalidMessage,
            match=exact(
                "Message 'msg_1' of type tool_result must name the call it answers in tool_call_id."
            ),
        ):
            result(tool_call_id=None)

    @pytest.mark.parametrize("factory", [make, call])
    def test_only_results_carry_tool_call_id(self, factory: Any) -> None:
        """tool_call_id on a text or tool_call message is rejected."""
        kind = "text" if factory is make else "tool_call"
        with pytest.raises(
            InvalidMessage,
            match=exact(f"Message 'msg_1' of type {kind} must not carry a tool_call_id."),
        ):
            factory(tool_call_id="call_1")

    def test_error_result(self) -> None:
        """A tool result may report a failure with is_error and error_type."""
        message = result(is_error=True, error_type="timeout")
        assert (message.is_error, message.error_type) == (True, "timeout")

    @pytest.mark.parametrize(
        ("factory", "kind", "fields"),
        [
            (make, "text", {"is_error": True}),
            (make, "text", {"error_type": "timeout"}),
            (call, "tool_call", {"is_error": True}),
            (call, "tool_call", {"error_type": "ValueError"}),
        ],
    )
    def test_only_results_report_errors(
        self, factory: Any, kind: str, fields: dict[str, Any]
    ) -> None:
        """is_error or error_type on anything but a tool result is rejected."""
        with pytest.raises(
            InvalidMessage,
            match=exact(
                f"Message 'msg_1' of type {kind} cannot carry is_error or error_type; only "
                "tool results report tool failures."
            ),
        ):
            factory(**fields)


class TestScalarFields:
    def test_naive_created_at_is_rejected(self) -> None:
        """A datetime without a UTC offset is refused, with the fix in the message."""
        with pytest.raises(
            InvalidMessage,
            match=exact(
                "Message.created_at must be a timezone-aware datetime (got "
                "datetime.datetime(2026, 5, 27, 12, 50)); use datetime.now(timezone.utc)."
            ),
        ):
            make(created_at=datetime(2026, 5, 27, 12, 50))

    def test_created_at_must_be_a_datetime(self) -> None:
        """An ISO string is not accepted for created_at."""
        with pytest.raises(
            InvalidMessage,
            match=exact(
                "Message.created_at must be a timezone-aware datetime (got "
                "'2026-05-27T12:50:00+00:00'); use datetime.now(timezone.utc)."
            ),
        ):
            make(created_at="2026-05-27T12:50:00+00:00")

    def test_non_utc_offset_is_accepted(self) -> None:
        """Any aware datetime is accepted, not just UTC."""
        at = datetime(2026, 5, 27, 20, 50, tzinfo=timezone(timedelta(hours=8)))
        assert make(created_at=at).created_at == T0

    @pytest.mark.parametrize("field", ["id", "session_id"])
    def test_empty_ids_are_rejected(self, field: str) -> None:
        """An empty id or session id is refused."""
        with pytest.raises(
            InvalidMessage,
            match=exact(f"Message.{field} must be a non-empty str (got '' that is a 'str')."),
        ):
            make(**{field: ""})

    def test_id_must_be_a_str(self) -> None:
        """A non-str id is refused, naming its type."""
        with pytest.raises(
            InvalidMessage,
            match=exact("Message.id must be a non-empty str (got 7 that is an 'int')."),
        ):
            make(id=7)

    @pytest.mark.parametrize("field", ["parent_id", "turn_id", "tool_call_id", "error_type"])
    def test_optional_strings_reject_other_types(self, field: str) -> None:
        """Optional id fields accept None or a str, nothing else."""
        with pytest.raises(
            InvalidMessage,
            match=exact(f"Message.{field} must be a str or None (got 3 that is an 'int')."),
        ):
            result(**{field: 3})

    @pytest.mark.parametrize("value", [-1, True, 1.5])
    def test_event_seq_is_a_count(self, value: object) -> None:
        """event_seq must be a non-negative int (or None)."""
        with pytest.raises(
            InvalidMessage,
            match=exact(f"Message.event_seq must be a non-negative int or None (got {value!r})."),
        ):
            make(event_seq=value)

    def test_defaults(self) -> None:
        """Optional fields default to empty, None, inactive flags off, and active."""
        message = make()
        assert message.parent_id is None
        assert message.turn_id is None
        assert message.tool_call is None
        assert message.tool_call_id is None
        assert message.is_error is False
        assert message.error_type is None
        assert message.attachments == pvector()
        assert message.browser_elements == pvector()
        assert message.metadata == pmap()
        assert message.event_seq is None
        assert message.active is True


class TestCollections:
    def test_attachments_become_a_pvector(self) -> None:
        """A list of attachments is stored as a pvector."""
        a = Attachment(id="art_1", name="a.csv")
        message = make(attachments=[a])
        assert isinstance(message.attachments, PVector)
        assert list(message.attachments) == [a]

    def test_frozen_attachments_are_kept(self) -> None:
        """A pvector of attachments is kept as the same object."""
        attachments = pvector([Attachment(id="art_1", name="a.csv")])
        assert make(attachments=attachments).attachments is attachments

    def test_attachment_items_are_checked(self) -> None:
        """A non-Attachment among attachments is refused, naming its position."""
        with pytest.raises(InvalidMessage, match=r"^Message\.attachments\[1\] must be a"):
            make(attachments=[Attachment(id="art_1", name="a.csv"), "b.csv"])

    def test_collections_must_be_iterable(self) -> None:
        """A single string is not a list of attachments."""
        with pytest.raises(
            InvalidMessage, match=exact("Message.attachments must be a list (got 'a.csv').")
        ):
            make(attachments="a.csv")

    def test_none_is_empty(self) -> None:
        """attachments=None and browser_elements=None store empty pvectors."""
        message = make(attachments=None, browser_elements=None)
        assert message.attachments == pvector()
        assert message.browser_elements == pvector()

    def test_browser_element_items_name_the_field(self) -> None:
        """A non-BrowserElement among browser_elements names the real field."""
        with pytest.raises(
            InvalidMessage,
            match=exact(
                "Message.browser_elements[0] must be a BrowserElement (got 1 that is an 'int')."
            ),
        ):
            make(browser_elements=[1])

    def test_attachment_items_message_reads_well(self) -> None:
        """A non-Attachment among attachments is reported with 'an Attachment'."""
        with pytest.raises(
            InvalidMessage,
            match=exact(
                "Message.attachments[0] must be an Attachment (got 'x' that is a 'str'). "
                + ATTACHMENT_HINT
            ),
        ):
            make(attachments=["x"])

    def test_a_dict_among_attachments_is_told_to_become_one(self) -> None:
        """A dict of an attachment's fields is told how to become an Attachment."""
        with pytest.raises(
            InvalidMessage,
            match=exact(
                "Message.attachments[0] must be an Attachment (got {'id': 'a', 'name': 'b'} that "
                "is a 'dict'); for a dict of its fields, write Attachment(**fields). "
                + ATTACHMENT_HINT
            ),
        ):
            make(attachments=[{"id": "a", "name": "b"}])


class TestFreezing:
    def test_metadata_is_frozen_recursively(self) -> None:
        """Dicts in metadata become pmaps, lists and tuples become pvectors, at any depth."""
        message = make(metadata={"a": [1, {"b": (2, 3)}], "c": {"d": None}})
        metadata = message.metadata
        assert isinstance(metadata, PMap)
        assert isinstance(metadata["a"], PVector)
        assert isinstance(metadata["a"][1], PMap)
        assert isinstance(metadata["a"][1]["b"], PVector)
        assert isinstance(metadata["c"], PMap)
        assert metadata == pmap(
            {"a": pvector([1, pmap({"b": pvector([2, 3])})]), "c": pmap({"d": None})}
        )

    def test_input_dict_is_not_shared(self) -> None:
        """Mutating the dict a message was built from does not change the message."""
        source: dict[str, Any] = {"tags": ["a"]}
        message = make(metadata=source)
        source["tags"].append("b")
        source["new"] = 1
        assert thaw(message.metadata) == {"tags": ["a"]}

    def test_tool_call_arguments_are_frozen(self) -> None:
        """ToolCall.arguments are frozen like metadata."""
        tool_call = ToolCall(id="c", name="sh", arguments={"argv": ["ls", "-l"], "env": {"A": "1"}})
        assert isinstance(tool_call.arguments, PMap)
        assert tool_call.arguments["argv"] == pvector(["ls", "-l"])
        assert isinstance(tool_call.arguments["env"], PMap)

    def test_frozen_metadata_is_the_same_object(self) -> None:
        """Already-frozen metadata is stored as is, not copied."""
        frozen = freeze({"a": [1, {"b": 2}]})
        assert make(metadata=frozen).metadata is frozen

    def test_frozen_arguments_are_the_same_object(self) -> None:
        """Already-frozen tool arguments are stored as is, not copied."""
        frozen = freeze({"argv": ["ls"]})
        assert ToolCall(id="c", name="sh", arguments=frozen).arguments is frozen

    def test_evolve_keeps_frozen_metadata(self) -> None:
        """attrs.evolve passes the frozen metadata through without copying it."""
        message = make(metadata={"a": [1]})
        assert attrs.evolve(message, status="processing").metadata is message.metadata

    def test_pmap_with_unfrozen_contents_is_refrozen(self) -> None:
        """A pmap holding a plain list is not frozen enough: it is rebuilt."""
        half = pmap({"a": [1, 2]})
        frozen = make(metadata=half).metadata
        assert frozen is not half
        assert isinstance(frozen["a"], PVector)

    def test_none_metadata_is_empty(self) -> None:
        """metadata=None stores an empty pmap."""
        assert make(metadata=None).metadata == pmap()

    @pytest.mark.parametrize(
        ("metadata", "path", "value"),
        [
            ({"x": float("nan")}, "$.metadata.x", "nan"),
            ({"x": float("inf")}, "$.metadata.x", "inf"),
            ({"x": [1, {"y": float("-inf")}]}, "$.metadata.x[1].y", "-inf"),
        ],
    )
    def test_non_finite_floats_are_rejected(
        self, metadata: dict[str, Any], path: str, value: str
    ) -> None:
        """NaN and infinities are refused, naming where they sit."""
        with pytest.raises(
            ValueError,
            match=exact(
                f"{path} must be a finite number (got {value}); JSON has no NaN or infinity, "
                "store it as a string or null."
            ),
        ):
            make(metadata=metadata)

    def test_non_finite_argument_is_rejected(self) -> None:
        """NaN in tool arguments is refused with an $.arguments path."""
        with pytest.raises(
            ValueError,
            match=exact(
                "$.arguments.a must be a finite number (got nan); JSON has no NaN or "
                "infinity, store it as a string or null."
            ),
        ):
            ToolCall(id="c", name="sh", arguments={"a": float("nan")})

    @pytest.mark.parametrize(
        ("metadata", "path", "key"),
        [({1: "x"}, "$.metadata", "1"), ({"a": {(1, 2): "x"}}, "$.metadata.a", "(1, 2)")],
    )
    def test_non_str_keys_are_rejected(self, metadata: Any, path: str, key: str) -> None:
        """Only string keys survive JSON, so others are refused."""
        kind = "an 'int'" if key == "1" else "a 'tuple'"
        with pytest.raises(
            TypeError,
            match=exact(f"{path} keys must be strings (got {key} that is {kind})."),
        ):
            make(metadata=metadata)

    @pytest.mark.parametrize(
        ("value", "shown", "kind"),
        [({1}, "{1}", "set"), (b"x", "b'x'", "bytes"), (frozenset(), "frozenset()", "frozenset")],
    )
    def test_non_json_values_are_rejected(self, value: object, shown: str, kind: str) -> None:
        """Sets, bytes and the like are refused, naming the path and the type."""
        with pytest.raises(
            TypeError,
            match=exact(
                f"$.metadata.x must be a JSON-like value (None, bool, int, float, str, list "
                f"or dict) (got {shown} that is a '{kind}'); convert it before storing it."
            ),
        ):
            make(metadata={"x": value})

    def test_objects_are_rejected(self) -> None:
        """An arbitrary object is refused, even nested in a list."""
        with pytest.raises(
            TypeError,
            match=r"^\$\.metadata\.x\[0\] must be a JSON-like value .* that is an 'object'\); "
            r"convert it before storing it\.$",
        ):
            make(metadata={"x": [object()]})

    def test_metadata_must_be_a_mapping(self) -> None:
        """metadata given as a list is refused."""
        with pytest.raises(
            TypeError,
            match=exact(
                "$.metadata must be a mapping with string keys (got [1] that is a 'list')."
            ),
        ):
            make(metadata=[1])

    @pytest.mark.parametrize("value", [-(2**63), 2**63 - 1, 2**64 - 1])
    def test_64_bit_ints_are_accepted_and_round_trip(self, value: int) -> None:
        """Integers in the 64-bit range JSON encoders handle are kept and read back equal."""
        message = make(metadata={"n": value})
        assert message.metadata["n"] == value
        assert from_json(to_json(message), Message).metadata["n"] == value

    @pytest.mark.parametrize("value", [-(2**63) - 1, 2**64])
    def test_ints_beyond_64_bits_are_rejected(self, value: int) -> None:
        """Integers beyond 64 bits are refused with a hint."""
        with pytest.raises(
            ValueError,
            match=exact(
                f"$.metadata.n must be an integer that fits in 64 bits (got {value}); store "
                "big numbers as strings."
            ),
        ):
            make(metadata={"n": value})


class TestFreezeAndThaw:
    def test_scalars_pass_through(self) -> None:
        """None, bools, ints, finite floats and strings are returned unchanged."""
        for value in (None, True, False, 0, -5, 1.5, "", "text"):
            assert freeze(value) is value

    def test_lists_and_tuples_become_pvectors(self) -> None:
        """Lists and tuples both freeze to pvectors."""
        assert freeze([1, (2, 3)]) == pvector([1, pvector([2, 3])])
        assert isinstance(freeze((1,)), PVector)

    def test_frozen_values_are_the_same_object(self) -> None:
        """Freezing an already-frozen pmap or pvector returns it as is."""
        vector = freeze([1, {"a": [2]}])
        mapping = freeze({"a": [1, {"b": 2}]})
        assert freeze(vector) is vector
        assert freeze(mapping) is mapping

    def test_pvector_with_unfrozen_item_is_rebuilt(self) -> None:
        """A pvector holding a plain dict is rebuilt with the dict frozen."""
        half = pvector([{"a": 1}])
        frozen = freeze(half)
        assert frozen is not half
        assert isinstance(frozen[0], PMap)

    def test_default_path_is_root(self) -> None:
        """Without a path, errors name the root ``$``."""
        with pytest.raises(
            ValueError,
            match=exact(
                "$ must be a finite number (got nan); JSON has no NaN or infinity, store it "
                "as a string or null."
            ),
        ):
            freeze(float("nan"))

    def test_custom_path(self) -> None:
        """The path argument prefixes every error."""
        with pytest.raises(TypeError, match=r"^\$\.extra\[2\] must be a JSON-like value"):
            freeze([1, 2, {3}], path="$.extra")

    def test_thaw_gives_plain_dicts_and_lists(self) -> None:
        """thaw turns pmaps into dicts and pvectors into lists, at any depth."""
        thawed = thaw(freeze({"a": [1, {"b": (2, 3)}]}))
        assert thawed == {"a": [1, {"b": [2, 3]}]}
        assert type(thawed) is dict
        assert type(thawed["a"]) is list  # type: ignore[index]
        assert type(thawed["a"][1]) is dict  # type: ignore[index]

    def test_thaw_leaves_scalars(self) -> None:
        """thaw returns scalars unchanged."""
        assert thaw(3) == 3
        assert thaw(None) is None


class TestValueSemantics:
    def test_messages_are_hashable(self) -> None:
        """A message with nested metadata and a tool call can be hashed and put in a set."""
        message = call(metadata={"a": [1, {"b": 2}]})
        assert {message, message} == {message}

    def test_equal_by_value(self) -> None:
        """Two messages built separately from equal data are equal and hash equal."""
        a = make(metadata={"a": [1, 2]}, attachments=[Attachment(id="x", name="x.png")])
        b = make(metadata=freeze({"a": (1, 2)}), attachments=(Attachment(id="x", name="x.png"),))
        assert a == b
        assert hash(a) == hash(b)

    @pytest.mark.parametrize(
        "change",
        [{"content": "bye"}, {"status": "processing"}, {"metadata": {"a": 1}}, {"active": False}],
    )
    def test_one_field_differs(self, change: dict[str, Any]) -> None:
        """Messages that differ in one field are unequal."""
        assert make() != make(**change)

    def test_frozen(self) -> None:
        """Assigning a field raises."""
        message = make()
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            message.status = Status.PROCESSING  # type: ignore[misc]

    def test_metadata_cannot_be_mutated(self) -> None:
        """Frozen metadata has no item assignment."""
        message = make(metadata={"a": 1})
        with pytest.raises(TypeError):
            message.metadata["a"] = 2  # type: ignore[index]

    def test_evolve_leaves_original(self) -> None:
        """attrs.evolve builds a new message and leaves the original unchanged."""
        original = make(metadata={"a": 1})
        before = hash(original)
        changed = attrs.evolve(original, status=Status.PROCESSING, turn_id="t1")
        assert changed.status is Status.PROCESSING
        assert changed.turn_id == "t1"
        assert original.status is Status.PENDING_AGENT
        assert original.turn_id is None
        assert hash(original) == before

    def test_evolve_revalidates(self) -> None:
        """attrs.evolve runs the same checks as construction."""
        with pytest.raises(
            InvalidMessage,
            match=exact("Message 'msg_1' of type text must not carry a tool_call_id."),
        ):
            attrs.evolve(make(), tool_call_id="call_1")


class TestToolCall:
    def test_defaults(self) -> None:
        """A tool call defaults to no arguments and index 0."""
        tool_call = ToolCall(id="c", name="sh")
        assert tool_call.arguments == pmap()
        assert tool_call.index == 0

    @pytest.mark.parametrize("field", ["id", "name"])
    def test_empty_names_are_rejected(self, field: str) -> None:
        """A tool call needs an id and a name."""
        fields = {"id": "c", "name": "sh", field: ""}
        with pytest.raises(
            InvalidMessage,
            match=exact(f"ToolCall.{field} must be a non-empty str (got '' that is a 'str')."),
        ):
            ToolCall(**fields)

    @pytest.mark.parametrize("index", [-1, True])
    def test_index_is_a_count(self, index: object) -> None:
        """A negative or boolean index is refused."""
        with pytest.raises(InvalidMessage, match=r"^ToolCall\.index must be a non-negative int"):
            ToolCall(id="c", name="sh", index=index)

    def test_index_none_is_rejected(self) -> None:
        """index is an int, not optional: None is refused."""
        with pytest.raises(
            InvalidMessage, match=exact("ToolCall.index must be a non-negative int (got None).")
        ):
            ToolCall(id="c", name="sh", index=None)

    def test_arguments_must_be_a_mapping(self) -> None:
        """Arguments given as a list are refused."""
        with pytest.raises(
            TypeError,
            match=exact(
                "$.arguments must be a mapping with string keys (got ['ls'] that is a 'list')."
            ),
        ):
            ToolCall(id="c", name="sh", arguments=["ls"])


class TestAttachment:
    def test_defaults(self) -> None:
        """An attachment defaults to a generic file of unknown size."""
        attachment = Attachment(id="art_1", name="a.bin")
        assert attachment.kind == "file"
        assert attachment.media_type == "application/octet-stream"
        assert attachment.size == 0
        assert (attachment.width, attachment.height, attachment.sha256) == (None, None, None)

    @pytest.mark.parametrize("field", ["id", "name", "kind", "media_type"])
    def test_names_must_be_non_empty(self, field: str) -> None:
        """id, name, kind and media type are required strings."""
        fields = {"id": "art_1", "name": "a.png", field: ""}
        with pytest.raises(
            InvalidMessage,
            match=exact(f"Attachment.{field} must be a non-empty str (got '' that is a 'str')."),
        ):
            Attachment(**fields)

    @pytest.mark.parametrize(
        ("field", "value", "kind"),
        [
            ("size", -1, "a non-negative int"),
            ("width", 1.5, "a non-negative int or None"),
            ("height", False, "a non-negative int or None"),
        ],
    )
    def test_sizes_are_counts(self, field: str, value: object, kind: str) -> None:
        """Size must be a non-negative int; pixel dimensions too, or None."""
        with pytest.raises(
            InvalidMessage,
            match=exact(f"Attachment.{field} must be {kind} (got {value!r})."),
        ):
            Attachment(id="art_1", name="a.png", **{field: value})

    def test_sha256_must_be_a_str(self) -> None:
        """sha256 must be a str or None."""
        with pytest.raises(
            InvalidMessage,
            match=exact("Attachment.sha256 must be a str or None (got 5 that is an 'int')."),
        ):
            Attachment(id="art_1", name="a.png", sha256=5)

    @pytest.mark.parametrize(
        ("args", "kwargs", "why"),
        [((), {}, "missing 2 required keyword-only arguments: 'id' and 'name'"),
         ((), {"id": "art_1"}, "missing 1 required keyword-only argument: 'name'"),
         ((), {"id": "art_1", "name": "a.png", "path": "/tmp/a.png"},
          "got an unexpected keyword argument 'path'"),
         (("a.png",), {}, "takes 1 positional argument but 2 were given")],
    )  # fmt: skip
    def test_a_wrong_call_says_how_to_make_one(
        self, args: tuple[object, ...], kwargs: dict[str, object], why: str
    ) -> None:
        """Attachment("a.png") or Attachment(path=...) raised attrs' bare TypeError; it is
        still a TypeError, and says how to make one."""
        with pytest.raises(
            TypeError,
            match=exact(
                f"Attachment() takes keyword arguments only ({why}). {ATTACHMENT_HINT} The "
                "others: size (bytes), width, height (pixels) and sha256 (hex digest)."
            ),
        ):
            Attachment(*args, **kwargs)  # type: ignore[misc, call-arg]

    def test_size_none_is_rejected(self) -> None:
        """size is an int, not optional: None is refused."""
        with pytest.raises(
            InvalidMessage, match=exact("Attachment.size must be a non-negative int (got None).")
        ):
            Attachment(id="art_1", name="a.png", size=None)


class TestBrowserElement:
    def test_url_is_required(self) -> None:
        """A browser element needs a URL."""
        with pytest.raises(
            InvalidMessage,
            match=exact("BrowserElement.url must be a non-empty str (got '' that is a 'str')."),
        ):
            BrowserElement(url="")

    def test_text_fields_must_be_str(self) -> None:
        """Text fields refuse non-str values."""
        with pytest.raises(
            InvalidMessage,
            match=r"^BrowserElement\.html must be a str \(got 1 that is an 'int'\)\.$",
        ):
            BrowserElement(url="https://a.example", html=1)

    def test_size_counts_every_text_field(self) -> None:
        """size is the number of characters across URL, title, tag, selector, text and HTML."""
        element = BrowserElement(
            url="u" * 1, title="t" * 2, tag="g" * 3, selector="s" * 4, text="x" * 5, html="h" * 6
        )
        assert element.size == 21

    def test_none_text_is_rejected(self) -> None:
        """Text fields are str, not optional: None is refused at construction."""
        with pytest.raises(
            InvalidMessage,
            match=exact("BrowserElement.title must be a str (got None that is a 'NoneType')."),
        ):
            BrowserElement(url="https://a.example", title=None)


class TestUsage:
    def test_total_tokens(self) -> None:
        """total_tokens is input plus output (cache reads are part of input)."""
        usage = Usage(input_tokens=100, output_tokens=20, cache_read_tokens=80)
        assert usage.total_tokens == 120

    def test_defaults_are_zero(self) -> None:
        """A bare Usage counts nothing."""
        assert Usage().total_tokens == 0
        assert Usage().cache_read_tokens == 0

    @pytest.mark.parametrize("field", ["input_tokens", "output_tokens", "cache_read_tokens"])
    def test_counts_are_non_negative(self, field: str) -> None:
        """Negative token counts are refused."""
        with pytest.raises(
            InvalidMessage,
            match=exact(f"Usage.{field} must be a non-negative int (got -1)."),
        ):
            Usage(**{field: -1})

    def test_none_count_is_rejected(self) -> None:
        """Token counts are ints, not optional: None is refused."""
        with pytest.raises(
            InvalidMessage,
            match=exact("Usage.input_tokens must be a non-negative int (got None)."),
        ):
            Usage(input_tokens=None)
