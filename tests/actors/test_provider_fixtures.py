"""Every provider fixture through the real SDK against the stub server.

For each fixture the provider model streams from a local HTTP server that
speaks the provider's wire format; what it assembles must be what the
fixture expects, and the request the server received must be the payload
(as the SDK puts it on the wire) — the same payload a replay rebuilds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from provider_support import FIXTURES, model_for, question, request_for, run_call, wire
from sdk_checks import payload_problems

from actors.providers.testing import StubServer, load_fixture
from runtime import (
    CallSegment,
    ModelRetry,
    ReasoningSegment,
    RequestSent,
    TextSegment,
    Usage,
    digest,
)
from runtime.testing import check_provider_view

PATHS = sorted(FIXTURES.glob("*/*.json"))


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def _parts(response: Any) -> list[list[Any]]:
    out: list[list[Any]] = []
    for part in response.parts:
        if isinstance(part, CallSegment):
            out.append(["call", part.index] + ([part.signature] if part.signature else []))
        elif isinstance(part, ReasoningSegment):
            if part.redacted:
                out.append(["redacted", part.signature])
            elif part.text or part.signature:
                out.append(["reasoning", part.signature])
        elif isinstance(part, TextSegment) and (part.text or part.signature):
            out.append(["text", part.signature or part.item_id])
    return out


@pytest.mark.parametrize("path", PATHS, ids=_id)
def test_fixture(path: Path) -> None:
    """The stream assembles to what the fixture expects; the request on the wire is the payload."""
    fixture = load_fixture(path)
    provider = fixture["provider"]
    expect = fixture["expect"]
    state = question().head
    request = request_for(state)
    with StubServer() as server:
        server.queue(*fixture["replies"])
        model = model_for(provider, server)
        run = run_call(model, request, cancel_after_text=bool(expect.get("interrupted")))
        if expect.get("interrupted"):
            assert server.disconnected.wait(5), "the server never saw the client go"
        received = list(server.requests)
    payload = model.payload(request)
    assert payload_problems(provider, payload) == []  # the SDK's request type, strictly
    check_provider_view(payload, provider, request=True)  # PROVIDERS.md's rules
    sent = run.chunks[0]
    assert isinstance(sent, RequestSent)
    assert sent.payload_digest == digest(payload)
    assert received, "no request reached the stub"
    for request_seen in received:
        assert request_seen.method == "POST"
        assert request_seen.json == json.loads(json.dumps(wire(provider, payload)))
    assert len(received) == len(fixture["replies"])

    if "error" in expect:
        assert run.error is not None, f"expected {expect['error']}, got {run.response}"
        assert type(run.error).__name__ == expect["error"]
        if "status" in expect:
            assert run.error.status == expect["status"]
        if "message" in expect:
            assert expect["message"] in str(run.error)
        if "partial_text" in expect:
            assert run.partial is not None
            assert run.partial.text == expect["partial_text"]
        return
    if expect.get("interrupted"):
        assert run.cancelled
        assert run.partial is not None
        assert run.partial.text == expect["partial_text"]
        return
    assert run.error is None, run.error
    response = run.response
    assert response is not None
    assert response.finished
    assert response.provider == provider
    assert response.request == sent
    assert response.text == expect.get("text", "")
    assert response.reasoning == expect.get("reasoning", "")
    calls = [[c.name, json.loads(c.arguments_json)] for c in response.tool_calls]
    assert calls == expect.get("calls", [])
    if "call_ids" in expect:
        assert [c.id for c in response.tool_calls] == expect["call_ids"]
    if "stop_reason" in expect:
        assert response.stop_reason == expect["stop_reason"]
    if "id" in expect:
        assert response.id == expect["id"]
    if "usage" in expect:
        assert response.usage is not None
        for field, value in expect["usage"].items():
            assert getattr(response.usage, field) == value, field
    if "parts" in expect:
        assert _parts(response) == expect["parts"]
    retries = [[r.status, r.delay] for r in response.retries]
    expected = expect.get("retries", [])
    assert [r[0] for r in retries] == [r[0] for r in expected]
    for (_, delay), (_, wanted) in zip(retries, expected, strict=True):
        assert delay is not None
        if wanted is not None:
            assert delay == pytest.approx(wanted)  # the server's retry-after, honoured
    assert all(isinstance(r, ModelRetry) for r in response.retries)
    assert response.usage is None or isinstance(response.usage, Usage)
