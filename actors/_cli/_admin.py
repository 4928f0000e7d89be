"""Commands that write or move sessions: ``fork``, ``export``, ``recover`` (``import`` is
``_import``)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import click
import orjson
from rich.text import Text

from runtime import (
    EVENT_TYPES,
    CorruptRow,
    InvalidInput,
    SeqConflict,
    SessionState,
    Timeline,
)
from runtime._article import counted
from runtime.store import (
    RebuildReport,
    SessionInfo,
    SqlStore,
    Store,
    recover_orphans,
    waits_for_approval,
)

from .._ids import utc_now
from .._ownership import running_turns
from ._app import (
    CliError,
    ExitCode,
    Seconds,
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
from ._check import describe_problem
from ._hints import command_line, name_store

__all__ = [
    "FORK_TRIES",
    "events",
    "export",
    "fork",
    "fork_session",
    "free_id",
    "recover",
    "sessions_and_damage",
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
@click.option(
    "--older-than",
    type=Seconds(),
    default=300.0,
    show_default=True,
    metavar="SECONDS",
    help="Only turns idle for longer than this (a live runner keeps writing).",
)
@click.option(
    "--rebuild",
    is_flag=True,
    help="First write every summary row and snapshot again from the events (after "
    "damage that 'amber check' found in derived rows).",
)
@click.option("--dry-run", is_flag=True, help="Only list what would be recovered.")
@db_option()
@json_option
@click.pass_context
def recover(
    ctx: click.Context, older_than: float, rebuild: bool, dry_run: bool, db: str, as_json: bool
) -> None:
    """Give inputs of dead runners' turns back (orphan recovery).

    A session whose active turn has been idle for more than --older-than
    seconds gets an orphan_recovered event: its inputs go back to
    pending_agent, and the next runtime on this store answers them. A turn
    that only waits for a person to approve tool calls is no orphan: it is
    left alone and listed. A session whose rows are damaged is left alone
    and listed (exit 1).

    A turn a live runtime runs is left alone and listed, however long it
    has been idle: on SQLite one started by the runtime that holds the
    store's runner lock, on PostgreSQL one whose session's lease is held
    and unexpired.

    With --rebuild, the derived rows (summaries, snapshots) are first
    written again from the events, which are the truth; a session whose
    events are damaged is left as it is and listed (exit 1).
    """
    now = utc_now()
    cutoff = now - timedelta(seconds=older_than)
    rebuilt: RebuildReport | None = None
    with open_store(db) as store:
        if rebuild:
            rebuilt = _rebuild(store, db, dry_run=dry_run, as_json=as_json)
        listed, damaged = sessions_and_damage(store)
        if rebuilt is not None:
            # --rebuild listed what it left alone (or, with --dry-run, what it would mend).
            left = {p.session_id for p in rebuilt.skipped}
            damaged = [] if dry_run else [e for e in damaged if e.session_id not in left]
        active = [info for info in listed if info.active_turn_id is not None]
        young = [info for info in active if info.updated_at > cutoff]
        # A turn a live runtime runs is not an orphan, however long it has been quiet.
        running = running_turns(store, [i for i in active if i.updated_at <= cutoff], now=now)
        listed = [info for info in listed if info.session_id not in running]
        stale = [info for info in active if info.updated_at <= cutoff and info in listed]
        # A turn that only waits for a person logs nothing while it waits: no orphan.
        waiting = [info for info in stale if waits_for_approval(store, info)]
        if dry_run:
            recovered = [(i.session_id, i.active_turn_id, i.seq + 1) for i in stale
                         if i not in waiting]  # fmt: skip
        else:
            events = recover_orphans(
                store,
                now=now,
                older_than=timedelta(seconds=older_than),
                sessions=listed,
                by="amber recover",
            )
            recovered = [(e.session_id, e.turn_id, e.seq) for e in events]
    if as_json:
        data: dict[str, Any] = {
            "dry_run": dry_run,
            "recovered": [{"session_id": s, "turn_id": t, "seq": q} for s, t, q in recovered],
            "left_alone": [i.session_id for i in young],
            "waiting_for_approval": [i.session_id for i in waiting],
        }
        if running:
            data["running"] = [{"session_id": s, "by": by} for s, by in running.items()]
        if rebuilt is not None:
            data["rebuilt"] = list(rebuilt.rebuilt)
            data["removed"] = list(rebuilt.removed)
            data["skipped"] = [str(p) for p in rebuilt.skipped]
        if damaged:
            data["damaged"] = [
                {"session_id": e.session_id, "seq": e.seq, "error": str(e)} for e in damaged
            ]
        emit_json(data)
        if damaged or (rebuilt is not None and rebuilt.skipped):
            ctx.exit(ExitCode.FAILED)
        return
    console = stdout_console()
    verb, then = ("Would recover", "would be") if dry_run else ("Recovered", "are")
    for session, turn, seq in recovered:
        console.print(
            Text.assemble(
                f"{verb} ",
                (session, "bold"),
                f": {turn} (seq {seq}); its inputs {then} pending again.",
            )
        )
    if not recovered:
        if waiting:  # idle, but only for a person
            console.print("No orphaned turns.")
        else:
            console.print(f"No orphaned turns: none idle for more than {older_than:g} s.")
    if young:
        names = ", ".join(i.session_id for i in young)
        # At 0 s only a session written to after ``now`` was read is young.
        why = (
            f"active less than {older_than:g} s ago"
            if older_than > 0
            else "written to after recover started"
        )
        console.print(Text(f"Left alone ({why}, maybe still running): {names}", style="dim"))
    by_runner: dict[str, list[str]] = {}
    for session, by in running.items():
        by_runner.setdefault(by, []).append(session)
    for by, sessions in by_runner.items():
        console.print(Text(f"Left alone, running in {by}: {', '.join(sessions)}.", style="dim"))
    if running:
        console.print(
            Text(
                "A running turn is no orphan: it ends on its own, and a runtime that stops "
                "gives its turns' inputs back (a worker that died loses its leases after "
                "their ttl; recover then takes its turns).",
                style="dim",
            )
        )
    if waiting:
        names = ", ".join(i.session_id for i in waiting)
        console.print(
            Text(
                f"Left alone (waits for a person to approve tool calls, not a runner): {names}",
                style="dim",
            )
        )
    for error in damaged:
        console.print(Text(f"Left alone: {name_store(str(error), db)}", style="bold red"))
    if damaged or (rebuilt is not None and rebuilt.skipped):
        ctx.exit(ExitCode.FAILED)


def sessions_and_damage(store: Store) -> tuple[list[SessionInfo], list[CorruptRow]]:
    """The sound sessions' summaries, most recently active first, and the damaged ones'
    errors: one damaged session does not stop recovery of the others, nor hide them from
    ``amber sessions`` and the web viewer's list.

    Raises:
        CorruptRow: damage that is no one session's (the store as a whole).
    """
    try:
        return store.list_sessions(), []
    except CorruptRow as exc:
        error = exc
    report = store.check()  # a full scan, only once a listing found damage: every session id
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


def _rebuild(store: Store, db: str, *, dry_run: bool, as_json: bool) -> RebuildReport:
    """Rebuild the derived rows (or, with ``dry_run``, list what a check finds in them)."""
    if dry_run:
        report = store.check()
        derived = [p for p in report.problems if p.derived]
        skipped = tuple(p for p in report.problems if not p.derived)
        if not as_json:
            console = stdout_console()
            for problem in derived:
                console.print(f"Would rebuild: {problem}")
            if not derived:
                console.print("Derived rows are sound: nothing to rebuild.")
            for problem in skipped:
                console.print(
                    Text(f"Would leave alone: {describe_problem(problem, db)}", style="red")
                )
        ids = tuple(sorted({p.session_id for p in derived if p.session_id is not None}))
        return RebuildReport(rebuilt=ids, removed=(), skipped=skipped)
    report_ = store.rebuild()
    if not as_json:
        console = stdout_console()
        console.print(
            f"Rebuilt the summary rows and snapshots of {len(report_.rebuilt)} session(s) from "
            "their events."
        )
        if report_.removed:
            console.print(
                "Dropped derived rows of session(s) with no events: " + ", ".join(report_.removed)
            )
        for problem in report_.skipped:
            console.print(Text(f"Left alone: {describe_problem(problem, db)}", style="bold red"))
    return report_


@click.command()
def events() -> None:
    """List the event kinds the core applies, one per line."""
    # The first line of each event's docstring, written to read as text here (a test
    # checks it has no reST markup), two spaces after the longest kind.
    width = max(len(kind) for kind in EVENT_TYPES)
    for kind, cls in EVENT_TYPES.items():
        click.echo(f"{kind:{width}}  {(cls.__doc__ or '').splitlines()[0]}")
