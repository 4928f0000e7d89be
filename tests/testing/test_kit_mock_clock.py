"""Tool contracts on simulated time: ``check_tool_call(..., clock="mock")`` and
``ToolContract.clock``.

A tool that backs off, polls or has a long time limit ran its sleeps and
limits on the real clock, so its contract test waited them out. On trio's
``MockClock`` (autojump) they cost nothing, and the limits the contract
checks are measured in simulated seconds.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import trio

from actors import InvalidConfig, tool
from actors.testing import ToolContract, check_tool_call
from runtime.testing import InvariantViolation

RULE = re.escape(
    "Contract (a tool answers every call with a result or an error, cancellation included) broken: "
)


@tool(timeout=900)
async def backoff(attempts: int = 3) -> str:
    """Retry an upstream call with exponential backoff (it always answers on the last try).

    Args:
        attempts: How many tries.
    """
    start = trio.current_time()
    for attempt in range(max(0, min(attempts, 5))):
        await trio.sleep(2**attempt * 30)
    return f"answered after {trio.current_time() - start:g} s"


@tool(timeout=5)
async def stuck(key: str = "") -> str:
    """Wait for an answer that never comes (its time limit stops it).

    Args:
        key: The key.
    """
    await trio.sleep_forever()
    return "never"


@tool(timeout=None)
async def no_limit(key: str = "") -> str:
    """Wait an hour, with no time limit of its own.

    Args:
        key: The key.
    """
    await trio.sleep(3600)
    return "late"


@tool(timeout=None)
async def shielded(seconds: float = 50.0) -> str:
    """Ignore cancellation for a while (a shielded scope).

    Args:
        seconds: How long.
    """
    with trio.CancelScope(shield=True):
        await trio.sleep(seconds)
    return "done"


@tool(timeout=None)
async def shielded_forever(key: str = "") -> str:
    """Ignore cancellation for ever, with nothing to wait for (no deadline to jump to).

    Args:
        key: The key.
    """
    with trio.CancelScope(shield=True):
        await trio.sleep_forever()
    return "never"


class TestCheckToolCallOnMockClock:
    def test_sleeps_cost_no_real_time(self) -> None:
        """Backoff of 30 + 60 + 120 simulated seconds: the outcome, at once."""
        outcome = check_tool_call(backoff, {"attempts": 3}, clock="mock")
        assert outcome is not None
        assert outcome.content == "answered after 210 s"

    def test_time_limit_is_simulated(self) -> None:
        """A call stuck past its tool's 5 s limit is stopped by it: a timeout outcome."""
        outcome = check_tool_call(stuck, {}, clock="mock")
        assert outcome is not None
        assert outcome.error_type == "timeout"

    def test_hang_is_named_in_simulated_seconds(self) -> None:
        """A call with no limit of its own still running past 30 s + grace is a hang."""
        with pytest.raises(
            InvariantViolation,
            match="^" + RULE + re.escape(
                "tool 'no_limit' called with {} was still running 1.0 s after the contract's "
                "default limit of 30 s (the tool has timeout=None; give it a limit with "
                "@tool(timeout=...), which the contract then checks) (31.0 s in all, simulated); a tool must stop at its limit and when cancelled "
                "(async: reach an await; no shielding)"
            ),
        ):  # fmt: skip
            check_tool_call(no_limit, {}, clock="mock")

    def test_cancellation_is_simulated(self) -> None:
        """A call that ends 50 simulated seconds after its cancellation breaks the contract."""
        with pytest.raises(
            InvariantViolation,
            match=re.escape("was still running 1.0 s after its cancellation (2.0 s in all, "
                            "simulated)"),
        ):  # fmt: skip
            check_tool_call(shielded, {}, cancel_after=1.0, clock="mock")
        outcome = check_tool_call(shielded, {"seconds": 0.5}, cancel_after=1.0, clock="mock")
        assert outcome is not None
        assert outcome.content == "done"

    def test_shielded_for_ever_is_a_hang(self) -> None:
        """A call that waits for ever, shielded, has no deadline to jump to: still a hang."""
        with pytest.raises(InvariantViolation, match=r"after its cancellation .*simulated\)"):
            check_tool_call(shielded_forever, {}, cancel_after=0.5, clock="mock")

    def test_auto_runs_a_sync_tool_on_the_real_clock(self) -> None:
        """``auto``: an async tool on the mock clock, a sync one (in a thread) on the real."""

        @tool(timeout=5)
        def add(a: int, b: int) -> int:
            """Add.

            Args:
                a: One.
                b: Another.
            """
            return a + b

        outcome = check_tool_call(add, {"a": 1, "b": 2}, clock="auto")
        assert outcome is not None
        assert outcome.content == "3"
        outcome = check_tool_call(backoff, {"attempts": 2}, clock="auto")
        assert outcome is not None
        assert outcome.content == "answered after 90 s"

    def test_unknown_clock_is_refused(self) -> None:
        """The clock is one of three, named when it is not."""
        with pytest.raises(
            InvalidConfig,
            match=r"^check_tool_call\(\) option 'clock' must be one of 'real', 'mock', 'auto' "
            r"\(got 'fake', a str\)\.$",
        ):
            check_tool_call(backoff, {}, clock="fake")  # type: ignore[arg-type]


class BackoffContract(ToolContract):
    tool = backoff
    clock = "mock"
    examples = 10


class TestToolContractClock:
    @pytest.mark.parametrize(
        "test",
        [
            "test_valid_arguments_get_an_outcome",
            "test_invalid_arguments_get_an_invalid_arguments_error",
            "test_cancelled_calls_end_promptly",
        ],
    )
    def test_contract_runs_on_the_mock_clock(self, test: str) -> None:
        """Each property of the contract runs on simulated time (backoff takes minutes)."""
        getattr(BackoffContract(), test)()

    def test_default_is_the_real_clock(self) -> None:
        """Without ``clock`` nothing changes for existing contracts."""
        assert ToolContract.clock == "real"

    def test_bad_clock_is_named(self) -> None:
        """A contract class with a clock that is none of the three fails at once."""
        bad: Any = type("Bad", (BackoffContract,), {"clock": "simulated"})
        with pytest.raises(
            InvalidConfig,
            match=r"^Bad\.clock \(ToolContract\.clock\) must be one of 'real', 'mock', 'auto' \(got 'simulated', a str\)\.$",
        ):
            bad().test_valid_arguments_get_an_outcome()


def test_a_call_blocking_real_time_on_the_mock_clock_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real-time backstop of the mock clock still ends a call that blocks its thread
    (a sync wait in an async tool), a margin past its limit, and says so."""
    import threading

    from actors.testing import _tool_contract

    release = threading.Event()

    @tool(timeout=0.05)
    async def blocks() -> str:
        """Waits on a lock without awaiting."""
        release.wait(30)
        return "late"

    # Keep the test short: the margin's size is not its point.
    monkeypatch.setattr(_tool_contract, "_MOCK_BACKSTOP", 0.2)
    try:
        with pytest.raises(InvariantViolation, match=r"real time: it blocks its thread"):
            check_tool_call(blocks, {}, grace=0.1, clock="mock")
    finally:
        release.set()
