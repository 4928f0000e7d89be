"""Mutation tests on a real runtime: buggy parts the kit sees from events, with real threads.

Every planted bug runs in the simulator (``test_sim_mutations.py``, in the
default suite). These run the bugs the kit sees from what the runtime did
(a report, a changed message, an exception) on a real ``LifecycleMachine``
too, with its default timeouts, which a passing or failing run never waits
out: hangs and missing deliveries are only found on simulated time.
Invariants the core enforces by construction are shown caught on
hand-corrupted values in ``test_kit_checks.py``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from buggy import (
    DeliversInputs,
    DeliversTwice,
    EditsMessages,
    ReusedCallIds,
    echo,
    raising_tool,
)
from hypothesis import HealthCheck, settings
from hypothesis.errors import FlakyFailure, FlakyStrategyDefinition
from hypothesis.stateful import run_state_machine_as_test

from actors import FakePlatform
from actors.testing import lifecycle_machine
from runtime.testing import InvariantViolation

pytestmark = pytest.mark.slow


def run_machine(tmp_path: Path, **options: Any) -> InvariantViolation:
    """Run a machine with ``options`` until it fails; return the (shrunk) violation.

    On real threads a replay of a case can go differently: a planted bug can show one
    step earlier while Hypothesis shrinks (an adapter edits a message before, not after,
    the next check), which it reports as flaky data generation, or not at all when it
    replays the shrunk case (an interrupt cancels the turn before the buggy tool is
    invoked), which it reports as a flaky failure. Only those reports, with the kit's
    violation underneath, run the search again (at most three searches); the
    simulator's mutation tests are deterministic.
    """
    for attempt in range(3):
        machine = lifecycle_machine(name="Buggy", failures_dir=str(tmp_path), **options)
        try:
            run_state_machine_as_test(
                machine,
                settings=settings(
                    max_examples=100,
                    stateful_step_count=10,
                    deadline=None,
                    database=None,
                    suppress_health_check=list(HealthCheck),
                    report_multiple_bugs=False,
                ),
            )
        except InvariantViolation as error:
            return error
        except (FlakyStrategyDefinition, FlakyFailure) as flaky:
            if attempt == 2 or not _violation_underneath(flaky):
                raise
        else:
            pytest.fail("the machine found no violation: the planted bug went unseen")
    raise AssertionError("unreachable")


def _violation_underneath(flaky: BaseException) -> bool:
    """Whether Hypothesis' flaky report holds the kit's violation: as the exception it was
    handling (flaky data generation) or as the failure it could not reproduce."""
    if isinstance(flaky.__context__, InvariantViolation):
        return True
    inner = getattr(flaky, "exceptions", ())
    return any(isinstance(error, InvariantViolation) for error in inner)


def notes(error: BaseException) -> str:
    return "\n".join(getattr(error, "__notes__", []))


def assert_readable(error: BaseException, tmp_path: Path) -> None:
    """The failure carries the shrunk steps and the command to open its saved sessions."""
    text = notes(error)
    assert "state = Buggy()" in text
    steps = [
        line for line in text.splitlines() if line.startswith("state.") and "invariants" not in line
    ]
    # Shrinking a machine that runs real threads is not always minimal (a no-op
    # interrupt can survive); a dozen steps is still a readable example.
    assert 1 <= len(steps) <= 12, text
    saved = list(tmp_path.glob("*.db"))
    assert saved, "no saved session"
    assert re.search(rf"amber inspect s\d --db {re.escape(str(saved[0]))}", text), text


class TestAdapterBugs:
    def test_adapter_that_delivers_twice(self, tmp_path: Path) -> None:
        """Reporting a message twice breaks invariant 1 (exactly once)."""
        error = run_machine(
            tmp_path, adapters=lambda: [DeliversTwice.start(client=FakePlatform("discord"))]
        )
        assert re.match(
            r"^Invariant 1 \(an adapter reports each message delivered exactly once\) broken at "
            r"seq \d+: adapter DeliversTwice\('discord', run \d\) reported message '\w+' \(.+\) "
            r"delivered 2 times, but it was announced 1 time\(s\)",
            str(error),
        )
        assert error.invariant == 1
        assert_readable(error, tmp_path)

    def test_adapter_that_marks_inputs_delivered(self, tmp_path: Path) -> None:
        """Reporting an input delivered breaks invariant 1 (only output is delivered)."""
        error = run_machine(
            tmp_path, adapters=lambda: [DeliversInputs.start(client=FakePlatform("discord"))]
        )
        assert "Invariant 1 (only output waiting for delivery is reported delivered)" in str(error)
        assert "while it was pending_agent" in str(error)
        assert_readable(error, tmp_path)

    def test_adapter_that_edits_messages_in_place(self, tmp_path: Path) -> None:
        """A message forced open and changed differs from the stored log (invariants 5/6)."""
        error = run_machine(
            tmp_path, adapters=lambda: [EditsMessages.start(client=FakePlatform("discord"))]
        )
        assert error.invariant in (5, 6)
        assert "(edited)" in str(error)
        assert_readable(error, tmp_path)


class TestToolBugs:
    def test_tool_whose_invoke_raises(self, tmp_path: Path) -> None:
        """An exception out of invoke breaks the tool contract, named with the call."""
        error = run_machine(tmp_path, tools=[raising_tool()])
        assert str(error).startswith(
            "Contract (a tool answers every call with a result or an error) broken by call"
        )
        assert "of tool 'query'" in str(error)
        assert "invoke raised RuntimeError: database is locked" in str(error)
        assert_readable(error, tmp_path)


class TestModelBugs:
    def test_model_that_reuses_tool_call_ids(self, tmp_path: Path) -> None:
        """Call ids reused across turns once killed the session actor (a runtime bug the kit
        found); the runtime now gives a reused id a fresh one, and the machine finds nothing."""
        machine = lifecycle_machine(
            name="Reused", failures_dir=str(tmp_path), tools=[echo], model=ReusedCallIds
        )
        run_state_machine_as_test(
            machine,
            settings=settings(
                max_examples=10, stateful_step_count=10, deadline=None, database=None
            ),
        )


class TestFlakyReports:
    def test_only_reports_holding_the_kits_violation_search_again(self) -> None:
        """A flaky failure or flaky data generation over the kit's violation is searched
        again; one over anything else is raised as it is."""
        violation = InvariantViolation("Invariant 5 broken", invariant=5)
        assert _violation_underneath(FlakyFailure("unreliable", [violation]))
        assert not _violation_underneath(FlakyFailure("unreliable", [ValueError("x")]))
        while_handling = FlakyStrategyDefinition("inconsistent data")
        while_handling.__context__ = violation  # as raised while the violation was handled
        assert _violation_underneath(while_handling)
        assert not _violation_underneath(FlakyStrategyDefinition("inconsistent data"))
