"""`pip install amber` without extras: everything but the extras' features works.

The test environment has every extra installed, so these tests run Python with
the extras' modules blocked (an import of one raises ImportError, as on a machine
that never installed it). Found by CI's fresh-venv run: `amber demo` failed with
"No module named 'anyio'" (the provider package imported an SDK helper eagerly)
and then hung, an adapter actor left running.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BLOCK = """
import importlib.abc, sys
BLOCKED = {"anyio", "openai", "anthropic", "google", "httpx", "httpx2",
           "starlette", "uvicorn", "jinja2", "psycopg", "psycopg_pool", "hypothesis"}
class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"No module named {name!r} (blocked: not in the base install)")
        return None
sys.meta_path.insert(0, Blocker())
"""


def run(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCK + code], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_the_demo_runs(tmp_path: Path) -> None:
    """The README's main job works with no extra installed, and the process exits."""
    result = run(
        "import sys; from actors._cli import main; sys.argv = ['amber', 'demo']; "
        "raise SystemExit(main())",
        tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Inspect it: amber inspect demo" in result.stdout


def test_a_provider_model_names_its_extra(tmp_path: Path) -> None:
    """Asking for a real model without its SDK says which extra to install."""
    result = run(
        "import actors.providers as p\n"
        "from actors import Settings\n"
        "Settings()\n"
        "try:\n"
        "    p.model_from_spec('anthropic:claude-sonnet-4-6', api_key='k')\n"
        "except ImportError as e:\n"
        "    print(type(e).__name__, e)\n",
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("MissingSDK"), result.stdout
    assert "amber[anthropic]" in result.stdout
