"""The ``amber`` console script (DESIGN §12), built with click.

``amber demo`` runs the main job; ``amber chat`` is an interactive session;
``sessions``, ``timeline``, ``show``, ``diff``, ``fork``, ``replay``,
``export``, ``import`` and ``recover`` travel in the stored history; ``check``
scans a store for damage; ``inspect`` steps through it in a terminal UI, ``web`` in a
browser. Every command takes ``--db``
(default ``./amber.db``, or ``$AMBER_DB``); exit codes are listed in
``_app.ExitCode`` and docs/cli.md.

Modules: ``_app`` (exit codes, errors, options, the store), ``_hints`` (the
commands printed for the user to run next, shell-quoted), ``_render``
(how values look), ``_text``, ``_render``, ``_tables`` (how values look), ``_travel`` and
``_diff`` (read-only commands), ``_views`` (``show
--view``), ``_replay`` (replay and verify), ``_admin`` (commands that write),
``_recover`` (``recover``), ``_chat``,
``_web`` (``amber web``, the viewer in ``actors._web``), ``_run`` (``demo``,
``inspect``), and this one (the group and ``main``).

The group imports a command's module only when that command runs (or its
own ``--help`` is asked for): ``amber --version`` and ``amber --help`` load
click and nothing of Amber's (no trio, pykka, rich, textual, SDKs; not even
``runtime``). ``COMMANDS`` lists each command's module and its one-line
summary; a test checks it against the commands themselves.
"""

from __future__ import annotations

import sys

try:  # Ctrl-C while this loads (click: ~30 ms) is Ctrl-C before the command runs
    import errno
    import gc
    import importlib
    import os
    import typing
    from typing import Any, NoReturn

    import click
except KeyboardInterrupt:
    # ``_interrupted``'s answer, with nothing loaded: the console script imports this
    # module, so a traceback here was what a Ctrl-C in amber's first ~80 ms printed. Only
    # ``amber`` imports this private module, so ending the process here is its answer.
    _command = next((word for word in sys.argv[1:] if not word.startswith("-")), None)
    if _command == "web":  # STOPPED_BY_CTRL_C
        print("Stopped.")
        raise SystemExit(0) from None
    print("amber: Interrupted.", file=sys.stderr)
    raise SystemExit(130) from None  # ExitCode.INTERRUPTED

if typing.TYPE_CHECKING:
    from ._app import ExitCode

__all__ = ["COMMANDS", "ExitCode", "cli", "console_main", "keep_to_exit", "main"]

COMMANDS: dict[str, tuple[str, str, str]] = {
    "demo": ("._run", "demo", "Run the demo: a scripted agent with real tools, stored in --db."),
    "chat": ("._chat", "chat", "Chat with an agent; Ctrl-C interrupts the running turn."),
    "resume": (
        "._chat",
        "resume",
        "Continue SESSION on purpose: answer the input it has waiting, then stop.",
    ),
    "sessions": ("._travel", "sessions", "List the stored sessions, most recently active first."),
    "timeline": (
        "._travel",
        "timeline",
        "One line per event: seq, time (UTC), kind, what changed.",
    ),
    "show": ("._travel", "show", "The state of SESSION at a seq, or a projection of it."),
    "diff": (
        "._diff",
        "diff_command",
        "What changed in SESSION from seq A to seq B (default: the head).",
    ),
    "inspect": ("._run", "inspect", "Step through SESSION's states in a terminal UI."),
    "web": ("._web", "web", "Serve a local web page to travel in the stored sessions."),
    "fork": ("._admin", "fork", "Start a new session from SESSION's state at a seq."),
    "replay": (
        "._replay",
        "replay_command",
        "Rebuild SESSION from its log; --verify checks the store.",
    ),
    "export": ("._admin", "export", "Print SESSION as JSON (its whole event log)."),
    "import": (
        "._import",
        "import_command",
        "Store a session from an export file (FILE, or - for stdin).",
    ),
    "recover": (
        "._recover",
        "recover",
        "Give inputs of dead runners' turns back (orphan recovery).",
    ),
    "check": (
        "._check",
        "check_command",
        "Check the whole store: every row, the hash chains, summaries and snapshots.",
    ),
    "events": ("._admin", "events", "List the event kinds the core applies, one per line."),
    "migrate": (
        "._migrate",
        "migrate",
        "Copy every session with its full history from --from to --to.",
    ),
    "worker": (
        "._worker",
        "worker",
        "Run sessions of a PostgreSQL store as one of several workers, until SIGTERM.",
    ),
}
"""Command name -> (module, attribute, one-line summary), in the order ``--help`` lists them."""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("amber")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "(not installed)"


class AmberGroup(click.Group):
    """A click group that turns Amber's errors and Ctrl-C into one-line errors and exit codes.

    It lists its commands in the order a new user needs them, not alphabetically, and
    imports each one's module only when it is needed (module docstring).
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The commands in the order they were added."""
        return [*COMMANDS, *(name for name in self.commands if name not in COMMANDS)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command ``cmd_name``, its module imported now."""
        found = self.commands.get(cmd_name)
        if found is None and cmd_name in COMMANDS:
            module, attribute, _ = COMMANDS[cmd_name]
            found = getattr(importlib.import_module(module, __name__), attribute)
            assert isinstance(found, click.Command)
            self.commands[cmd_name] = found
        return found

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of ``--help``, from ``COMMANDS`` (no command module imported)."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            if name in COMMANDS and name not in self.commands:
                stub = click.Command(name, help=COMMANDS[name][2])  # click shortens it
                rows.append((name, stub.get_short_help_str(limit)))
            else:
                command = self.get_command(ctx, name)
                if command is not None and not command.hidden:
                    rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Parse the group's options, noting the command's name first (``_interrupted``)."""
        # The group's options are flags, so the command is the first word not an option.
        ctx.meta[_COMMAND_KEY] = next((word for word in args if not word.startswith("-")), None)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; map ``AmberError`` and ``KeyboardInterrupt`` to ``CliError``."""
        try:
            from runtime import AmberError

            from ._app import DB_KEY, CliError, ExitCode, fail, translate
        except KeyboardInterrupt:  # Ctrl-C while they load (~60 ms): click said "Aborted!"
            _interrupted(ctx)
        try:
            return super().invoke(ctx)
        except CliError as exc:
            fail(exc)
        except AmberError as exc:
            fail(translate(exc, ctx.meta.get(DB_KEY)))
        except KeyboardInterrupt:
            _interrupted(ctx)
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


STOPPED_BY_CTRL_C = frozenset({"web"})
"""The commands whose way to stop is Ctrl-C: one that comes before the command handles it
(while its module loads) ends it as a later one does, "Stopped." and exit 0. The ``except
KeyboardInterrupt`` around this module's imports names them too (it runs before this)."""

_COMMAND_KEY = "amber.command"
"""``ctx.meta`` key of the command's name, as the group's arguments give it."""


def _interrupted(ctx: click.Context) -> NoReturn:
    """Ctrl-C before the command handled it: "amber: Interrupted." and exit 130 (``fail``'s
    line, without importing ``_app``, which may be what was loading), or for a command of
    ``STOPPED_BY_CTRL_C`` what it prints when it stops, and exit 0."""
    if ctx.meta.get(_COMMAND_KEY) in STOPPED_BY_CTRL_C:
        click.echo("Stopped.")
        raise click.exceptions.Exit(0)
    click.echo("amber: Interrupted.", err=True)
    raise click.exceptions.Exit(130)  # ExitCode.INTERRUPTED


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    click.echo(f"amber {_version()}")
    ctx.exit()


@click.group(cls=AmberGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
def cli() -> None:
    """Amber: an immutable-state actor runtime for LLM agent sessions.

    Start with 'amber demo'; then travel in what it stored with 'amber
    timeline demo', 'amber show demo --at SEQ' or 'amber inspect demo'.

    Exit codes: 0 ok, 1 a check failed (replay --verify, check; recover left a
    damaged session alone) or an operation could not finish, 2 usage, 3 not
    found (store file, session, seq, message), 4 not an Amber store or export,
    or damaged, 5 the target exists already, 130 Ctrl-C.
    """


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


QUICK_EXIT = frozenset({"sessions", "timeline", "show", "diff"})
"""The read-only commands after which ``console_main`` ends the process at once."""


def console_main() -> NoReturn:
    """The ``amber`` console script: ``main()`` on ``sys.argv``, then exit with its code.

    After a read-only command (``QUICK_EXIT``) the process ends without tearing the
    interpreter down (``os._exit``, once stdout and stderr are flushed): freeing a long
    session's loaded state object by object cost ~35 ms after ``amber show`` at the head
    of a 100,000-event session, with everything printed already. The store is closed by
    then (each command closes it); what the command keeps (``keep_to_exit``) is never
    freed, and the cyclic GC's young collections run at most every ``YOUNG_THRESHOLD``
    allocations. Any other command, or an output that does not flush
    (a closed pipe), exits the usual way: same output, same exit code. Only this entry
    point does it; ``main`` returns, and tests call that (or ``cli``) in-process.
    """
    global _KEPT
    quick = quick_exit(sys.argv[1:])
    if quick:
        _KEPT = []
        # Young collections a hundred times rarer: importing the command made ~35 of them
        # (~10 ms in all) for a process that frees nothing it keeps. Still bounded, so a
        # long `timeline` collects what cyclic garbage it makes.
        gc.set_threshold(YOUNG_THRESHOLD, *gc.get_threshold()[1:])
    code = main()
    if quick:
        try:
            for stream in (sys.stdout, sys.stderr):
                if stream is not None:  # None: started without that file descriptor
                    stream.flush()
        except (OSError, ValueError):
            pass  # the usual exit reports it, as it always has
        else:
            os._exit(code)
    sys.exit(code)


YOUNG_THRESHOLD = 70_000
"""The GC's first threshold during a ``QUICK_EXIT`` command (CPython's default: 700)."""

_KEPT: list[object] | None = None
"""What ``keep_to_exit`` keeps: a list while ``console_main`` runs a ``QUICK_EXIT`` command."""


def keep_to_exit(*values: object) -> None:
    """Keep ``values`` alive until the process ends, when ``console_main`` will end it
    without freeing anything: a command's loaded state or its JSON data is then not freed
    object by object when the command returns (~10 ms for the state at the head of a
    100,000-event session, more for its JSON data). Elsewhere (``main`` or ``cli`` called
    in-process, by tests say) nothing is kept."""
    if _KEPT is not None:
        _KEPT.extend(values)


def quick_exit(argv: list[str]) -> bool:
    """Whether ``argv`` runs a ``QUICK_EXIT`` command (the group's own options are flags,
    so the command is its first word that is not an option)."""
    command = next((word for word in argv if not word.startswith("-")), None)
    return command in QUICK_EXIT


def __getattr__(name: str) -> Any:
    if name == "ExitCode":  # lives with the heavier helpers; loaded when asked for
        from ._app import ExitCode

        return ExitCode
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
