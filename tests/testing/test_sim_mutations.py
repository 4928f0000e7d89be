"""Mutation tests in the simulator: each deliberately buggy part is caught, shrunk, saved.

The parts are the real ones of ``buggy.py`` (pykka adapters made but not
started, trio tools, an async model), bridged into the simulator by
``actors.testing.simulation_machine``; everything runs on simulated time, so
a hang is found without waiting and every failure replays exactly.
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
    NeverDelivers,
    ReusedCallIds,
    echo,
    hangs,
    raising_tool,
)
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from actors import FakePlatform
from actors.testing import simulation_machine
from runtime.testing import InvariantViolation

SHRINK = settings(
    max_examples=200,
    stateful_step_count=10,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    report_multiple_bugs=False,
    phases=[Phase.generate, Phase.shrink],
    derandomize=True,  # the same examples every run: a CI gate must not depend on luck
)


def caught(tmp_path: Path, **options: Any) -> InvariantViolation:
    """Run a machine with ``options`` until it fails; return the (shrunk) violation."""
    machine = simulation_machine(name="Buggy", failures_dir=str(tmp_path), **options)
    with pytest.raises(InvariantViolation) as found:
        run_state_machine_as_test(machine, settings=SHRINK)
    return found.value


def assert_short_and_saved(error: BaseException, tmp_path: Path) -> None:
    """The failure shrank to at most 8 steps and its sessions open in ``amber inspect``."""
    text = "\n".join(getattr(error, "__notes__", []))
    assert "state = Buggy()" in text
    steps = [
        line for line in text.splitlines() if line.startswith("state.") and "invariants" not in line
    ]
    assert 1 <= len(steps) <= 8, text
    saved = list(tmp_path.glob("*.db"))
    assert saved, "no saved session"
    assert re.search(rf"amber inspect s\d --db {re.escape(str(saved[0]))}", text), text


class TestAdapterBugs:
    def test_adapter_that_delivers_twice(self, tmp_path: Path) -> None:
        """Reporting a message twice breaks invariant 1 (exactly once)."""
        error = caught(tmp_path, adapters=lambda: [DeliversTwice(client=FakePlatform("discord"))])
        assert re.match(
            r"^Invariant 1 \(an adapter reports each message delivered exactly once\) broken at "
            r"seq \d+: adapter DeliversTwice\('discord'\) reported message '\w+' \(.+\) "
            r"delivered 2 times, but it was announced 1 time\(s\)",
            str(error),
        )
        assert error.invariant == 1
        assert_short_and_saved(error, tmp_path)

    def test_adapter_that_marks_inputs_delivered(self, tmp_path: Path) -> None:
        """Reporting an input delivered breaks invariant 1 (only output is delivered)."""
        error = caught(tmp_path, adapters=lambda: [DeliversInputs(client=FakePlatform("discord"))])
        assert "Invariant 1 (only output waiting for delivery is reported delivered)" in str(error)
        assert "while it was pending_agent" in str(error)
        assert_short_and_saved(error, tmp_path)

    def test_adapter_that_never_delivers(self, tmp_path: Path) -> None:
        """Output left pending breaks the delivery contract once everything settled."""
        error = caught(tmp_path, adapters=lambda: [NeverDelivers(platform="discord")])
        assert str(error).startswith(
            "Contract (adapters report every output they show or absorb delivered) broken"
        )
        assert "still not reported delivered" in str(error)
        assert_short_and_saved(error, tmp_path)

    def test_adapter_that_edits_messages_in_place(self, tmp_path: Path) -> None:
        """A message forced open and changed differs from the stored log (invariant 5)."""
        error = caught(tmp_path, adapters=lambda: [EditsMessages(client=FakePlatform("discord"))])
        assert error.invariant in (5, 6)
        assert "(edited)" in str(error)
        assert_short_and_saved(error, tmp_path)


class TestToolBugs:
    def test_tool_that_never_returns(self, tmp_path: Path) -> None:
        """A tool with no limit that hangs keeps its input from a final status (invariant 9);
        found on simulated time, with no waiting."""
        error = caught(tmp_path, tools=[hangs])
        assert str(error).startswith(
            "Invariant 9 (every accepted user message reaches a final status) broken"
        )
        assert re.search(
            r"tool 'hangs' never returns \(call '\w+' with \{.*\}\), so turn '\w+' and its "
            r"input '\w+' can only end when someone interrupts it",
            str(error),
        ), str(error)
        assert_short_and_saved(error, tmp_path)

    def test_tool_whose_invoke_raises(self, tmp_path: Path) -> None:
        """An exception out of invoke breaks the tool contract, named with the call."""
        error = caught(tmp_path, tools=[raising_tool()])
        assert str(error).startswith(
            "Contract (a tool answers every call with a result or an error) broken by call"
        )
        assert "of tool 'query'" in str(error)
        assert "invoke raised RuntimeError: database is locked" in str(error)
        assert_short_and_saved(error, tmp_path)


class TestModelBugs:
    def test_model_that_reuses_tool_call_ids(self, tmp_path: Path) -> None:
        """Call ids reused across turns once killed the session actor (a runtime bug the kit
        found); the machine gives a reused id a fresh one, and the simulator finds nothing."""
        machine = simulation_machine(
            name="Reused", failures_dir=str(tmp_path), tools=[echo], model=ReusedCallIds
        )
        run_state_machine_as_test(
            machine, settings=settings(SHRINK, max_examples=50, phases=[Phase.generate])
        )
