"""Provider views: to_openai, to_anthropic, to_gemini, and the invariant 7 check."""

from __future__ import annotations

import base64
import re
from typing import Any

import attrs
import pytest
from conftest import Session
from hypothesis import given, settings

from runtime import (
    INTERRUPTED_MARK,
    Attachment,
    Category,
    Event,
    MessageAdded,
    ProjectionError,
    Timeline,
    ToolCall,
    TurnEnded,
    TurnOutcome,
    Window,
    category_of,
    clean_history,
    new_message,
    to_anthropic,
    to_gemini,
    to_json,
    to_openai,
)
from runtime.testing import InvariantViolation, check_provider_view, session_events

PNG = Attachment(id="att_png", name="photo.png", kind="image", media_type="image/png", size=4)
GIF = Attachment(id="att_gif", name="anim.gif", kind="image", media_type="image/gif", size=4)
PNG_B64 = base64.b64encode(b"\x89PNG").decode()


class Store:
    def read(self, attachment: Attachment) -> bytes:
        return {"att_png": b"\x89PNG", "att_gif": b"GIF8"}[attachment.id]


def seed_trace(session: Session) -> None:
    """Seed 000 §6.1, then a second question still being answered."""
    session.ask("u1", "run the tests")
    session.start("t1")
    session.add(Category.THOUGHT, "th1", turn_id="t1", content="use pytest")
    session.call("c1", "call_1")
    session.result("r1", "call_1")
    session.reply("a1", text="5 passed")
    session.end()
    session.ask("u2", "and lint?")
    session.start("t2")


def interrupted_mid_tool(session: Session) -> None:
    """A question interrupted while its tool ran; the user asks again."""
    session.ask("u1", "deploy")
    session.start("t1")
    session.call("c1", "call_1")
    session.ask("u2", "stop, wrong branch")
    session.end(outcome=TurnOutcome.INTERRUPTED, reason="new input")
    session.start("t2")


def all_views(state: Any, **options: Any) -> dict[str, Any]:
    return {
        "openai": to_openai(state, system="Be brief.", **options),
        "anthropic": to_anthropic(state, system="Be brief.", **options),
        "gemini": to_gemini(state, system="Be brief.", **options),
    }


class TestOpenAI:
    def test_seed_trace(self, session: Session) -> None:
        """System first; calls on the assistant message, arguments as a JSON string; no thoughts."""
        seed_trace(session)
        assert to_openai(session.state, system="Be brief.") == [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "run the tests"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "sh", "arguments": '{"command":"ls"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
            {"role": "assistant", "content": "5 passed"},
            {"role": "user", "content": "and lint?"},
        ]

    def test_interrupted_call_is_answered_before_the_next_question(self, session: Session) -> None:
        """The synthesized result sits between the call and the user's correction."""
        interrupted_mid_tool(session)
        roles = [(m["role"], m.get("tool_call_id")) for m in to_openai(session.state)]
        assert roles == [("user", None), ("assistant", None), ("tool", "call_1"), ("user", None)]

    def test_developer_role_and_system_prompt_message(self, session: Session) -> None:
        """The system prompt may be a system-prompt Message and go out as 'developer'."""
        session.ask("u1")
        prompt = new_message(
            Category.SYSTEM_PROMPT, id="sys", session_id="sess", created_at=session.at(),
            content="You are Amber.",
        )  # fmt: skip
        view = to_openai(session.state, system=prompt, system_role="developer")
        assert view[0] == {"role": "developer", "content": "You are Amber."}

    def test_blank_system_prompt_is_left_out(self, session: Session) -> None:
        """An empty system prompt adds no empty message."""
        session.ask("u1")
        assert to_openai(session.state, system="  ") == [{"role": "user", "content": "hi"}]

    def test_images_are_data_urls(self, session: Session) -> None:
        """Current-turn images become image_url parts with a base64 data URL."""
        session.add(Category.USER_QUESTION, "u1", content="what is this?", attachments=[PNG])
        session.start("t1")
        assert to_openai(session.state, artifacts=Store()) == [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "what is this?"},
                    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
                ],
            }
        ]

    def test_interrupted_reasoning_is_assistant_text(self, session: Session) -> None:
        """The one kind of reasoning OpenAI gets: marked, as content."""
        session.ask("u1")
        session.start("t1")
        half = session.message(Category.THOUGHT, "p1", turn_id="t1", content="maybe")
        session.end(outcome=TurnOutcome.INTERRUPTED, partial=[half])
        assert to_openai(session.state)[1] == {
            "role": "assistant",
            "content": "[Interrupted reasoning, cut short before the turn finished]\nmaybe",
        }

    def test_non_ascii_arguments_stay_readable(self, session: Session) -> None:
        """Arguments are compact JSON with non-ASCII characters kept."""
        session.ask("u1")
        session.start("t1")
        session.add(
            Category.TOOL_CALL, "c1", turn_id="t1",
            tool_call=ToolCall(id="call_1", name="weather", arguments={"city": "東京"}),
        )  # fmt: skip
        call = to_openai(session.state)[1]["tool_calls"][0]
        assert call["function"]["arguments"] == '{"city":"東京"}'


class TestAnthropic:
    def test_seed_trace(self, session: Session) -> None:
        """System on top; tool_use input an object; results in the next user message."""
        seed_trace(session)
        assert to_anthropic(session.state, system="Be brief.") == {
            "system": "Be brief.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "run the tests"}]},
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "call_1",
                            "name": "sh",
                            "input": {"command": "ls"},
                        }
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "ok"}],
                },
                {"role": "assistant", "content": [{"type": "text", "text": "5 passed"}]},
                {"role": "user", "content": [{"type": "text", "text": "and lint?"}]},
            ],
        }

    def test_results_open_the_merged_user_message(self, session: Session) -> None:
        """An interrupted call's result and the next question share one user message, result first."""
        interrupted_mid_tool(session)
        view = to_anthropic(session.state)
        assert "system" not in view
        assert [m["role"] for m in view["messages"]] == ["user", "assistant", "user"]
        assert view["messages"][2]["content"] == [
            {
                "type": "tool_result",
                "tool_use_id": "call_1",
                "content": "[Interrupted: the call to sh ended before it returned a result.]",
                "is_error": True,
            },
            {"type": "text", "text": "stop, wrong branch"},
        ]

    def test_consecutive_user_turns_are_merged(self, session: Session) -> None:
        """An alert and a question in a row become one user message."""
        session.add(Category.BACKGROUND_ALERT, "al1", content="job done")
        session.ask("u1")
        assert to_anthropic(session.state)["messages"] == [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "[System Notification]\njob done"},
                    {"type": "text", "text": "hi"},
                ],
            }
        ]

    def test_signed_thinking_goes_first_unsigned_is_dropped(self, session: Session) -> None:
        """Only signed reasoning can go back, as the first block; unsigned is left out."""
        session.ask("u1")
        session.start("t1")
        session.add(
            Category.THOUGHT, "th1", turn_id="t1", content="signed", metadata={"signature": "s1"}
        )
        session.add(Category.THOUGHT, "th2", turn_id="t1", content="unsigned")
        session.call("c1", "call_1")
        session.result("r1", "call_1")
        assistant = to_anthropic(session.state)["messages"][1]
        assert assistant["content"] == [
            {"type": "thinking", "thinking": "signed", "signature": "s1"},
            {"type": "tool_use", "id": "call_1", "name": "sh", "input": {"command": "ls"}},
        ]

    def test_thinking_alone_is_dropped(self, session: Session) -> None:
        """A message that would hold only thinking is dropped; its neighbours merge."""
        session.ask("u1")
        session.start("t1")
        session.add(Category.THOUGHT, "th1", turn_id="t1", content="x", metadata={"signature": "s"})
        session.add(Category.NUDGE, "n1", turn_id="t1", content="say something")
        messages = to_anthropic(session.state)["messages"]
        assert [m["role"] for m in messages] == ["user"]
        assert len(messages[0]["content"]) == 2

    def test_foreign_tool_ids_are_hashed_the_same_on_both_sides(self, session: Session) -> None:
        """Ids Anthropic would reject become a stable toolu_ id on the use and its result."""
        session.ask("u1")
        session.start("t1")
        session.call("c1", "functions.sh:0")
        session.result("r1", "functions.sh:0")
        messages = to_anthropic(session.state)["messages"]
        use_id = messages[1]["content"][0]["id"]
        assert re.match(r"^toolu_[0-9a-f]{24}$", use_id)
        assert messages[2]["content"][0]["tool_use_id"] == use_id

    def test_images_are_base64_blocks(self, session: Session) -> None:
        """Current-turn images become base64 image blocks after the text."""
        session.add(Category.USER_QUESTION, "u1", content="what is this?", attachments=[PNG])
        session.start("t1")
        content = to_anthropic(session.state, artifacts=Store())["messages"][0]["content"]
        assert content[1] == {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
        }

    def test_final_assistant_text_has_no_trailing_whitespace(self, session: Session) -> None:
        """A view that ends on the assistant is a prefill, which may not end in whitespace."""
        session.ask("u1")
        session.start("t1")
        session.reply("a1", text="done\n\n")
        session.end()
        last = to_anthropic(session.state)["messages"][-1]
        assert last == {"role": "assistant", "content": [{"type": "text", "text": "done"}]}
        assert session.state.message("a1").content == "done\n\n"


class TestGemini:
    def test_seed_trace(self, session: Session) -> None:
        """system_instruction apart; calls in a model content, responses next, no ids."""
        seed_trace(session)
        assert to_gemini(session.state, system="Be brief.") == {
            "contents": [
                {"role": "user", "parts": [{"text": "run the tests"}]},
                {
                    "role": "model",
                    "parts": [{"function_call": {"name": "sh", "args": {"command": "ls"}}}],
                },
                {
                    "role": "user",
                    "parts": [{"function_response": {"name": "sh", "response": {"output": "ok"}}}],
                },
                {"role": "model", "parts": [{"text": "5 passed"}]},
                {"role": "user", "parts": [{"text": "and lint?"}]},
            ],
            "system_instruction": {"parts": [{"text": "Be brief."}]},
        }

    def test_errors_go_under_error(self, session: Session) -> None:
        """A failed or interrupted call answers with an 'error' response."""
        interrupted_mid_tool(session)
        contents = to_gemini(session.state)["contents"]
        assert contents[2]["parts"][0] == {
            "function_response": {
                "name": "sh",
                "response": {
                    "error": "[Interrupted: the call to sh ended before it returned a result.]"
                },
            }
        }
        assert contents[2]["parts"][1] == {"text": "stop, wrong branch"}

    def test_current_reasoning_is_a_thought_part(self, session: Session) -> None:
        """The current turn's reasoning goes back as a thought part before the call."""
        session.ask("u1")
        session.start("t1")
        session.add(Category.THOUGHT, "th1", turn_id="t1", content="plan")
        session.call("c1", "call_1")
        session.result("r1", "call_1")
        assert to_gemini(session.state)["contents"][1]["parts"] == [
            {"text": "plan", "thought": True},
            {"function_call": {"name": "sh", "args": {"command": "ls"}}},
        ]

    def test_images_are_inline_bytes_and_gifs_a_note(self, session: Session) -> None:
        """PNG goes inline as bytes; Gemini takes no GIF, so the model is told it is missing."""
        session.add(Category.USER_QUESTION, "u1", content="look", attachments=[PNG, GIF])
        session.start("t1")
        parts = to_gemini(session.state, artifacts=Store())["contents"][0]["parts"]
        assert parts == [
            {"text": "look"},
            {"inline_data": {"mime_type": "image/png", "data": b"\x89PNG"}},
            {"text": "[Image anim.gif not shown: Gemini does not accept image/gif]"},
        ]


class TestSources:
    def test_a_built_view_renders_the_same(self, session: Session) -> None:
        """A ModelView built once renders like the state it came from."""
        seed_trace(session)
        view = clean_history(session.state)
        assert to_openai(view) == to_openai(session.state)
        assert to_anthropic(view) == to_anthropic(session.state)
        assert to_gemini(view) == to_gemini(session.state)

    def test_a_built_view_takes_no_view_options(self, session: Session) -> None:
        """Options belong to clean_history when a view is passed."""
        view = clean_history(session.state)
        with pytest.raises(
            ProjectionError,
            match=r"^to_gemini\(\) got a ModelView and view options; window, artifacts and max_result_chars apply when the view is built, so pass them to clean_history\(\) or pass the state instead of the view\.$",
        ):
            to_gemini(view, window=Window(max_messages=3))

    @pytest.mark.parametrize("render", [to_openai, to_anthropic, to_gemini])
    def test_a_timeline_is_not_a_source(self, session: Session, render: Any) -> None:
        """The error says what to pass."""
        name = render.__name__
        with pytest.raises(
            TypeError,
            match=rf"^{name}\(\) takes a SessionState or a ModelView \(got .* that is a 'Timeline'\); pass timeline\.head or timeline\.at\(seq\)\.$",
        ):
            render(session.timeline)

    def test_system_must_be_text_or_a_system_prompt(self, session: Session) -> None:
        """A reply is not a system prompt."""
        session.ask("u1")
        with pytest.raises(
            TypeError,
            match=r"^to_anthropic\(system=\.\.\.\) takes the system prompt as a str or a system prompt Message \(got message 'u1', a user question\)\.$",
        ):
            to_anthropic(session.state, system=session.state.message("u1"))
        with pytest.raises(
            TypeError,
            match=r"^to_gemini\(system=\.\.\.\) takes a str, a system prompt Message or None \(got 3 that is an 'int'\)\.$",
        ):
            to_gemini(session.state, system=3)  # type: ignore[arg-type]

    def test_unknown_system_role(self, session: Session) -> None:
        """Only 'system' and 'developer' place a system prompt."""
        with pytest.raises(
            ProjectionError, match=r"^system_role must be 'system' or 'developer' \(got 'user'\)\.$"
        ):
            to_openai(session.state, system_role="user")  # type: ignore[arg-type]

    def test_empty_session(self, session: Session) -> None:
        """Nothing to send gives empty lists (and the system prompt alone for OpenAI)."""
        assert to_openai(session.state, system="s") == [{"role": "system", "content": "s"}]
        assert to_anthropic(session.state) == {"messages": []}
        assert to_gemini(session.state) == {"contents": []}


class TestCheckProviderView:
    """check_provider_view catches what the APIs reject."""

    def expect(self, view: Any, provider: str, detail: str) -> None:
        with pytest.raises(
            InvariantViolation,
            match=rf"^Invariant 7 \(the {provider} view is valid for its API\) broken at seq 3: {re.escape(detail)}$",
        ):
            check_provider_view(view, provider, seq=3)

    def test_openai_rules(self) -> None:
        call = {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        asking = {"role": "assistant", "content": None, "tool_calls": [call]}
        self.expect([asking], "openai", "tool calls ['a'] are never answered")
        self.expect(
            [asking, {"role": "user", "content": "x"}],
            "openai",
            "messages[1] (user) comes before tool calls ['a'] are answered",
        )
        self.expect(
            [{"role": "tool", "tool_call_id": "a", "content": "x"}],
            "openai",
            "messages[0] answers tool call 'a', which the assistant message before it did not make (or which was answered already)",
        )
        self.expect(
            [{"role": "assistant", "content": None, "tool_calls": []}],
            "openai",
            "messages[0] has tool_calls=[]; omit the key when there are none",
        )
        bad_args = {**call, "function": {"name": "f", "arguments": {}}}
        self.expect(
            [{"role": "assistant", "content": None, "tool_calls": [bad_args]}],
            "openai",
            "messages[0] tool call 'a' has arguments that are not a JSON string",
        )
        self.expect(
            [{"role": "user", "content": " "}], "openai", "messages[0] (user) has empty content"
        )
        self.expect(
            [{"role": "user", "content": "x"}, {"role": "system", "content": "s"}],
            "openai",
            "messages[1] is a system message after the conversation started",
        )

    def test_anthropic_rules(self) -> None:
        user = {"role": "user", "content": [{"type": "text", "text": "x"}]}
        use = {"type": "tool_use", "id": "a", "name": "f", "input": {}}
        self.expect(
            {"messages": [user, user]},
            "anthropic",
            "messages[1] has role 'user'; roles must alternate user/assistant from user",
        )
        self.expect(
            {"messages": [user, {"role": "assistant", "content": [use]}, user]},
            "anthropic",
            "messages[2] answers tool uses [], expected exactly ['a']",
        )
        result = {"type": "tool_result", "tool_use_id": "a", "content": "ok"}
        self.expect(
            {
                "messages": [
                    user,
                    {"role": "assistant", "content": [use]},
                    {"role": "user", "content": [{"type": "text", "text": "x"}, result]},
                ]
            },
            "anthropic",
            "messages[2] does not open with its tool_result blocks",
        )
        thinking = {"type": "thinking", "thinking": "t", "signature": "s"}
        self.expect(
            {"messages": [user, {"role": "assistant", "content": [thinking]}]},
            "anthropic",
            "messages[1] has thinking blocks that are not first, or last: ['thinking']",
        )
        self.expect({"system": "", "messages": []}, "anthropic", "system is present but empty")

    def test_gemini_rules(self) -> None:
        user = {"role": "user", "parts": [{"text": "x"}]}
        model_call = {"role": "model", "parts": [{"function_call": {"name": "f", "args": {}}}]}
        self.expect(
            {"contents": [user, model_call, user]},
            "gemini",
            "contents[2] answers function calls [], expected ['f'] in order",
        )
        self.expect(
            {"contents": [{"role": "user", "parts": [{"text": "x", "inline_data": {}}]}]},
            "gemini",
            "contents[0] has a part with data fields ['inline_data', 'text']; exactly one is allowed",
        )
        self.expect(
            {"contents": [{"role": "model", "parts": [{"text": "x"}]}]},
            "gemini",
            "contents[0] has role 'model'; roles must alternate user/model from user",
        )

    def test_responses_item_ids_need_their_reasoning(self) -> None:
        """An fc_/msg_ item id without the reasoning item before it: the API answers 400."""
        user = {"role": "user", "content": "x"}
        call = {"type": "function_call", "id": "fc_1", "call_id": "c", "name": "f",
                "arguments": "{}"}  # fmt: skip
        output = {"type": "function_call_output", "call_id": "c", "output": "ok"}
        self.expect(
            {"input": [user, call, output]},
            "openai-responses",
            "input[1] (function_call) has item id 'fc_1' but no reasoning item before it; "
            "send the id only with its reasoning item",
        )
        message = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": "t", "annotations": []}]}  # fmt: skip
        self.expect(
            {"input": [user, message]},
            "openai-responses",
            "input[1] (message) has item id 'msg_1' but no reasoning item before it; "
            "send the id only with its reasoning item",
        )
        reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"}
        check_provider_view({"input": [user, reasoning, message, call, output]}, "openai-responses")
        plain = {key: value for key, value in call.items() if key != "id"}
        check_provider_view({"input": [user, plain, output]}, "openai-responses")

    def test_unknown_provider(self) -> None:
        with pytest.raises(
            ValueError,
            match=r"^check_provider_view\(\) knows providers \['anthropic', 'gemini', 'openai', 'openai-responses'\] \(got 'bard'\)\.$",
        ):
            check_provider_view([], "bard")


class AnyBytes:
    def read(self, attachment: Attachment) -> bytes:
        return f"BYTES<{attachment.id}>".encode()


def _secret(message: Any, label: str) -> Any:
    return attrs.evolve(message, content=f"{label}<{message.id}>")


def with_secrets(events: list[Event]) -> list[Event]:
    """Give every thought and notification a unique marker as its text."""
    out: list[Event] = []
    for event in events:
        if isinstance(event, MessageAdded):
            category = category_of(event.message)
            if category in (Category.THOUGHT, Category.NOTIFICATION):
                event = attrs.evolve(event, message=_secret(event.message, "SECRET"))
        elif isinstance(event, TurnEnded) and event.partial:
            event = attrs.evolve(event, partial=[_secret(m, "PARTIAL") for m in event.partial])
        out.append(event)
    return out


def check_leaks(state: Any, views: dict[str, Any]) -> None:
    """No finished thought, no notification and no historic attachment bytes reach a view."""
    dumped = {name: repr(view) for name, view in views.items()}
    current = state.active_turn_id
    for message in state.messages:
        category = category_of(message)
        if category is Category.NOTIFICATION or (
            category is Category.THOUGHT
            and message.turn_id != current
            and message.metadata.get(INTERRUPTED_MARK) is not True
        ):
            for name, text in dumped.items():
                assert message.content not in text, (name, message.id)
        if category is Category.THOUGHT and message.turn_id == current:
            assert message.content not in dumped["openai"]
        for attachment in message.attachments:
            raw = f"BYTES<{attachment.id}>"
            encoded = base64.b64encode(raw.encode()).decode()
            sent = (
                message.active
                and category.is_input
                and message.turn_id in (None, current)
                and attachment.media_type in ("image/png", "image/jpeg", "image/gif")
            )
            for name, text in dumped.items():
                if not sent or (name == "gemini" and attachment.media_type == "image/gif"):
                    assert raw not in text, (name, attachment.id)
                    assert encoded not in text, (name, attachment.id)


class TestProperties:
    @settings(max_examples=60, deadline=None)
    @given(session_events(rich=True))
    def test_every_view_is_valid_and_leaks_nothing(self, events: list[Event]) -> None:
        """Invariant 7 and the model-view rules over every state of random sessions."""
        timeline = Timeline.start("s").extend(with_secrets(events))
        for state in timeline.states():
            before = (hash(state), to_json(state))
            views = all_views(state, artifacts=AnyBytes(), max_result_chars=60)
            for provider, view in views.items():
                check_provider_view(view, provider, seq=state.seq)
            check_leaks(state, views)
            windowed = all_views(state, artifacts=AnyBytes(), window=Window(max_messages=5))
            for provider, view in windowed.items():
                check_provider_view(view, provider, seq=state.seq)
            assert (hash(state), to_json(state)) == before
