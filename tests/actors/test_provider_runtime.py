"""Provider models inside a real Runtime: the trio effects loop, interrupts, audit, cost, replay."""

from __future__ import annotations

import json
from typing import Any

import pytest
from harness import WAIT, RuntimeFactory, make_runtime, when
from provider_support import FIXTURES, model_for, wire

from actors import Delta, DeltaKind, Settings, tool
from actors.providers.testing import Reply, StubServer, load_fixture
from runtime import (
    INTERRUPTED_MARK,
    AuditStatus,
    Category,
    Price,
    PriceTable,
    Status,
    category_of,
    rebuild_request,
)
from runtime._turn_ops import NOTICES
from runtime.testing import check_invariants

__all__ = ["make_runtime"]

PRICES = PriceTable(
    {
        "gpt-4.1-mini": Price(input=0.4, output=1.6, cached_input=0.1),
        "claude-sonnet-4-6": Price(input=3.0, output=15.0, cached_input=0.3, cache_write=3.75),
    }
)


@tool
def lookup(query: str = "") -> str:
    """Looks up the weather of a city."""
    return f"Sunny in {query}"


def replies(provider: str, name: str) -> list[Reply]:
    return list(load_fixture(FIXTURES / provider / f"{name}.json")["replies"])


def settings(**fields: Any) -> Settings:
    return Settings(passivate_after=None, system_prompt="Be brief.", prices=PRICES, **fields)


class TestATurnOnAProvider:
    @pytest.mark.parametrize("provider", ["anthropic", "openai"])
    def test_tool_step_then_answer(self, make_runtime: RuntimeFactory, provider: str) -> None:
        """Calls, results, answer: rows with requests that rebuild exactly, costs, metadata."""
        with StubServer() as server:
            server.queue(*replies(provider, "parallel_calls"), *replies(provider, "text"))
            model = model_for(provider, server)
            rt = make_runtime(model=model, tools=[lookup], settings=settings())
            rt.send("s", "Weather in Tokyo and Paris?")
            state = rt.wait_idle("s", timeout=WAIT)
            bodies = [r.json for r in server.requests]
        check_invariants(rt.timeline("s"))
        rows = rt.model_calls("s")
        assert [r.status for r in rows] == [AuditStatus.COMPLETED] * 2
        for sequence, body in enumerate(bodies, start=1):
            rebuilt = rebuild_request(rt.timeline("s"), sequence)
            assert rebuilt.exact
            assert json.loads(json.dumps(wire(provider, rebuilt.payload))) == body
        assert all(r.cost_usd is not None and r.cost_usd > 0 for r in rows)
        assert rows[0].response_model is not None
        reply = [m for m in state.messages if category_of(m) is Category.REPLY][-1]
        metrics = reply.metadata["turn_metrics"]
        assert metrics["turn_cost_usd"] == pytest.approx(
            sum(r.cost_usd or 0 for r in rows), abs=1e-6
        )
        if provider == "anthropic":
            # The signed thinking of the tool step went back, first in its assistant message.
            assistant = bodies[1]["messages"][1]["content"]
            assert [b["type"] for b in assistant] == ["thinking", "tool_use", "tool_use"]
            thought = next(m for m in state.messages if category_of(m) is Category.THOUGHT)
            assert thought.metadata["model_provider"] == "anthropic"
            assert thought.metadata["model_parts"][0]["signature"]

    def test_retries_show_in_the_audit_row(self, make_runtime: RuntimeFactory) -> None:
        """A 429 with retry-after, then the answer: the row lists the retry."""
        with StubServer() as server:
            server.queue(*replies("openai", "rate_limited"))
            rt = make_runtime(model=model_for("openai", server), settings=settings())
            rt.send("s", "hi")
            rt.wait_idle("s", timeout=WAIT)
        (row,) = rt.model_calls("s")
        assert [(r.status, r.delay) for r in row.retries] == [(429, 0.05)]
        assert row.status is AuditStatus.COMPLETED

    def test_a_bad_request_ends_the_turn_with_the_providers_message(
        self, make_runtime: RuntimeFactory
    ) -> None:
        """A 400: the turn fails; its reason and audit row say what the provider said, the
        user sees the short crash notice of its kind (the conversation is too long)."""
        with StubServer() as server:
            server.queue(*replies("anthropic", "context_length"))
            rt = make_runtime(model=model_for("anthropic", server), settings=settings())
            rt.send("s", "hi")
            state = rt.wait_idle("s", timeout=WAIT)
        (row,) = rt.model_calls("s")
        assert row.status is AuditStatus.FAILED
        assert row.request is not None  # the request that got the 400 can be rebuilt
        assert "prompt is too long" in (row.error or "")
        assert "Settings.window" in (row.error or "")
        (turn,) = state.turns.values()
        assert "ContextLengthError" in (turn.reason or "")
        assert "Settings.window" in (turn.reason or "")
        notice = next(m for m in state.messages if category_of(m) is Category.CRASH_NOTICE)
        assert notice.content == NOTICES["context"]

    def test_a_broken_stream_keeps_what_arrived_marked(self, make_runtime: RuntimeFactory) -> None:
        """A dropped connection: the partial reply is kept, marked, with the error."""
        with StubServer() as server:
            server.queue(*replies("gemini", "dropped"))
            rt = make_runtime(model=model_for("gemini", server), settings=settings())
            rt.send("s", "hi")
            state = rt.wait_idle("s", timeout=WAIT)
        partial = next(m for m in state.messages if category_of(m) is Category.REPLY)
        assert partial.content == "Sunny in"
        assert partial.metadata[INTERRUPTED_MARK] is True
        # What streamed comes first, then the notice that the call failed.
        assert [category_of(m) for m in state.messages] == [
            Category.USER_QUESTION,
            Category.REPLY,
            Category.CRASH_NOTICE,
        ]
        assert "ModelStreamBroken" in str(partial.metadata["model_error"])
        (row,) = rt.model_calls("s")
        assert row.status is AuditStatus.FAILED


PROVIDERS = ["openai", "openai-responses", "anthropic", "gemini"]
STOPS = {
    ("openai", "cut"): "length",
    ("openai", "blocked"): "content_filter",
    ("openai-responses", "cut"): "max_output_tokens",
    ("openai-responses", "blocked"): "content_filter",
    ("anthropic", "cut"): "max_tokens",
    ("anthropic", "blocked"): "refusal",
    ("gemini", "cut"): "MAX_TOKENS",
    ("gemini", "blocked"): "SAFETY",
}


class TestStoppedShort:
    @pytest.mark.parametrize("provider", PROVIDERS)
    @pytest.mark.parametrize("kind", ["cut", "blocked"])
    def test_a_reply_cut_off_or_blocked_fails_the_turn_at_once(
        self, make_runtime: RuntimeFactory, provider: str, kind: str
    ) -> None:
        """A reply stopped by the token limit or a safety filter is not a complete answer:
        the turn fails at once (one request, no nudge), the user is told why, and the partial
        text stays, marked, in the messages and in the audit row with its stop reason."""
        with StubServer() as server:
            server.queue(*replies(provider, kind), *replies(provider, "text"))
            rt = make_runtime(model=model_for(provider, server), settings=settings())
            rt.send("s", "hi")
            state = rt.wait_idle("s", timeout=WAIT)
            assert len(server.requests) == 1
        check_invariants(rt.timeline("s"))
        stop = STOPS[provider, kind]
        (row,) = rt.model_calls("s")
        assert row.status is AuditStatus.FAILED
        assert row.stop_reason == stop
        assert row.content.startswith("Sunny in")
        assert row.usage is not None
        assert repr(stop) in (row.error or "")
        (turn,) = state.turns.values()
        assert turn.status.value == "error"
        assert repr(stop) in (turn.reason or "")
        notice = next(m for m in state.messages if category_of(m) is Category.CRASH_NOTICE)
        assert notice.content == NOTICES[kind]
        partial = next(m for m in state.messages if category_of(m) is Category.REPLY)
        assert partial.content.startswith("Sunny in")
        assert partial.metadata[INTERRUPTED_MARK] is True
        assert repr(stop) in str(partial.metadata["model_error"])


class TestInterrupt:
    @pytest.mark.parametrize("provider", ["openai", "openai-responses", "anthropic", "gemini"])
    def test_new_input_closes_the_stream(self, make_runtime: RuntimeFactory, provider: str) -> None:
        """A slow stream, then a new message: the server sees the client go; the partial
        reply is kept; the next turn answers."""
        with StubServer() as server:
            server.queue(*replies(provider, "slow"), *replies(provider, "text"))
            streaming, on_delta = when(
                lambda item: isinstance(item, Delta) and item.kind is DeltaKind.TEXT and item.text
            )
            rt = make_runtime(model=model_for(provider, server), settings=settings())
            rt.subscribe(on_delta=on_delta)
            rt.send("s", "first")
            streaming.wait()
            rt.send("s", "actually, second")
            assert server.disconnected.wait(WAIT), "the provider never saw the stream close"
            state = rt.wait_idle("s", timeout=WAIT)
        inputs = [m for m in state.messages if category_of(m) is Category.USER_QUESTION]
        assert [m.status for m in inputs] == [Status.INTERRUPTED, Status.PROCESSED]
        replies_ = [m for m in state.messages if category_of(m) is Category.REPLY]
        assert replies_[0].content == "Sunny in"
        assert replies_[0].metadata[INTERRUPTED_MARK] is True
        assert replies_[-1].content == "Sunny in Tokyo."
        rows = rt.model_calls("s")
        assert [r.status for r in rows] == [AuditStatus.INTERRUPTED, AuditStatus.COMPLETED]
