"""Anthropic Messages through the ``anthropic`` SDK: ``AnthropicModel("claude-sonnet-4-5")``.

The key is ``ANTHROPIC_API_KEY``. Mapping of the raw stream events:

- ``message_start``: the message id, the model, and the prompt's usage
  (``input_tokens`` plus the cache reads and writes, which Anthropic counts
  beside it);
- ``content_block_start``/``delta`` by block ``index``: ``text`` blocks are
  text; ``thinking`` blocks are reasoning whose ``signature_delta`` is kept;
  ``redacted_thinking`` blocks are kept whole (their ``data``); each block is
  a part of its own, so signed thinking goes back exactly as it came;
  ``tool_use`` blocks become calls 0, 1, … with their ``input_json_delta``
  fragments;
- ``message_delta``: the stop reason and the output tokens (thinking tokens
  as the reasoning count when reported); ``message_stop`` ends it. A stream
  without ``message_stop`` is broken; an ``error`` event (``overloaded_error``
  mid-stream) is raised by the SDK and reported as a broken stream.

Prompt caching is on: every request carries the top-level
``cache_control: {"type": "ephemeral"}``, which marks the last cacheable
block, so each call reads the prefix the previous call of the session wrote
(cache reads cost a tenth of input; a write 1.25 times). Turn it off with
``params={"cache_control": None}``, or ask for the hour-long cache with
``params={"cache_control": {"type": "ephemeral", "ttl": "1h"}}``.

Extended thinking is a parameter:
``AnthropicModel("claude-sonnet-4-5", params={"thinking": {"type": "enabled",
"budget_tokens": 2048}})``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any, ClassVar

import anthropic

from runtime import (
    Chunk,
    MessageFinish,
    MessageStart,
    ModelRetry,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
)

from ._base import ProviderModel, Retrying

__all__ = ["AnthropicModel", "anthropic_usage"]


class _AsyncAnthropic(Retrying, anthropic.AsyncAnthropic):
    pass


def anthropic_usage(start: Any, delta: Any) -> Usage | None:
    """Amber's usage from ``message_start``'s usage and the last ``message_delta``'s."""
    if start is None and delta is None:
        return None

    def value(name: str) -> int:
        for source in (delta, start):
            found = getattr(source, name, None) if source is not None else None
            if isinstance(found, int):
                return found
        return 0

    read = value("cache_read_input_tokens")
    written = value("cache_creation_input_tokens")
    output = value("output_tokens")
    details = getattr(delta, "output_tokens_details", None) or getattr(
        start, "output_tokens_details", None
    )
    thinking = getattr(details, "thinking_tokens", None) or 0
    return Usage(
        input_tokens=value("input_tokens") + read + written,
        output_tokens=output,
        cache_read_tokens=read,
        cache_write_tokens=written,
        reasoning_tokens=min(thinking, output),
    )


class AnthropicModel(ProviderModel):
    """Anthropic Messages (see the module docstring; arguments as ``ProviderModel``)."""

    provider: ClassVar[str] = "anthropic"
    key_variable: ClassVar[str | None] = "ANTHROPIC_API_KEY"
    label: ClassVar[str] = "anthropic"
    default_params: ClassVar[Mapping[str, Any]] = {"cache_control": {"type": "ephemeral"}}

    def _make_client(self) -> Any:
        kwargs: dict[str, Any] = {"api_key": self.api_key, "max_retries": self.max_retries}
        if self.base_url is not None:
            kwargs["base_url"] = self.base_url
        if self.timeout is not None:
            kwargs["timeout"] = self.timeout
        return _AsyncAnthropic(**kwargs)

    async def _open(
        self, client: Any, payload: dict[str, Any], retries: list[ModelRetry]
    ) -> tuple[AsyncIterator[Any], Any]:
        stream = await client.messages.create(**payload)
        return stream, stream

    async def _chunks(self, events: AsyncIterator[Any]) -> AsyncGenerator[Chunk, None]:
        calls: dict[int, int] = {}  # block index -> call index
        start_usage: Any = None
        delta_usage: Any = None
        stop: str | None = None
        async for event in events:
            kind = event.type
            if kind == "content_block_delta":
                delta = event.delta
                index = event.index
                dtype = delta.type
                if dtype == "text_delta":
                    yield TextDelta(text=delta.text, part=index)
                elif dtype == "thinking_delta":
                    yield ReasoningDelta(text=delta.thinking, part=index)
                elif dtype == "signature_delta":
                    yield ReasoningDelta(signature=delta.signature, part=index)
                elif dtype == "input_json_delta" and index in calls:
                    yield ToolCallDelta(index=calls[index], arguments=delta.partial_json)
            elif kind == "content_block_start":
                block = event.content_block
                index = event.index
                btype = block.type
                if btype == "text":
                    yield TextDelta(text=block.text or "", part=index)
                elif btype == "thinking":
                    signature = getattr(block, "signature", None) or None
                    yield ReasoningDelta(text=block.thinking or "", part=index, signature=signature)
                elif btype == "redacted_thinking":
                    yield ReasoningDelta(redacted=True, signature=block.data, part=index)
                elif btype == "tool_use":
                    calls[index] = len(calls)
                    yield ToolCallDelta(index=calls[index], id=block.id, name=block.name)
            elif kind == "message_start":
                message = event.message
                start_usage = getattr(message, "usage", None)
                yield MessageStart(
                    id=message.id or None, model=message.model or None, provider=self.provider
                )
            elif kind == "message_delta":
                stop = event.delta.stop_reason or stop
                delta_usage = getattr(event, "usage", None) or delta_usage
            elif kind == "message_stop":
                yield MessageFinish(
                    usage=anthropic_usage(start_usage, delta_usage), stop_reason=stop
                )
                return
        raise self.incomplete("no message_stop arrived")
