"""A store made by real runs, and a runner for the ``amber`` command, for the CLI tests.

(Imported by name like ``harness``; the fixture is module-scoped, so each test
module makes its store once.)
"""

from __future__ import annotations

import io
import shutil
import threading
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner, Result
from rich.console import Console

from actors import Runtime, ScriptedModel, error
from actors._cli import cli
from actors._demo import DemoResult, run_demo
from runtime.store import SQLiteStore


@attrs.frozen
class Recorded:
    """A store written by a real ``amber demo`` run and a session whose model failed."""

    db: Path
    """The store file (do not write to it: use ``copy``)."""
    demo: DemoResult
    """What the demo stored (session ``demo``)."""
    demo_output: str
    """What the demo printed."""

    def copy(self, folder: Path) -> Path:
        """A copy of the store in ``folder``, for tests that write."""
        target = folder / "copy.db"
        shutil.copyfile(self.db, target)
        return target


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """Run the demo into a new store, then a session whose model fails (``broken``)."""
    folder = tmp_path_factory.mktemp("store")
    db = folder / "amber.db"
    out = io.StringIO()
    console = Console(file=out, width=100, force_terminal=False, color_system=None)
    demo = run_demo(db, console=console)
    with Runtime(
        model=ScriptedModel([error("the provider is down")]),
        store=db,
    ) as rt:
        rt.send("broken", "Are you there?", sender="Chii")
        rt.wait_idle("broken", timeout=60)
    with SQLiteStore(db) as store:
        assert store.load_state("broken").active_turn is None
    return Recorded(db=db, demo=demo, demo_output=out.getvalue())


def amber(*args: str | int | Path, input: str | bytes | None = None) -> Result:
    """Run ``amber ARGS`` through click's test runner (150 columns, no colors)."""
    runner = CliRunner(env={"COLUMNS": "150", "AMBER_DB": None})
    return runner.invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)


class Output:
    """Reads a process's stdout in a thread; ``wait_for`` blocks until a text shows up."""

    def __init__(self, stream: object) -> None:
        self.text = ""
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: object) -> None:
        for chunk in iter(lambda: stream.read1(4096), b""):  # type: ignore[attr-defined]
            with self._changed:
                self.text += chunk.decode("utf-8", "replace")
                self._changed.notify_all()

    def join(self) -> None:
        """Wait for the reader to see the end of the output."""
        self._thread.join(timeout=10)

    def wait_for(self, text: str, timeout: float = 120, *, count: int = 1) -> None:
        with self._changed:
            found = self._changed.wait_for(lambda: self.text.count(text) >= count, timeout)
        assert found, f"{text!r} not printed within {timeout} s; output so far:\n{self.text}"
