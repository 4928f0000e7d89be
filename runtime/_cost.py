"""What a model call cost: ``Price``, ``PriceTable`` and ``call_cost`` (pure).

A price table maps model names to prices in US dollars per million tokens:
input, output, cached input (a cache read), cache write, and optional
long-context prices above a prompt size (Gemini 2.5 Pro, Claude Sonnet 4
with a 1M window). ``PriceTable.cost(usage, model)`` finds the model's price
(its exact name, else the name without a dated or preview suffix, so
``gpt-4.1-mini-2025-04-14`` is priced as ``gpt-4.1-mini``) and applies it.
Amber ships a table as data (``actors.providers.default_prices``) that a
user overrides or extends; the cost of each call is stored in its audit row
when it finishes, so a later price change never rewrites history.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import attrs
from immutables import Map

from ._errors import PriceError
from ._message import Usage
from ._session_cost import SessionCost, session_cost

__all__ = ["Price", "PriceTable", "SessionCost", "call_cost", "session_cost"]

_SNAPSHOT = re.compile(
    r"^(?:-(?:\d{4}-\d{2}-\d{2}|\d{8}|\d{2}-\d{2}|\d{3}|latest|preview(?:-[\w.-]+)?"
    r"|exp(?:-[\w.-]+)?)|@[\w.-]+)$"
)


def _dollars(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None and attribute.name != "input" and attribute.name != "output":
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
    ):
        raise PriceError(
            f"Price.{attribute.name} must be a non-negative number of US dollars per million "
            f"tokens (got {value!r})."
        )


def _threshold(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PriceError(
            f"Price.long_context_above must be a non-negative number of input tokens or None "
            f"(got {value!r})."
        )


@attrs.frozen(kw_only=True)
class Price:
    """One model's prices, in US dollars per million tokens."""

    input: float = attrs.field(validator=_dollars)
    """Prompt tokens that neither hit nor filled a cache."""
    output: float = attrs.field(validator=_dollars)
    """Output tokens (reasoning included)."""
    cached_input: float | None = attrs.field(default=None, validator=_dollars)
    """Prompt tokens read from the cache; None: the input price."""
    cache_write: float | None = attrs.field(default=None, validator=_dollars)
    """Prompt tokens written to the cache; None: the input price."""
    long_context_above: int | None = attrs.field(default=None, validator=_threshold)
    """Prompts with more input tokens than this use the ``long_*`` prices."""
    long_input: float | None = attrs.field(default=None, validator=_dollars)
    """``input`` above the threshold."""
    long_output: float | None = attrs.field(default=None, validator=_dollars)
    """``output`` above the threshold."""
    long_cached_input: float | None = attrs.field(default=None, validator=_dollars)
    """``cached_input`` above the threshold."""
    long_cache_write: float | None = attrs.field(default=None, validator=_dollars)
    """``cache_write`` above the threshold."""

    @classmethod
    def from_json(cls, data: object, *, name: str = "price") -> Price:
        """A price from its JSON object (the fields above; ``input`` and ``output`` required).

        Raises:
            ValueError: not an object, an unknown key, a missing or bad price.
        """
        if not isinstance(data, Mapping):
            raise PriceError(
                f"The price of {name!r} must be an object like "
                f'{{"input": 2.0, "output": 8.0, "cached_input": 0.5}} (got {data!r}).'
            )
        known = {field.name for field in attrs.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise PriceError(
                f"The price of {name!r} has unknown keys {unknown}; known keys are "
                f"{sorted(known)} (US dollars per million tokens)."
            )
        missing = [key for key in ("input", "output") if key not in data]
        if missing:
            raise PriceError(f"The price of {name!r} needs {' and '.join(missing)}.")
        try:
            return cls(**data)
        except PriceError as exc:
            raise PriceError(f"The price of {name!r}: {exc}") from None

    def to_json(self) -> dict[str, Any]:
        """The price as its JSON object (fields left at None are left out)."""
        return {k: v for k, v in attrs.asdict(self).items() if v is not None}


def call_cost(usage: Usage, price: Price) -> float:
    """What ``usage`` costs at ``price``, in US dollars."""
    long = price.long_context_above is not None and usage.input_tokens > price.long_context_above

    def pick(above: float | None, base: float | None) -> float | None:
        return above if long and above is not None else base

    input_price = pick(price.long_input, price.input)
    output_price = pick(price.long_output, price.output)
    assert input_price is not None
    assert output_price is not None
    cached = pick(price.long_cached_input, price.cached_input)
    written = pick(price.long_cache_write, price.cache_write)
    total = (
        usage.uncached_input_tokens * input_price
        + usage.cache_read_tokens * (input_price if cached is None else cached)
        + usage.cache_write_tokens * (input_price if written is None else written)
        + usage.output_tokens * output_price
    )
    return total / 1_000_000


def _price_map(value: Mapping[str, Price]) -> Map[str, Price]:
    if isinstance(value, Map):
        return value
    prices = dict(value)
    for name, price in prices.items():
        if not isinstance(name, str) or not isinstance(price, Price):
            raise PriceError(
                f"A PriceTable maps model names to Price values (got {name!r}: {price!r})."
            )
    return Map(prices)


@attrs.frozen
class PriceTable:
    """Prices by model name; ``merged`` layers a user's prices over it."""

    prices: Map[str, Price] = attrs.field(factory=Map, converter=_price_map)
    """Model name -> its price."""

    @classmethod
    def from_json(cls, data: object) -> PriceTable:
        """A table from JSON: ``{"models": {"gpt-4.1": {"input": 2.0, …}, …}}`` (other keys,
        such as ``as_of`` and ``source``, are notes).

        Raises:
            ValueError: the data is not of that shape (the message names the model).
        """
        models = data.get("models") if isinstance(data, Mapping) else None
        if not isinstance(models, Mapping):
            raise PriceError(
                'A price table must be an object with "models": {"<model>": {"input": …, '
                f'"output": …}}}} (got {str(data)[:200]!r}).'
            )
        return cls(
            {str(name): Price.from_json(value, name=str(name)) for name, value in models.items()}
        )

    def to_json(self) -> dict[str, Any]:
        """The table as JSON (``from_json`` reads it back)."""
        return {"models": {name: self.prices[name].to_json() for name in sorted(self.prices)}}

    def merged(self, other: PriceTable | Mapping[str, Price]) -> PriceTable:
        """This table with ``other``'s prices added or replacing its own."""
        prices = other.prices if isinstance(other, PriceTable) else Map(other)
        return PriceTable(self.prices.update(prices))

    def price(self, model: str | None) -> Price | None:
        """The price of ``model``: its exact name, else without a provider prefix (``models/``,
        ``openai/``), else the longest known name it extends by a snapshot suffix (a date,
        ``-latest``, ``-preview…``, ``-001``); None when unknown."""
        if not model:
            return None
        found = self.prices.get(model)
        if found is not None:
            return found
        if "/" in model:
            return self.price(model.rsplit("/", 1)[1])
        best: str | None = None
        for name in self.prices:
            if (
                model.startswith(name)
                and (best is None or len(name) > len(best))
                and _SNAPSHOT.match(model[len(name) :])
            ):
                best = name
        return None if best is None else self.prices[best]

    def cost(self, usage: Usage | None, model: str | None) -> float | None:
        """What ``usage`` cost on ``model`` in US dollars; None when either is unknown."""
        if usage is None:
            return None
        price = self.price(model)
        return None if price is None else call_cost(usage, price)

    def __len__(self) -> int:
        return len(self.prices)
