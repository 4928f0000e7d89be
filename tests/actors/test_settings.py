"""``Settings``: values checked when made, with messages that say what to give."""

from __future__ import annotations

import math
import re
from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

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


class TestCountsAndLimits:
    @pytest.mark.parametrize("value", [0, -1, True, 2.0, "25", None])
    def test_max_model_calls_below_one_is_refused(self, value: object) -> None:
        """0 was accepted, then every turn failed without calling the model."""
        with pytest.raises(
            InvalidConfig,
            match=rf"^Settings\.max_model_calls must be an int of 1 or more \(got {value!r}\); "
            r"it is how many model calls one turn may make before it fails, 25 is the "
            r"default\.$",
        ):
            Settings(max_model_calls=value)  # type: ignore[arg-type]

    def test_one_model_call_is_taken(self) -> None:
        assert Settings(max_model_calls=1).max_model_calls == 1

    @pytest.mark.parametrize("value", [0, -5, True, 1.5, "20000"])
    def test_max_result_chars_must_be_positive(self, value: object) -> None:
        """It was not checked at all: every model call failed later, in the projection."""
        with pytest.raises(
            InvalidConfig,
            match=rf"^Settings\.max_result_chars must be a positive int or None to never "
            rf"excerpt \(got {value!r}\)\.$",
        ):
            Settings(max_result_chars=value)  # type: ignore[arg-type]

    @pytest.mark.parametrize("value", [None, 1])
    def test_max_result_chars_none_or_positive_is_taken(self, value: int | None) -> None:
        assert Settings(max_result_chars=value).max_result_chars == value

    @pytest.mark.parametrize("name", ["store_timeout", "ask_timeout"])
    @pytest.mark.parametrize("value", [None, 0, -1, math.inf, math.nan, True, "30"])
    def test_runtime_timeouts_must_be_positive_and_finite(self, name: str, value: object) -> None:
        """None and infinity were taken: ``ask_timeout=inf`` overflowed in the first ask,
        ``store_timeout=inf`` killed the session's actor."""
        with pytest.raises(
            InvalidConfig,
            match=rf"^Settings\.{name} must be a positive, finite number of seconds \(got "
            rf"{value!r}\)\.$",
        ):
            Settings(**{name: value})


class TestValuesOfTheRightKind:
    """The fields without a number were not checked: ``Settings(agent_name=5)`` or
    ``window=5`` was taken, then every turn failed later, far from the mistake."""

    @pytest.mark.parametrize(
        ("field", "value", "expected"),
        [
            ("system_prompt", 5, "a str or None"),
            ("system_prompt", b"be brief", "a str or None"),
            ("agent_name", 5, "a str that is not blank"),
            ("agent_name", "", "a str that is not blank"),
            ("agent_name", "  ", "a str that is not blank"),
            ("agent_name", None, "a str that is not blank"),
            ("window", 5, "a Window or None"),
            ("window", {"max_tokens": 100}, "a Window or None"),
            ("artifacts", "/tmp/files", "an ArtifactStore or None"),
            ("input_limits", None, "an InputLimits"),
            ("input_limits", {"max_text_chars": 10}, "an InputLimits"),
        ],
    )
    def test_a_value_of_another_kind_is_refused(
        self, field: str, value: object, expected: str
    ) -> None:
        with pytest.raises(
            InvalidConfig,
            match=rf"^Settings\.{field} must be {expected} \(got {re.escape(repr(value))}",
        ):
            Settings(**{field: value})

    @pytest.mark.parametrize(
        ("value", "got"),
        [(5, "5 that is an int"), (b"x", "b'x' that is a bytes"), (object, "<class 'object'> "
         "that is a type")],
    )  # fmt: skip
    def test_the_message_names_the_type_with_its_article(self, value: object, got: str) -> None:
        """The value's type reads with its article ("that is a int" before)."""
        with pytest.raises(InvalidConfig) as caught:
            Settings(system_prompt=value)  # type: ignore[arg-type]
        assert str(caught.value) == (
            f"Settings.system_prompt must be a str or None (got {got}); None sends no system "
            "prompt."
        )

    def test_values_of_the_right_kind_are_taken(self) -> None:
        from runtime import InputLimits, Window

        settings = Settings(
            system_prompt="Be brief.",
            agent_name="Kesoku",
            window=Window(max_tokens=1000),
            input_limits=InputLimits(),
        )
        assert settings.agent_name == "Kesoku"
        assert Settings(system_prompt=None, window=None, artifacts=None).window is None


class TestDeliveryRetries:
    @pytest.mark.parametrize("value", [0, 1, 5, 100])
    def test_a_count_of_0_or_more_is_taken(self, value: int) -> None:
        assert Settings(delivery_retries=value).delivery_retries == value

    @pytest.mark.parametrize("value", [-1, True, 2.0, "5", None])
    def test_any_other_delivery_retries_is_refused(self, value: object) -> None:
        with pytest.raises(
            InvalidConfig,
            match=rf"^Settings\.delivery_retries must be an int of 0 or more \(got "
            rf"{re.escape(repr(value))}\); it is how many times a send an adapter failed is "
            r"tried again while the session is live \(0: never, until the session is next "
            r"loaded\), 5 is the default\.$",
        ):
            Settings(delivery_retries=value)  # type: ignore[arg-type]

    @pytest.mark.parametrize("value", [None, 0, -1, math.inf, math.nan, False, "1"])
    def test_any_other_delivery_backoff_is_refused(self, value: object) -> None:
        with pytest.raises(
            InvalidConfig,
            match=rf"^Settings\.delivery_backoff must be a positive, finite number of seconds "
            rf"\(got {re.escape(repr(value))}\); it is the wait before the first retry of a "
            r"failed send \(each next waits twice as long, up to 300 s\), 1\.0 is the default\.$",
        ):
            Settings(delivery_backoff=value)  # type: ignore[arg-type]

    def test_the_delay_doubles_up_to_its_cap(self) -> None:
        settings = Settings(delivery_backoff=1.5)
        delays = [settings.delivery_delay(n) for n in range(1, 12)]
        assert delays[:5] == [1.5, 3.0, 6.0, 12.0, 24.0]
        assert delays[-1] == 300.0
        assert delays == sorted(delays)
        assert Settings(delivery_backoff=1000).delivery_delay(3) == 1000  # above the cap: kept
        assert Settings().delivery_delay(10_000) == 300.0  # no overflow

    @given(st.floats(min_value=1e-6, max_value=1e6), st.integers(1, 10_000))
    def test_the_delay_is_positive_growing_and_bounded(self, backoff: float, failures: int) -> None:
        """Every delay is finite, at least the first, at most the cap (or the first when that
        is larger), and never shorter than the one before."""
        settings = Settings(delivery_backoff=backoff)
        delay = settings.delivery_delay(failures)
        assert backoff <= delay <= max(backoff, 300.0)
        assert math.isfinite(delay)
        assert settings.delivery_delay(failures + 1) >= delay


ALL_SETTINGS = (
    "system_prompt, agent_name, window, artifacts, max_result_chars, input_limits, "
    "max_nudges, max_model_calls, approval_timeout, model_timeout, passivate_after, "
    "recover_after, store_timeout, ask_timeout, delivery_retries, delivery_backoff, "
    "lease_ttl, lease_poll, prices"
)


class TestUnknownSettings:
    @pytest.mark.parametrize(
        ("typo", "nearest"),
        [("passivate_afer", "did you mean 'passivate_after'?"),
         ("timeout", "did you mean 'ask_timeout', 'model_timeout' or 'store_timeout'?"),
         ("zzz", "no setting has a name near it.")],
    )  # fmt: skip
    def test_an_unknown_setting_is_named_with_the_nearest(self, typo: str, nearest: str) -> None:
        """Settings(passivate_afer=60) raised attrs' bare TypeError ("unexpected keyword
        argument"); it names the setting, the nearest valid names and every setting."""
        with pytest.raises(
            InvalidConfig,
            match=rf"^Settings has no setting {typo!r}; {re.escape(nearest)} The settings are: "
            rf"{re.escape(ALL_SETTINGS)} \(docs/runtime\.md, Settings\)\.$",
        ):
            Settings(**{typo: 60})

    def test_evolve_with_an_unknown_setting_is_named_too(self) -> None:
        """attrs.evolve makes a Settings the same way: the same message."""
        with pytest.raises(InvalidConfig, match=r"^Settings has no setting 'max_nudge'; did you"):
            attrs.evolve(Settings(), max_nudge=1)

    def test_positional_arguments_say_to_name_them(self) -> None:
        """Settings("Be brief.") raised a bare TypeError about positional arguments."""
        with pytest.raises(
            InvalidConfig,
            match=r"^Settings takes its settings by name \(got 1 positional argument: "
            r"'Be brief\.'\); write Settings\(system_prompt=\.\.\., passivate_after=\.\.\.\)\.$",
        ):
            Settings("Be brief.")  # type: ignore[misc]

    def test_the_list_is_every_field(self) -> None:
        """The list in the message is the fields of Settings, in their order."""
        assert ", ".join(f.name for f in attrs.fields(Settings)) == ALL_SETTINGS


class TestTheDocumentedTable:
    def test_docs_list_every_setting_once_in_order(self) -> None:
        """docs/runtime.md's Settings table has a row per field, in the order of the class
        (it lacked artifacts and prices)."""
        docs = Path(__file__).parents[2] / "docs" / "runtime.md"
        section = docs.read_text(encoding="utf-8").split("\n## Settings\n", 1)[1]
        section = section.split("\n## ", 1)[0]
        rows = re.findall(r"^\| `(\w+)` \|", section, flags=re.MULTILINE)
        assert rows == [f.name for f in attrs.fields(Settings)]

    def test_docs_give_the_defaults_of_the_code(self) -> None:
        """Each plain default in the table is the field's default."""
        docs = Path(__file__).parents[2] / "docs" / "runtime.md"
        section = docs.read_text(encoding="utf-8").split("\n## Settings\n", 1)[1]
        documented = dict(re.findall(r"^\| `(\w+)` \| ([^|]+) \|", section, flags=re.MULTILINE))
        for field in attrs.fields(Settings):
            if isinstance(field.default, attrs.Factory):  # type: ignore[arg-type]
                continue
            shown = documented[field.name].strip().strip("`")
            value = field.default
            if value is None:
                expected = "None"
            elif isinstance(value, str):
                expected = value
            else:
                expected = f"{value:,g}"  # 20,000; 300 (documented as "300 s")
            assert shown.removesuffix(" s") == expected, field.name
