"""A real provider model in a runtime, against a local stub server (no key, no network).

Runs ``AnthropicModel`` through the official ``anthropic`` SDK; a stub server
on 127.0.0.1 plays the API: a tool call with signed thinking, then an answer.
Then it reads back what was stored: the audit rows (with their costs), the
exact request of the second call rebuilt from its row (the signed thinking
went back first in the assistant message), and checks it is what the server
received. Swap the model for ``AnthropicModel("claude-sonnet-4-6")`` with
``ANTHROPIC_API_KEY`` set, and drop the stub, to talk to the real API.

Run: python examples/provider_model.py  (needs the anthropic extra: ``pip install '.[anthropic]'``)
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from actors import Runtime, Settings, tool
from actors.providers import AnthropicModel, wire_request
from actors.providers.testing import Reply, StubServer
from runtime import rebuild_request


@tool
def weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: The city.
    """
    return f"Sunny in {city}, 24°C."


def event(kind: str, **data: object) -> dict[str, object]:
    return {"event": kind, "data": {"type": kind, **data}}


def message(stop: str, *blocks: list[dict[str, object]]) -> Reply:
    """An Anthropic stream: message_start, the blocks, message_delta, message_stop."""
    start = event("message_start", message={
        "id": f"msg_{stop}", "type": "message", "role": "assistant", "content": [],
        "model": "claude-sonnet-4-6", "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 900, "output_tokens": 1}})  # fmt: skip
    end = [event("message_delta", delta={"stop_reason": stop, "stop_sequence": None},
                 usage={"output_tokens": 40}), event("message_stop")]  # fmt: skip
    return Reply.sse([start, *[e for block in blocks for e in block], *end])


def thinking(index: int, text: str, signature: str) -> list[dict[str, object]]:
    return [
        event("content_block_start", index=index,
              content_block={"type": "thinking", "thinking": "", "signature": ""}),
        event("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": text}),
        event("content_block_delta", index=index,
              delta={"type": "signature_delta", "signature": signature}),
        event("content_block_stop", index=index),
    ]  # fmt: skip


def tool_use(index: int, city: str) -> list[dict[str, object]]:
    return [
        event("content_block_start", index=index, content_block={
            "type": "tool_use", "id": "toolu_01", "name": "weather", "input": {}}),
        event("content_block_delta", index=index,
              delta={"type": "input_json_delta", "partial_json": json.dumps({"city": city})}),
        event("content_block_stop", index=index),
    ]  # fmt: skip


def text(index: int, words: str) -> list[dict[str, object]]:
    return [
        event("content_block_start", index=index, content_block={"type": "text", "text": ""}),
        event("content_block_delta", index=index, delta={"type": "text_delta", "text": words}),
        event("content_block_stop", index=index),
    ]  # fmt: skip


def main() -> None:
    with StubServer() as api, tempfile.TemporaryDirectory() as folder:
        api.queue(
            message(
                "tool_use", thinking(0, "I should look it up.", "EqQBsig=="), tool_use(1, "Tokyo")
            ),
            message("end_turn", text(0, "It is sunny in Tokyo, 24°C.")),
        )
        model = AnthropicModel("claude-sonnet-4-6", api_key="stub", base_url=api.url)
        settings = Settings(system_prompt="Be brief.", passivate_after=None)
        with Runtime(model=model, tools=[weather], store=Path(folder) / "amber.db",
                     settings=settings) as rt:  # fmt: skip
            rt.send("s1", "Weather in Tokyo?", sender="me")
            state = rt.wait_idle("s1")
            timeline = rt.timeline("s1")
        print("Reply:", [m.content for m in state.messages if m.role == "assistant"][-1])
        for row in state.model_calls():
            print(f"call #{row.sequence} {row.operation_id} {row.status} "
                  f"{row.usage.input_tokens if row.usage else 0} in, cost ${row.cost_usd:.6f}")  # fmt: skip
        rebuilt = rebuild_request(timeline, 2)
        body = wire_request("anthropic", rebuilt.payload)["body"]
        blocks = [b["type"] for b in body["messages"][1]["content"]]
        print("Call #2's assistant message:", blocks, "· exact:", rebuilt.exact)
        assert body == api.requests[1].json, "the rebuilt request is the one the API received"
        print("The rebuilt request is the JSON the API received (JSON-equal).")


if __name__ == "__main__":
    main()
