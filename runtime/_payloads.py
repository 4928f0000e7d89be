"""Whole request payloads for each provider API, built from a model's view (pure).

``build_payload(provider, view, model=…, system=…, tools=…, params=…)``
returns the keyword arguments the provider model passes to its official SDK
(``client.chat.completions.create(**payload)`` …). It is the one place a
request is spelled, used both to send it and to rebuild it later from an
audit row (``rebuild_request``), so the two can never drift apart.

``params`` are provider-native parameters merged over the defaults
(``temperature``, ``max_tokens``, ``reasoning`` …); a parameter set to None
is left out. The defaults:

- ``openai`` (Chat Completions, and OpenAI-compatible servers): streamed
  with ``stream_options.include_usage`` (set ``stream_options`` to None for
  a server that refuses it); tools as ``function`` tools.
- ``openai-responses``: ``store`` false, and for reasoning models (``o…``,
  ``gpt-5…``, or any request with ``reasoning`` set) ``include`` asks for
  the encrypted reasoning, which then goes back in later requests of the
  turn; tools as non-strict ``function`` tools.
- ``anthropic``: ``max_tokens`` 8192; tools with ``input_schema``.
- ``gemini``: parameters go into ``config`` (``temperature``,
  ``thinking_config`` …); tools as ``function_declarations`` with
  ``parameters_json_schema``; the SDK's automatic function calling off.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from ._errors import ProjectionError
from ._json import canonical, thaw
from ._openai_responses import RESPONSES, spell_responses
from ._providers import to_anthropic, to_gemini, to_openai
from ._request import digest
from ._view import ModelView, ViewRole

__all__ = [
    "EARLIER_BUILDERS",
    "PAYLOAD_BUILDERS",
    "PayloadBuilder",
    "ToolSchema",
    "build_payload",
    "payload_digest",
]

ToolSchema = Mapping[str, Any]
"""A tool as ``tools_json`` spells it: ``{"name", "description", "parameters"}``."""

PayloadBuilder = Callable[..., dict[str, Any]]
"""``builder(view, *, model, system, tools, params) -> payload``."""

_REASONING_MODEL = re.compile(r"^(o\d|gpt-5)")


def _merge(payload: dict[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    # Sorted, and canonical below: frozen maps iterate in hash order, which changes
    # with every process; a request is the same bytes in every process.
    for key in sorted(params):
        value = params[key]
        if value is None:
            payload.pop(key, None)
        else:
            payload[key] = canonical(value)
    return payload


def _ends_on_user(provider: str, view: ModelView) -> None:
    if view.last_role() is ViewRole.ASSISTANT:  # the messages are not built for it
        raise ProjectionError(
            f"The {provider} request for session {view.session_id!r} at seq {view.seq} would end "
            "on the assistant's side (the provider reads that as a prefill, or refuses it); a "
            "model is called after input, tool results or a nudge."
        )


def openai_payload(
    view: ModelView,
    *,
    model: str,
    system: str | None,
    tools: Sequence[ToolSchema],
    params: Mapping[str, Any],
) -> dict[str, Any]:
    """Chat Completions arguments (also for OpenAI-compatible servers)."""
    _ends_on_user("openai", view)
    payload: dict[str, Any] = {
        "model": model,
        "messages": to_openai(view, system=system),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if tools:
        payload["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t["name"],
                    "description": t["description"],
                    "parameters": thaw(t["parameters"]),
                },
            }
            for t in tools
        ]
    return _merge(payload, params)


def responses_payload(
    view: ModelView,
    *,
    model: str,
    system: str | None,
    tools: Sequence[ToolSchema],
    params: Mapping[str, Any],
    bare_ids: bool = False,
) -> dict[str, Any]:
    """Responses arguments; reasoning goes back when ``include`` asks for it encrypted
    (``bare_ids``: as ``spell_responses``)."""
    _ends_on_user(RESPONSES, view)
    payload: dict[str, Any] = {"model": model, "stream": True, "store": False}
    if _REASONING_MODEL.match(model) or params.get("reasoning") is not None:
        payload["include"] = ["reasoning.encrypted_content"]
    if tools:
        payload["tools"] = [
            {
                "type": "function",
                "name": t["name"],
                "description": t["description"],
                "parameters": thaw(t["parameters"]),
                "strict": False,
            }
            for t in tools
        ]
    payload = _merge(payload, params)
    reasoning = "reasoning.encrypted_content" in (payload.get("include") or ())
    spelled = spell_responses(view, system=system, reasoning=reasoning, bare_ids=bare_ids)
    return {**spelled, **payload}


def anthropic_payload(
    view: ModelView,
    *,
    model: str,
    system: str | None,
    tools: Sequence[ToolSchema],
    params: Mapping[str, Any],
) -> dict[str, Any]:
    """Messages arguments."""
    _ends_on_user("anthropic", view)
    payload: dict[str, Any] = {"model": model, "max_tokens": 8192}
    payload.update(to_anthropic(view, system=system))
    if tools:
        payload["tools"] = [
            {
                "name": t["name"],
                "description": t["description"],
                "input_schema": thaw(t["parameters"]),
            }
            for t in tools
        ]
    payload["stream"] = True
    return _merge(payload, params)


def gemini_payload(
    view: ModelView,
    *,
    model: str,
    system: str | None,
    tools: Sequence[ToolSchema],
    params: Mapping[str, Any],
) -> dict[str, Any]:
    """``generate_content_stream`` arguments: ``model``, ``contents`` and ``config``."""
    _ends_on_user("gemini", view)
    spelled = to_gemini(view, system=system)
    config: dict[str, Any] = {}
    if "system_instruction" in spelled:
        config["system_instruction"] = spelled["system_instruction"]
    if tools:
        config["tools"] = [
            {
                "function_declarations": [
                    {
                        "name": t["name"],
                        "description": t["description"],
                        "parameters_json_schema": thaw(t["parameters"]),
                    }
                    for t in tools
                ]
            }
        ]
    config["automatic_function_calling"] = {"disable": True}
    return {"model": model, "contents": spelled["contents"], "config": _merge(config, params)}


PAYLOAD_BUILDERS: dict[str, PayloadBuilder] = {
    "openai": openai_payload,
    RESPONSES: responses_payload,
    "anthropic": anthropic_payload,
    "gemini": gemini_payload,
}
"""The payload builder of each provider API Amber ships a model for."""

EARLIER_BUILDERS: dict[str, tuple[PayloadBuilder, ...]] = {
    RESPONSES: (partial(responses_payload, bare_ids=True),),
}
"""How a provider's requests were spelled before a change of its builder, newest first:
``rebuild_request`` tries them when today's spelling is not the one recorded, so a row
recorded before the change still rebuilds exactly (Responses: item ids sent bare)."""


def build_payload(
    provider: str,
    view: ModelView,
    *,
    model: str,
    system: str | None = None,
    tools: Sequence[ToolSchema] = (),
    params: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The SDK arguments of one request to ``provider`` (see the module docstring).

    Raises:
        ProjectionError: an unknown provider, or a view that ends on the
            assistant's side (a request never does).
    """
    builder = PAYLOAD_BUILDERS.get(provider)
    if builder is None:
        raise ProjectionError(
            f"No payload builder for provider {provider!r}; Amber builds "
            f"{sorted(PAYLOAD_BUILDERS)}. A model for another API builds its own payload."
        )
    return builder(view, model=model, system=system, tools=tools, params=params or {})


def payload_digest(payload: Mapping[str, Any]) -> str:
    """The digest recorded for a payload (``RequestRecord.payload_digest``)."""
    return digest(payload)
