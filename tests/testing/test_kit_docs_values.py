"""docs/testing.md's "Test code that handles Amber values" example, run from the page.

A trial user's copy failed under load with ``FailedHealthCheck`` (too_slow): a drawn
session of up to 40 steps takes tens of milliseconds to build (each event is applied),
past what Hypothesis's health check allows for the first examples on a busy machine.
"""

from __future__ import annotations

import pathlib
import re
import types

from hypothesis import HealthCheck

DOCS = pathlib.Path(__file__).parents[2] / "docs" / "testing.md"


def example() -> types.ModuleType:
    text = DOCS.read_text()
    start = text.index("### Test code that handles Amber values")
    block = re.search(r"```python\n(.*?)```", text[start:], re.S)
    assert block, "the section has no python block"
    module = types.ModuleType("test_values_example")
    # Not the page's path as the file name: Hypothesis reads its tests' source
    # (inspect.getsource), and on Python 3.13 tokenizing the Markdown there fails.
    exec(compile(block.group(1), "<docs/testing.md example>", "exec"), module.__dict__)
    return module


def test_the_example_tests_do_not_fail_a_health_check_when_slow() -> None:
    module = example()
    tests = [v for k, v in vars(module).items() if k.startswith("test_")]
    assert len(tests) == 2
    for test in tests:
        chosen = test._hypothesis_internal_use_settings
        assert HealthCheck.too_slow in chosen.suppress_health_check, test.__name__
        assert chosen.deadline is None, test.__name__


def test_the_example_tests_pass() -> None:
    module = example()
    module.test_my_store_keeps_sessions()
    module.test_my_store_refuses_illegal_events()
