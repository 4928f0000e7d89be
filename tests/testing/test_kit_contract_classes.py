"""The contract classes: their settings, their misuse errors and their failure reports."""

from __future__ import annotations

import re
from typing import Any, ClassVar

import pytest
from buggy import NeverDelivers
from hypothesis import settings
from hypothesis.database import InMemoryExampleDatabase

from actors import FakePlatform, LiveChannelAdapter, tool
from actors._errors import InvalidConfig
from actors.testing import AdapterContract, ToolContract
from runtime.testing import InvariantViolation

calls: list[str] = []


@tool
def counted(text: str) -> str:
    """Counts its calls."""
    calls.append(text)
    return text


def test_settings_on_the_class_are_used() -> None:
    """A trial user could set only ``examples``: the settings were hard-coded."""

    class TestCounted(ToolContract):
        tool = counted
        settings = settings(max_examples=3, database=None)

    calls.clear()
    TestCounted().test_valid_arguments_get_an_outcome()
    assert 1 <= len(calls) <= 3


def test_examples_overrides_the_settings_max_examples() -> None:
    class TestCounted(ToolContract):
        tool = counted
        settings = settings(max_examples=50, database=None)
        examples = 2

    calls.clear()
    TestCounted().test_valid_arguments_get_an_outcome()
    assert 1 <= len(calls) <= 2


def test_failures_are_saved_in_the_example_database() -> None:
    """``database=None`` was hard-coded: a failure was never saved nor replayed."""
    db = InMemoryExampleDatabase()

    class TestSaved(AdapterContract):
        settings = settings(max_examples=20, database=db)

        def make_adapter(self) -> Any:
            return NeverDelivers.start(platform="discord")

    with pytest.raises(InvariantViolation):
        TestSaved().test_reports_each_output_exactly_once()
    assert db.data, "the failure was not saved"


def test_the_default_keeps_the_profile_database(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ``settings`` the profile's database is used (not None).

    Under a profile that has a database: Hypothesis's own ``ci`` profile (loaded when
    ``CI`` is set, as on the project's CI) has none, so the check had nothing to see."""
    from hypothesis.database import InMemoryExampleDatabase

    from actors.testing import _contracts

    before = settings.get_current_profile_name()
    settings.register_profile("amber-kit-db", settings.default, database=InMemoryExampleDatabase())
    settings.load_profile("amber-kit-db")
    try:
        _check_the_default_keeps_the_profile_database(monkeypatch, _contracts)
    finally:
        settings.load_profile(before)


def _check_the_default_keeps_the_profile_database(
    monkeypatch: pytest.MonkeyPatch, _contracts: Any
) -> None:
    seen: list[Any] = []
    real = _contracts.kit_settings

    def spy(given: settings) -> settings:
        seen.append(given)
        return real(given)

    monkeypatch.setattr(_contracts, "kit_settings", spy)

    class TestDefault(ToolContract):
        tool = counted

    TestDefault().test_valid_arguments_get_an_outcome()
    assert seen
    assert seen[0].database is not None
    assert seen[0].database == settings.default.database
    assert seen[0].max_examples == 25


def test_an_adapter_failure_shows_the_session_events() -> None:
    """The report printed ``Timeline(base=SessionState(...), _count=1)``: no events."""

    class TestNever(AdapterContract):
        settings = settings(max_examples=20, database=None)

        def make_adapter(self) -> Any:
            return NeverDelivers.start(platform="discord")

    with pytest.raises(InvariantViolation) as caught:
        TestNever().test_reports_each_output_exactly_once()
    notes = "\n".join(getattr(caught.value, "__notes__", []))
    assert "the session's events:" in notes
    assert re.search(r"\d+ MessageAdded \w", notes), notes
    assert "Timeline(base=" not in notes


class TestMisuse:
    """Each mistake gets an error at the test's start naming what is expected."""

    def test_no_tool(self) -> None:
        class TestNoTool(ToolContract):
            pass

        with pytest.raises(
            InvalidConfig,
            match=r"TestNoTool has no tool to test: set TestNoTool\.tool \(ToolContract\.tool\)",
        ):
            TestNoTool().test_valid_arguments_get_an_outcome()

    def test_tool_given_by_name(self) -> None:
        class TestToolIsStr(ToolContract):
            tool = "price"  # type: ignore[assignment]

        with pytest.raises(
            InvalidConfig,
            match=r"TestToolIsStr\.tool \(ToolContract\.tool\) must be a tool .* got 'price', a str",
        ):
            TestToolIsStr().test_valid_arguments_get_an_outcome()

    @pytest.mark.parametrize("examples", [0, -1, 2.5, True])
    def test_bad_examples(self, examples: Any) -> None:
        class TestZero(ToolContract):
            tool = counted

        TestZero.examples = examples
        with pytest.raises(
            InvalidConfig,
            match=r"TestZero\.examples \(ToolContract\.examples\) must be an int of at least 1",
        ):
            TestZero().test_valid_arguments_get_an_outcome()

    def test_bad_settings(self) -> None:
        class TestBad(ToolContract):
            tool = counted
            settings: ClassVar[Any] = {"max_examples": 3}

        with pytest.raises(
            InvalidConfig,
            match=r"TestBad\.settings \(ToolContract\.settings\) must be hypothesis\.settings",
        ):
            TestBad().test_valid_arguments_get_an_outcome()

    def test_clock_grammar(self) -> None:
        class TestClock(ToolContract):
            tool = counted
            clock = 1  # type: ignore[assignment]

        with pytest.raises(InvalidConfig, match=r"got 1, an int\)"):
            TestClock().test_valid_arguments_get_an_outcome()

    def test_no_make_adapter(self) -> None:
        class TestNoMake(AdapterContract):
            pass

        with pytest.raises(InvalidConfig, match=r"TestNoMake has no make_adapter\(\)") as caught:
            TestNoMake().test_reports_each_output_exactly_once()
        assert "Timeline" not in str(caught.value)

    def test_unstarted_adapter(self) -> None:
        class TestUnstarted(AdapterContract):
            settings = settings(max_examples=1, database=None)

            def make_adapter(self) -> Any:
                return LiveChannelAdapter(client=FakePlatform("discord"))

        with pytest.raises(
            InvalidConfig,
            match=r"make_adapter\(\) must return the ActorRef of a started adapter .* got .*LiveChannelAdapter.*: call LiveChannelAdapter\.start\(\.\.\.\)",
        ):
            TestUnstarted().test_reports_each_output_exactly_once()


def test_a_tool_without_timeout_is_told_the_contracts_limit() -> None:
    """It said "still running 1.0 s after its time limit" for a tool that has none."""

    @tool(timeout=None)
    async def forever() -> str:
        """Never ends."""
        import trio

        await trio.sleep_forever()
        return ""

    from actors.testing import check_tool_call

    with pytest.raises(
        InvariantViolation,
        match=r"after the contract's default limit of 30 s \(the tool has timeout=None; give "
        r"it a limit with @tool\(timeout=\.\.\.\)",
    ):
        check_tool_call(forever, {}, clock="mock")


def test_a_sync_tool_that_blocks_its_thread_is_named() -> None:
    """It passed "cancelled calls end promptly": the runtime abandons the thread, so the
    call ended at once while the function kept running."""
    import threading

    from actors.testing import check_tool_call

    release = threading.Event()

    @tool
    def blocks(text: str) -> str:
        """Waits on a lock that is never released (in the test: until its end)."""
        release.wait(30)
        return text

    try:
        with pytest.raises(
            InvariantViolation,
            match=r"was cancelled, but its function was still running in its worker thread "
            r"0\.2 s later: a sync tool cannot be cancelled; it keeps running in its thread",
        ):
            check_tool_call(blocks, {"text": "a"}, cancel_after=0.05, grace=0.2)
    finally:
        release.set()


def test_a_prompt_sync_tool_and_a_refused_call_pass() -> None:
    from actors.testing import check_tool_call

    assert check_tool_call(counted, {"text": "a"}, cancel_after=5.0, grace=0.5) is not None
    check_tool_call(counted, {"text": 3}, expect_error="invalid_arguments", grace=0.5)
