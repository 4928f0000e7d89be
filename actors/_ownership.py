"""Who owns a store's sessions: the runner lock of a SQLite file, and the resume policy.

One runtime runs a SQLite store at a time: it holds an advisory lock on a
file beside it (``amber.db.runner``, ``fcntl.flock``) for as long as it
runs, and a second runtime on the same file is refused with the pid of the
first. Readers (the CLI's time-travel commands, ``amber web``) take no lock.
Because of it, every turn a starting runtime finds active was left by a
runner that is gone, and it is recovered at once instead of after
``recover_after``.

``Resume`` says which stored sessions a starting runtime loads and answers:
``"all"`` (a service: orphan recovery after a crash, replies delivered that
a crash held back), ``"none"`` (the default: a program or a debugging
command touches only the sessions it sends to), or the ids of the sessions
to continue.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Literal

from runtime import StoreError

from ._errors import InvalidConfig

try:  # POSIX; elsewhere the lock is not taken (and every store counts as shared)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["Resume", "RunnerLock", "StoreBusy", "new_runner_id", "resume_policy"]

Resume = Literal["all", "none"] | Iterable[str]
"""Which stored sessions a starting runtime resumes: ``"all"``, ``"none"`` or their ids."""


class StoreBusy(StoreError):
    """Another runtime runs this store (one runtime runs a SQLite store at a time)."""


def new_runner_id() -> str:
    """A new runner incarnation id (``runner_`` and 12 random hex digits)."""
    return f"runner_{secrets.token_hex(6)}"


def resume_policy(value: object) -> Literal["all", "none"] | frozenset[str]:
    """``value`` checked: ``"all"``, ``"none"``, or a set of session ids.

    Raises:
        InvalidConfig: anything else.
    """
    if value == "all":
        return "all"
    if value == "none":
        return "none"
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise InvalidConfig(
            f"resume must be 'all', 'none' or an iterable of session ids (got {value!r}); "
            "'all' suits a service (it recovers and answers every stored session that needs "
            "it), 'none' a program that touches only its own sessions."
        )
    ids = frozenset(value)
    for item in ids:
        if not isinstance(item, str) or not item:
            raise InvalidConfig(f"resume names session ids, non-empty strs (got {item!r}).")
    return ids


class RunnerLock:
    """The advisory lock a runtime holds on a SQLite store while it runs it.

    Args:
        db: the store's file; the lock is ``<db>.runner`` beside the file itself (its path
            resolved: a symlink or a path with ``..`` in it locks the same file).
        runner: the runtime's runner id, written into the lock for messages.
    """

    def __init__(self, db: str | os.PathLike[str], runner: str) -> None:
        self.path = Path(f"{os.path.realpath(os.fspath(db))}.runner")
        self.runner = runner
        self._file: IO[str] | None = None

    def acquire(self) -> None:
        """Take the lock.

        Raises:
            StoreBusy: another runtime holds it (the message names its pid).
        """
        if fcntl is None:  # pragma: no cover - Windows
            return
        handle = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "an unknown process"
            handle.close()
            raise StoreBusy(
                f"The store {str(self.path)[: -len('.runner')]!r} is run by another runtime "
                f"({holder}); one runtime runs a SQLite store at a time. Stop that one, or "
                "give this runtime another store (reading it with the amber CLI is fine)."
            ) from None
        handle.seek(0)
        handle.truncate()
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        handle.write(f"pid {os.getpid()}, {self.runner}, since {stamp}\n")
        handle.flush()
        self._file = handle

    def release(self) -> None:
        """Let the lock go (idempotent)."""
        handle, self._file = self._file, None
        if handle is None:
            return
        with contextlib.suppress(OSError):
            handle.seek(0)
            handle.truncate()
        if fcntl is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        handle.close()
