"""Whole payloads against the official SDKs' request types, strictly (tests/runtime/sdk_types)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import anthropic.types.message_create_params
import openai.types.chat.completion_create_params
import openai.types.responses.response_create_params
import pydantic
import typing_extensions
from google.genai import types as genai

_spec = importlib.util.spec_from_file_location(
    "amber_sdk_types", Path(__file__).parent.parent / "runtime" / "sdk_types.py"
)
assert _spec is not None
assert _spec.loader is not None
_sdk_types = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_sdk_types)
conform = _sdk_types.conform

_PARAMS = {
    "openai": openai.types.chat.completion_create_params.CompletionCreateParamsStreaming,
    "openai-responses": openai.types.responses.response_create_params.ResponseCreateParamsStreaming,
    "anthropic": anthropic.types.message_create_params.MessageCreateParamsStreaming,
}


def payload_problems(provider: str, payload: dict[str, Any]) -> list[str]:
    """Problems that keep ``payload`` from being the SDK's request type (empty: fine)."""
    if provider == "gemini":
        problems = []
        if set(payload) != {"model", "contents", "config"}:
            problems.append(f"$: keys {sorted(payload)}")
        for i, content in enumerate(payload["contents"]):
            problems += conform(content, genai.Content, f"$.contents[{i}]")
            try:
                genai.Content.model_validate(content)
            except pydantic.ValidationError as error:
                problems.append(f"$.contents[{i}]: {error}")
        try:
            genai.GenerateContentConfig(**payload["config"])
        except pydantic.ValidationError as error:
            problems.append(f"$.config: {error}")
        return problems
    hints = typing_extensions.get_type_hints(_PARAMS[provider], include_extras=True)
    problems = []
    for key, value in payload.items():
        if key not in hints:
            problems.append(f"$.{key}: not a parameter of {_PARAMS[provider].__name__}")
        else:
            problems += conform(value, hints[key], f"$.{key}")
    return problems
