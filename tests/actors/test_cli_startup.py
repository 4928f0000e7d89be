"""``amber --version`` and ``amber --help`` start fast: they import nothing heavy."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from actors._cli import COMMANDS, cli

HEAVY = ("trio", "pykka", "pydantic", "rich", "textual", "openai", "anthropic", "google", "runtime")
"""Packages ``--version`` and ``--help`` must not import (the SDKs, the UI, even the core)."""

_PROBE = """
import sys
from actors._cli import main
code = main({argv!r})
heavy = sorted({{name.split(".")[0] for name in sys.modules}} & set({heavy!r}))
print("HEAVY=" + ",".join(heavy))
raise SystemExit(code)
"""


@pytest.mark.parametrize("argv", [["--version"], ["--help"], []])
def test_version_and_help_import_nothing_heavy(argv: list[str]) -> None:
    """In a fresh interpreter, --version, --help and the bare command load none of HEAVY."""
    result = subprocess.run(
        [sys.executable, "-c", _PROBE.format(argv=argv, heavy=HEAVY)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode in (0, 2), result.stderr  # click exits 2 for a bare group
    assert "HEAVY=\n" in result.stdout, result.stdout
    if argv == ["--version"]:
        assert result.stdout.startswith("amber ")


def test_a_command_imports_what_it_uses() -> None:
    """Running one command loads its own module, not every command's (no textual for show)."""
    code = (
        "import sys\n"
        "from actors._cli import main\n"
        "main(['events'])\n"
        "print('LOADED=' + ','.join(sorted(m for m in sys.modules if m.startswith('actors._cli.')"
        " or m.split('.')[0] == 'textual')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    loaded = result.stdout.rsplit("LOADED=", 1)[1].strip().split(",")
    assert "actors._cli._admin" in loaded
    assert "actors._cli._chat" not in loaded
    assert "actors._cli._web" not in loaded
    assert "textual" not in loaded


@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_command_table_matches_the_commands(name: str) -> None:
    """COMMANDS names each command's module and its summary as the command's help has it, so
    the --help listed from the table is the one the commands would give."""
    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    assert command.name == name
    stub = click.Command(name, help=COMMANDS[name][2])
    for limit in (30, 45, 80, 200):
        assert stub.get_short_help_str(limit) == command.get_short_help_str(limit)
