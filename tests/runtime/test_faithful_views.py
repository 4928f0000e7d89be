"""The model's view keeps the model's order, and provider data goes back where it must.

Sessions are stored the way the turn machine stores them: each response's
messages carry ``model_call`` and, when needed, ``model_parts`` with the
provider's signatures. People still see the phased order (``session_history``).
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from conftest import Session

from runtime import (
    Category,
    ReasoningPart,
    TextPart,
    ToolUsePart,
    ViewRole,
    build_payload,
    clean_history,
    response_metadata,
    session_history,
    to_anthropic,
    to_gemini,
    to_openai,
    to_openai_responses,
)
from runtime._parts import CallSegment, ReasoningSegment, TextSegment
from runtime.testing import InvariantViolation, check_provider_view

SIG = base64.b64encode(b"gemini-signature").decode()


def respond(
    session: Session,
    key: str,
    parts: list[Any],
    *,
    provider: str,
    calls: list[tuple[str, str]] = (),  # type: ignore[assignment]
    text: str = "",
    reasoning: str = "",
    prefix: str = "",
) -> None:
    """Store one response the machine's way (thought, text, calls with their metadata)."""
    meta = response_metadata(parts, provider=provider, source_key=key)
    if reasoning or meta.thought.get("model_parts"):
        session.add(
            Category.THOUGHT, f"{prefix}th", turn_id="t1", content=reasoning, metadata=meta.thought
        )
    if text:
        session.add(Category.REPLY, f"{prefix}a", turn_id="t1", content=text, metadata=meta.text)
    for index, (message_id, call_id) in enumerate(calls):
        session.call(message_id, call_id)
        if meta.calls.get(index):
            from runtime._events import MetadataUpdated

            session.do(MetadataUpdated, message_id=message_id, metadata=meta.calls[index])


def result(session: Session, message_id: str, call_id: str, text: str = "ok") -> None:
    session.add(Category.TOOL_RESULT, message_id, turn_id="t1", tool_call_id=call_id, content=text)


@pytest.fixture
def step(session: Session) -> Session:
    """One question; the model thought (signed), said a preamble, called two tools."""
    session.ask("u1", "Weather in Tokyo and Paris?")
    session.start("t1")
    parts = [
        ReasoningSegment(text="Two cities.", signature="sigA"),
        TextSegment(text="Let me check."),
        CallSegment(index=0),
        CallSegment(index=1, signature=SIG),
    ]
    respond(
        session, "t1#0", parts, provider="anthropic", reasoning="Two cities.",
        text="Let me check.", calls=[("c1", "call_1"), ("c2", "call_2")],
    )  # fmt: skip
    result(session, "r1", "call_1", "Sunny")
    result(session, "r2", "call_2", "Rain")
    return session


class TestOrder:
    def test_one_response_is_one_assistant_message_in_order(self, step: Session) -> None:
        """Reasoning, text and calls of one response: one assistant message, then results."""
        view = clean_history(step.state)
        roles = [m.role for m in view.messages]
        assert roles == [ViewRole.USER, ViewRole.ASSISTANT, ViewRole.TOOL, ViewRole.TOOL]
        kinds = [type(p) for p in view.messages[1].parts]
        assert kinds == [ReasoningPart, TextPart, ToolUsePart, ToolUsePart]
        assert view.messages[1].source_ids == ("th", "a", "c1", "c2")

    def test_people_still_see_the_phased_order(self, step: Session) -> None:
        """session_history: thought, calls, results, then the text (seed 000)."""
        ids = [m.id for m in session_history(step.state)]
        assert ids == ["u1", "th", "c1", "c2", "r1", "r2", "a"]

    def test_text_after_a_call_stays_after_it(self, session: Session) -> None:
        """A response that wrote text after its call is sent that way."""
        session.ask()
        session.start("t1")
        parts = [TextSegment(text="First."), CallSegment(index=0), TextSegment(text="Then.")]
        respond(session, "t1#0", parts, provider="anthropic", text="First.\n\nThen.",
                calls=[("c1", "call_1")])  # fmt: skip
        result(session, "r1", "call_1")
        blocks = to_anthropic(session.state)["messages"][1]["content"]
        assert [(b["type"], b.get("text")) for b in blocks] == [
            ("text", "First."), ("tool_use", None), ("text", "Then."),
        ]  # fmt: skip

    def test_sequential_steps_stay_steps_by_model_call(self, session: Session) -> None:
        """Two responses of one turn, keyed by model_call: two steps."""
        session.ask()
        session.start("t1")
        respond(session, "t1#0", [CallSegment(index=0)], provider="openai",
                calls=[("c1", "call_1")], prefix="x")  # fmt: skip
        result(session, "r1", "call_1")
        respond(session, "t1#1", [CallSegment(index=0)], provider="openai",
                calls=[("c2", "call_2")], prefix="y")  # fmt: skip
        result(session, "r2", "call_2")
        roles = [m["role"] for m in to_openai(session.state)]
        assert roles == ["user", "assistant", "tool", "assistant", "tool"]


class TestProviderData:
    def test_anthropic_gets_its_signed_thinking_first(self, step: Session) -> None:
        """The thinking block goes back unchanged, first, with the tool uses after it."""
        content = to_anthropic(step.state)["messages"][1]["content"]
        assert content[0] == {"type": "thinking", "thinking": "Two cities.", "signature": "sigA"}
        assert [b["type"] for b in content] == ["thinking", "text", "tool_use", "tool_use"]

    def test_gemini_gets_only_its_own_signatures(self, step: Session) -> None:
        """The call signed by Gemini keeps it (as bytes); Anthropic's signature is not sent."""
        parts = to_gemini(step.state)["contents"][1]["parts"]
        assert all("thought_signature" not in p for p in parts)  # the response was Anthropic's

    def test_gemini_signature_on_the_same_part(self, session: Session) -> None:
        """A Gemini response: the signature stays on the function call that carried it."""
        session.ask()
        session.start("t1")
        parts = [TextSegment(text="Checking."), CallSegment(index=0, signature=SIG)]
        respond(session, "t1#0", parts, provider="gemini", text="Checking.",
                calls=[("c1", "call_1")])  # fmt: skip
        result(session, "r1", "call_1")
        model_parts = to_gemini(session.state)["contents"][1]["parts"]
        assert model_parts[0] == {"text": "Checking."}
        assert model_parts[1]["thought_signature"] == b"gemini-signature"
        check_provider_view(to_gemini(session.state), "gemini", request=True)

    def test_responses_items_travel_together(self, session: Session) -> None:
        """OpenAI Responses: the reasoning item (encrypted) goes right before its call."""
        session.ask()
        session.start("t1")
        parts = [
            ReasoningSegment(text="Plan.", signature="enc", item_id="rs_1"),
            CallSegment(index=0, item_id="fc_1"),
        ]
        respond(session, "t1#0", parts, provider="openai-responses", reasoning="Plan.",
                calls=[("c1", "call_1")])  # fmt: skip
        result(session, "r1", "call_1")
        items = to_openai_responses(session.state, reasoning=True)["input"]
        assert [i.get("type", "message") for i in items] == [
            "message", "reasoning", "function_call", "function_call_output",
        ]  # fmt: skip
        assert items[1] == {"type": "reasoning", "id": "rs_1", "encrypted_content": "enc",
                            "summary": [{"type": "summary_text", "text": "Plan."}]}  # fmt: skip
        assert items[2]["id"] == "fc_1"
        plain = to_openai_responses(session.state)["input"]
        assert [i.get("type", "message") for i in plain][1] == "function_call"

    def test_responses_item_ids_only_beside_their_reasoning(self, session: Session) -> None:
        """OpenAI Responses: fc_/msg_ ids go only with the reasoning item before them (else 400)."""
        session.ask()
        session.start("t1")
        parts = [
            ReasoningSegment(text="Plan.", signature="enc", item_id="rs_1"),
            TextSegment(text="Checking.", item_id="msg_1"),
            CallSegment(index=0, item_id="fc_1"),
        ]
        respond(session, "t1#0", parts, provider="openai-responses", reasoning="Plan.",
                text="Checking.", calls=[("c1", "call_1")])  # fmt: skip
        result(session, "r1", "call_1")
        items = to_openai_responses(session.state, reasoning=True)["input"]
        assert [i.get("id") for i in items] == [None, "rs_1", "msg_1", "fc_1", None]
        check_provider_view({"input": items}, "openai-responses", request=True)
        plain = to_openai_responses(session.state)["input"]  # the reasoning is not sent
        assert [i.get("id") for i in plain] == [None] * 4
        assert plain[1] == {"role": "assistant", "content": "Checking."}
        assert plain[2]["call_id"] == "call_1"
        check_provider_view({"input": plain}, "openai-responses", request=True)

    def test_responses_ids_without_reasoning_of_their_own(self, session: Session) -> None:
        """A response with no reasoning item (a non-reasoning model): its ids are not sent."""
        session.ask()
        session.start("t1")
        parts = [
            TextSegment(text="Checking.", item_id="msg_1"),
            CallSegment(index=0, item_id="fc_1"),
        ]
        respond(session, "t1#0", parts, provider="openai-responses", text="Checking.",
                calls=[("c1", "call_1")])  # fmt: skip
        result(session, "r1", "call_1")
        items = to_openai_responses(session.state, reasoning=True)["input"]
        assert [i.get("id") for i in items] == [None] * 4
        check_provider_view({"input": items}, "openai-responses", request=True)

    def test_redacted_thinking_goes_back_as_data(self, session: Session) -> None:
        """Anthropic's redacted block: no text, its data returned unchanged."""
        session.ask()
        session.start("t1")
        parts = [ReasoningSegment(text="", signature="opaque", redacted=True),
                 CallSegment(index=0)]  # fmt: skip
        respond(session, "t1#0", parts, provider="anthropic", calls=[("c1", "call_1")])
        result(session, "r1", "call_1")
        content = to_anthropic(session.state)["messages"][1]["content"]
        assert content[0] == {"type": "redacted_thinking", "data": "opaque"}

    def test_a_blank_signed_thought_never_makes_an_empty_part(self, session: Session) -> None:
        """A thought of blanks with a bare signature: valid for every provider (a hypothesis find)."""
        session.ask()
        session.start("t1")
        session.add(Category.THOUGHT, "th", turn_id="t1", content="  ", metadata={"signature": "s"})
        session.call("c1", "call_1")
        result(session, "r1", "call_1")
        view = clean_history(session.state)
        for provider, model in (("openai", "m"), ("openai-responses", "o4-mini"),
                                ("anthropic", "c"), ("gemini", "g")):  # fmt: skip
            check_provider_view(build_payload(provider, view, model=model), provider, request=True)


class TestRequests:
    def test_a_request_never_ends_on_the_assistant_side(self, session: Session) -> None:
        """After a finished turn the view ends with the reply: no request is built from it."""
        session.ask()
        session.start("t1")
        session.reply("a1", text="Hello.")
        session.end()
        view = clean_history(session.state)
        with pytest.raises(Exception, match="would end on the assistant's side"):
            build_payload("anthropic", view, model="c")
        with pytest.raises(InvariantViolation, match="ends on the assistant's side"):
            check_provider_view(to_anthropic(view), "anthropic", request=True)
        check_provider_view(to_anthropic(view), "anthropic")  # a view of a past state may
