"""What every provider model shares: keys, the payload, one SDK client per event loop,
retries made visible, cancellation that closes the stream, and errors a user can act on.

A provider model's ``stream(request)``:

1. builds the payload with ``runtime.build_payload`` (the same function a
   replay uses) and yields ``RequestSent`` with its digest;
2. opens the stream through the official SDK, whose own retry honours
   ``retry-after`` on 429 and 5xx; each refused attempt is yielded as a
   ``ModelRetry`` once the stream opens (or carried by the error if it never
   does);
3. maps the SDK's events to Amber's chunks (the subclass's ``_chunks``);
4. on cancellation (an interrupt), closes the HTTP response in a shielded
   scope, so the server sees the client go at once.

The SDK's async clients run on anyio (httpx2), so they work on Amber's trio
effects loop as they do on asyncio; a client is made per event loop, since a
connection pool belongs to the loop that opened it.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import re
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any, ClassVar

import anyio
import sniffio

from runtime import (
    Chunk,
    ContextLengthError,
    MessageStart,
    ModelAuthError,
    ModelError,
    ModelRateLimited,
    ModelRequest,
    ModelRequestError,
    ModelRetry,
    ModelStreamBroken,
    ModelUnavailable,
    RequestSent,
    build_payload,
    digest,
    freeze,
    thaw,
)
from runtime._request import tools_json

from .._errors import InvalidConfig
from ._asyncgens import Tracked

__all__ = ["ProviderModel", "Retrying", "classify", "record_retry", "retry_recorder"]

_RETRIES: contextvars.ContextVar[list[ModelRetry] | None] = contextvars.ContextVar(
    "amber_model_retries", default=None
)
_CONTEXT_LENGTH = re.compile(
    r"context[ _]length|context[ _]window|maximum context|prompt is too long|too many tokens"
    r"|exceeds the (?:maximum|available) (?:number of tokens|context)|input token count"
    r"|reduce the length",
    re.IGNORECASE,
)


def retry_recorder() -> list[ModelRetry] | None:
    """The retries of the model call running in this task (set by ``ProviderModel``)."""
    return _RETRIES.get()


def record_retry(attempt: int, status: int | None, error: str, delay: float | None) -> None:
    """Note a refused attempt for the model call running in this task (SDK retry hooks)."""
    found = _RETRIES.get()
    if found is not None:
        found.append(ModelRetry(attempt=attempt, status=status, error=error, delay=delay))


class Retrying:
    """Records each of the SDK's own retries (status, ``retry-after``, the wait) before it
    sleeps; the wait is the SDK's: ``retry-after`` when given, else its backoff."""

    async def _sleep_for_retry(
        self,
        *,
        retries_taken: int,
        max_retries: int,
        options: Any,
        response: Any,
    ) -> None:
        remaining = max_retries - retries_taken
        headers = response.headers if response is not None else None
        timeout = self._calculate_retry_timeout(remaining, options, headers)  # type: ignore[attr-defined]
        status = response.status_code if response is not None else None
        reason = (
            f"{status} {getattr(response, 'reason_phrase', '')}".strip()
            if response is not None
            else "connection error or timeout"
        )
        if headers is not None and headers.get("retry-after"):
            reason += f" (retry-after: {headers.get('retry-after')})"
        record_retry(retries_taken + 1, status, reason, timeout)
        await anyio.sleep(timeout if math.isfinite(timeout) else 60.0)


def _loop_key() -> object:
    """The running event loop: a trio token or an asyncio loop."""
    library = sniffio.current_async_library()
    if library == "trio":
        import trio

        return trio.lowlevel.current_trio_token()
    import asyncio

    return asyncio.get_running_loop()


def classify(
    exc: BaseException,
    *,
    provider: str,
    model: str,
    key_variable: str | None,
    status: int | None,
    message: str,
    retries: tuple[ModelRetry, ...],
    streaming: bool,
    base_url: str | None = None,
) -> ModelError:
    """The Amber error for a provider failure (status and message already read from it)."""
    where = f"{provider} ({model})"
    after = f" after {len(retries) + 1} attempts" if retries else ""
    fields: dict[str, Any] = {"provider": provider, "status": status, "retries": retries}
    text = message.strip() or type(exc).__name__
    if status in (401, 403):
        hint = f"; check {key_variable}" if key_variable else "; check the API key"
        return ModelAuthError(f"{where} refused the API key ({status}): {text}{hint}.", **fields)
    if status == 429:
        return ModelRateLimited(
            f"{where} kept rate-limiting the request (429){after}: {text}. Wait, lower the "
            "request rate, or raise the model's max_retries.",
            **fields,
        )
    if status is not None and 400 <= status < 500 and status != 408:
        if _CONTEXT_LENGTH.search(text):
            return ContextLengthError(
                f"The request is longer than {model}'s context window ({provider} {status}: "
                f"{text}). Lower Settings.window (Window(max_tokens=...)) so the model's view "
                "fits, or use a model with a longer window.",
                **fields,
            )
        if status == 404:
            url = repr(base_url) if base_url else "the SDK's default"
            return ModelRequestError(
                f"{where} refused the request (404): {text}. Probably the model name "
                f"({model!r}) or the base URL ({url}) is wrong: check that the provider has "
                "that model (for this key) and that the base URL is its API.",
                **fields,
            )
        return ModelRequestError(f"{where} refused the request ({status}): {text}", **fields)
    if streaming:
        return ModelStreamBroken(
            f"The {where} stream broke before the model finished: {text}", **fields
        )
    code = f" ({status})" if status is not None else ""
    return ModelUnavailable(f"{where} failed{code}{after}: {text}", **fields)


class ProviderModel:
    """A ``Model`` that streams through a provider's official SDK (see the module docstring).

    Args:
        model: the provider's model name.
        api_key: the key; None reads the provider's usual environment variable.
        base_url: another endpoint (a proxy, a compatible server, a stub).
        params: provider-native parameters merged into every request
            (``temperature``, ``max_tokens``, ``reasoning`` …; None removes a
            default).
        max_retries: how many times a 429, a 5xx or a connection error is retried.
        timeout: seconds to wait for each connect, write or read, so a stream that sends
            nothing this long fails (None: the SDK's default, ``default_timeout``).

    Raises:
        ModelAuthError: no key given and the environment variable is not set.
    """

    provider: ClassVar[str] = ""
    """The payload builder and the name of the API (``RequestSent.provider``)."""
    default_timeout: ClassVar[float] = 600.0
    """The SDK's read timeout when ``timeout`` is None (openai and anthropic: 600 s)."""
    key_variable: ClassVar[str | None] = None
    """The environment variable the key is read from."""
    label: ClassVar[str] = ""
    """The prefix of ``name`` (``openai:``, ``anthropic:`` …)."""
    default_params: ClassVar[Mapping[str, Any]] = {}
    """Parameters every request of this class carries unless ``params`` overrides them
    (a value of None leaves one out). Kept in ``params``, so an audit row records them and
    ``amber show --call`` rebuilds the request exactly."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        params: Mapping[str, Any] | None = None,
        max_retries: int = 4,
        timeout: float | None = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidConfig(f"A model name is a non-empty str (got {model!r}).")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise InvalidConfig(f"max_retries must be a non-negative int (got {max_retries!r}).")
        self.model = model
        self.api_key = self._key(api_key)
        self.base_url = base_url
        merged = {**self.default_params, **(params or {})}
        self.params: dict[str, Any] = thaw(freeze(merged))  # type: ignore[assignment]
        self.max_retries = max_retries
        self.timeout = timeout
        self._clients: dict[Any, Any] = {}

    @property
    def name(self) -> str:
        """``provider:model`` (what audit rows and the CLI show)."""
        return f"{self.label or self.provider}:{self.model}"

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"{type(self).__name__}({self.model!r}{where})"

    # -- keys and clients ----------------------------------------------------

    def _key(self, api_key: str | None) -> str:
        if api_key is not None:
            if not api_key.strip():
                raise ModelAuthError(f"The API key for {self.label or self.provider} is empty.")
            return api_key
        variable = self.key_variable
        found = os.environ.get(variable, "").strip() if variable else ""
        if not found:
            raise ModelAuthError(
                f"{variable} is not set: export {variable}=... (or pass api_key=...) to use "
                f"{self.label or self.provider}:{self.model}.",
                provider=self.provider,
            )
        return found

    def _client(self) -> Any:
        """The SDK client of the running event loop (made on first use in that loop)."""
        key = _loop_key()
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = self._make_client()
        return client

    def _make_client(self) -> Any:  # pragma: no cover - each provider makes its own
        raise NotImplementedError

    async def aclose(self) -> None:
        """Close the SDK client of the running event loop (its pooled connections)."""
        client = self._clients.pop(_loop_key(), None)
        if client is not None:
            await self._close_client(client)

    async def _close_client(self, client: Any) -> None:
        await client.close()

    # -- the request -----------------------------------------------------------

    def payload(self, request: ModelRequest) -> dict[str, Any]:
        """The SDK arguments for ``request`` (``runtime.build_payload``)."""
        return build_payload(
            self.provider,
            request.view,
            model=self.model,
            system=request.system,
            tools=tools_json(request.tools),
            params=self.params,
        )

    def sent(self, payload: Mapping[str, Any]) -> RequestSent:
        """The ``RequestSent`` chunk for ``payload``."""
        return RequestSent(
            provider=self.provider,
            model=self.model,
            params=self.params,
            payload_digest=digest(payload),
            base_url=self.base_url,
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        """Stream the answer to ``request`` as Amber chunks (see the module docstring)."""
        payload = self.payload(request)
        yield self.sent(payload)
        client = self._client()
        retries: list[ModelRetry] = []
        tracked = Tracked()
        response: Any = None
        finished = False
        try:
            token = _RETRIES.set(retries)
            try:
                with tracked.active():
                    events, response = await self._open(client, payload, retries)
            except ModelError:
                raise
            except Exception as exc:
                raise self._error(exc, tuple(retries), streaming=False) from exc
            finally:
                _RETRIES.reset(token)
            for retry in retries:
                yield retry
            kind = _content_type(response)
            try:
                async with (
                    contextlib.aclosing(_noted(tracked, events)) as noted,
                    contextlib.aclosing(self._chunks(noted)) as chunks,
                ):
                    async for chunk in chunks:
                        if kind is not None and type(chunk) is not MessageStart:
                            kind = None  # it streamed: a break later is only a break
                        yield chunk
                finished = True
            except ModelError as exc:
                wrong = self._not_a_stream(kind, exc)
                if wrong is None:
                    raise
                raise wrong from exc
            except Exception as exc:
                error = self._error(exc, (), streaming=True)
                raise (self._not_a_stream(kind, error) or error) from exc
        finally:
            if not finished:
                await _close_quietly(response)
            await tracked.aclose()

    async def _open(
        self, client: Any, payload: dict[str, Any], retries: list[ModelRetry]
    ) -> tuple[AsyncIterator[Any], Any]:  # pragma: no cover - each provider opens its own
        """Open the stream: (the SDK's events, what to close on cancel)."""
        raise NotImplementedError

    def _chunks(self, events: AsyncIterator[Any]) -> AsyncGenerator[Chunk, None]:
        """The provider's events as Amber chunks."""
        raise NotImplementedError  # pragma: no cover - each provider maps its own

    def incomplete(self, what: str) -> ModelStreamBroken:
        """The error for a stream that ended before the model finished."""
        return ModelStreamBroken(
            f"The {self.provider} ({self.model}) stream ended before the model finished: {what}.",
            provider=self.provider,
        )

    def _not_a_stream(self, kind: str | None, error: ModelError) -> ModelUnavailable | None:
        """A stream that broke before any content, whose response was not server-sent events,
        explained: a proxy's page or a whole JSON body answered 200 where the SDK expected a
        stream. (Only such a break is explained: a server that streams under another type
        works, and one that breaks after streaming content broke as any stream can.)"""
        if kind is None or kind == "text/event-stream" or not isinstance(error, ModelStreamBroken):
            return None
        return ModelUnavailable(
            f"The {self.provider} ({self.model}) server answered 200 with {kind!r} where a "
            f"stream of server-sent events ('text/event-stream') was expected: check that "
            f"base_url ({self.base_url or 'the SDK default'}) is the provider's API and that "
            f"nothing in between (a proxy, a captive portal) answers in its place; a "
            f"compatible server must support streaming. What the stream gave: {error}",
            provider=self.provider,
            status=200,
        )

    def _status_and_message(self, exc: BaseException) -> tuple[int | None, str]:
        """The HTTP status and the provider's message of an SDK error."""
        status = getattr(exc, "status_code", None)
        body = getattr(exc, "body", None)
        message = _body_message(body) or getattr(exc, "message", None) or str(exc)
        return (status if isinstance(status, int) else None), str(message)

    def _error(
        self, exc: BaseException, retries: tuple[ModelRetry, ...], *, streaming: bool
    ) -> ModelError:
        status, message = self._status_and_message(exc)
        if streaming and isinstance(exc, ValueError) and status is None:
            message = f"malformed data from the server ({type(exc).__name__}: {exc})"
        elif status is None and _read_timed_out(exc):
            wait = self.timeout if self.timeout is not None else self.default_timeout
            said = message.strip()
            message = (
                f"no data for {wait:g} s, the model's read timeout"
                + (f" ({said})" if said and said != type(exc).__name__ else "")
                + f"; if the model needs longer between bytes, raise it: "
                f"{type(self).__name__}(..., timeout=...)"
            )
        return classify(
            exc,
            provider=self.provider,
            model=self.model,
            key_variable=self.key_variable,
            status=status,
            message=message,
            retries=retries,
            streaming=streaming,
            base_url=self.base_url,
        )


def _read_timed_out(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is an HTTP read timeout: no byte came in time."""
    seen: set[int] = set()
    found: BaseException | None = exc
    while found is not None and id(found) not in seen:
        seen.add(id(found))
        if type(found).__name__ == "ReadTimeout":
            return True
        found = found.__cause__ or found.__context__
    return False


def _body_message(body: object) -> str | None:
    """The ``message`` of a provider's JSON error body, wherever it keeps it."""
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping):
            message = error.get("message")
            if isinstance(message, str) and message:
                kind = error.get("type") or error.get("code") or error.get("status")
                return f"{message} [{kind}]" if isinstance(kind, str) and kind else message
        message = body.get("message")
        if isinstance(message, str):
            return message
    return None


async def _noted(tracked: Tracked, events: AsyncIterator[Any]) -> AsyncGenerator[Any, None]:
    """``events``, with the generators the SDK starts while making each one noted."""
    iterator = events.__aiter__()
    anext = iterator.__anext__
    enter, leave = tracked.enter, tracked.leave
    while True:
        token = enter()
        try:
            item = await anext()
        except StopAsyncIteration:
            return
        finally:
            leave(token)
        yield item


def _content_type(response: Any) -> str | None:
    """The media type of the HTTP response under an SDK's stream (None if unknown)."""
    http = getattr(response, "response", response)
    headers = getattr(http, "headers", None)
    try:
        value = headers.get("content-type") if headers is not None else None
    except Exception:  # an SDK object without a mapping of headers: nothing to explain with
        return None
    if not isinstance(value, str) or not value.strip():
        return None
    return value.split(";", 1)[0].strip().lower()


async def _close_quietly(response: Any) -> None:
    """Close an HTTP response even while cancelled (the server must see the client go)."""
    if response is None:
        return
    with anyio.CancelScope(shield=True), anyio.move_on_after(5):
        try:
            close = getattr(response, "aclose", None) or response.close
            await close()
        except Exception:  # a broken connection may fail to close; it is gone either way
            pass
