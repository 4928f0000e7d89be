"""The pytest plugin: fixtures, and a failing test's sessions saved for ``amber inspect``."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import actors.testing
from actors import Runtime, ScriptedModel

TESTS = '''
import pytest
from actors import call, reply, tool


@tool
def shout(text: str) -> str:
    """Shout."""
    return text.upper()


@pytest.fixture
def amber_tools():
    return [shout]


@pytest.fixture
def amber_model(amber_scripted_model):
    return amber_scripted_model([call("shout", {"text": "hi"}), reply("HI")])


def test_memory_runtime_runs_a_turn(amber_memory_runtime):
    amber_memory_runtime.send("s1", "hello")
    state = amber_memory_runtime.wait_idle("s1", timeout=10)
    assert [m.content for m in state][-2:] == ["HI", "HI"]


def test_sqlite_runtime_fails(amber_runtime, tmp_path):
    amber_runtime.send("s1", "hello")
    amber_runtime.wait_idle("s1", timeout=10)
    assert False, "deliberately"
'''


def run_pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_bot.py").write_text(textwrap.dedent(TESTS))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, "test_bot.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "AMBER_FAILURES_DIR"},
    )


def test_fixtures_and_saved_failure(tmp_path: Path) -> None:
    """The fixtures make runtimes; a failing test's sessions land in --amber-failures."""
    result = run_pytest(tmp_path, "--amber-failures", "saved")
    assert "1 failed, 1 passed" in result.stdout, result.stdout + result.stderr
    saved = sorted((tmp_path / "saved").glob("*.db"))
    assert [p.name for p in saved] == ["test_sqlite_runtime_fails-1.db"]
    assert f"amber inspect s1 --db {saved[0]}" in result.stdout


def test_plugin_can_be_turned_off(tmp_path: Path) -> None:
    """-p no:amber removes the fixtures."""
    result = run_pytest(tmp_path, "-p", "no:amber")
    assert "fixture 'amber_memory_runtime' not found" in result.stdout


class TestPublicNames:
    def test_all_is_sorted_and_unique(self) -> None:
        """__all__ is sorted (constants, classes, then functions) and has no repeats."""
        names = actors.testing.__all__
        assert len(names) == len(set(names))
        assert names == sorted(names, key=lambda n: (not n.isupper(), not n[0].isupper(), n))

    def test_every_name_exported_once_and_documented(self) -> None:
        """Each public name is exported and has a docstring."""
        public = {
            n
            for n, v in vars(actors.testing).items()
            if not n.startswith("_") and not inspect.ismodule(v) and n != "annotations"
        }
        assert public == set(actors.testing.__all__)
        for name in actors.testing.__all__:
            value = getattr(actors.testing, name)
            if inspect.isclass(value) or inspect.isfunction(value):
                assert inspect.getdoc(value), name

    def test_runtime_and_model_still_importable(self) -> None:
        """The kit does not shadow the runtime's names."""
        assert Runtime is actors.Runtime
        assert ScriptedModel is actors.ScriptedModel
