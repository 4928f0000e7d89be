"""``amber demo`` and ``amber inspect``: the commands that run the demo and the terminal UI."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console

from ._app import (
    CliError,
    ExitCode,
    db_option,
    open_any_store,
    open_store,
    parse_seq,
    require_sqlite_file,
    resolve_seq_between,
    session_argument,
    session_id_option,
)
from ._hints import command_line
from ._logs import warnings_on
from ._signals import say_stopped, stop_signals
from ._travel import head_seq

if TYPE_CHECKING:
    from textual.app import App

__all__ = ["demo", "inspect"]


@click.command()
@click.option(
    "--session",
    "session_id",
    callback=session_id_option,
    help="The session id (default: demo, demo-2, …).",
)
@db_option(create=True)
def demo(session_id: str | None, db: str) -> None:
    """Run the demo: a scripted agent with real tools, stored in --db.

    No network and no API key. Three questions on the CLI adapter: a shell command that runs, a tool
    that fails, and a slow tool interrupted by the next message. Ends with
    what was stored and the commands to inspect it.
    """
    from .._demo import print_summary, run_demo

    require_sqlite_file(db, "demo")
    console = Console(highlight=False)
    with open_store(db, create=True):
        pass  # a file that is not a store fails here, before the runtime starts
    with warnings_on(console), stop_signals() as stop:
        result = run_demo(Path(db), console=console, session_id=session_id, running=stop.guarded)
    if stop.received is not None:
        again = command_line("demo", options=("--db", db))
        say_stopped("demo", stop, f"The demo session is cut short; run it again: {again}")
        return
    print_summary(result, console, db_arg=db)


@click.command()
@click.argument("session", callback=session_argument)
@click.option(
    "--at", "at_seq", metavar="SEQ", callback=parse_seq, default="head", help="Start at this seq."
)
@db_option()
def inspect(session: str, at_seq: int, db: str) -> None:
    """Step through SESSION's states in a terminal UI.

    The timeline is on the left, the state at the cursor on the right with
    the change from the previous state highlighted. Up/down (k/j) step,
    Home/End (g/G) go to the ends, [ and ] jump between turns, e jumps to
    the next error, v/V cycle the view (state, history, model view, provider
    requests) forward/back, o opens one message whole, w widens the
    timeline, left/right (h/l) scroll it, q quits. 'amber web' is the same
    in a browser.

    The states are read lazily, from the nearest snapshot: the one at the
    cursor and a window of rows around it; the marks of the turn and error
    jumps are read on a thread of their own while you step.
    """
    from .._inspect_source import StoredSession

    with open_store(db) as store:
        head_seq(store, session, db)  # NOT_FOUND, with the closest ids, if it is not there
    source = StoredSession(lambda: open_any_store(db), session)
    try:
        seq = resolve_seq_between(at_seq, session, 0, source.last_seq)
        source.at(seq)  # the first draw's state: a damaged row on its way fails here (exit 4)
        if not sys.stdout.isatty():
            raise CliError(
                "amber inspect needs a terminal (stdout is not one); in scripts use 'amber "
                "timeline' and 'amber show --at SEQ'.",
                ExitCode.USAGE,
            )
        from .._inspect import InspectApp

        app = InspectApp(source, seq=seq, db=db)
        # SIGTERM quits as q does, so Textual gives the terminal back (a process killed in
        # the app left it on the alternate screen, in raw mode). SIGHUP still ends it: its
        # terminal is gone, and an app writing to it could hang.
        previous = signal.signal(signal.SIGTERM, lambda *_: _quit(app))
        try:
            app.run()
        finally:
            signal.signal(signal.SIGTERM, previous)
    finally:
        source.close()


def _quit(app: App[None]) -> None:
    """Have ``app`` exit from its event loop, as its q key does (safe in a signal handler)."""
    with contextlib.suppress(RuntimeError):  # no loop yet, or none any more: it is ending
        asyncio.get_running_loop().call_soon_threadsafe(app.exit)
