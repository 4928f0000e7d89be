"""The test tree's layout: pytest imports test modules by basename."""

from __future__ import annotations

import collections
import pathlib

TESTS = pathlib.Path(__file__).parent


def test_test_module_names_are_unique() -> None:
    """No two test modules share a basename (pytest would refuse to collect them)."""
    names = collections.Counter(p.name for p in TESTS.rglob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []
