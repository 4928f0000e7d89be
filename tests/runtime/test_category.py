"""Message categories: category_of, new_message and the category table (DESIGN §2)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest
from pyrsistent import pmap

from runtime import (
    AGENT_SENDER,
    INPUT_CATEGORIES,
    Category,
    InvalidMessage,
    Message,
    MessageType,
    Role,
    Status,
    ToolCall,
    category_of,
    new_message,
)

T0 = datetime(2026, 5, 27, 12, 50, tzinfo=UTC)

U, A, TL, SY = Role.USER, Role.ASSISTANT, Role.TOOL, Role.SYSTEM
TEXT, THOUGHT, CALL, RESULT = (
    MessageType.TEXT,
    MessageType.THOUGHT,
    MessageType.TOOL_CALL,
    MessageType.TOOL_RESULT,
)

# DESIGN §2's category table: role, type, fixed sender (None: the caller's or
# the agent's), marking metadata flag, initial status.
TABLE: dict[Category, tuple[Role, MessageType, str | None, str | None, Status]] = {
    Category.USER_QUESTION: (U, TEXT, None, None, Status.PENDING_AGENT),
    Category.CRON_PROMPT: (U, TEXT, "Cronjob", "is_cronjob", Status.PENDING_AGENT),
    Category.COMPACTION_REQUEST: (U, TEXT, "System", "is_compaction", Status.PENDING_AGENT),
    Category.BACKGROUND_ALERT: (SY, TEXT, "System", None, Status.PENDING_AGENT),
    Category.THOUGHT: (A, THOUGHT, None, None, Status.RESPONDED),
    Category.TOOL_CALL: (TL, CALL, None, None, Status.RESPONDED),
    Category.TOOL_RESULT: (TL, RESULT, None, None, Status.RESPONDED),
    Category.REPLY: (A, TEXT, None, None, Status.PENDING),
    Category.NOTIFICATION: (A, TEXT, "Notification", None, Status.PENDING),
    Category.CRASH_NOTICE: (A, TEXT, None, "is_crash_notice", Status.PENDING),
    Category.NUDGE: (SY, TEXT, "System", "is_nudge", Status.RESPONDED),
    Category.SYSTEM_PROMPT: (SY, TEXT, "System", "is_system_prompt", Status.RESPONDED),
}

_INPUT_FINALS = frozenset({Status.PROCESSED, Status.INTERRUPTED, Status.ERROR})


def exact(text: str) -> str:
    """A regex matching exactly ``text``."""
    return f"^{re.escape(text)}$"


def extra_fields(category: Category) -> dict[str, Any]:
    """The fields a category needs beyond what new_message fills in."""
    if category is Category.USER_QUESTION:
        return {"sender": "Chii"}
    if category is Category.TOOL_CALL:
        return {"tool_call": ToolCall(id="call_1", name="sh")}
    if category is Category.TOOL_RESULT:
        return {"sender": "sh", "tool_call_id": "call_1"}
    return {}


def build(category: Category, **fields: Any) -> Message:
    """A message of ``category`` built with new_message."""
    return new_message(
        category,
        id="msg_1",
        session_id="sess",
        created_at=T0,
        **{**extra_fields(category), **fields},
    )


def raw(role: Role, type_: MessageType, **fields: Any) -> Message:
    """A message built directly, bypassing new_message."""
    if type_ is CALL:
        fields.setdefault("tool_call", ToolCall(id="call_1", name="sh"))
    if type_ is RESULT:
        fields.setdefault("tool_call_id", "call_1")
    return Message(
        id="msg_1",
        session_id="sess",
        role=role,
        type=type_,
        status=fields.pop("status", Status.PENDING),
        created_at=T0,
        **fields,
    )


class TestCategoryTable:
    def test_every_category_is_listed(self) -> None:
        """The table above covers exactly the categories the runtime defines."""
        assert set(TABLE) == set(Category)

    @pytest.mark.parametrize("category", list(Category), ids=lambda c: c.name)
    def test_spec_matches_design(self, category: Category) -> None:
        """Each category's role, type, sender, flag and initial status match DESIGN §2."""
        spec = category.spec
        assert (spec.role, spec.type, spec.sender, spec.flag, spec.initial) == TABLE[category]

    @pytest.mark.parametrize("category", sorted(INPUT_CATEGORIES, key=lambda c: c.name))
    def test_inputs_may_end_processed_interrupted_or_error(self, category: Category) -> None:
        """Inputs end processed, interrupted or error (the widening documented in _category)."""
        assert category.spec.finals == _INPUT_FINALS

    @pytest.mark.parametrize(
        ("category", "finals"),
        [
            (Category.REPLY, {Status.DELIVERED}),
            (Category.NOTIFICATION, {Status.DELIVERED}),
            (Category.CRASH_NOTICE, {Status.DELIVERED}),
            (Category.NUDGE, {Status.RESPONDED}),
            (Category.SYSTEM_PROMPT, {Status.RESPONDED}),
        ],
        ids=lambda v: v.name if isinstance(v, Category) else "+".join(sorted(v)),
    )
    def test_outbound_and_virtual_finals(self, category: Category, finals: set[Status]) -> None:
        """Outbound text ends delivered; nudges and the system prompt stay responded."""
        assert category.spec.finals == finals

    @pytest.mark.parametrize(
        ("category", "finals"),
        [
            (Category.THOUGHT, {Status.DELIVERED}),
            (Category.TOOL_CALL, {Status.DELIVERED, Status.INTERRUPTED}),
            (Category.TOOL_RESULT, {Status.DELIVERED}),
        ],
        ids=lambda v: v.name if isinstance(v, Category) else "+".join(sorted(v)),
    )
    def test_intermediate_finals(self, category: Category, finals: set[Status]) -> None:
        """Thoughts and tool results end delivered; tool calls delivered or interrupted."""
        assert category.spec.finals == finals

    def test_only_the_system_prompt_is_virtual(self) -> None:
        """Every category is stored in history except the system prompt."""
        assert Category.SYSTEM_PROMPT.spec.stored is False
        assert {c for c in Category if not c.spec.stored} == {Category.SYSTEM_PROMPT}

    def test_input_categories(self) -> None:
        """A turn claims user questions, cron prompts, compaction requests and alerts."""
        assert {
            Category.USER_QUESTION,
            Category.CRON_PROMPT,
            Category.COMPACTION_REQUEST,
            Category.BACKGROUND_ALERT,
        } == INPUT_CATEGORIES

    @pytest.mark.parametrize("category", list(Category), ids=lambda c: c.name)
    def test_is_input_iff_starts_pending_agent(self, category: Category) -> None:
        """is_input holds exactly for the input categories."""
        assert category.is_input == (category in INPUT_CATEGORIES)

    def test_labels(self) -> None:
        """Labels are lower-case words, as error messages use them."""
        assert Category.TOOL_RESULT.label == "tool result"
        assert Category.USER_QUESTION.label == "user question"
        assert Category.NUDGE.label == "nudge"

    def test_agent_sender(self) -> None:
        """The default agent display name is Amber."""
        assert AGENT_SENDER == "Amber"


class TestCategoryOf:
    @pytest.mark.parametrize("category", list(Category), ids=lambda c: c.name)
    def test_reads_back_every_category(self, category: Category) -> None:
        """A message built as a category is recognised as that category."""
        assert category_of(build(category)) is category

    @pytest.mark.parametrize(
        ("role", "type_", "flag", "category"),
        [
            (U, TEXT, "is_cronjob", Category.CRON_PROMPT),
            (U, TEXT, "is_compaction", Category.COMPACTION_REQUEST),
            (A, TEXT, "is_crash_notice", Category.CRASH_NOTICE),
            (SY, TEXT, "is_nudge", Category.NUDGE),
            (SY, TEXT, "is_system_prompt", Category.SYSTEM_PROMPT),
        ],
    )
    def test_flags_mark_categories(
        self, role: Role, type_: MessageType, flag: str, category: Category
    ) -> None:
        """A metadata flag set to True picks its category whatever the sender."""
        assert category_of(raw(role, type_, sender="anyone", metadata={flag: True})) is category

    @pytest.mark.parametrize("value", [1, "true", False, None])
    def test_flag_must_be_exactly_true(self, value: object) -> None:
        """A flag that is truthy but not True (or false) does not mark the category."""
        message = raw(U, TEXT, sender="Chii", metadata={"is_cronjob": value})
        assert category_of(message) is Category.USER_QUESTION

    @pytest.mark.parametrize(
        ("role", "type_", "flag", "category"),
        [
            (U, TEXT, "is_nudge", Category.USER_QUESTION),
            (SY, TEXT, "is_cronjob", Category.BACKGROUND_ALERT),
            (A, TEXT, "is_compaction", Category.REPLY),
            (A, THOUGHT, "is_crash_notice", Category.THOUGHT),
            (TL, CALL, "is_system_prompt", Category.TOOL_CALL),
        ],
    )
    def test_flags_of_other_role_types_are_ignored(
        self, role: Role, type_: MessageType, flag: str, category: Category
    ) -> None:
        """A flag only counts for the role/type its category has."""
        assert category_of(raw(role, type_, sender="x", metadata={flag: True})) is category

    def test_notification_sender(self) -> None:
        """assistant/text from the Notification sender is a notification."""
        assert category_of(raw(A, TEXT, sender="Notification")) is Category.NOTIFICATION

    def test_crash_notice_flag_beats_notification_sender(self) -> None:
        """Flags are checked before the Notification sender."""
        message = raw(A, TEXT, sender="Notification", metadata={"is_crash_notice": True})
        assert category_of(message) is Category.CRASH_NOTICE

    @pytest.mark.parametrize(
        ("role", "type_", "category"),
        [
            (U, TEXT, Category.USER_QUESTION),
            (SY, TEXT, Category.BACKGROUND_ALERT),
            (A, THOUGHT, Category.THOUGHT),
            (TL, CALL, Category.TOOL_CALL),
            (TL, RESULT, Category.TOOL_RESULT),
        ],
    )
    def test_notification_sender_only_matters_for_assistant_text(
        self, role: Role, type_: MessageType, category: Category
    ) -> None:
        """Other role/types sent by Notification keep their default category."""
        assert category_of(raw(role, type_, sender="Notification")) is category

    @pytest.mark.parametrize(
        ("role", "type_", "category"),
        [
            (U, TEXT, Category.USER_QUESTION),
            (SY, TEXT, Category.BACKGROUND_ALERT),
            (A, TEXT, Category.REPLY),
            (A, THOUGHT, Category.THOUGHT),
            (TL, CALL, Category.TOOL_CALL),
            (TL, RESULT, Category.TOOL_RESULT),
        ],
    )
    def test_defaults(self, role: Role, type_: MessageType, category: Category) -> None:
        """Without flags or the Notification sender, role and type decide."""
        assert category_of(raw(role, type_, sender="Kesoku")) is category

    def test_reply_sender_is_free(self) -> None:
        """A reply keeps its category whatever agent name sends it."""
        assert category_of(raw(A, TEXT, sender="Cronjob")) is Category.REPLY

    def test_status_does_not_change_the_category(self) -> None:
        """category_of reads role, type, flags and sender, never the status."""
        message = raw(A, TEXT, sender="Amber", status=Status.PROCESSED)
        assert category_of(message) is Category.REPLY


class TestNewMessage:
    @pytest.mark.parametrize("category", list(Category), ids=lambda c: c.name)
    def test_fills_role_type_and_status(self, category: Category) -> None:
        """role, type and the initial status come from the category."""
        message = build(category)
        role, type_, _, _, initial = TABLE[category]
        assert (message.role, message.type, message.status) == (role, type_, initial)

    @pytest.mark.parametrize("category", list(Category), ids=lambda c: c.name)
    def test_fills_the_flag(self, category: Category) -> None:
        """The category's flag is set to True, and no other flag is set."""
        flag = TABLE[category][3]
        message = build(category)
        assert dict(message.metadata) == ({flag: True} if flag else {})

    @pytest.mark.parametrize(
        ("category", "sender"),
        [
            (Category.CRON_PROMPT, "Cronjob"),
            (Category.COMPACTION_REQUEST, "System"),
            (Category.BACKGROUND_ALERT, "System"),
            (Category.NOTIFICATION, "Notification"),
            (Category.NUDGE, "System"),
            (Category.SYSTEM_PROMPT, "System"),
            (Category.THOUGHT, "Amber"),
            (Category.TOOL_CALL, "Amber"),
            (Category.REPLY, "Amber"),
            (Category.CRASH_NOTICE, "Amber"),
        ],
        ids=lambda v: v.name if isinstance(v, Category) else v,
    )
    def test_fills_the_sender(self, category: Category, sender: str) -> None:
        """Fixed senders are filled in; agent output defaults to the agent's name."""
        assert build(category).sender == sender

    def test_agent_sender_can_be_named(self) -> None:
        """Agent output may name another agent as sender."""
        assert build(Category.REPLY, sender="Kesoku").sender == "Kesoku"

    def test_fixed_sender_may_be_repeated(self) -> None:
        """Passing a category's own fixed sender is accepted."""
        assert build(Category.CRON_PROMPT, sender="Cronjob").sender == "Cronjob"

    def test_keeps_the_given_fields(self) -> None:
        """Content, metadata and other fields are passed through to the message."""
        message = build(
            Category.CRON_PROMPT,
            content="daily report",
            metadata={"job": "daily"},
            chatbot_id="cli",
            channel_id="main",
        )
        assert message.content == "daily report"
        assert message.metadata == pmap({"job": "daily", "is_cronjob": True})
        assert (message.chatbot_id, message.channel_id) == ("cli", "main")

    def test_flag_overrides_a_false_value(self) -> None:
        """A flagged category sets its flag to True even if the caller passed False."""
        message = build(Category.NUDGE, metadata={"is_nudge": False})
        assert message.metadata["is_nudge"] is True

    def test_does_not_touch_the_callers_metadata(self) -> None:
        """The caller's metadata dict is not modified by adding the flag."""
        metadata = {"job": "daily"}
        build(Category.CRON_PROMPT, metadata=metadata)
        assert metadata == {"job": "daily"}

    @pytest.mark.parametrize(
        ("category", "fixed", "label"),
        [
            (Category.CRON_PROMPT, "Cronjob", "cron prompt"),
            (Category.COMPACTION_REQUEST, "System", "compaction request"),
            (Category.BACKGROUND_ALERT, "System", "background alert"),
            (Category.NOTIFICATION, "Notification", "notification"),
            (Category.NUDGE, "System", "nudge"),
            (Category.SYSTEM_PROMPT, "System", "system prompt"),
        ],
        ids=lambda v: v.name if isinstance(v, Category) else str(v),
    )
    def test_fixed_sender_conflict(self, category: Category, fixed: str, label: str) -> None:
        """Naming another sender for a category with a fixed sender is refused."""
        with pytest.raises(
            InvalidMessage,
            match=exact(f"A {label} is always sent by {fixed!r} (got sender 'Bob')."),
        ):
            build(category, sender="Bob")

    def test_user_question_needs_sender(self) -> None:
        """A user question without a sender is refused, saying what to pass."""
        with pytest.raises(
            InvalidMessage,
            match=exact("A user question needs a sender: pass the user's display name as sender=."),
        ):
            new_message(Category.USER_QUESTION, id="msg_1", session_id="sess", created_at=T0)

    def test_tool_result_needs_sender(self) -> None:
        """A tool result without a sender is refused, saying what to pass."""
        with pytest.raises(
            InvalidMessage,
            match=exact("A tool result needs a sender: pass the tool's name as sender=."),
        ):
            new_message(
                Category.TOOL_RESULT,
                id="msg_1",
                session_id="sess",
                created_at=T0,
                tool_call_id="call_1",
            )

    def test_reply_sent_by_notification_reads_back_as_notification(self) -> None:
        """A reply whose sender is Notification would read back as another category."""
        with pytest.raises(
            InvalidMessage,
            match=exact(
                "Message 'msg_1' was built as a reply but reads back as a notification; "
                "check its sender and metadata flags."
            ),
        ):
            build(Category.REPLY, sender="Notification")

    def test_user_question_with_cron_flag(self) -> None:
        """A user question carrying is_cronjob would read back as a cron prompt."""
        with pytest.raises(
            InvalidMessage,
            match=exact(
                "Message 'msg_1' was built as a user question but reads back as a cron "
                "prompt; check its sender and metadata flags."
            ),
        ):
            build(Category.USER_QUESTION, metadata={"is_cronjob": True})

    def test_compaction_request_with_cron_flag(self) -> None:
        """Two category flags on one message are refused."""
        with pytest.raises(
            InvalidMessage,
            match=exact(
                "Message 'msg_1' was built as a compaction request but reads back as a cron "
                "prompt; check its sender and metadata flags."
            ),
        ):
            build(Category.COMPACTION_REQUEST, metadata={"is_cronjob": True})

    def test_message_checks_still_apply(self) -> None:
        """A tool call built without a ToolCall fails the message's own checks."""
        with pytest.raises(
            InvalidMessage,
            match=exact("Message 'msg_1' of type tool_call must carry a ToolCall in tool_call."),
        ):
            new_message(Category.TOOL_CALL, id="msg_1", session_id="sess", created_at=T0)
