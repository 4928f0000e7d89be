"""The price table Amber ships (``prices.json``), and the user's own layered over it.

``default_prices()`` reads the shipped table, then the file named by the
``AMBER_PRICES`` environment variable if it is set (the same JSON shape:
``{"models": {"<model>": {"input": …, "output": …, "cached_input": …}}}``),
whose prices add to or replace the shipped ones. ``load_prices(path)``
reads one file. Costs are computed with ``runtime.PriceTable``.
"""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path

from runtime import PriceError, PriceTable

from .._errors import InvalidConfig

__all__ = ["PRICES_VARIABLE", "default_prices", "load_prices", "shipped_prices"]

PRICES_VARIABLE = "AMBER_PRICES"
"""The environment variable naming a JSON file of prices that override the shipped ones."""
_SHIPPED: PriceTable | None = None


def shipped_prices() -> PriceTable:
    """The table Amber ships (read once)."""
    global _SHIPPED
    if _SHIPPED is None:
        text = resources.files(__package__).joinpath("prices.json").read_text(encoding="utf-8")
        _SHIPPED = PriceTable.from_json(json.loads(text))
    return _SHIPPED


def load_prices(path: str | Path) -> PriceTable:
    """The price table in the JSON file at ``path``.

    Raises:
        ValueError: the file is missing, not JSON, or not a price table; the
            message names the file.
    """
    where = Path(path)
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidConfig(
            f"Cannot read the price table {str(where)!r}: {exc.strerror}."
        ) from None
    except json.JSONDecodeError as exc:
        raise InvalidConfig(f"The price table {str(where)!r} is not valid JSON ({exc}).") from None
    try:
        return PriceTable.from_json(data)
    except PriceError as exc:
        raise InvalidConfig(f"The price table {str(where)!r}: {exc}") from None


def default_prices(*, environ: dict[str, str] | None = None) -> PriceTable:
    """The shipped prices, overridden by the file ``AMBER_PRICES`` names (if set).

    Raises:
        ValueError: ``AMBER_PRICES`` names a file that is not a price table.
    """
    env = os.environ if environ is None else environ
    table = shipped_prices()
    override = env.get(PRICES_VARIABLE, "").strip()
    if override:
        table = table.merged(load_prices(override))
    return table
