"""Prices, price tables and what a call cost."""

from __future__ import annotations

import pytest

from runtime import (
    Price,
    PriceError,
    PriceTable,
    SessionCost,
    Usage,
    call_cost,
    session_cost,
)

TABLE = PriceTable(
    {
        "gpt-4.1-mini": Price(input=0.4, output=1.6, cached_input=0.1),
        "gpt-4.1": Price(input=2.0, output=8.0, cached_input=0.5),
        "claude-sonnet-4-5": Price(
            input=3.0,
            output=15.0,
            cached_input=0.3,
            cache_write=3.75,
            long_context_above=200_000,
            long_input=6.0,
            long_output=22.5,
        ),
    }
)


class TestCallCost:
    def test_each_kind_of_token_at_its_price(self) -> None:
        """Uncached input, cache reads, cache writes and output, each at its price."""
        usage = Usage(
            input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=400_000,
            cache_write_tokens=100_000,
        )  # fmt: skip
        price = Price(input=3.0, output=15.0, cached_input=0.3, cache_write=3.75)
        expected = (500_000 * 3.0 + 400_000 * 0.3 + 100_000 * 3.75 + 100_000 * 15.0) / 1e6
        assert call_cost(usage, price) == pytest.approx(expected)

    def test_missing_cache_prices_charge_the_input_price(self) -> None:
        """No cached price known: cache reads cost what input costs (never under-billed)."""
        usage = Usage(input_tokens=100, cache_read_tokens=100)
        assert call_cost(usage, Price(input=1.0, output=1.0)) == pytest.approx(100 / 1e6)

    def test_long_context_prices(self) -> None:
        """Above the threshold the long prices apply to the whole call."""
        price = TABLE.prices["claude-sonnet-4-5"]
        short = call_cost(Usage(input_tokens=200_000, output_tokens=1_000), price)
        long = call_cost(Usage(input_tokens=200_001, output_tokens=1_000), price)
        assert short == pytest.approx((200_000 * 3.0 + 1_000 * 15.0) / 1e6)
        assert long == pytest.approx((200_001 * 6.0 + 1_000 * 22.5) / 1e6)


class TestLookup:
    @pytest.mark.parametrize(
        ("model", "found"),
        [
            ("gpt-4.1-mini", "gpt-4.1-mini"),
            ("gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"),
            ("gpt-4.1-2025-04-14", "gpt-4.1"),
            ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
            ("models/gpt-4.1", "gpt-4.1"),
            ("openai/gpt-4.1-mini", "gpt-4.1-mini"),
            ("gpt-4.1-preview", "gpt-4.1"),
            ("gpt-4.1-nano", None),  # another model, not a snapshot of gpt-4.1
            ("gpt-4.1x", None),
            ("", None),
            (None, None),
        ],
    )
    def test_names_and_snapshots(self, model: str | None, found: str | None) -> None:
        """Exact names, provider prefixes, dated and preview snapshots; never a look-alike."""
        price = TABLE.price(model)
        assert price == (None if found is None else TABLE.prices[found])

    def test_cost_is_none_when_unknown(self) -> None:
        """No usage or no price: no cost (shown as unknown, never as zero)."""
        assert TABLE.cost(None, "gpt-4.1") is None
        assert TABLE.cost(Usage(input_tokens=1), "mystery-model") is None

    def test_merged_overrides(self) -> None:
        """A user's table adds and replaces prices."""
        mine = PriceTable(
            {"gpt-4.1": Price(input=1.0, output=1.0), "local": Price(input=0, output=0)}
        )
        merged = TABLE.merged(mine)
        assert merged.prices["gpt-4.1"].input == 1.0
        assert merged.prices["gpt-4.1-mini"] == TABLE.prices["gpt-4.1-mini"]
        assert merged.cost(Usage(input_tokens=10), "local") == 0


class TestJson:
    def test_round_trip(self) -> None:
        """to_json and from_json agree."""
        assert PriceTable.from_json(TABLE.to_json()) == TABLE

    @pytest.mark.parametrize(
        ("data", "message"),
        [
            ([], r'^A price table must be an object with "models"'),
            ({"models": {"m": {"input": 1.0}}}, r"^The price of 'm' needs output\.$"),
            ({"models": {"m": {"input": 1, "output": 1, "cache": 2}}},
             r"^The price of 'm' has unknown keys \['cache'\]"),
            ({"models": {"m": {"input": -1, "output": 1}}},
             r"^The price of 'm': Price.input must be a non-negative number"),
            ({"models": {"m": 3}}, r"^The price of 'm' must be an object"),
        ],
    )  # fmt: skip
    def test_bad_tables_say_what_is_wrong(self, data: object, message: str) -> None:
        """Each error names the model and what was expected."""
        with pytest.raises(PriceError, match=message):
            PriceTable.from_json(data)


class TestSessionCost:
    def test_sums_what_rows_recorded(self) -> None:
        """Priced calls are summed; calls with usage but no cost make it a lower bound."""

        class Row:
            def __init__(self, cost: float | None, usage: Usage | None) -> None:
                self.cost_usd, self.usage = cost, usage

        cost = session_cost(
            [Row(0.5, Usage()), Row(None, Usage()), Row(None, None), Row(0.25, None)]
        )
        assert cost == SessionCost(usd=0.75, priced=2, unpriced=1)
        assert not cost.complete
