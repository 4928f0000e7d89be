"""The OpenAI Responses API through the ``openai`` SDK: ``OpenAIResponsesModel("o4-mini")``.

The key is ``OPENAI_API_KEY``. Requests are stateless (``store`` false): the
whole view is sent each time, and for reasoning models the encrypted
reasoning is asked for and sent back in the turn's later requests, so the
model keeps its chain of thought across tool calls. Mapping of the events:

- ``response.created``: the response id and model;
- ``response.output_item.added``: each output item (reasoning, message,
  function call) starts a part keyed by its ``output_index``, with its item id;
  function calls become calls 0, 1, … with their ``call_id`` and name;
- ``response.reasoning_summary_text.delta`` (and ``reasoning_text.delta``)
  are reasoning, summaries of one item joined by a blank line;
  ``response.output_text.delta`` (and ``refusal.delta``) are text;
  ``response.function_call_arguments.delta`` are argument fragments;
- ``response.output_item.done``: a reasoning item's ``encrypted_content`` is
  kept as its signature;
- ``response.completed`` / ``response.incomplete``: usage and the stop reason
  (``completed``, or the incomplete reason such as ``max_output_tokens``);
  ``response.failed`` and ``error`` events are a broken stream.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, ClassVar

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

from ._openai import OpenAIModel

__all__ = ["OpenAIResponsesModel", "responses_usage"]


def responses_usage(usage: Any) -> Usage | None:
    """Amber's usage from a Responses ``ResponseUsage`` (or None)."""
    if usage is None:
        return None
    prompt = getattr(usage, "input_tokens", None) or 0
    output = getattr(usage, "output_tokens", None) or 0
    cached = getattr(getattr(usage, "input_tokens_details", None), "cached_tokens", None) or 0
    reasoning = (
        getattr(getattr(usage, "output_tokens_details", None), "reasoning_tokens", None) or 0
    )
    return Usage(
        input_tokens=prompt,
        output_tokens=output,
        cache_read_tokens=min(cached, prompt),
        reasoning_tokens=min(reasoning, output),
    )


class OpenAIResponsesModel(OpenAIModel):
    """OpenAI Responses (see the module docstring; arguments as ``ProviderModel``)."""

    provider: ClassVar[str] = "openai-responses"
    label: ClassVar[str] = "openai-responses"

    async def _open(
        self, client: Any, payload: dict[str, Any], retries: list[ModelRetry]
    ) -> tuple[AsyncIterator[Any], Any]:
        stream = await client.responses.create(**payload)
        return stream, stream

    async def _chunks(self, events: AsyncIterator[Any]) -> AsyncGenerator[Chunk, None]:
        calls: dict[int, int] = {}  # output index -> call index
        streamed: set[int] = set()  # calls whose arguments came as deltas
        summaries: dict[int, int] = {}  # output index -> last summary index
        async for event in events:
            kind = event.type
            if kind == "response.output_text.delta" or kind == "response.refusal.delta":
                yield TextDelta(text=event.delta, part=event.output_index, item_id=event.item_id)
            elif kind == "response.function_call_arguments.delta":
                index = event.output_index
                if index in calls:
                    streamed.add(index)
                    yield ToolCallDelta(index=calls[index], arguments=event.delta)
            elif kind in (
                "response.reasoning_summary_text.delta",
                "response.reasoning_text.delta",
            ):
                index = event.output_index
                section = getattr(event, "summary_index", None)
                text = event.delta
                if isinstance(section, int):
                    last = summaries.get(index)
                    if last is not None and section != last:
                        text = "\n\n" + text
                    summaries[index] = section
                yield ReasoningDelta(text=text, part=index, item_id=event.item_id)
            elif kind == "response.output_item.added":
                for chunk in self._item_started(event.item, event.output_index, calls):
                    yield chunk
            elif kind == "response.output_item.done":
                item = event.item
                index = event.output_index
                if item.type == "reasoning" and getattr(item, "encrypted_content", None):
                    yield ReasoningDelta(
                        signature=item.encrypted_content, part=index, item_id=item.id
                    )
                elif (
                    item.type == "function_call"
                    and index in calls
                    and index not in streamed
                    and item.arguments  # a server that sends the arguments whole
                ):
                    yield ToolCallDelta(index=calls[index], arguments=item.arguments)
            elif kind == "response.created":
                response = event.response
                yield MessageStart(
                    id=response.id or None, model=response.model or None, provider=self.provider
                )
            elif kind in ("response.completed", "response.incomplete"):
                response = event.response
                stop = "completed"
                details = getattr(response, "incomplete_details", None)
                if kind == "response.incomplete":
                    stop = getattr(details, "reason", None) or "incomplete"
                yield MessageFinish(usage=responses_usage(response.usage), stop_reason=stop)
                return
            elif kind in ("response.failed", "error"):
                error = getattr(getattr(event, "response", None), "error", None) or event
                message = getattr(error, "message", None) or str(error)
                code = getattr(error, "code", None)
                raise self.incomplete(f"{message} [{code}]" if code else message)
        raise self.incomplete("no response.completed arrived")

    def _item_started(self, item: Any, index: int, calls: dict[int, int]) -> list[Chunk]:
        kind = item.type
        if kind == "reasoning":
            return [ReasoningDelta(part=index, item_id=item.id)]
        if kind == "message":
            return [TextDelta(text="", part=index, item_id=item.id)]
        if kind == "function_call":
            calls[index] = len(calls)
            return [
                ToolCallDelta(
                    index=calls[index],
                    id=item.call_id,
                    name=item.name,
                    item_id=getattr(item, "id", None),
                )
            ]
        return []
