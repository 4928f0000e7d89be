"""Exact request replay and provider data round trips, against the stub server.

A tool step with reasoning: the model's answer (signatures, encrypted
reasoning, item ids) is stored the way the turn machine stores it; the
next request must carry that data exactly where its API requires it; and
every request the stub received must be the one ``rebuild_request``
rebuilds from the audit row, JSON-equal on the wire.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from provider_support import (
    FIXTURES,
    LOOKUP,
    Recorder,
    base_url,
    model_for,
    question,
    request_for,
    run_call,
    stream_once,
    wire,
)
from sdk_checks import payload_problems

from actors.providers import AnthropicModel, OpenAIModel
from actors.providers.testing import Reply, StubServer, load_fixture
from runtime import (
    Attachment,
    ModelRequest,
    StreamAssembler,
    TextDelta,
    Timeline,
    build_payload,
    clean_history,
    digest,
    rebuild_request,
)
from runtime.testing import check_provider_view, timelines

PROVIDERS = ["openai", "openai-responses", "anthropic", "gemini"]
SIG_A = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYdsOjLWZVW0EfhSxgZ9Ew3Dw=="
SIG_G = "CiQB0e2Kb7cZ3Vt3m5KHmQy1Y6k2qKcS8nL7PbA0v4c2vEoaBwE="
ENC = "gAAAAABoXyZx3p9Ycb1Q6R0k5u2nK8mL4v7Wd1fS3aT9eO6hJiG0cVbNzXqPyMrLwKs2Ut4Y=="


def replies(provider: str, name: str) -> list[Reply]:
    return list(load_fixture(FIXTURES / provider / f"{name}.json")["replies"])


def _json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def tool_step(provider: str, name: str | None = None) -> tuple[Recorder, list[Any], Any]:
    """Two calls made with reasoning, answered; then the final answer. Returns the recorder,
    the bodies the stub received, and the model (``name``: another model name)."""
    recorder = Recorder(question())
    with StubServer() as server:
        server.queue(*replies(provider, "parallel_calls"), *replies(provider, "text"))
        model = model_for(provider, server)
        if name is not None:
            model = type(model)(name, api_key="test-key", base_url=base_url(provider, server))
        first = request_for(recorder.state)
        run = run_call(model, first)
        assert run.response is not None, run.error
        recorder.call(first, run.response)
        for call in run.response.tool_calls:
            recorder.result(call.id, f"Sunny in {call.arguments()['query']}")
        second = request_for(recorder.state, call_index=1)
        run2 = run_call(model, second)
        assert run2.response is not None, run2.error
        recorder.call(second, run2.response)
        bodies = [r.json for r in server.requests]
    return recorder, bodies, model


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_request_is_rebuilt_exactly(provider: str) -> None:
    """The stub received what rebuild_request makes of each audit row (JSON-equal)."""
    recorder, bodies, _ = tool_step(provider)
    assert len(bodies) == 2
    for sequence, body in enumerate(bodies, start=1):
        rebuilt = rebuild_request(recorder.timeline, sequence)
        assert rebuilt.exact, f"call #{sequence}: the digest differs"
        assert _json(wire(provider, rebuilt.payload)) == body
        assert payload_problems(provider, rebuilt.payload) == []
        check_provider_view(rebuilt.payload, provider, request=True)
    # The system prompt and the tools are stored once, in the first row.
    rows = recorder.state.model_calls()
    assert rows[0].request is not None
    assert rows[0].request.system == "Be brief."
    assert rows[1].request is not None
    assert rows[1].request.system is None
    assert rows[1].request.system_digest == rows[0].request.system_digest


def test_anthropic_requests_cache_the_conversation_prefix() -> None:
    """Every Anthropic request carries the top-level cache marker (the last cacheable block:
    the next call reads the prefix this one wrote); it is recorded in the call's params, so
    the request still rebuilds exactly, and a None in params turns it off."""
    recorder, bodies, _ = tool_step("anthropic")
    assert [body.get("cache_control") for body in bodies] == [{"type": "ephemeral"}] * 2
    for row in recorder.state.model_calls():
        assert row.request is not None
        assert row.request.params["cache_control"] == {"type": "ephemeral"}
    request = request_for(question().head)
    off = AnthropicModel("claude-sonnet-4-6", api_key="k", params={"cache_control": None})
    assert "cache_control" not in off.payload(request)
    hour = {"type": "ephemeral", "ttl": "1h"}
    longer = AnthropicModel("claude-sonnet-4-6", api_key="k", params={"cache_control": hour})
    assert longer.payload(request)["cache_control"] == hour
    assert payload_problems("anthropic", longer.payload(request)) == []
    # Other providers' requests are left as they were.
    assert OpenAIModel("gpt-4.1-mini", api_key="k").params == {}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_provider_data_goes_back_where_the_api_wants_it(provider: str) -> None:
    """Signed thinking, encrypted reasoning, thought signatures and item ids round-trip."""
    _, bodies, _ = tool_step(provider)
    second = bodies[1]
    if provider == "anthropic":
        assistant = second["messages"][1]
        assert assistant["role"] == "assistant"
        assert assistant["content"][0] == {
            "type": "thinking", "thinking": "Two cities.", "signature": SIG_A,
        }  # fmt: skip
        assert [b["type"] for b in assistant["content"]] == ["thinking", "tool_use", "tool_use"]
        assert [b["type"] for b in second["messages"][2]["content"]] == ["tool_result"] * 2
    elif provider == "openai-responses":
        kinds = [item.get("type", "message") for item in second["input"]]
        assert kinds == [
            "message", "reasoning", "function_call", "function_call", "function_call_output",
            "function_call_output",
        ]  # fmt: skip
        reasoning = second["input"][1]
        assert reasoning["encrypted_content"] == ENC
        assert reasoning["id"].startswith("rs_")
        assert reasoning["summary"] == [{"type": "summary_text", "text": "Two cities."}]
        assert second["input"][2]["id"].startswith("fc_")
        assert second["input"][2]["call_id"] == "call_tokyo"
        assert second["include"] == ["reasoning.encrypted_content"]
    elif provider == "gemini":
        model_turn = second["contents"][1]
        assert model_turn["role"] == "model"
        first, then = model_turn["parts"]
        assert first["thoughtSignature"] == SIG_G
        assert first["functionCall"] == {"name": "lookup", "args": {"query": "tokyo"}}
        assert "thoughtSignature" not in then
        responses = second["contents"][2]["parts"]
        assert [p["functionResponse"]["name"] for p in responses] == ["lookup", "lookup"]
    else:
        assistant = second["messages"][2]
        assert assistant["role"] == "assistant"
        assert [c["id"] for c in assistant["tool_calls"]] == [
            "call_DdmO9pD3xa9XTPNJ32zg2hcA", "call_ABCDEF0123456789ghijklmn",
        ]  # fmt: skip
        assert [m["role"] for m in second["messages"][3:]] == ["tool", "tool"]


def test_responses_item_ids_go_only_with_their_reasoning() -> None:
    """A model whose reasoning is not sent back (no ``include``): the fc_ ids stay home too,
    or the API would answer 400 ("provided without its required 'reasoning' item")."""
    recorder, bodies, _ = tool_step("openai-responses", name="gpt-4.1")
    second = bodies[1]
    assert "include" not in second
    calls = [item for item in second["input"] if item.get("type") == "function_call"]
    assert [c["call_id"] for c in calls] == ["call_tokyo", "call_paris"]
    assert all("id" not in c for c in calls)
    check_provider_view(second, "openai-responses", request=True)
    rebuilt = rebuild_request(recorder.timeline, 2)
    assert rebuilt.exact
    assert _json(wire("openai-responses", rebuilt.payload)) == second


def test_a_request_recorded_with_the_ids_of_before_still_rebuilds_exactly() -> None:
    """A row recorded before item ids went only with their reasoning (its request sent them
    bare) still rebuilds exactly: rebuild_request tries that spelling when today's differs."""
    recorder, _, _ = tool_step("openai-responses", name="gpt-4.1")
    today = rebuild_request(recorder.timeline, 2)
    before = dict(today.payload)
    before["input"] = [dict(item) for item in today.payload["input"]]
    for item, index in zip(
        [i for i in before["input"] if i.get("type") == "function_call"], (1, 2), strict=True
    ):
        item["id"] = f"fc_67ca09c6bedc8190a7abfec07b1a1332{index}"
    assert digest(before) != today.digest
    row = recorder.state.model_calls()[1]
    assert row.request is not None
    old = attrs.evolve(row, request=attrs.evolve(row.request, payload_digest=digest(before)))
    rebuilt = rebuild_request(recorder.timeline, old)
    assert rebuilt.exact
    assert rebuilt.payload == before


def test_reasoning_of_another_provider_is_not_sent() -> None:
    """Anthropic's signed thinking never goes to Gemini or Responses (it would be refused)."""
    recorder, _, _ = tool_step("anthropic")
    view = rebuild_request(recorder.timeline, 2).view  # the request after the tool results

    gemini = build_payload("gemini", view, model="gemini-2.5-flash")
    parts = gemini["contents"][1]["parts"]
    assert all("thought_signature" not in p for p in parts)
    responses = build_payload("openai-responses", view, model="o4-mini")
    assert all(item.get("type") != "reasoning" for item in responses["input"])


class Store:
    def read(self, attachment: Attachment) -> bytes:
        return b"\x89PNG\r\n" + attachment.id.encode()


def _request(state: Any) -> ModelRequest | None:
    """The request the machine would make of ``state``, if it would make one."""
    if state.active_turn_id is None:
        return None
    view = clean_history(state, artifacts=Store(), max_result_chars=200)
    if not view.messages or view.messages[-1].role.value == "assistant":
        return None
    return ModelRequest(
        session_id=state.session_id, turn_id=state.active_turn_id, call_index=0, state=state,
        view=view, system="Be brief.", tools=(LOOKUP,), max_result_chars=200,
    )  # fmt: skip


class TestRandomSessions:
    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(timelines(rich=True), st.sampled_from(PROVIDERS))
    def test_recorded_requests_rebuild_and_validate(
        self, timeline: Timeline, provider: str
    ) -> None:
        """For random sessions: the payload a model builds validates, and its record rebuilds
        it exactly (no HTTP: the stub round trip is the test below)."""
        states = [s for s in timeline.states() if _request(s) is not None]
        for state in states[-2:]:
            request = _request(state)
            assert request is not None
            model = model_for(provider, _Offline())
            payload = model.payload(request)
            assert payload_problems(provider, payload) == []
            check_provider_view(payload, provider, request=True)
            recorder = Recorder(_upto(timeline, state))
            response = _answer(model.sent(payload))
            recorder.call(request, response)
            rebuilt = rebuild_request(
                recorder.timeline, len(recorder.state.audit), artifacts=Store()
            )
            assert rebuilt.exact
            assert rebuilt.payload == payload

    @settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(timelines(rich=True))
    def test_the_stub_receives_what_the_replay_rebuilds(self, timeline: Timeline) -> None:
        """Random sessions over HTTP, every provider: received body == rebuilt body."""
        self.over_http(timeline)

    @pytest.mark.slow
    @settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(timelines(rich=True))
    def test_many_random_sessions_over_http(self, timeline: Timeline) -> None:
        """The same, on many more sessions (CI)."""
        self.over_http(timeline)

    @pytest.mark.slow
    @settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(timelines(rich=True), st.sampled_from(PROVIDERS))
    def test_many_recorded_requests(self, timeline: Timeline, provider: str) -> None:
        """The offline rebuild-and-validate test on many more sessions (CI)."""
        self.test_recorded_requests_rebuild_and_validate.hypothesis.inner_test(  # type: ignore[attr-defined]
            self, timeline, provider
        )

    def over_http(self, timeline: Timeline) -> None:
        states = [s for s in timeline.states() if _request(s) is not None]
        if not states:
            return
        state = states[-1]
        request = _request(state)
        assert request is not None
        with StubServer() as server:
            for provider in PROVIDERS:
                server.queue(*replies(provider, "text"))
                model = model_for(provider, server)
                run = run_call(model, request)
                assert run.response is not None, run.error
                recorder = Recorder(_upto(timeline, state))
                recorder.call(request, run.response)
                rebuilt = rebuild_request(
                    recorder.timeline, len(recorder.state.audit), artifacts=Store()
                )
                assert rebuilt.exact
                assert _json(wire(provider, rebuilt.payload)) == server.requests[-1].json


class _Offline:
    """A stand-in server for models that never connect."""

    url = "http://127.0.0.1:9"


def _upto(timeline: Timeline, state: Any) -> Timeline:
    """The timeline ending at ``state`` (events after it dropped)."""
    out = Timeline.start(timeline.session_id)
    return out.extend([event for event in timeline.events() if event.seq <= state.seq])


def _answer(sent: Any) -> Any:
    assembler = StreamAssembler(fallback_id="run_1")
    assembler.feed(sent)
    assembler.feed(TextDelta(text="Sunny."))
    return assembler.response()


def test_stream_once_runs_on_trio() -> None:
    """The SDK clients run on trio (the effects loop's library) — a smoke check of the helper."""
    with StubServer() as server:
        server.queue(*replies("openai", "text"))
        model = model_for("openai", server)

        async def main() -> str:
            run = await stream_once(model, request_for(question().head))
            await model.aclose()
            assert run.response is not None
            return run.response.text

        assert trio.run(main) == "Sunny in Tokyo."
    assert digest("x") == digest("x")
