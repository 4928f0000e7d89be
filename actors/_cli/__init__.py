"""The ``amber`` console script (DESIGN §12), built with click.

``amber demo`` runs the main job; ``amber chat`` is an interactive session;
``sessions``, ``timeline``, ``show``, ``diff``, ``fork``, ``replay``,
``export``, ``import`` and ``recover`` travel in the stored history; ``check``
scans a store for damage; ``inspect`` steps through it in a terminal UI, ``web`` in a
browser. Every command takes ``--db``
(default ``./amber.db``, or ``$AMBER_DB``); exit codes are listed in
``_app.ExitCode`` and docs/cli.md.

Modules: ``_app`` (exit codes, errors, options, the store), ``_render``
(how values look), ``_text``, ``_render``, ``_tables`` (how values look), ``_travel`` and
``_diff`` (read-only commands), ``_views`` (``show
--view``), ``_replay`` (replay and verify), ``_admin`` (commands that write), ``_chat``,
``_web`` (``amber web``, the viewer in ``actors._web``), and this
one (the group, ``demo``, ``inspect`` and ``main``).
"""

from __future__ import annotations

import errno
import os
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from runtime import AmberError

from ._admin import events, export, fork, import_command, recover
from ._app import CliError, ExitCode, db_option, fail, open_store, parse_seq, resolve_seq, translate
from ._chat import chat, resume
from ._check import check_command
from ._diff import diff_command
from ._logs import warnings_on
from ._migrate import migrate
from ._replay import replay_command
from ._travel import load_timeline, sessions, show, timeline
from ._web import web
from ._worker import worker

__all__ = ["ExitCode", "cli", "main"]


def _version() -> str:
    try:
        return version("amber")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "(not installed)"


class AmberGroup(click.Group):
    """A click group that turns Amber's errors and Ctrl-C into one-line errors and exit codes.

    It lists its commands in the order a new user needs them, not alphabetically.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The commands in the order they were added."""
        return list(self.commands)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; map ``AmberError`` and ``KeyboardInterrupt`` to ``CliError``."""
        try:
            return super().invoke(ctx)
        except CliError as exc:
            fail(exc)
        except AmberError as exc:
            fail(translate(exc))
        except KeyboardInterrupt:
            fail(CliError("Interrupted.", ExitCode.INTERRUPTED))
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                raise  # click handles a closed pipe (amber timeline | head)
            fail(CliError(f"{type(exc).__name__}: {exc}", ExitCode.FAILED))
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:
            # A bug, not bad input: still one line, unless asked for the traceback.
            if os.environ.get("AMBER_DEBUG"):
                raise
            fail(
                CliError(
                    f"Internal error: {type(exc).__name__}: {exc}. This is a bug in amber; run "
                    "again with AMBER_DEBUG=1 for the traceback, and report it.",
                    ExitCode.FAILED,
                )
            )


@click.group(cls=AmberGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(_version(), prog_name="amber", message="%(prog)s %(version)s")
def cli() -> None:
    """Amber: an immutable-state actor runtime for LLM agent sessions.

    Start with 'amber demo'; then travel in what it stored with 'amber
    timeline demo', 'amber show demo --at SEQ' or 'amber inspect demo'.

    Exit codes: 0 ok, 1 a check failed (replay --verify, check), 2 usage, 3
    not found (store file, session, seq, message), 4 not an Amber store or
    export, or damaged, 5 the target session exists already, 130 Ctrl-C.
    """


@click.command()
@click.option("--session", "session_id", help="The session id (default: demo, demo-2, …).")
@db_option(create=True)
def demo(session_id: str | None, db: str) -> None:
    """Run the demo: a scripted agent with real tools, stored in --db.

    No network and no API key. Three questions on the CLI adapter: a shell command that runs, a tool
    that fails, and a slow tool interrupted by the next message. Ends with
    what was stored and the commands to inspect it.
    """
    from .._demo import print_summary, run_demo

    console = Console(highlight=False)
    with open_store(db, create=True):
        pass  # a file that is not a store fails here, before the runtime starts
    with warnings_on(console):
        result = run_demo(Path(db), console=console, session_id=session_id)
    print_summary(result, console, db_arg=db)


@click.command()
@click.argument("session")
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
    """
    with open_store(db) as store:
        line = load_timeline(store, session, db)
    seq = resolve_seq(at_seq, line)
    if not sys.stdout.isatty():
        raise CliError(
            "amber inspect needs a terminal (stdout is not one); in scripts use 'amber "
            "timeline' and 'amber show --at SEQ'.",
            ExitCode.USAGE,
        )
    from .._inspect import InspectApp

    InspectApp(line, seq=seq, db=db).run()


for command in (
    demo,
    chat,
    resume,
    sessions,
    timeline,
    show,
    diff_command,
    inspect,
    web,
    fork,
    replay_command,
    export,
    import_command,
    recover,
    check_command,
    events,
    migrate,
    worker,
):
    cli.add_command(command)


def main(argv: list[str] | None = None) -> int:
    """Run the ``amber`` command line; returns the exit code."""
    try:
        cli.main(args=argv, prog_name="amber", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        return code if isinstance(code, int) else 1
    return 0
