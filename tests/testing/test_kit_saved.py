"""The commands the testing kit prints for a failing example's saved sessions."""

from __future__ import annotations

import shlex
from pathlib import Path

from runtime.testing import inspect_commands


def test_inspect_commands_run_as_printed() -> None:
    """`amber inspect {id} --db {path}` was printed unquoted: a folder with a space (or a
    session id starting with '-') pasted into a shell opened another store, or failed."""
    path = Path("/tmp/my failures/machine-1.db")
    plain, odd = inspect_commands(["s1", "-odd id"], path)
    assert shlex.split(plain) == ["amber", "inspect", "s1", "--db", str(path)]
    assert shlex.split(odd) == ["amber", "inspect", "--db", str(path), "--", "-odd id"]
