"""The machines' ``TestCase`` skips Hypothesis's explain phase and keeps your settings.

The explain phase replays the whole machine once per step of the shrunk
example; for these machines that took longer than the search itself.
"""

from __future__ import annotations

from typing import Any

import hypothesis.stateful
import pytest
from hypothesis import HealthCheck, Phase, settings

from actors.testing import LifecycleMachine, lifecycle_machine
from actors.testing import simulation_machine as bridged_simulation_machine
from runtime.testing import SimulationMachine, simulation_machine

MACHINES = {
    "SimulationMachine": lambda: simulation_machine(name="Sim"),
    "bridged simulation_machine": lambda: bridged_simulation_machine(name="Bridged"),
    "LifecycleMachine": lambda: lifecycle_machine(name="Life"),
}


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[type, settings]]:
    """What ``run_state_machine_as_test`` was called with (nothing is run)."""
    seen: list[tuple[type, settings]] = []

    def record(machine: type, *, settings: settings, **_: Any) -> None:
        seen.append((machine, settings))

    monkeypatch.setattr(hypothesis.stateful, "run_state_machine_as_test", record)
    return seen


@pytest.mark.parametrize("make", MACHINES.values(), ids=list(MACHINES))
class TestMachineTestCase:
    def test_default_settings_skip_explain(self, make: Any, runs: list[Any]) -> None:
        """The TestCase's own settings run every phase but explain, with no deadline."""
        machine = make()
        machine.TestCase("runTest").runTest()
        [(ran, chosen)] = runs
        assert ran is machine
        assert Phase.explain not in chosen.phases
        assert Phase.shrink in chosen.phases
        assert chosen.deadline is None

    def test_users_settings_are_kept(self, make: Any, runs: list[Any]) -> None:
        """Settings assigned to the TestCase are used as they are, minus explain."""
        machine = make()
        test_case = machine.TestCase
        test_case.settings = settings(max_examples=7, stateful_step_count=9, deadline=None)
        test_case("runTest").runTest()
        [(_, chosen)] = runs
        assert (chosen.max_examples, chosen.stateful_step_count) == (7, 9)
        assert Phase.explain not in chosen.phases

    def test_health_checks_stay_off_under_users_settings(self, make: Any, runs: list[Any]) -> None:
        """``settings(max_examples=300)``, as docs/testing.md's tutorial sets it, starts from
        Hypothesis's defaults: the health checks came back on and the tutorial failed with
        ``FailedHealthCheck: Input generation is slow`` (a step runs a runtime or a
        simulation), and the 200 ms deadline with them. Both stay off unless chosen."""
        machine = make()
        machine.TestCase.settings = settings(max_examples=300)
        machine.TestCase("runTest").runTest()
        [(_, chosen)] = runs
        assert chosen.max_examples == 300
        assert set(chosen.suppress_health_check) == set(HealthCheck)
        assert chosen.deadline is None

    def test_a_chosen_deadline_is_kept(self, make: Any, runs: list[Any]) -> None:
        """A deadline other than Hypothesis's default is the user's choice: kept."""
        machine = make()
        machine.TestCase.settings = settings(deadline=5000)
        machine.TestCase("runTest").runTest()
        [(_, chosen)] = runs
        assert chosen.deadline is not None
        assert chosen.deadline.total_seconds() == 5

    def test_explain_true_keeps_the_phase(self, make: Any, runs: list[Any]) -> None:
        """A machine that asks for explain (``explain = True``) keeps it."""
        machine = make()
        keeps = type("Keeps", (machine,), {"explain": True})
        keeps.TestCase("runTest").runTest()
        [(ran, chosen)] = runs
        assert ran is keeps
        assert Phase.explain in chosen.phases

    def test_one_test_case_per_machine(self, make: Any, runs: list[Any]) -> None:
        """As Hypothesis's: the same class each time (settings set on it stay), named after
        the machine."""
        machine = make()
        assert machine.TestCase is machine.TestCase
        assert machine.TestCase.__name__ == f"{machine.__name__}.TestCase"
        assert machine.TestCase.runTest.is_hypothesis_test


def test_bases_have_their_own_test_case() -> None:
    """Subclassing does not share the base's TestCase (or its settings)."""
    assert SimulationMachine.TestCase is not simulation_machine(name="Other").TestCase
    assert LifecycleMachine.TestCase is not lifecycle_machine(name="Other").TestCase
    assert SimulationMachine.TestCase.settings.suppress_health_check == tuple(HealthCheck)
