"""Every example runs as a test."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

EXAMPLES = sorted((pathlib.Path(__file__).parent.parent / "examples").glob("*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(path: pathlib.Path) -> None:
    """The example exits 0 and prints something."""
    result = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()


def test_tour_shows_the_interrupt() -> None:
    """The tour prints the interrupt's effect and a verified replay."""
    path = next(p for p in EXAMPLES if p.name == "timeline_tour.py")
    out = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, check=True
    ).stdout
    assert "msg_call_002     responded -> interrupted" in out
    assert "pending [interrupted]" in out
    assert "Replay verified against" in out


def test_the_readme_embed_snippet_prints_the_reply(tmp_path: pathlib.Path) -> None:
    """The README's first Python block runs as written and prints the reply (it printed
    nothing)."""
    readme = (pathlib.Path(__file__).parent.parent / "README.md").read_text()
    snippet = readme.split("```python\n", 1)[1].split("```", 1)[0]
    result = subprocess.run(
        [sys.executable, "-c", snippet], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Sunny, 24°C.\n"


def test_the_adapter_testing_snippet_runs(tmp_path: pathlib.Path) -> None:
    """docs/adapters.md's "Testing an adapter" block runs as written: its assertions about
    the transcript and the deliveries hold (it used names it never defined)."""
    page = (pathlib.Path(__file__).parent.parent / "docs" / "adapters.md").read_text()
    section = page.split("## Testing an adapter\n", 1)[1]
    snippet = section.split("```python\n", 1)[1].split("```", 1)[0]
    result = subprocess.run(
        [sys.executable, "-c", snippet], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
