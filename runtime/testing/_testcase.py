"""The ``TestCase`` of the kit's machines: Hypothesis's, run without the explain phase.

Hypothesis's explain phase replays the shrunk example once per step, with
variations, to mark which steps matter. For these machines each replay runs
the whole example again (a real runtime started and stopped, or a simulation
settled and checked), so it took longer than finding and shrinking the
failure, and for a stateful test it adds little: the printed steps are
already the shortest that fail. The kit's ``TestCase`` runs with the settings
you give it (``TestX.settings = settings(...)``), minus that phase (a machine
with ``explain = True`` keeps it), with Hypothesis's health checks off and no
deadline unless you chose one (``kit_settings``).
"""

from __future__ import annotations

import unittest
from typing import TYPE_CHECKING, Any, cast

import hypothesis.stateful
from hypothesis import HealthCheck, Phase, settings

if TYPE_CHECKING:
    from hypothesis.stateful import _StateMachineTestCase

__all__ = ["MachineTestCase", "kit_settings", "without_explain"]


def kit_settings(given: settings) -> settings:
    """``given`` with Hypothesis's health checks off and, unless ``given`` chose another
    deadline than the profile's, no deadline: a step of these machines runs a runtime or
    a simulation, far slower than what those limits assume. ``settings(max_examples=300)``
    starts from the profile's defaults, so without this the health checks came back on."""
    changes: dict[str, Any] = {}
    if set(given.suppress_health_check) != set(HealthCheck):
        changes["suppress_health_check"] = list(HealthCheck)
    profile = settings.default
    if given.deadline is not None and (profile is None or given.deadline == profile.deadline):
        changes["deadline"] = None
    return settings(given, **changes) if changes else given


def without_explain(given: settings) -> settings:
    """``given`` with every phase but ``explain`` (the same object if it had none)."""
    if Phase.explain not in given.phases:
        return given
    return settings(given, phases=[p for p in given.phases if p is not Phase.explain])


class MachineTestCase:
    """A descriptor: ``Machine.TestCase`` is a ``unittest.TestCase`` that runs the machine.

    As Hypothesis's own (one class per machine, ``settings`` on it), but the run
    skips the explain phase unless the machine sets ``explain = True``.
    """

    def __init__(self) -> None:
        self._made: dict[type, type[_StateMachineTestCase]] = {}

    def __get__(self, obj: object, owner: type | None = None) -> type[_StateMachineTestCase]:
        machine = type(obj) if obj is not None else owner
        assert machine is not None
        made = self._made.get(machine)
        if made is None:
            made = self._made[machine] = _test_case(machine)
        return made


def _test_case(machine: Any) -> type[_StateMachineTestCase]:
    class StateMachineTestCase(unittest.TestCase):
        settings = settings(deadline=None, suppress_health_check=list(HealthCheck))

        def runTest(self) -> None:
            chosen = kit_settings(self.settings)
            if not getattr(machine, "explain", False):
                chosen = without_explain(chosen)
            hypothesis.stateful.run_state_machine_as_test(machine, settings=chosen)

        # What Hypothesis's own TestCase marks (its pytest plugin and HypoFuzz read them).
        runTest.is_hypothesis_test = True  # type: ignore[attr-defined]
        runTest._hypothesis_state_machine_class = machine  # type: ignore[attr-defined]

    StateMachineTestCase.__name__ = machine.__name__ + ".TestCase"
    StateMachineTestCase.__qualname__ = machine.__qualname__ + ".TestCase"
    return cast("type[_StateMachineTestCase]", StateMachineTestCase)
