"""OpenAI Chat Completions through the ``openai`` SDK; also any OpenAI-compatible server.

``OpenAIModel("gpt-4.1-mini")`` reads ``OPENAI_API_KEY``.
``OpenAICompatibleModel("llama3.1:8b", base_url="http://localhost:11434/v1")``
talks to vLLM, Ollama, llama.cpp's server, LM Studio and the like; its key
(if the server wants one) is ``OPENAI_COMPATIBLE_API_KEY``.

Mapping of the streamed ``chat.completion.chunk`` objects:

- the first chunk's ``id`` and ``model`` start the message;
- ``delta.content`` (and ``delta.refusal``) is text; ``delta.reasoning_content``
  or ``delta.reasoning`` (DeepSeek, vLLM, Ollama, OpenRouter) is reasoning,
  which Chat Completions cannot take back;
- ``delta.tool_calls[i]`` fragments keep their ``index`` (a server that
  leaves it out gets the fragment's position);
- ``finish_reason`` is the stop reason; the usage chunk (requested with
  ``stream_options.include_usage``) gives prompt, cached, completion and
  reasoning tokens. A stream that ends without a finish reason is broken.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, ClassVar

import openai

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

from .._errors import InvalidConfig
from ._base import ProviderModel, Retrying

__all__ = ["OpenAICompatibleModel", "OpenAIModel", "openai_usage"]


class _AsyncOpenAI(Retrying, openai.AsyncOpenAI):
    pass


def openai_usage(usage: Any) -> Usage | None:
    """Amber's usage from an OpenAI ``CompletionUsage`` (or None)."""
    if usage is None:
        return None
    prompt = getattr(usage, "prompt_tokens", None) or 0
    completion = getattr(usage, "completion_tokens", None) or 0
    prompt_details = getattr(usage, "prompt_tokens_details", None)
    completion_details = getattr(usage, "completion_tokens_details", None)
    cached = getattr(prompt_details, "cached_tokens", None) or 0
    written = getattr(prompt_details, "cache_write_tokens", None) or 0
    reasoning = getattr(completion_details, "reasoning_tokens", None) or 0
    return Usage(
        input_tokens=prompt,
        output_tokens=completion,
        cache_read_tokens=min(cached, prompt),
        cache_write_tokens=min(written, max(0, prompt - cached)),
        reasoning_tokens=min(reasoning, completion),
    )


class OpenAIModel(ProviderModel):
    """OpenAI Chat Completions (see the module docstring; arguments as ``ProviderModel``)."""

    provider: ClassVar[str] = "openai"
    key_variable: ClassVar[str | None] = "OPENAI_API_KEY"
    label: ClassVar[str] = "openai"

    def _make_client(self) -> Any:
        kwargs: dict[str, Any] = {"api_key": self.api_key, "max_retries": self.max_retries}
        if self.base_url is not None:
            kwargs["base_url"] = self.base_url
        if self.timeout is not None:
            kwargs["timeout"] = self.timeout
        return _AsyncOpenAI(**kwargs)

    async def _open(
        self, client: Any, payload: dict[str, Any], retries: list[ModelRetry]
    ) -> tuple[AsyncIterator[Any], Any]:
        stream = await client.chat.completions.create(**payload)
        return stream, stream

    async def _chunks(self, events: AsyncIterator[Any]) -> AsyncGenerator[Chunk, None]:
        started = False
        stop: str | None = None
        usage: Usage | None = None
        async for chunk in events:
            if not started:
                started = True
                yield MessageStart(
                    id=getattr(chunk, "id", None) or None,
                    model=getattr(chunk, "model", None) or None,
                    provider=self.provider,
                )
            for choice in getattr(chunk, "choices", None) or ():
                if getattr(choice, "index", 0) not in (0, None):
                    continue  # n > 1 is not asked for; keep the first choice
                delta = choice.delta
                if delta is not None:
                    for item in _delta_chunks(delta):
                        yield item
                if choice.finish_reason:
                    stop = str(choice.finish_reason)
            if getattr(chunk, "usage", None) is not None:
                usage = openai_usage(chunk.usage)
        if stop is None:
            raise self.incomplete("no finish_reason arrived")
        yield MessageFinish(usage=usage, stop_reason=stop)


def _delta_chunks(delta: Any) -> list[Chunk]:
    out: list[Chunk] = []
    extra = getattr(delta, "model_extra", None) or {}
    reasoning = extra.get("reasoning_content") or extra.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        out.append(ReasoningDelta(text=reasoning))
    if delta.content:
        out.append(TextDelta(text=delta.content))
    refusal = getattr(delta, "refusal", None)
    if refusal:
        out.append(TextDelta(text=refusal))
    for position, call in enumerate(delta.tool_calls or ()):
        function = call.function
        index = call.index if isinstance(call.index, int) else position
        out.append(
            ToolCallDelta(
                index=index,
                id=call.id or None,
                name=(function.name or None) if function is not None else None,
                arguments=(function.arguments or "") if function is not None else "",
            )
        )
    return out


class OpenAICompatibleModel(OpenAIModel):
    """A server that speaks OpenAI Chat Completions (vLLM, Ollama, llama.cpp, LM Studio …).

    Args:
        model: the model name the server knows.
        base_url: the server's OpenAI endpoint (``http://localhost:11434/v1`` for
            Ollama, ``http://localhost:8000/v1`` for vLLM …); required.
        api_key: the key, if the server wants one; None reads
            ``OPENAI_COMPATIBLE_API_KEY`` and, if that is unset, sends none.
        **options: as ``ProviderModel`` (``params={"stream_options": None}`` for a
            server that refuses ``stream_options``).
    """

    key_variable: ClassVar[str | None] = "OPENAI_COMPATIBLE_API_KEY"
    label: ClassVar[str] = "openai-compatible"

    def __init__(self, model: str, *, base_url: str, **options: Any) -> None:
        if not isinstance(base_url, str) or not base_url.strip():
            raise InvalidConfig(
                "An OpenAI-compatible server needs base_url, its OpenAI endpoint (for Ollama "
                "http://localhost:11434/v1, for vLLM http://localhost:8000/v1)."
            )
        super().__init__(model, base_url=base_url, **options)

    def _key(self, api_key: str | None) -> str:
        import os

        if api_key is not None:
            return api_key
        # Local servers need no key; the SDK needs a non-empty one to send.
        return os.environ.get(self.key_variable or "", "").strip() or "not-needed"
