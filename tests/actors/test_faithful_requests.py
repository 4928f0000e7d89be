"""Issue 14's three failing cases, through the runtime: what the model is sent next.

1. Text written together with a tool call stays before the call (one
   assistant message), and the request does not end on the assistant side.
2. Sequential tool steps stay two steps (call a, result a, call b, result b).
3. A provider that reuses its message ids in a later turn does not fail it.
"""

from __future__ import annotations

from harness import WAIT, RuntimeFactory, make_runtime

from actors import ScriptedModel, call, reply, tool
from runtime import (
    AuditStatus,
    Status,
    clean_history,
    to_anthropic,
    to_gemini,
    to_openai,
    to_openai_responses,
)
from runtime.testing import check_provider_view

__all__ = ["make_runtime"]


@tool
def lookup(query: str = "") -> str:
    """Looks something up."""
    return f"Sunny in {query}"


def _kinds(message: dict[str, object]) -> list[str]:
    content = message["content"]
    assert isinstance(content, list)
    return [str(block["type"]) for block in content]  # type: ignore[index]


class TestTextWithACall:
    def test_the_preamble_stays_before_the_call(self, make_runtime: RuntimeFactory) -> None:
        """The request after the result: user, assistant [text, tool_use], user [tool_result]."""
        model = ScriptedModel(
            [call("lookup", {"query": "tokyo"}, text="Let me check."), reply("Sunny.")]
        )
        rt = make_runtime(model=model, tools=[lookup])
        rt.send("s", "Weather in Tokyo?")
        rt.wait_idle("s", timeout=WAIT)
        second = model.requests[1]
        view = to_anthropic(second.view)
        messages = view["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "user"]
        assert _kinds(messages[1]) == ["text", "tool_use"]
        assert messages[1]["content"][0]["text"] == "Let me check."
        assert _kinds(messages[2]) == ["tool_result"]
        openai = to_openai(second.view)
        assert [m["role"] for m in openai] == ["user", "assistant", "tool"]
        assert openai[1]["content"] == "Let me check."
        gemini = to_gemini(second.view)["contents"]
        assert [c["role"] for c in gemini] == ["user", "model", "user"]
        assert [next(iter(p)) for p in gemini[1]["parts"]] == ["text", "function_call"]
        for built, provider in ((view, "anthropic"), (openai, "openai")):
            check_provider_view(built, provider, request=True)
        check_provider_view(to_openai_responses(second.view), "openai-responses", request=True)


class TestSequentialSteps:
    def test_each_step_stays_its_own_step(self, make_runtime: RuntimeFactory) -> None:
        """Call a, its result, call b, its result: four messages, not one parallel step."""
        model = ScriptedModel(
            [
                call("lookup", {"query": "a"}),
                call("lookup", {"query": "b"}),
                reply("Both sunny."),
            ]
        )
        rt = make_runtime(model=model, tools=[lookup])
        rt.send("s", "Weather in a, then b?")
        rt.wait_idle("s", timeout=WAIT)
        third = model.requests[2]
        messages = to_anthropic(third.view)["messages"]
        assert [(m["role"], _kinds(m)) for m in messages] == [
            ("user", ["text"]),
            ("assistant", ["tool_use"]),
            ("user", ["tool_result"]),
            ("assistant", ["tool_use"]),
            ("user", ["tool_result"]),
        ]
        assert messages[1]["content"][0]["input"] == {"query": "a"}
        assert messages[3]["content"][0]["input"] == {"query": "b"}
        openai = to_openai(third.view)
        assert [m["role"] for m in openai] == ["user", "assistant", "tool", "assistant", "tool"]
        # People still see the phased order (seed 000): calls, then results, then the reply.
        state = rt.state("s")
        view = clean_history(state)
        assert len(view.messages) == 6  # question, step a, result a, step b, result b, reply


class TestReusedProviderIds:
    def test_a_provider_id_reused_in_a_later_turn(self, make_runtime: RuntimeFactory) -> None:
        """The second turn's call reuses the first's message id and completes."""
        model = ScriptedModel([reply("first", id="msg_1"), reply("second", id="msg_1")])
        rt = make_runtime(model=model)
        rt.send("s", "one")
        rt.wait_idle("s", timeout=WAIT)
        rt.send("s", "two")
        state = rt.wait_idle("s", timeout=WAIT)
        rows = rt.model_calls("s")
        assert [(r.operation_id, r.status) for r in rows] == [
            ("msg_1", AuditStatus.COMPLETED),
            ("msg_1", AuditStatus.COMPLETED),
        ]
        inputs = [m for m in state.messages if m.role == "user"]
        assert [m.status for m in inputs] == [Status.PROCESSED, Status.PROCESSED]
