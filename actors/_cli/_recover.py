"""``amber recover``: orphan recovery, and with ``--rebuild`` the derived rows written again
from the events.

Recover reads every session's log as ``amber check`` does (``store.check()``):
an edited event row leaves the summary row and the latest snapshot sound, so
only reading the log finds it. A damaged session is left alone (a recovery
event would chain onto rows that cannot be trusted), listed with what mends
it, and the command ends saying what it did not repair and exits 1.
``--quick`` reads only the summary rows (the scan costs about 1 s per 20,000
events).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import click
from rich.text import Text

from runtime._handed import handed_calls, marked_messages
from runtime.store import (
    CheckReport,
    Problem,
    RebuildReport,
    SessionInfo,
    Store,
    recover_orphans,
    waits_for_approval,
)

from .._damage import sessions_and_damage
from .._ids import utc_now
from .._ownership import running_turns
from ._app import ExitCode, Seconds, db_option, emit_json, json_option, open_store, stdout_console
from ._check import describe_problem
from ._hints import command_line, name_store

__all__ = ["not_repaired", "recover", "sessions_and_damage"]


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
@click.option(
    "--quick",
    is_flag=True,
    help="Read the summary rows only, not every log: fast on a large store, but damage "
    "in the events goes unseen ('amber check' finds it).",
)
@db_option()
@json_option
@click.pass_context
def recover(
    ctx: click.Context,
    older_than: float,
    rebuild: bool,
    dry_run: bool,
    quick: bool,
    db: str,
    as_json: bool,
) -> None:
    """Give inputs of dead runners' turns back (orphan recovery).

    A session whose active turn has been idle for more than --older-than
    seconds gets an orphan_recovered event: its inputs go back to
    pending_agent, and the next runtime on this store answers them. A turn
    that only waits for a person to approve tool calls is no orphan: it is
    left alone and listed. Every log is read as 'amber check' reads it
    (--quick: only the summary rows): a session whose rows are damaged is
    left alone and listed with what mends it (exit 1).

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
    report: CheckReport | None = None
    with open_store(db) as store:
        problems: list[Problem] = []
        if rebuild:
            rebuilt = _rebuild(store, db, dry_run=dry_run, as_json=as_json)
            problems = list(rebuilt.skipped)
        elif not quick:
            # Every log read: an edited event row shows in no summary row.
            report = store.check()
            problems = list(report.problems)
        listed, damaged = sessions_and_damage(store, report)
        unlisted: list[Problem] = []
        if rebuilt is not None:
            # --rebuild listed what it left alone (or, with --dry-run, what it would mend).
            left = {p.session_id for p in rebuilt.skipped}
            damaged = [] if dry_run else [e for e in damaged if e.session_id not in left]
        else:
            named = {e.session_id for e in damaged}
            unlisted = [p for p in problems if p.session_id is None or p.session_id not in named]
        # A damaged session is left alone: a recovery would chain onto rows not to be trusted.
        hurt = {p.session_id for p in problems}
        listed = [info for info in listed if info.session_id not in hurt]
        active = [info for info in listed if info.active_turn_id is not None]
        young = [info for info in active if info.updated_at > cutoff]
        # A turn a live runtime runs is not an orphan, however long it has been quiet.
        running = running_turns(store, [i for i in active if i.updated_at <= cutoff], now=now)
        listed = [info for info in listed if info.session_id not in running]
        stale = [info for info in active if info.updated_at <= cutoff and info in listed]
        # A turn that only waits for a person logs nothing while it waits: no orphan.
        waiting = [info for info in stale if waits_for_approval(store, info)]
        if dry_run:
            # Each call handed to its tool is marked (it may have run) before the recovery.
            recovered = [(i.session_id, i.active_turn_id, i.seq + 1 + _handed(store, i))
                         for i in stale if i not in waiting]  # fmt: skip
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
        if damaged or unlisted:
            data["damaged"] = [
                {"session_id": e.session_id, "seq": e.seq, "error": str(e)} for e in damaged
            ] + [{"session_id": p.session_id, "seq": p.seq, "error": p.what} for p in unlisted]
        emit_json(data)
        if damaged or problems:
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
    for problem in unlisted:
        # A session's damage leaves it alone; the store's (a guard dropped) is only found.
        said = "Left alone" if problem.session_id is not None else "Found"
        console.print(Text(f"{said}: {describe_problem(problem, db)}", style="bold red"))
    summary = not_repaired(problems, db)
    if summary is not None:
        console.print(Text(summary, style="bold red"))
    if damaged or problems:
        ctx.exit(ExitCode.FAILED)


def not_repaired(problems: Sequence[Problem], db: str) -> str | None:
    """The last line of ``recover`` when ``problems`` are left: what was not repaired, and
    what mends it (commands naming ``db``); None when nothing is left."""
    if not problems:
        return None
    logs = sorted({p.session_id for p in problems if p.session_id and not p.derived})
    derived = sorted(
        {p.session_id for p in problems if p.session_id and p.derived and p.session_id not in logs}
    )
    parts = []
    if logs:
        restore = command_line("import", "FILE", options=("--as", "NEW", "--db", db))
        parts.append(
            f"the event log of {len(logs)} session(s) is damaged ({', '.join(logs)}); recover "
            "cannot mend events. Restore the file from a backup, or import an export of the "
            f"session made before the damage ({restore})"
        )
    if derived or any(p.session_id is None and p.derived for p in problems):
        whose = f"{len(derived)} session(s) ({', '.join(derived)})" if derived else "the store"
        mend = command_line("recover", options=("--rebuild", "--db", db))
        parts.append(f"the derived rows of {whose} are damaged: {mend} mends them")
    if any(p.session_id is None and not p.derived for p in problems):
        parts.append("the store as a whole is damaged: restore the file from a backup")
    check = command_line("check", options=("--db", db))
    return f"Not repaired: {'; '.join(parts)}; {check} lists every problem."


def _handed(store: Store, info: SessionInfo) -> int:
    """How many calls of the session's active turn recovery marks as ones that may have run."""
    state = store.load_state(info.session_id)
    return len(marked_messages(state, handed_calls(state)))


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
