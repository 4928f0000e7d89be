"""Stores for the simulator and machines: an in-memory store that survives restarts, and
saving a failing example's sessions where ``amber inspect`` opens them."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path

from .. import Event, SessionState, from_json, to_json
from ..store import MemoryStore, SQLiteStore, Store

__all__ = [
    "FAILURES_ENV",
    "RestartableMemoryStore",
    "failure_path",
    "inspect_commands",
    "save_sessions",
]

FAILURES_ENV = "AMBER_FAILURES_DIR"
"""Environment variable naming where failing examples' stores are saved."""


class RestartableMemoryStore(MemoryStore):
    """A ``MemoryStore`` that a stopping runtime cannot close, so the next one reads it.

    Events are kept as copies decoded from their JSON, as a durable store
    would keep them: a message changed in place after it was stored (a tool
    or adapter forcing a frozen value open) does not change the log, and a
    value that does not survive JSON fails at once, as it would on SQLite.

    Args:
        isolate: copy events through JSON (True), or keep the objects as given.
    """

    def __init__(self, *, isolate: bool = True, snapshot_every: int = 100) -> None:
        super().__init__(snapshot_every=snapshot_every)
        self._isolate = isolate

    def append(self, events: Iterable[Event]) -> dict[str, SessionState]:
        """Keep copies of ``events`` (see ``MemoryStore.append``)."""
        if self._isolate and not isinstance(events, Event):
            events = [from_json(to_json(event), Event) for event in events]
        return super().append(events)

    def close(self) -> None:
        """Do nothing: the machine closes it with ``discard`` when the example ends."""

    def discard(self) -> None:
        """Close it for good."""
        super().close()


def failure_path(name: str, directory: str | os.PathLike[str] | None = None) -> Path:
    """A new file ``<directory>/<name>-<n>.db`` for a failing example's sessions.

    ``directory`` defaults to ``$AMBER_FAILURES_DIR``, else ``.amber-failures``.
    """
    folder = Path(directory or os.environ.get(FAILURES_ENV) or ".amber-failures")
    folder.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_.") or "machine"
    for n in range(1, 10_000):
        path = folder / f"{stem}-{n}.db"
        if not path.exists():
            return path
    raise FileExistsError(f"{folder} holds 9999 saved failures of {stem!r}; clear it out.")


def save_sessions(store: Store, sessions: Sequence[str], path: Path) -> list[str]:
    """Copy ``sessions`` (those ``store`` has) into a new SQLite file at ``path``.

    Returns:
        The sessions saved.
    """
    saved = []
    with SQLiteStore(path) as target:
        for session_id in sessions:
            if session_id in store:
                target.import_session(store.export_session(session_id))
                saved.append(session_id)
    return saved


def inspect_commands(sessions: Sequence[str], path: Path) -> list[str]:
    """The ``amber inspect`` command line for each saved session, quoted for a POSIX shell
    (an id that starts with ``-`` after ``--``, as the CLI's own hints put it)."""
    out = []
    for session_id in sessions:
        if session_id.startswith("-"):
            words = ["amber", "inspect", "--db", str(path), "--", session_id]
        else:
            words = ["amber", "inspect", session_id, "--db", str(path)]
        out.append(shlex.join(words))
    return out
