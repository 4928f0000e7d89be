"""``Settings``: values checked when made, with messages that say what to give."""

from __future__ import annotations

import math

import pytest

from actors import InvalidConfig, Settings


class TestLeaseSettings:
    @pytest.mark.parametrize("value", [1, 1.5, 30, 86400])
    def test_a_lease_ttl_from_1_to_86400_is_taken(self, value: float) -> None:
        assert Settings(lease_ttl=value).lease_ttl == value

    @pytest.mark.parametrize("value", [None, 0, 0.5, -30, 86401, math.inf, math.nan, True, "30"])
    def test_any_other_lease_ttl_is_refused(self, value: object) -> None:
        """None, under a second, over a day, infinite, NaN or not a number: refused."""
        with pytest.raises(
            InvalidConfig,
            match=rf"^Settings\.lease_ttl must be a number of seconds from 1 to 86400 \(got "
            rf"{value!r}\); a session's lease lasts that long unrenewed \(it is renewed every "
            r"third of it\), 30 is the default\.$",
        ):
            Settings(lease_ttl=value)  # type: ignore[arg-type]

    @pytest.mark.parametrize("value", [0.01, 1, 30, 86400 * 7])
    def test_a_positive_finite_lease_poll_is_taken(self, value: float) -> None:
        assert Settings(lease_poll=value).lease_poll == value

    @pytest.mark.parametrize("value", [None, 0, -1, math.inf, math.nan, False, "30"])
    def test_any_other_lease_poll_is_refused(self, value: object) -> None:
        with pytest.raises(
            InvalidConfig,
            match=rf"^Settings\.lease_poll must be a positive, finite number of seconds \(got "
            rf"{value!r}\); it is how often a worker looks for work nobody runs, 30 is the "
            r"default\.$",
        ):
            Settings(lease_poll=value)  # type: ignore[arg-type]
