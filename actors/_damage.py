"""What a runtime tells the callers of a session it cannot load because a derived row is
damaged (its snapshot, its summary row).

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
from typing import TypeVar

from runtime import CorruptRow
from runtime.store import SQLiteStore, Store

from ._storage import StoreThread

__all__ = ["call_told", "load_error"]

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
    how to mend the row on this store."""
    text = str(exc)
    if not isinstance(exc, CorruptRow) or _HINT not in text:
        return exc
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


def _rebuild(store: Store) -> tuple[str, str, str]:
    """The rebuild command for ``store`` (set in quotes as the CLI's hints are), who must
    be stopped before it runs, and the pronoun for them."""
    from ._cli._hints import command_line, quoted, shell_word  # the CLI's, on demand

    if isinstance(store, SQLiteStore):
        path = os.path.abspath(store.path)
        return (
            quoted(command_line("recover", options=("--rebuild", "--db", path))),
            "the runtime",
            "it",
        )
    schema = getattr(store, "schema", None)
    if getattr(store, "shared", False) and isinstance(schema, str):
        command = f"AMBER_PG_SCHEMA={shell_word(schema)} amber recover --rebuild --db URL"
        return (
            f"{quoted(command)} with the workers' postgresql:// URL",
            "the workers and runtimes on this store",
            "them",
        )
    return _HINT, "the runtime", "it"
