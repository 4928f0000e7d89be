"""What a runtime tells the callers of a session it cannot load because a derived row is
damaged (its snapshot, its summary row), and the sound sessions of a store some of whose
sessions are damaged (``sessions_and_damage``: a runtime's resume, ``amber recover``).

A damaged row is an error, never skipped (DESIGN §9, docs/reliability.md): the
session fails until its derived rows are written again from its event log, which
is intact. The store's error (``runtime.store`` knows no runtime nor CLI) says
``'amber recover --rebuild'``; a runtime's caller is told exactly what to do on
this store: stop the runtime (a rebuild holds the store's write lock while it
replays every log, so the runtime's writes wait for it, or fail), run the command
naming the store, and start it again.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from runtime import CorruptRow, InvalidInput, SessionState
from runtime._log import LazyLogger
from runtime.store import SessionInfo, SQLiteStore, SqlStore, Store

if TYPE_CHECKING:
    from runtime.store import CheckReport

    from ._storage import StoreThread

__all__ = ["call_told", "head_to_run", "load_error", "resumable", "sessions_and_damage"]

log = LazyLogger("amber.runtime")  # logging imported on the first record: ``amber sessions``
# lists the sound sessions of a store (``sessions_and_damage``) and logs nothing

T = TypeVar("T")

_HINT = "'amber recover --rebuild'"
"""The command the store's errors suggest, quoted as they write it."""

_SNAPSHOT_MEND = re.compile(
    r" (?:Snapshots(?: and checkpoints)? are rebuilt from the event log by "
    r"|Snapshots can be rebuilt from the event log: )"
    r"'amber recover --rebuild'(?: \(store\.rebuild\(\)\))?\.$"
)
"""How the store's snapshot errors end."""


def load_error(exc: Exception, store: Store) -> Exception:
    """The error a session's failed load gives its callers: ``exc``, or for a damaged
    derived row a ``CorruptRow`` (same session and seq) that says the log is intact and
    how to mend the row on this store; for damaged events, one that adds that nothing is
    written to the session and the command that lists every damaged row of this store."""
    text = str(exc)
    if not isinstance(exc, CorruptRow):
        return exc
    if _HINT not in text:  # the log itself: no rebuild mends it
        check = _command(store, "check")
        if exc.session_id is None or check is None:
            return exc
        text += (
            f" This runtime writes nothing to session {exc.session_id!r} (every call for it "
            f"fails with this error) and runs its other sessions; {check} lists every damaged "
            "row of the store."
        )
        error = CorruptRow(text, session_id=exc.session_id, seq=exc.seq)
        error.__cause__ = exc
        return error
    command, runtime, them = _rebuild(store)
    if _SNAPSHOT_MEND.search(text):
        mend = (
            " The session's event log is intact (a snapshot is derived from it), but a runtime "
            "loads the session from its snapshot, so every call for it fails until the "
            f"snapshot is rebuilt: stop {runtime}, run {command} (store.rebuild()), and "
            f"start {them} again."
        )
        text = _SNAPSHOT_MEND.sub(lambda match: mend, text)
    else:
        text = text.replace(_HINT, command) + (
            f" Stop {runtime} before, and start {them} again after: a rebuild holds the "
            "store's write lock while it replays every session's log, so other writes wait "
            "for it (or fail, once they have waited too long)."
        )
    error = CorruptRow(text, session_id=exc.session_id, seq=exc.seq)
    error.__cause__ = exc
    return error


def head_to_run(store: Store, session_id: str) -> SessionState:
    """The head of a session a runtime is to run: its summary row is read first (checked
    against its digest and the log), so a damaged one fails the session, as a damaged
    snapshot does (``CorruptRow``), and as the warning of a resuming runtime that left the
    session out says. Once the runtime's next write put the row right unseen: a call went
    through, and ``amber check`` no longer named the damage."""
    store.session(session_id)
    return store.load_state(session_id)


def call_told(thread: StoreThread, fn: Callable[[Store], T], timeout: float) -> T:
    """``fn(store)`` on the store's thread; a damaged derived row raises the ``CorruptRow``
    of ``load_error``, so a call that reads the store itself (``state``, ``wait_idle``)
    is told what a call through the session's actor is."""
    try:
        return thread.call(fn).result(timeout)
    except CorruptRow as exc:
        error = load_error(exc, thread.store)
        if error is exc:
            raise
        raise error from exc


def sessions_and_damage(
    store: Store, report: CheckReport | None = None
) -> tuple[list[SessionInfo], list[CorruptRow]]:
    """The sound sessions' summaries, most recently active first, and the damaged ones'
    errors: one damaged session does not stop recovery of the others, nor hide them from
    ``amber sessions`` and the web viewer's list. Only the summary rows are read, unless
    they are damaged: then ``report`` (``store.check()``'s, made now when None) gives every
    session id.

    Raises:
        CorruptRow: damage that is no one session's (the store as a whole).
    """
    try:
        return store.list_sessions(), []
    except CorruptRow as exc:
        error = exc
    if report is None:
        report = store.check()  # a full scan, only once a listing found damage
    ids = set(report.heads) | {p.session_id for p in report.problems if p.session_id is not None}
    listed: list[SessionInfo] = []
    damaged: list[CorruptRow] = []
    for session_id in sorted(ids):
        try:
            listed.append(store.session(session_id))
        except CorruptRow as exc:
            damaged.append(exc)
        except InvalidInput:
            pass  # a summary row keyed by no valid id: the listing's error below says so
    if not damaged:
        raise error  # damage that is no one session's: the store as a whole (exit 4)
    listed.sort(key=lambda info: (info.updated_at, info.session_id), reverse=True)
    return listed, damaged


def resumable(store: Store, *, warned: set[str] | None = None) -> list[SessionInfo]:
    """The sessions a runtime may resume or pick up: every sound one, most recently active
    first. A session whose summary row is damaged (or disagrees with its log) is left out
    and logged, a warning naming it, what is damaged and how to mend it, so that one
    damaged session does not keep the runtime from starting (nor a worker's poll from
    picking up the others); a call for it is refused with the same error. Reads only the
    summary rows, as ``list_sessions`` does.

    Args:
        store: the store (on its thread).
        warned: the sessions already logged, not logged again (a worker's polls); the ones
            logged now are added.

    Raises:
        CorruptRow: damage that is no one session's (the store as a whole).
    """
    if isinstance(store, SqlStore):
        listed, damaged = store.sound_sessions()
    else:
        listed, damaged = store.list_sessions(), []
    for exc in damaged:
        if warned is not None:
            if exc.session_id in warned:
                continue
            warned.add(str(exc.session_id))
        log.warning(
            "session %s is not resumed: %s", exc.session_id, load_error(exc, store),
            extra={"amber_damage": exc},
        )  # fmt: skip
    return listed


def _rebuild(store: Store) -> tuple[str, str, str]:
    """The rebuild command for ``store`` (set in quotes as the CLI's hints are), who must
    be stopped before it runs, and the pronoun for them."""
    command = _command(store, "recover", "--rebuild")
    if command is None:
        return _HINT, "the runtime", "it"
    if isinstance(store, SQLiteStore):
        return command, "the runtime", "it"
    return command, "the workers and runtimes on this store", "them"


def _command(store: Store, *words: str) -> str | None:
    """``amber WORDS --db …`` naming ``store`` (set in quotes as the CLI's hints are): its
    file, or a shared PostgreSQL store's schema; None for a store no command opens."""
    from ._cli._hints import command_line, quoted, shell_word  # the CLI's, on demand

    if isinstance(store, SQLiteStore):
        path = os.path.abspath(store.path)
        return quoted(command_line(words[0], options=(*words[1:], "--db", path)))
    schema = getattr(store, "schema", None)
    if getattr(store, "shared", False) and isinstance(schema, str):
        command = f"AMBER_PG_SCHEMA={shell_word(schema)} amber {' '.join(words)} --db URL"
        return f"{quoted(command)} with the workers' postgresql:// URL"
    return None
