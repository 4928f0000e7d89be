"""Signals that come before a command handles them: while ``actors._cli`` itself loads,
and while ``amber worker`` loads its ``--app``.

Each process signals itself at a known point (an import), so nothing here depends on
timing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

GUARD = 120.0
"""Seconds a process may take to exit (a hang guard, never a verdict)."""

_SIGNAL_ON_IMPORT = """
import importlib.abc, os, signal, sys

class SignalOnImport(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname == {module!r}:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), {signum})
        return None

sys.meta_path.insert(0, SignalOnImport())
from actors._cli import console_main
console_main()
"""
"""The console script, signalling itself with ``signum`` when ``module`` is first imported."""


def _run(
    module: str, signum: int, *argv: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    code = _SIGNAL_ON_IMPORT.format(module=module, signum=int(signum))
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        timeout=GUARD,
        check=False,
        cwd=cwd,
        env={**os.environ, "AMBER_DB": ""},
    )


class TestCtrlCWhileTheCommandLineLoads:
    """A Ctrl-C while ``import actors._cli`` ran (click: the first ~30 ms after Python
    started) printed a ``KeyboardInterrupt`` traceback for every command. It is the
    documented one line and 130, or for ``amber web`` "Stopped." and 0."""

    @pytest.mark.parametrize(
        ("argv", "code", "out", "err"),
        [
            (["sessions"], 130, "", "amber: Interrupted.\n"),
            (["web", "--db", "x.db"], 0, "Stopped.\n", ""),
            (["--version"], 130, "", "amber: Interrupted.\n"),
        ],
        ids=["sessions", "web", "version"],
    )
    def test_while_click_loads(self, argv: list[str], code: int, out: str, err: str) -> None:
        result = _run("click", signal.SIGINT, *argv)
        assert (result.returncode, result.stdout, result.stderr) == (code, out, err)


_APP = """
import os, signal
os.kill(os.getpid(), {signum})
from runtime.testing import ScriptedModel

def make_app():
    return {{"model": ScriptedModel([])}}
"""


class TestWorkerStoppedWhileItsAppLoads:
    """``amber worker`` stops cleanly (exit 0, its stop line) on SIGINT, SIGTERM or SIGHUP
    once it runs, but one while its ``--app`` module loaded, before its handlers, exited
    130 (Ctrl-C) or was killed (SIGTERM, SIGHUP). Nothing has started then: it says it
    stopped and exits 0, before it touches the store."""

    @pytest.mark.parametrize(
        "signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name
    )
    def test_stops_before_it_starts(self, tmp_path: Path, signum: signal.Signals) -> None:
        (tmp_path / "earlyapp.py").write_text(_APP.format(signum=int(signum)))
        result = _run(
            "no.such.module",  # the app signals itself
            signal.SIGINT,
            "worker",
            "--db",
            "postgresql://nobody@127.0.0.1:1/none",
            "--app",
            "earlyapp:make_app",
            cwd=tmp_path,
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout == ""
        assert result.stderr == (
            f"amber worker: stopped by {signum.name} while --app loaded; nothing had started.\n"
        )
