"""The contract checks fail on parts that break them, with a message naming the call or message."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pykka
import pytest
from buggy import DeliversInputs, DeliversTwice, NeverDelivers, raising_tool, stubborn
from hypothesis import HealthCheck, given, settings

from actors import FakePlatform, LiveChannelAdapter, tool
from actors.testing import check_adapter_updates, check_tool_call, updates_of
from runtime import Timeline
from runtime.testing import InvariantViolation, timelines


def test_raising_tool_breaks_the_tool_contract() -> None:
    """invoke must not raise."""
    with pytest.raises(
        InvariantViolation,
        match=r"^Contract \(a tool answers every call with a result or an error, cancellation included\) broken: tool 'query' called with \{'sql': 'x'\} raised RuntimeError: database is locked",
    ):
        check_tool_call(raising_tool(), {"sql": "x"})


def test_shielded_tool_breaks_cancellation() -> None:
    """A call that ignores its cancellation is named, with how long it ran."""
    with pytest.raises(
        InvariantViolation,
        match=r"tool 'stubborn' called with \{\} was still running 0.2 s after its cancellation",
    ):
        check_tool_call(stubborn, {}, cancel_after=0.01, grace=0.2)


def test_slow_start_up_does_not_count_against_the_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a busy machine starting the call's thread and event loop can take longer than
    ``grace``: only the time from the call's start counts (a prompt tool once failed
    ``test_cancelled_calls_end_promptly`` under load, "1.3 s in all")."""
    import time

    import trio

    real_run = trio.run

    def slow_run(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.6)  # what a loaded machine adds before the call begins
        return real_run(*args, **kwargs)

    @tool
    def prompt(text: str) -> str:
        """Ends at once."""
        return text

    monkeypatch.setattr(trio, "run", slow_run)
    assert check_tool_call(prompt, {"text": "a"}, grace=0.2) is not None
    check_tool_call(prompt, {"text": "a"}, cancel_after=0.0, grace=0.2)  # no violation
    with pytest.raises(InvariantViolation, match=r"was still running 0.2 s after its cancellation"):
        check_tool_call(stubborn, {}, cancel_after=0.01, grace=0.2)  # still found


def test_invalid_arguments_must_be_refused() -> None:
    """A tool that accepts what its schema forbids is named."""

    @tool
    def lenient(n: int) -> str:
        """Takes anything."""
        return str(n)

    assert check_tool_call(lenient, {"n": "3"}) is not None  # lax mode: "3" is an int
    with pytest.raises(
        InvariantViolation, match=r"should be refused with error_type 'invalid_arguments'"
    ):
        check_tool_call(lenient, {"n": 3}, expect_error="invalid_arguments")


def run_adapter(adapter: Callable[[], pykka.ActorRef[Any]]) -> None:
    """The adapter contract over random sessions (raises the shrunk violation)."""

    @settings(
        max_examples=30, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(timelines(max_steps=30, rich=True))
    def prop(timeline: Timeline) -> None:
        ref = adapter()
        try:
            check_adapter_updates(ref, updates_of(timeline, platform="discord"))
        finally:
            ref.stop()

    prop()


class TestAdapterContract:
    @pytest.mark.parametrize(
        ("adapter", "message"),
        [
            (
                DeliversTwice,
                r"^Contract \(an adapter reports each output it shows or absorbs delivered exactly once\) broken: the adapter reported message '\w+' \(.*\) delivered 2 times\n",
            ),
            (
                DeliversInputs,
                r"^Contract .* broken: the adapter reported message '\w+' \(.*, pending_agent\) delivered, but it never waited for this adapter to deliver it\n",
            ),
        ],
    )
    def test_buggy_adapters_are_named(self, adapter: Any, message: str) -> None:
        """Double and input deliveries break the contract."""
        with pytest.raises(InvariantViolation, match=message):
            run_adapter(lambda: adapter.start(client=FakePlatform("discord")))

    def test_adapter_that_never_delivers(self) -> None:
        """Output never reported is listed."""
        with pytest.raises(InvariantViolation, match=r"the adapter never reported .* delivered\n"):
            run_adapter(lambda: NeverDelivers.start(platform="discord"))

    def test_reference_adapter_passes(self) -> None:
        """LiveChannelAdapter keeps the contract."""
        run_adapter(lambda: LiveChannelAdapter.start(client=FakePlatform("discord")))
