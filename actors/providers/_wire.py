"""The HTTP request a payload becomes: ``wire_request(provider, payload)``.

For OpenAI (Chat Completions and Responses) and Anthropic the JSON body is
the payload itself (the SDKs send the arguments as they are). For Gemini it
is what google-genai's converter makes of them (camel-cased keys, bytes as
base64), computed with the installed SDK.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from .._errors import InvalidConfig

__all__ = ["wire_request"]

_PATHS = {
    "openai": "/chat/completions",
    "openai-compatible": "/chat/completions",
    "openai-responses": "/responses",
    "anthropic": "/v1/messages",
}


def _plain(value: Any) -> Any:
    """``value`` as plain JSON (bytes as base64, as the SDKs send them)."""

    def default(item: Any) -> Any:
        if isinstance(item, bytes | bytearray):
            return base64.b64encode(bytes(item)).decode("ascii")
        raise TypeError(f"cannot send {type(item).__name__}")

    return json.loads(json.dumps(value, default=default))


def wire_request(provider: str, payload: dict[str, Any]) -> dict[str, Any]:
    """``{"method", "path", "body"}`` of the request ``payload`` is sent as.

    The path is relative to the SDK's base URL. Gemini's body needs
    google-genai installed.

    Raises:
        ValueError: an unknown provider.
        ImportError: Gemini's SDK is missing.
    """
    if provider == "gemini":
        from ._gemini import gemini_wire

        model = str(payload.get("model", ""))
        name = model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"
        return {
            "method": "POST",
            "path": f"/v1beta/{name}:streamGenerateContent?alt=sse",
            "body": gemini_wire(payload),
        }
    path = _PATHS.get(provider)
    if path is None:
        raise InvalidConfig(
            f"No wire format for provider {provider!r}; known: {sorted([*_PATHS, 'gemini'])}."
        )
    return {"method": "POST", "path": path, "body": _plain(payload)}
