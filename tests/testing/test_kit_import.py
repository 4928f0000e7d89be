"""Importing the kit without Hypothesis says which extra to install."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("module", ["runtime.testing", "actors.testing"])
def test_without_hypothesis_the_import_names_the_extra(module: str) -> None:
    """It was a bare ``ModuleNotFoundError: No module named 'hypothesis'``."""
    code = (
        "import sys\n"
        "sys.modules['hypothesis'] = None  # as if it were not installed\n"
        "try:\n"
        f"    import {module}\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc, sep=': ')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.splitlines() == [
        "ImportError: runtime.testing (Amber's testing kit) needs Hypothesis (import of "
        "hypothesis halted; None in sys.modules); install the testing extra with: python3 -m "
        "pip install '.[testing]' in your Amber checkout ('amber[testing]' where Amber comes "
        "from a package index)."
    ]
