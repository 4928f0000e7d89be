"""The provider views against the official SDKs' request types, strictly (no unknown keys).

The SDKs are test dependencies only; ``runtime`` never imports them.
"""

from __future__ import annotations

from typing import Any

import anthropic.types.message_create_params
import openai.types.chat.completion_create_params
import pydantic
import pytest
import typing_extensions
from conftest import Session
from google.genai import types as genai
from hypothesis import given, settings
from sdk_types import conform

from runtime import (
    Attachment,
    BrowserElement,
    Category,
    Timeline,
    TurnOutcome,
    to_anthropic,
    to_gemini,
    to_openai,
)
from runtime.testing import timelines

_OPENAI = typing_extensions.get_type_hints(
    openai.types.chat.completion_create_params.CompletionCreateParamsBase, include_extras=True
)
_ANTHROPIC = typing_extensions.get_type_hints(
    anthropic.types.message_create_params.MessageCreateParamsNonStreaming, include_extras=True
)


def openai_problems(messages: list[dict[str, Any]]) -> list[str]:
    return conform(messages, _OPENAI["messages"])


def anthropic_problems(view: dict[str, Any]) -> list[str]:
    problems = []
    for key, value in view.items():
        if key not in _ANTHROPIC:
            problems.append(f"$.{key}: not a Messages.create parameter")
        else:
            problems += conform(value, _ANTHROPIC[key], f"$.{key}")
    return problems


def gemini_problems(view: dict[str, Any]) -> list[str]:
    problems = []
    for i, content in enumerate(view["contents"]):
        problems += conform(content, genai.Content, f"$.contents[{i}]")
        problems += conform(content, genai.ContentDict, f"$.contents[{i}]")
        try:
            genai.Content.model_validate(content)  # extra='forbid' in google-genai
        except pydantic.ValidationError as error:
            problems.append(f"$.contents[{i}]: {error}")
    if "system_instruction" in view:
        problems += conform(view["system_instruction"], genai.Content, "$.system_instruction")
        genai.GenerateContentConfig(system_instruction=view["system_instruction"])
    if set(view) - {"contents", "system_instruction"}:
        problems.append(f"$: unexpected keys {sorted(view)}")
    return problems


def check_all(state: Any, **options: Any) -> None:
    assert openai_problems(to_openai(state, system="Be brief.", **options)) == []
    assert anthropic_problems(to_anthropic(state, system="Be brief.", **options)) == []
    assert gemini_problems(to_gemini(state, system="Be brief.", **options)) == []


class Store:
    def read(self, attachment: Attachment) -> bytes:
        return b"\x89PNG\r\n"


class TestWalker:
    """The walker rejects what a plain TypeAdapter would let through."""

    def test_unknown_keys_are_rejected(self) -> None:
        problems = openai_problems([{"role": "user", "content": "x", "event_seq": 4}])
        assert problems
        assert "unknown key 'event_seq'" in problems[0]

    def test_wrong_argument_type_is_rejected(self) -> None:
        call = {"id": "a", "type": "function", "function": {"name": "f", "arguments": {}}}
        problems = openai_problems([{"role": "assistant", "tool_calls": [call]}])
        assert "arguments: expected str, got dict" in problems[0]

    def test_unknown_gemini_field_is_rejected(self) -> None:
        content = {"role": "user", "parts": [{"function_call": {"name": "f", "thought_id": 1}}]}
        assert gemini_problems({"contents": [content]})

    def test_anthropic_block_keys_are_checked(self) -> None:
        block = {"type": "tool_result", "tool_use_id": "a", "content": "x", "error": True}
        view = {"messages": [{"role": "user", "content": [block]}]}
        assert anthropic_problems(view)


class TestEveryPartKind:
    def test_a_session_with_every_part_validates(self, session: Session) -> None:
        """Images, browser elements, signed and unsigned thoughts, errors, alerts, nudges."""
        png = Attachment(id="a1", name="p.png", kind="image", media_type="image/png")
        gif = Attachment(id="a2", name="g.gif", kind="image", media_type="image/gif")
        csv = Attachment(id="a3", name="d.csv", media_type="text/csv")
        element = BrowserElement(url="https://example.com", tag="a", text="buy")
        session.add(Category.USER_QUESTION, "u0", content="old", attachments=[png])
        session.start("t0")
        half = session.message(Category.THOUGHT, "p0", turn_id="t0", content="hmm")
        session.end("t0", outcome=TurnOutcome.INTERRUPTED, partial=[half])
        session.add(Category.BACKGROUND_ALERT, "al", content="job done")
        session.add(
            Category.USER_QUESTION, "u1", content="look", attachments=[png, gif, csv],
            browser_elements=[element],
        )  # fmt: skip
        session.start("t1")
        session.add(Category.THOUGHT, "th1", turn_id="t1", content="a", metadata={"signature": "s"})
        session.add(Category.THOUGHT, "th2", turn_id="t1", content="b")
        session.call("c1", "call_1")
        session.call("c2", "weird id!")
        session.add(
            Category.TOOL_RESULT, "r1", turn_id="t1", tool_call_id="call_1", content="boom",
            is_error=True, error_type="timeout",
        )  # fmt: skip
        session.add(Category.NUDGE, "n1", turn_id="t1", content="empty")
        session.reply("a1", text="partial answer")
        check_all(session.state, artifacts=Store())


class TestProperties:
    @settings(max_examples=40, deadline=None)
    @given(timelines(rich=True))
    def test_random_sessions_validate(self, timeline: Timeline) -> None:
        """Every state's three views conform to the SDK request types."""
        for state in timeline.states():
            check_all(state, artifacts=Store(), max_result_chars=50)


@pytest.mark.parametrize("module", ["openai", "anthropic", "google.genai"])
def test_runtime_does_not_import_the_sdks(module: str) -> None:
    """The SDKs are test dependencies: nothing in runtime imports them."""
    import pathlib

    import runtime

    for path in pathlib.Path(runtime.__file__).parent.rglob("*.py"):
        source = path.read_text()
        assert f"import {module}" not in source
        assert f"from {module}" not in source
