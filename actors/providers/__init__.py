"""Real models: OpenAI, Anthropic and Gemini through their official SDKs (DESIGN §7).

Each model streams Amber's chunks through the provider's SDK, records what
it sent (for exact replay), makes the SDK's retries visible, closes the
stream on an interrupt and raises errors a user can act on. The SDKs are
optional: a model class is imported when first used, and says which extra
to install (``amber[openai]``, ``amber[anthropic]``, ``amber[gemini]``, or
``amber[providers]`` for all) when its SDK is missing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .._errors import MissingSDK
from ._prices import PRICES_VARIABLE as PRICES_VARIABLE
from ._prices import default_prices as default_prices
from ._prices import load_prices as load_prices
from ._spec import PROVIDERS as PROVIDERS
from ._spec import model_from_spec as model_from_spec
from ._wire import wire_request as wire_request

if TYPE_CHECKING:
    from ._anthropic import AnthropicModel as AnthropicModel
    from ._base import ProviderModel as ProviderModel
    from ._gemini import GeminiModel as GeminiModel
    from ._openai import OpenAICompatibleModel as OpenAICompatibleModel
    from ._openai import OpenAIModel as OpenAIModel
    from ._responses import OpenAIResponsesModel as OpenAIResponsesModel

__all__ = [
    "PRICES_VARIABLE",
    "PROVIDERS",
    "AnthropicModel",
    "GeminiModel",
    "OpenAICompatibleModel",
    "OpenAIModel",
    "OpenAIResponsesModel",
    "ProviderModel",
    "default_prices",
    "load_prices",
    "model_from_spec",
    "wire_request",
]

_LAZY = {
    "AnthropicModel": ("._anthropic", "anthropic"),
    "GeminiModel": ("._gemini", "gemini"),
    "OpenAICompatibleModel": ("._openai", "openai"),
    "OpenAIModel": ("._openai", "openai"),
    "OpenAIResponsesModel": ("._responses", "openai"),
    "ProviderModel": ("._base", "providers"),
}


def _load(name: str) -> Any:
    module, extra = _LAZY[name]
    try:
        loaded = importlib.import_module(module, __name__)
    except ImportError as exc:
        raise MissingSDK(
            f"{name} needs its provider's SDK, which is not installed ({exc.name or exc}); "
            f"install it with: python3 -m pip install '.[{extra}]' in your Amber checkout "
            f"('amber[{extra}]' where Amber comes from a package index)."
        ) from exc
    value = getattr(loaded, name)
    globals()[name] = value
    return value


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return _load(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
