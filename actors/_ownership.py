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

``running_turns`` tells ``amber recover`` which active turns are running rather than
orphaned: on SQLite, those of the runner that holds the lock; on PostgreSQL, those of
sessions whose lease is held and unexpired.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from runtime import StoreError
from runtime.store import SessionInfo, SQLiteStore

from ._errors import InvalidConfig

try:  # POSIX; elsewhere the lock is not taken (and every store counts as shared)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "Resume",
    "RunnerLock",
    "StoreBusy",
    "new_runner_id",
    "resume_policy",
    "runner_lock_holder",
    "running_turns",
]

Resume = Literal["all", "none"] | Iterable[str]
"""Which stored sessions a starting runtime resumes: ``"all"``, ``"none"`` or their ids."""


class StoreBusy(StoreError):
    """Another runtime runs this store (one runtime runs a SQLite file, or a ``Store``
    object, at a time), or runs sessions of a PostgreSQL store under the same runner name
    (one per name)."""


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
        self._fd: int | None = None  # the lock file's descriptor while held

    def acquire(self) -> None:
        """Take the lock.

        Raises:
            StoreBusy: another runtime holds it (the message names its pid).
        """
        if fcntl is None:  # pragma: no cover - Windows
            return
        # A bare descriptor, not a file object: a runtime never stopped holds the lock until
        # the process ends, and a file object left to the interpreter to close warns at
        # exit (``ResourceWarning: unclosed file``).
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)  # as open() makes it
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            with os.fdopen(fd, encoding="utf-8") as handle:
                holder = handle.read().strip() or "an unknown process"
            if holder.startswith(f"pid {os.getpid()},"):  # two Runtimes of this process
                go_on = (
                    ", and that one runs in this process: stop it (rt.stop(), or leave its with "
                    "block) before starting another on the file, or give each runtime a file "
                    "of its own."
                )
            else:
                go_on = (
                    ". Stop that one, or give this runtime another store (reading it with the "
                    "amber CLI is fine)."
                )
            raise StoreBusy(
                f"The store {str(self.path)[: -len('.runner')]!r} is run by another runtime "
                f"({holder}); one runtime runs a SQLite store at a time{go_on}"
            ) from None
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}, {self.runner}, since {stamp}\n".encode())
        self._fd = fd

    def release(self) -> None:
        """Let the lock go (idempotent)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        if fcntl is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


_HOLDER = re.compile(r"^pid (\d+), (.+), since (\S+)$")
"""What ``RunnerLock.acquire`` writes into the lock: its pid, runner id and start time."""


def runner_lock_holder(db: str | os.PathLike[str]) -> str | None:
    """What the runtime that runs the SQLite store ``db`` wrote into its runner lock
    (``"pid 123, runner_…, since …"``, or ``"an unknown process"``); None when no runtime
    runs it.

    The lock is tested by taking it shared for a moment (a runtime that starts in that
    moment is refused with ``StoreBusy``, as while any runtime runs the store); a lock
    file that does not exist was never taken.
    """
    if fcntl is None:  # pragma: no cover - Windows
        return None
    path = Path(f"{os.path.realpath(os.fspath(db))}.runner")
    try:
        handle = path.open("r", encoding="utf-8")
    except FileNotFoundError:
        return None
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return handle.read().strip() or "an unknown process"
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    return None


def running_turns(store: Any, sessions: Iterable[SessionInfo], *, now: datetime) -> dict[str, str]:
    """The sessions among ``sessions`` whose active turn a live runtime is running, each
    with who runs it: orphan recovery must leave them alone (a model call would be made
    again, a tool might run twice).

    - A SQLite store whose runner lock is held: the turns that lock's runner started (when
      the lock does not say which runner holds it, every active turn).
    - A PostgreSQL store: the turns of sessions whose lease is held and unexpired at
      ``now`` (a worker that died stops renewing, and its leases expire after their ttl).
    """
    active = [info for info in sessions if info.active_turn_id is not None]
    running: dict[str, str] = {}
    if not active:
        return running
    if isinstance(store, SQLiteStore):
        holder = runner_lock_holder(store.path)
        if holder is None:
            return running
        match = _HOLDER.match(holder)
        runner = match.group(2) if match else None
        for info in active:
            turn = store.load_state(info.session_id).active_turn if runner else None
            if runner is None or (turn is not None and turn.runner == runner):
                running[info.session_id] = f"the runtime that runs this store ({holder})"
    elif callable(getattr(store, "lease", None)):
        for info in active:
            lease = store.lease(info.session_id)
            if lease is not None and lease.expires_at > now:
                until = lease.expires_at.isoformat(timespec="seconds")
                running[info.session_id] = (
                    f"the worker that holds its lease ({lease.owner}, until {until})"
                )
    return running
