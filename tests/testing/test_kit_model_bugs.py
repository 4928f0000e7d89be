"""The real-runtime machine reports a model that never answers because of a bug in it.

A trial user's model raised ``TypeError`` on every call; every turn ended in error, a
legal outcome, and the machine passed green having tested nothing else.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from actors.testing import lifecycle_machine
from actors.testing._instrument import is_model_bug
from runtime import ModelUnavailable
from runtime.testing import InvariantViolation

FEW = settings(
    max_examples=30,
    stateful_step_count=8,
    report_multiple_bugs=False,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


class CrashingModel:
    """Reads a field the request does not have: a TypeError on every call."""

    name = "crashing"

    async def stream(self, request: Any) -> AsyncIterator[Any]:
        yield len(None)  # type: ignore[arg-type]


class DownModel:
    """A provider that is down: every call fails, legitimately."""

    name = "down"

    async def stream(self, request: Any) -> AsyncIterator[Any]:
        raise ModelUnavailable("503 from the provider")
        yield  # a generator


def test_a_model_that_always_crashes_fails_the_machine() -> None:
    machine = lifecycle_machine(model=CrashingModel, name="CrashingBot")
    with pytest.raises(InvariantViolation) as caught:
        run_state_machine_as_test(machine, settings=FEW)
    text = str(caught.value)
    assert "Every call of the model so far in this run" in text
    assert "TypeError: object of type 'NoneType' has no len()" in text
    assert "model_may_always_fail = True" in text
    assert "yield len(None)" in text  # the traceback of the first call


def test_the_opt_out_lets_it_pass() -> None:
    machine = lifecycle_machine(model=CrashingModel, name="CrashingBot", model_may_always_fail=True)
    run_state_machine_as_test(machine, settings=FEW)


def test_a_provider_that_is_down_is_no_bug() -> None:
    machine = lifecycle_machine(model=DownModel, name="DownBot")
    run_state_machine_as_test(machine, settings=FEW)


@pytest.mark.parametrize(
    ("exc", "bug"),
    [
        (TypeError("x"), True),
        (KeyError("x"), True),
        (ModelUnavailable("x"), False),
        (ConnectionResetError("x"), False),
        (TimeoutError("x"), False),
    ],
)
def test_what_counts_as_a_bug(exc: BaseException, bug: bool) -> None:
    assert is_model_bug(exc) is bug
