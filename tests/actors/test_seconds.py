"""``time_limit``: the one parser of every number of seconds the ``amber`` options take.

User trial: ``--timeout nan`` was taken (and waited for ever), ``--lease-ttl inf`` and
``--poll 1e400`` too; only ``recover --older-than`` refused them, with a parser of its own.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from actors._cli import ExitCode, cli
from actors._seconds import MAX_SECONDS, time_limit
from runtime import InvalidArgument

ABSURD = ["inf", "-inf", "nan", "NaN", "1e400", str(10**400), "-1", "abc", "", "0x10", "1 s"]


class TestTimeLimit:
    @given(st.floats(min_value=0, max_value=MAX_SECONDS))
    def test_numbers_in_range_are_taken(self, seconds: float) -> None:
        """A finite number from the minimum to MAX_SECONDS, given as text or a number."""
        assert time_limit(seconds, what="--timeout") == seconds
        assert time_limit(repr(seconds), what="--timeout") == seconds

    @given(
        st.one_of(
            st.sampled_from([math.inf, -math.inf, math.nan, 10**400, MAX_SECONDS * 2]),
            st.floats(max_value=-1e-300),
            st.sampled_from(ABSURD),
        )
    )
    def test_anything_else_is_refused(self, value: object) -> None:
        with pytest.raises(InvalidArgument, match=r"^--timeout must be a number of seconds "):
            time_limit(value, what="--timeout")

    def test_the_message_says_what_is_allowed_and_what_came(self) -> None:
        with pytest.raises(InvalidArgument) as caught:
            time_limit("nan", what="--timeout", minimum=0, above_minimum=True)
        assert str(caught.value) == (
            "--timeout must be a number of seconds over 0 and at most 3153600000 (100 years); "
            "got 'nan'. Pass a plain number in that range, such as 300."
        )
        with pytest.raises(InvalidArgument) as caught:
            time_limit(10**400, what="poll", minimum=0.1)
        assert str(caught.value).startswith(
            "poll must be a number of seconds from 0.1 to 3153600000 (100 years); got 1000"
        )
        assert len(str(caught.value)) < 200  # an absurd value is cut in the message

    def test_bounds(self) -> None:
        assert time_limit("0", what="x") == 0
        assert time_limit(str(MAX_SECONDS), what="x") == MAX_SECONDS
        with pytest.raises(InvalidArgument):
            time_limit("0", what="x", minimum=0, above_minimum=True)
        with pytest.raises(InvalidArgument):
            time_limit(0.05, what="x", minimum=0.1)
        with pytest.raises(InvalidArgument):
            time_limit(True, what="x")  # a TOML boolean is not a number of seconds


OPTIONS = [
    (["recover", "--db", "missing.db", "--older-than"], "--older-than"),
    (["resume", "s", "--db", "missing.db", "--timeout"], "--timeout"),
    (["worker", "--db", "postgresql://nobody@nowhere/x", "--app", "m:f", "--lease-ttl"],
     "--lease-ttl"),
    (["worker", "--db", "postgresql://nobody@nowhere/x", "--app", "m:f", "--poll"], "--poll"),
]  # fmt: skip
MOST = {"--lease-ttl": "to 86400;"}
"""The options whose range ends before 100 years, and how their message says it."""


class TestOptions:
    @pytest.mark.parametrize(("argv", "option"), OPTIONS, ids=[o for _, o in OPTIONS])
    @pytest.mark.parametrize("value", ["inf", "nan", "-1", "1e400", str(10**400)])
    def test_every_seconds_option_refuses_absurd_values(
        self, argv: list[str], option: str, value: str
    ) -> None:
        """Exit 2 before anything runs, naming the option and the range it takes."""
        result = CliRunner().invoke(cli, [*argv, value])
        assert result.exit_code == ExitCode.USAGE, result.output
        assert f"Invalid value for '{option}': {option} must be a number of seconds " in (
            result.output
        )
        assert MOST.get(option, "(100 years)") in result.output
        assert "Traceback" not in result.output

    @pytest.mark.parametrize("key", ["lease_ttl", "poll"])
    @pytest.mark.parametrize("value", ["inf", "nan", "-1.0", "1e400"])
    def test_worker_config_values(self, tmp_path: Path, key: str, value: str) -> None:
        config = tmp_path / "worker.toml"
        config.write_text(f"[worker]\n{key} = {value}\n", encoding="utf-8")
        result = CliRunner().invoke(cli, ["worker", "--config", str(config)])
        assert result.exit_code == ExitCode.USAGE, result.output
        assert f"In the worker config '{config}', {key} must be a number of seconds " in (
            result.output
        )
