"""Commands that write or move sessions: ``fork`` and ``export`` (``recover`` is ``_recover``,
``_import``)."""

from __future__ import annotations

from pathlib import Path

import click
import orjson
from rich.text import Text

from runtime import (
    EVENT_TYPES,
    SeqConflict,
    SessionState,
    Timeline,
)
from runtime._article import counted
from runtime.store import (
    SqlStore,
    Store,
)

from .._ids import utc_now
from ._app import (
    CliError,
    ExitCode,
    db_option,
    emit_json,
    json_option,
    open_store,
    parse_seq,
    require_folder,
    require_session,
    resolve_seq,
    resolve_seq_between,
    session_argument,
    session_id_option,
    stdout_console,
)
from ._hints import command_line

__all__ = [
    "FORK_TRIES",
    "events",
    "export",
    "fork",
    "fork_session",
    "free_id",
]


FORK_TRIES = 10
"""How many free ids ``fork_session`` tries for a fork without ``--as`` when other writers
take each one between the check and the write, before it gives up."""


def free_id(store: Store, base: str) -> str:
    """``base``, or ``base-2``, ``base-3`` … : the first id ``store`` has no session of."""
    candidate, number = base, 1
    while candidate in store:
        number += 1
        candidate = f"{base}-{number}"
    return candidate


def fork_session(
    store: Store,
    session: str,
    at_seq: int,
    new_id: str | None,
    db: str,
    *,
    timeline: Timeline | None = None,
) -> tuple[str, int, SessionState]:
    """Store a fork of ``session`` at ``at_seq``; returns its id, the source seq and its head.

    The checks and errors of ``amber fork`` (and of ``amber web``'s fork):
    the session must exist, the seq must be in it, ``new_id`` must be free.
    ``timeline``: the session's timeline if the caller has it loaded already.

    Another writer may store a session under the id after the check: for ``new_id``
    that is the same ``CONFLICT`` as an id taken before; without ``new_id`` the fork
    takes the next free ``-N`` (up to ``FORK_TRIES`` ids, then ``CONFLICT``).
    """
    require_session(store, session, db)
    if timeline is not None:
        line, seq = timeline, resolve_seq(at_seq, timeline)
    elif isinstance(store, SqlStore):
        # Only the state at the fork point, from the nearest snapshot (at 100,000 events,
        # the whole timeline took seconds and held every state for one).
        seq = resolve_seq_between(at_seq, session, 0, store.session(session).seq)
        line = store.load_span(session, seq, seq)
    else:
        line = store.load_timeline(session)
        seq = resolve_seq(at_seq, line)
    if new_id is not None and new_id in store:
        raise _taken(new_id, db)
    base = f"{session}-fork-{seq}"
    tried: list[str] = []
    while True:
        target = new_id if new_id is not None else free_id(store, base)
        forked = line.fork(seq, target, at=utc_now())
        try:
            head = store.append(forked.events())[target]
        except SeqConflict:
            # Another writer stored a session under this id after the check above (the
            # write refused the fork's seq 1 because that session holds it already).
            if target not in store:
                raise
            if new_id is not None:
                raise _taken(new_id, db) from None
            tried.append(target)
            if len(tried) >= FORK_TRIES:
                raise CliError(
                    f"Another writer took each of the {len(tried)} free ids tried for the fork "
                    f"({tried[0]} to {tried[-1]}) as it was stored; run amber fork again, or "
                    "pass --as NEW.",
                    ExitCode.CONFLICT,
                ) from None
            continue
        return target, seq, head


def _taken(new_id: str, db: str) -> CliError:
    return CliError(
        f"The store {db!r} already has a session {new_id!r}; pass another --as, or leave "
        "--as out to get a free id.",
        ExitCode.CONFLICT,
    )


@click.command()
@click.argument("session", callback=session_argument)
@click.option(
    "--at", "at_seq", metavar="SEQ", callback=parse_seq, required=True, help="The seq to fork from."
)
@click.option(
    "--as",
    "new_id",
    metavar="NEW",
    callback=session_id_option,
    help="The new session's id (default: SESSION-fork-SEQ).",
)
@db_option()
@json_option
def fork(session: str, at_seq: int, new_id: str | None, db: str, as_json: bool) -> None:
    """Start a new session from SESSION's state at a seq.

    The source is left as it is.
    The fork's first event carries the state at --at. A fork taken mid-turn
    keeps the active turn: a runtime on this store gives its input back once
    it is idle for recover_after (or now: amber recover --older-than 0).
    """
    with open_store(db) as store:
        target, seq, head = fork_session(store, session, at_seq, new_id, db)
    turn = head.active_turn_id
    if as_json:
        emit_json(
            {
                "session_id": target,
                "source_session_id": session,
                "source_seq": seq,
                "seq": head.seq,
                "messages": len(head),
                "turns": len(head.turn_list()),
                "active_turn_id": turn,
            }
        )
        return
    console = stdout_console()
    console.print(
        Text.assemble(
            f"Forked {session} at seq {seq} into ",
            (target, "bold"),
            f" ({counted(len(head), 'message')}, {counted(len(head.turn_list()), 'turn')}).",
        )
    )
    awaiting = head.active_turn.awaiting_approval if head.active_turn is not None else {}
    if turn is not None and awaiting:
        console.print(
            Text(
                f"It was taken while {turn} waited for approval of {len(awaiting)} tool call(s); "
                "the fork's turn waits for it too: "
                f"{command_line('resume', target, options=('--db', db))} asks for it (add "
                "--shell for a shell command).",
                style="yellow",
            )
        )
    elif turn is not None:
        console.print(
            Text(
                f"It was taken mid-turn: {turn} is still active in the fork. A runtime gives its "
                "input back once it is idle for recover_after; now: "
                + command_line("recover", options=("--older-than", 0, "--db", db)),
                style="yellow",
            )
        )
    look = command_line("show", target, options=("--db", db))
    console.print(Text(f"Look at it: {look}", style="dim"))


@click.command()
@click.argument("session", callback=session_argument)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path, allow_dash=True),
    help="Write to this file ('-': standard output).",
)
@click.option("--force", is_flag=True, help="Overwrite the --output file if it exists.")
@db_option()
def export(session: str, output: Path | None, force: bool, db: str) -> None:
    """Print SESSION as JSON (its whole event log).

    Or write it to --output ('-o -' is standard output, as without it).

    'amber import' reads it back, into this store or another.
    """
    if output is not None and str(output) == "-":
        output = None
    if output is not None and output.exists() and not force:
        raise CliError(
            f"{str(output)!r} exists already; pass --force to overwrite it, or another --output.",
            ExitCode.CONFLICT,
        )
    if output is not None:
        require_folder(output, f"the --output file {str(output)!r}")
    with open_store(db) as store:
        require_session(store, session, db)
        data = store.export_session(session)
    text = orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()
    if output is None:
        click.echo(text)
        return
    try:
        output.write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise CliError(
            f"Cannot write the --output file {str(output)!r}: {exc.strerror or exc}. Pass "
            "--output a file you may write, or leave it out to print the export.",
            ExitCode.FAILED,
        ) from None
    stdout_console().print(f"Exported {session} ({counted(data['seq'], 'event')}) to {output}.")


@click.command()
def events() -> None:
    """List the event kinds the core applies, one per line."""
    # The first line of each event's docstring, written to read as text here (a test
    # checks it has no reST markup), two spaces after the longest kind.
    width = max(len(kind) for kind in EVENT_TYPES)
    for kind, cls in EVENT_TYPES.items():
        click.echo(f"{kind:{width}}  {(cls.__doc__ or '').splitlines()[0]}")
