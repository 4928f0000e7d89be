"""Property-test a custom tool with Amber's kit: a buggy version fails, the fixed one passes.

The simulator runs your real tool on simulated time (trio's mock clock), so
a hang is found at once and every failure replays exactly; the fixed tool
then also runs in a real runtime. Copy this file next to your own tools.
``python examples/property_tests_custom_tool.py`` runs both versions; in a
test suite write ``TestMyBot = simulation_machine(...).TestCase`` and let
pytest run it.
"""

from __future__ import annotations

import tempfile

import trio
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from actors import tool
from actors.testing import ToolContract, lifecycle_machine, simulation_machine
from runtime.testing import InvariantViolation

# -- the tool, with a bug: an empty city makes it retry forever (and it has no time limit) --

CITIES = {"tokyo": "sunny, 24°C", "paris": "rain, 12°C"}


@tool(timeout=None)
async def weather(city: str) -> str:
    """Today's weather in a city.

    Args:
        city: The city's name.
    """
    while True:  # the upstream API is flaky: retry until it answers
        answer = CITIES.get(city.strip().lower())
        if answer is not None or city:  # bug: an empty name is retried forever
            return answer or f"no weather for {city!r}"
        await trio.sleep(1.0)  # back off a second, then ask again


# -- the fix: refuse what cannot be answered, and bound the time anyway ------------------


@tool(timeout=5)
async def weather_fixed(city: str) -> str:
    """Today's weather in a city.

    Args:
        city: The city's name.
    """
    if not city.strip():
        raise ValueError("city must not be empty")  # becomes an error result the model reads
    return CITIES.get(city.strip().lower()) or f"no weather for {city!r}"


# Simulated time makes shrinking cheap: the failure comes back as a short example.
SIMULATED = settings(
    max_examples=200,
    stateful_step_count=10,
    phases=[Phase.generate, Phase.shrink],
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    report_multiple_bugs=False,
    derandomize=True,  # the same examples every run: the demo always shows the same failure
)
REAL = settings(SIMULATED, max_examples=10, phases=[Phase.generate])


def main() -> None:
    failures = tempfile.mkdtemp(prefix="amber-failures-")
    buggy = simulation_machine(tools=[weather], name="BuggyWeather", failures_dir=failures)
    try:
        run_state_machine_as_test(buggy, settings=SIMULATED)
    except InvariantViolation as error:
        print("The kit caught the bug:")
        print(" ", str(error)[:300])
        for note in getattr(error, "__notes__", []):
            if note.startswith(("state.", "Amber saved", "    amber inspect")):
                print("   ", note)
    else:
        raise SystemExit("the buggy tool was not caught")

    fixed = simulation_machine(tools=[weather_fixed], name="FixedWeather")
    run_state_machine_as_test(fixed, settings=SIMULATED)
    print("The fixed tool passes the simulator.")
    real = lifecycle_machine(tools=[weather_fixed], name="FixedWeatherReal")
    run_state_machine_as_test(real, settings=REAL)
    print("And a real runtime, with real threads.")

    class TestWeather(ToolContract):
        tool = weather_fixed
        examples = 10

    contract = TestWeather()
    contract.test_valid_arguments_get_an_outcome()
    contract.test_invalid_arguments_get_an_invalid_arguments_error()
    contract.test_cancelled_calls_end_promptly()
    print("It keeps the tool contract too.")


if __name__ == "__main__":
    main()
