"""Provider models on their own: keys, errors, retries, loops, concurrency; live smoke tests."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import attrs
import pytest
import trio
from provider_support import (
    FIXTURES,
    MODELS,
    model_for,
    question,
    request_for,
    run_call,
    stream_once,
)

from actors import MissingSDK
from actors.providers import (
    AnthropicModel,
    GeminiModel,
    OpenAICompatibleModel,
    OpenAIModel,
    OpenAIResponsesModel,
    model_from_spec,
)
from actors.providers._base import classify
from actors.providers.testing import Reply, StubServer, load_fixture
from runtime import (
    ContextLengthError,
    ModelAuthError,
    ModelRateLimited,
    ModelRequestError,
    ModelStreamBroken,
    ModelUnavailable,
    RequestSent,
    StreamAssembler,
)

KEYS = {
    OpenAIModel: "OPENAI_API_KEY",
    OpenAIResponsesModel: "OPENAI_API_KEY",
    AnthropicModel: "ANTHROPIC_API_KEY",
    GeminiModel: "GEMINI_API_KEY",
}


def replies(provider: str, name: str) -> list[Reply]:
    return list(load_fixture(FIXTURES / provider / f"{name}.json")["replies"])


class TestKeys:
    @pytest.mark.parametrize("cls", list(KEYS), ids=lambda c: c.__name__)
    def test_a_missing_key_fails_at_start_naming_the_variable(
        self, cls: type[Any], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """No key: the model is not made, and the one line says which variable to set."""
        for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
            monkeypatch.delenv(variable, raising=False)
        variable = KEYS[cls]
        with pytest.raises(ModelAuthError, match=rf"^{variable} is not set: export {variable}="):
            cls("some-model")

    def test_keys_come_from_the_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The usual variables; Gemini also takes GOOGLE_API_KEY."""
        monkeypatch.setenv("ANTHROPIC_API_KEY", "ak")
        assert AnthropicModel("claude-sonnet-4-6").api_key == "ak"
        monkeypatch.delenv("GEMINI_API_KEY", raising=False)
        monkeypatch.setenv("GOOGLE_API_KEY", "gk")
        assert GeminiModel("gemini-2.5-flash").api_key == "gk"

    def test_a_compatible_server_needs_no_key(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Local servers: OPENAI_COMPATIBLE_API_KEY if set, else a placeholder."""
        monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
        model = OpenAICompatibleModel("llama3.1:8b", base_url="http://localhost:11434/v1")
        assert model.api_key == "not-needed"
        assert model.name == "openai-compatible:llama3.1:8b"

    def test_specs(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """provider:model names the class; the model may hold colons."""
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        assert isinstance(model_from_spec("openai:gpt-4.1-mini"), OpenAIModel)
        assert isinstance(model_from_spec("openai-responses:o4-mini"), OpenAIResponsesModel)
        compat = model_from_spec("openai-compatible:qwen:7b", base_url="http://h/v1")
        assert compat.model == "qwen:7b"

    def test_a_missing_sdk_says_which_extra(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without the SDK the class cannot load: the error names the pip extra."""
        import actors.providers as providers

        monkeypatch.delitem(providers.__dict__, "GeminiModel", raising=False)

        def refuse(name: str, package: str | None = None) -> Any:
            raise ImportError("No module named 'google'", name="google")

        monkeypatch.setattr(providers.importlib, "import_module", refuse)
        with pytest.raises(MissingSDK, match=r"pip install '\.\[gemini\]' in your Amber checkout"):
            providers.GeminiModel  # noqa: B018


class TestErrors:
    @pytest.mark.parametrize(
        ("status", "message", "streaming", "kind"),
        [
            (401, "bad key", False, ModelAuthError),
            (403, "denied", False, ModelAuthError),
            (429, "slow down", False, ModelRateLimited),
            (400, "bad tool_choice", False, ModelRequestError),
            (404, "no such model", False, ModelRequestError),
            (400, "This model's maximum context length is 8192 tokens", False, ContextLengthError),
            (400, "prompt is too long: 210000 tokens > 200000 maximum", False, ContextLengthError),
            (500, "oops", False, ModelUnavailable),
            (None, "connection refused", False, ModelUnavailable),
            (200, "overloaded_error", True, ModelStreamBroken),
        ],
    )
    def test_classification(
        self, status: int | None, message: str, streaming: bool, kind: type[Exception]
    ) -> None:
        """Each failure becomes the error a user acts on."""
        error = classify(
            RuntimeError(message), provider="openai", model="m", key_variable="OPENAI_API_KEY",
            status=status, message=message, retries=(), streaming=streaming,
        )  # fmt: skip
        assert type(error) is kind
        assert message in str(error)
        if kind is ContextLengthError:
            assert "Settings.window" in str(error)

    def test_retries_exhausted_carry_each_attempt(self) -> None:
        """Three 429s and max_retries=2: ModelRateLimited, with the two waits it made."""
        rate = replies("anthropic", "rate_limited")[0]
        with StubServer() as server:
            server.queue(rate, rate, rate)
            run = run_call(model_for("anthropic", server), request_for(question().head))
        assert isinstance(run.error, ModelRateLimited)
        assert [(r.status, r.delay) for r in run.error.retries] == [(429, 0.05), (429, 0.05)]
        assert "after 3 attempts" in str(run.error)

    @pytest.mark.parametrize("provider", list(MODELS))
    @pytest.mark.parametrize(
        ("kind", "reply"),
        [
            ("text/html", Reply(raw=b"<html>Sign in to the proxy</html>",
                                headers={"content-type": "text/html; charset=utf-8"})),
            ("application/json", Reply(body={"id": "c1", "choices": [], "candidates": []})),
        ],
        ids=["html", "json"],
    )  # fmt: skip
    def test_a_200_that_is_not_a_stream_says_so(
        self, provider: str, kind: str, reply: Reply
    ) -> None:
        """A 200 answered with a page or a whole JSON body (a proxy, a captive portal, a
        compatible server that does not stream) names what came and what to check, not
        only "no finish_reason arrived"; ModelUnavailable, since retrying the turn will not
        help until the endpoint is fixed."""
        with StubServer() as server:
            server.queue(reply)
            model = model_for(provider, server, max_retries=0)
            run = run_call(model, request_for(question().head))
        assert isinstance(run.error, ModelUnavailable), run.error
        text = str(run.error)
        assert f"'{kind}'" in text
        assert "'text/event-stream'" in text
        assert f"base_url ({model.base_url})" in text
        assert run.error.status == 200
        assert isinstance(run.error.__cause__, Exception)

    def test_a_stream_with_another_content_type_still_streams(self) -> None:
        """The content type is only read to explain a broken stream: a compatible server
        that streams events under another type keeps working."""
        events = load_fixture(FIXTURES / "openai" / "text.json")["replies"][0]
        with StubServer() as server:
            server.queue(attrs.evolve(events, headers={"content-type": "application/json"}))
            run = run_call(model_for("openai", server), request_for(question().head))
        assert run.error is None
        assert run.response is not None

    def test_a_break_after_content_under_another_type_is_only_a_break(self) -> None:
        """Text streamed under another content type, then the connection dropped: the
        stream broke (ModelStreamBroken, the text kept), it was a stream all the same."""
        dropped = replies("openai", "dropped")[0]
        with StubServer() as server:
            server.queue(attrs.evolve(dropped, headers={"content-type": "application/json"}))
            run = run_call(model_for("openai", server, max_retries=0), request_for(question().head))
        assert type(run.error) is ModelStreamBroken, run.error
        assert run.partial is not None
        assert run.partial.text

    @pytest.mark.parametrize("provider", list(MODELS))
    def test_a_stalled_stream_names_the_timeout_and_how_to_raise_it(self, provider: str) -> None:
        """The stream starts, then no byte comes for the model's timeout: the error says how
        long it waited and which setting raises the wait, not only "timed out"."""
        with StubServer() as server:
            server.queue(*replies(provider, "slow"))
            model = model_for(provider, server, max_retries=0, timeout=0.5)
            run = run_call(model, request_for(question().head))
        assert type(run.error) is ModelStreamBroken, run.error
        text = str(run.error)
        assert "no data for 0.5 s" in text
        assert f"{type(model).__name__}(..., timeout=...)" in text
        assert run.partial is not None
        assert run.partial.text == "Sunny in"

    @pytest.mark.parametrize(
        ("provider", "body"),
        [
            ("openai", {"error": {"message": "The model `nope` does not exist",
                                  "type": "invalid_request_error", "code": "model_not_found"}}),
            ("openai-responses", {"error": {"message": "The model `nope` does not exist",
                                            "type": "invalid_request_error"}}),
            ("anthropic", {"type": "error",
                           "error": {"type": "not_found_error", "message": "model: nope"}}),
            ("gemini", {"error": {"code": 404, "status": "NOT_FOUND",
                                  "message": "models/nope is not found for API version v1beta"}}),
        ],
    )  # fmt: skip
    def test_a_404_names_the_model_and_the_base_url(
        self, provider: str, body: dict[str, Any]
    ) -> None:
        """A 404 is almost always a wrong model name or endpoint: the error says so, naming
        both values, after the provider's own message."""
        with StubServer() as server:
            server.queue(Reply.error(404, body))
            model = model_for(provider, server, max_retries=0)
            run = run_call(model, request_for(question().head))
            assert len(server.requests) == 1
        assert type(run.error) is ModelRequestError, run.error
        assert run.error.status == 404
        text = str(run.error)
        assert "nope" in text
        assert (
            f"the model name ({model.model!r}) or the base URL ({model.base_url!r}) is wrong"
            in text
        )

    def test_gemini_retries_honour_retry_info(self) -> None:
        """Gemini's RetryInfo.retryDelay is the wait (the SDK would not read it)."""
        with StubServer() as server:
            server.queue(*replies("gemini", "rate_limited"))
            run = run_call(model_for("gemini", server), request_for(question().head))
        assert run.response is not None
        assert [(r.status, r.delay) for r in run.response.retries] == [(429, 0.05)]


class TestLoops:
    def test_the_same_model_runs_under_asyncio(self) -> None:
        """Outside Amber's trio loop (asyncio), a model works too: one client per loop."""
        with StubServer() as server:
            server.queue(*replies("openai", "text"))
            model = model_for("openai", server)

            async def main() -> str:
                assembler = StreamAssembler(fallback_id="run_1")
                async for chunk in model.stream(request_for(question().head)):
                    assembler.feed(chunk)
                await model.aclose()
                return assembler.response().text

            assert asyncio.run(main()) == "Sunny in Tokyo."

    @pytest.mark.parametrize("provider", list(MODELS))
    def test_concurrent_calls_share_one_model(self, provider: str) -> None:
        """Two calls at once on one model in one trio loop: both complete."""
        with StubServer() as server:
            server.queue(*replies(provider, "text"), *replies(provider, "text"))
            model = model_for(provider, server)
            request = request_for(question().head)
            texts: list[str] = []

            async def one() -> None:
                run = await stream_once(model, request)
                assert run.response is not None, run.error
                texts.append(run.response.text)

            async def main() -> None:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(one)
                    nursery.start_soon(one)
                await model.aclose()

            trio.run(main)
        assert texts == ["Sunny in Tokyo."] * 2

    def test_request_sent_comes_first_with_the_digest(self) -> None:
        """A stream opens with what it sent, before any network answer."""
        with StubServer() as server:
            server.queue(*replies("gemini", "text"))
            run = run_call(model_for("gemini", server), request_for(question().head))
        first = run.chunks[0]
        assert isinstance(first, RequestSent)
        assert first.provider == "gemini"
        assert first.payload_digest.startswith("sha256:")


_LIVE = {
    "openai": ("OPENAI_API_KEY", "openai:gpt-4.1-mini"),
    "openai-responses": ("OPENAI_API_KEY", "openai-responses:gpt-4.1-mini"),
    "anthropic": ("ANTHROPIC_API_KEY", "anthropic:claude-haiku-4-5"),
    "gemini": ("GEMINI_API_KEY", "gemini:gemini-2.5-flash"),
}


@pytest.mark.parametrize("provider", list(_LIVE))
def test_live_smoke(provider: str) -> None:
    """One real call per provider, only when its key is set (AMBER_LIVE_MODEL_<PROVIDER>
    picks the model)."""
    variable, spec = _LIVE[provider]
    if not os.environ.get(variable) and not (
        provider == "gemini" and os.environ.get("GOOGLE_API_KEY")
    ):
        pytest.skip(f"{variable} is not set: no live {provider} smoke test")
    override = os.environ.get(f"AMBER_LIVE_MODEL_{provider.upper().replace('-', '_')}")
    model = model_from_spec(
        override or spec, params={"max_tokens": 64} if provider == "anthropic" else None
    )
    run = run_call(model, request_for(question("Say hi in one word.").head, tools=()))
    assert run.error is None, run.error
    assert run.response is not None
    assert run.response.text.strip()
    assert run.response.usage is not None
    assert run.response.usage.output_tokens > 0
