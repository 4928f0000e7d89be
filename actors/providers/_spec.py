"""``model_from_spec("anthropic:claude-sonnet-4-6")``: a provider model from a short name.

Specs are ``PROVIDER:MODEL``: ``openai:`` (Chat Completions), ``openai-responses:``,
``anthropic:``, ``gemini:``, and ``openai-compatible:`` with a ``base_url``
(a local vLLM, Ollama, llama.cpp or LM Studio server). The model name may
itself hold colons (``openai-compatible:llama3.1:8b``). Keys come from the
providers' usual environment variables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._errors import InvalidConfig

if TYPE_CHECKING:  # _base needs anyio, which only the SDK extras install
    from ._base import ProviderModel

__all__ = ["PROVIDERS", "model_from_spec"]

PROVIDERS = {
    "openai": ("OpenAIModel", "OPENAI_API_KEY", "openai"),
    "openai-responses": ("OpenAIResponsesModel", "OPENAI_API_KEY", "openai"),
    "anthropic": ("AnthropicModel", "ANTHROPIC_API_KEY", "anthropic"),
    "gemini": ("GeminiModel", "GEMINI_API_KEY", "gemini"),
    "openai-compatible": ("OpenAICompatibleModel", "OPENAI_COMPATIBLE_API_KEY", "openai"),
}
"""Spec prefix -> (model class, key variable, the ``amber[…]`` extra with its SDK)."""


def model_from_spec(spec: str, *, base_url: str | None = None, **options: Any) -> ProviderModel:
    """The provider model ``spec`` names (see the module docstring).

    Args:
        spec: ``PROVIDER:MODEL``.
        base_url: another endpoint; required for ``openai-compatible``.
        **options: passed to the model (``params``, ``max_retries``, ``api_key`` …).

    Raises:
        ValueError: a malformed spec or an unknown provider (the message lists them).
        ModelAuthError: the provider's key variable is not set.
        ImportError: the provider's SDK is not installed (the message says which extra).
    """
    provider, sep, model = spec.partition(":")
    if not sep or not provider or not model:
        raise InvalidConfig(
            f"A model is named PROVIDER:MODEL, like openai:gpt-4.1-mini or "
            f"anthropic:claude-sonnet-4-6 (got {spec!r}); providers: {', '.join(PROVIDERS)}."
        )
    entry = PROVIDERS.get(provider)
    if entry is None:
        raise InvalidConfig(
            f"Unknown provider {provider!r} in {spec!r}; use one of {', '.join(PROVIDERS)}."
        )
    class_name, _, _extra = entry
    from . import _load

    cls = _load(class_name)
    if provider == "openai-compatible":
        if not base_url:
            raise InvalidConfig(
                f"{spec} needs --base-url, the server's OpenAI endpoint (Ollama: "
                "http://localhost:11434/v1, vLLM: http://localhost:8000/v1, llama.cpp: "
                "http://localhost:8080/v1, LM Studio: http://localhost:1234/v1)."
            )
        return cls(model, base_url=base_url, **options)  # type: ignore[no-any-return]
    return cls(model, base_url=base_url, **options)  # type: ignore[no-any-return]
