"""Fixtures of the fuzz suite: a sound store to damage, a recorded store for the CLI."""

from __future__ import annotations

import os
import pathlib
import shutil
from collections.abc import Iterator

import pytest

from .inputs import session_log
from .targets import StoreFixture

LONG = os.environ.get("AMBER_FUZZ", "").lower() == "long"
"""The long profile (AMBER_FUZZ=long): many more examples per target."""


def examples(short: int, long: int) -> int:
    """How many examples a fuzz test runs in this profile."""
    return long if LONG else short


@pytest.fixture(scope="module")
def sound_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoreFixture]:
    """Two sessions (one with a snapshot) in a file each damage starts from."""
    folder = tmp_path_factory.mktemp("fuzz-store")
    fixture = StoreFixture(
        folder, {"s": session_log("s", 45), "x": session_log("x", 12)}, snapshot_every=20
    )
    yield fixture
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def cli_store(sound_store: StoreFixture) -> pathlib.Path:
    """A store for command lines (a copy: commands like fork write to it)."""
    return sound_store.copy()
