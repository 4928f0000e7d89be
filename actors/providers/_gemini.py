"""Gemini through ``google-genai``: ``GeminiModel("gemini-2.5-flash")``.

The key is ``GEMINI_API_KEY`` (or ``GOOGLE_API_KEY``). The client gets an
``httpx2.AsyncClient`` of its own per event loop: google-genai's default
async client keys its pools by asyncio loop, which a trio loop is not.

google-genai retries nothing unless told, and its retry ignores
``retry-after``; this model retries a 408, 429 or 5xx (and connection
errors) itself, waiting what the server asked (``retry-after``, or the
``RetryInfo.retryDelay`` of the error body) or else 1, 2, 4 … seconds with
jitter, and reports each attempt as a ``ModelRetry`` chunk.

Mapping of each streamed ``GenerateContentResponse``:

- the first one's ``response_id`` and ``model_version`` start the message;
- parts of the first candidate in order: ``thought`` parts are reasoning,
  other text parts are text, ``function_call`` parts are calls 0, 1, … (the
  arguments arrive whole); a part's ``thought_signature`` is kept (base64)
  on that part, so it goes back on the same part;
- ``finish_reason`` is the stop reason (``STOP``, ``MAX_TOKENS`` …);
  ``usage_metadata`` gives prompt (tool-use prompt included), cached,
  candidate and thought tokens. A stream without a finish reason is broken;
- ``prompt_feedback.block_reason`` (the prompt itself was blocked: no
  candidates come) is a ``ModelRequestError`` naming the reason.
"""

from __future__ import annotations

import base64
import contextvars
import json
import os
import random
import re
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, ClassVar

import anyio
import httpx2
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from runtime import (
    Chunk,
    MessageFinish,
    MessageStart,
    ModelAuthError,
    ModelRequestError,
    ModelRetry,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
)

from ._base import ProviderModel

__all__ = ["GeminiModel", "gemini_usage", "gemini_wire"]

_RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_TRANSIENT = (httpx2.TransportError,)
_RESPONSES: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar(
    "amber_gemini_responses", default=None
)
_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


async def _keep_response(response: Any) -> None:
    """httpx2 response hook: remember the call's HTTP response, to close it on cancel."""
    found = _RESPONSES.get()
    if found is not None:
        found.append(response)


def gemini_usage(metadata: Any) -> Usage | None:
    """Amber's usage from ``GenerateContentResponse.usage_metadata`` (or None)."""
    if metadata is None:
        return None

    def value(name: str) -> int:
        found = getattr(metadata, name, None)
        return found if isinstance(found, int) else 0

    prompt = value("prompt_token_count") + value("tool_use_prompt_token_count")
    thoughts = value("thoughts_token_count")
    output = value("candidates_token_count") + thoughts
    return Usage(
        input_tokens=prompt,
        output_tokens=output,
        cache_read_tokens=min(value("cached_content_token_count"), prompt),
        reasoning_tokens=thoughts,
    )


def _signature(part: Any) -> str | None:
    raw = getattr(part, "thought_signature", None)
    if not raw:
        return None
    return base64.b64encode(raw).decode("ascii") if isinstance(raw, bytes) else str(raw)


def _retry_delay(exc: BaseException) -> float | None:
    """What the server asked to wait: ``retry-after``, or ``RetryInfo.retryDelay``."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is not None:
        value = headers.get("retry-after")
        if value:
            try:
                return max(0.0, float(value))
            except ValueError:
                pass
    details = getattr(exc, "details", None)
    error = details.get("error", details) if isinstance(details, dict) else None
    for item in (error or {}).get("details", ()) if isinstance(error, dict) else ():
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("RetryInfo"):
            match = _DELAY.match(str(item.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None


class GeminiModel(ProviderModel):
    """Gemini (see the module docstring; arguments as ``ProviderModel``)."""

    provider: ClassVar[str] = "gemini"
    key_variable: ClassVar[str | None] = "GEMINI_API_KEY"
    label: ClassVar[str] = "gemini"
    max_delay: ClassVar[float] = 60.0
    """The longest wait before a retry, whatever the server asks."""

    def _key(self, api_key: str | None) -> str:
        if api_key is None and not os.environ.get("GEMINI_API_KEY", "").strip():
            fallback = os.environ.get("GOOGLE_API_KEY", "").strip()
            if fallback:
                return fallback
            raise ModelAuthError(
                f"GEMINI_API_KEY is not set: export GEMINI_API_KEY=... (or GOOGLE_API_KEY, or "
                f"pass api_key=...) to use gemini:{self.model}.",
                provider=self.provider,
            )
        return super()._key(api_key)

    def _make_client(self) -> Any:
        timeout = self.timeout if self.timeout is not None else 600.0
        http = httpx2.AsyncClient(
            timeout=timeout, event_hooks={"response": [_keep_response]}, follow_redirects=True
        )
        options: dict[str, Any] = {"httpx_async_client": http}
        if self.base_url is not None:
            options["base_url"] = self.base_url
        if self.timeout is not None:
            options["timeout"] = int(self.timeout * 1000)
        return genai.Client(api_key=self.api_key, http_options=genai_types.HttpOptions(**options))

    async def _close_client(self, client: Any) -> None:
        http = client._api_client._async_httpx_client
        if http is not None:
            await http.aclose()

    async def _open(
        self, client: Any, payload: dict[str, Any], retries: list[ModelRetry]
    ) -> tuple[AsyncIterator[Any], Any]:
        attempt = 0
        while True:
            responses: list[Any] = []
            token = _RESPONSES.set(responses)
            try:
                stream = await client.aio.models.generate_content_stream(**payload)
                first = await stream.__anext__()
                return _prepend(first, stream), responses[-1] if responses else None
            except StopAsyncIteration:
                return _prepend(None, None), None
            except genai_errors.UnknownApiResponseError as exc:
                # The first chunk arrived and did not parse: the stream is broken, as when a
                # later one does not (the SDK reads the first while opening the stream).
                return _raising(exc), responses[-1] if responses else None
            except (genai_errors.APIError, *_TRANSIENT) as exc:
                status = getattr(exc, "code", None)
                retryable = isinstance(exc, _TRANSIENT) or status in _RETRY_STATUS
                if not retryable or attempt >= self.max_retries:
                    raise
                asked = _retry_delay(exc)
                delay = (
                    min(asked, self.max_delay)
                    if asked is not None
                    else min(2.0**attempt, self.max_delay) * (0.75 + random.random() / 4)
                )
                reason = (
                    f"{status} {getattr(exc, 'status', '') or ''}".strip()
                    if status
                    else type(exc).__name__
                )
                if asked is not None:
                    reason += f" (retry after {asked:g} s)"
                retries.append(
                    ModelRetry(
                        attempt=attempt + 1,
                        status=status if isinstance(status, int) else None,
                        error=reason,
                        delay=delay,
                    )
                )
                attempt += 1
                await anyio.sleep(delay)
            finally:
                _RESPONSES.reset(token)

    def _status_and_message(self, exc: BaseException) -> tuple[int | None, str]:
        if isinstance(exc, genai_errors.APIError):
            status = exc.code if isinstance(exc.code, int) else None
            kind = f" [{exc.status}]" if exc.status else ""
            return status, f"{exc.message or exc}{kind}"
        return super()._status_and_message(exc)

    async def _chunks(self, events: AsyncIterator[Any]) -> AsyncGenerator[Chunk, None]:
        started = False
        calls = 0
        stop: str | None = None
        usage: Usage | None = None
        async for response in events:
            if not started:
                started = True
                yield MessageStart(
                    id=getattr(response, "response_id", None) or None,
                    model=getattr(response, "model_version", None) or None,
                    provider=self.provider,
                )
            self._check_prompt(response)
            candidates = getattr(response, "candidates", None) or ()
            if candidates:
                candidate = candidates[0]
                content = getattr(candidate, "content", None)
                for part in getattr(content, "parts", None) or ():
                    signature = _signature(part)
                    call = getattr(part, "function_call", None)
                    if call is not None:
                        yield ToolCallDelta(
                            index=calls,
                            id=getattr(call, "id", None) or None,
                            name=call.name,
                            arguments=json.dumps(call.args or {}, ensure_ascii=False),
                            signature=signature,
                        )
                        calls += 1
                    elif getattr(part, "thought", None):
                        yield ReasoningDelta(text=part.text or "", signature=signature)
                    elif part.text is not None or signature is not None:
                        yield TextDelta(text=part.text or "", signature=signature)
                reason = getattr(candidate, "finish_reason", None)
                if reason is not None:
                    stop = getattr(reason, "value", None) or str(reason)
            metadata = getattr(response, "usage_metadata", None)
            if metadata is not None:
                usage = gemini_usage(metadata)
        if stop is None:
            raise self.incomplete("no finish_reason arrived")
        yield MessageFinish(usage=usage, stop_reason=stop)

    def _check_prompt(self, response: Any) -> None:
        """Raise the error for a blocked prompt (``prompt_feedback.block_reason``)."""
        feedback = getattr(response, "prompt_feedback", None)
        reason = getattr(feedback, "block_reason", None)
        if reason is None:
            return
        name = getattr(reason, "value", None) or str(reason)
        said = getattr(feedback, "block_reason_message", None)
        detail = f": {said}" if said else ""
        raise ModelRequestError(
            f"{self.provider} ({self.model}) blocked the prompt (block reason {name}{detail}); "
            "the model was not asked. Rephrase or remove what the safety filter refused (the "
            "latest input, an image, a tool result); the same request is blocked again.",
            provider=self.provider,
        )


_WIRE_CLIENT: Any = None


def gemini_wire(payload: dict[str, Any]) -> dict[str, Any]:
    """The JSON body google-genai sends for ``payload`` (``generate_content_stream``'s
    arguments), converted exactly as the SDK converts it.

    Uses the SDK's own converter (``google.genai.models``), so the body is what
    the SDK version installed would send.
    """
    global _WIRE_CLIENT
    from google.genai import _common
    from google.genai import models as genai_models

    if _WIRE_CLIENT is None:
        _WIRE_CLIENT = genai.Client(api_key="amber-replay")
    config = payload.get("config")
    parsed = genai_types.GenerateContentConfig(**config) if config else None
    parameters = genai_types._GenerateContentParameters(
        model=payload["model"], contents=payload["contents"], config=parsed
    )
    body = genai_models._GenerateContentParameters_to_mldev(
        _WIRE_CLIENT._api_client, parameters, None, parameters
    )
    for key in ("config", "_url", "_query"):
        body.pop(key, None)
    return _common.encode_unserializable_types(_common.convert_to_dict(body))


async def _raising(error: Exception) -> AsyncIterator[Any]:
    """A stream whose first event is ``error`` (raised where the stream is read)."""
    raise error
    yield  # an async generator


async def _prepend(first: Any, rest: AsyncIterator[Any] | None) -> AsyncIterator[Any]:
    if first is None or rest is None:
        return
    yield first
    async for item in rest:
        yield item
