"""``amber check``: a full consistency scan of a store, like SQLite's integrity check for
Amber's own data.

Every session's log is read from its first event (each row decoded, checked
against its place and against the hash chain) and replayed; its summary row
and snapshot are compared with the replay. Every problem is listed with its
session and seq; nothing is changed. Exit 0 when the store is sound, 1 when
something is wrong (``amber recover --rebuild`` mends derived rows; damaged
events need a backup).
"""

from __future__ import annotations

import time

import click
from rich.text import Text

from runtime.store import CheckReport, Problem

from ._app import ExitCode, db_option, emit_json, json_option, open_store, stdout_console
from ._hints import command_line

__all__ = ["check_command", "describe_problem"]


def describe_problem(problem: Problem, db: str) -> str:
    """One line for a problem: where, what, and what mends it (a command naming ``db``)."""
    restore = "restore the file from a backup"
    fix = (
        command_line("recover", options=("--rebuild", "--db", db)) + " mends it"
        if problem.derived
        else "the log itself is damaged"
        if restore in str(problem)  # the store's error says it already
        else f"the log itself is damaged: {restore}"
    )
    return f"{problem} [{fix}]"


@click.command("check")
@db_option()
@json_option
@click.pass_context
def check_command(ctx: click.Context, db: str, as_json: bool) -> None:
    """Check the whole store: every row, the hash chains, summaries and snapshots.

    Reads every session's log from its first event, checks each row's
    checksum against the one before it, replays it, and compares the summary
    rows and snapshots with the replay. Lists every problem with its session
    and seq; changes nothing. Exit status 1 if anything is wrong.
    """
    started = time.perf_counter()
    with open_store(db) as store:
        report = store.check()
    elapsed = time.perf_counter() - started
    if as_json:
        emit_json(
            {
                "ok": report.ok,
                "sessions": report.sessions,
                "events": report.events,
                "seconds": round(elapsed, 3),
                "problems": [
                    {
                        "session_id": p.session_id,
                        "seq": p.seq,
                        "what": p.what,
                        "derived": p.derived,
                    }
                    for p in report.problems
                ],
                "heads": dict(report.heads),
            }
        )
    else:
        _print(report, db, elapsed)
    if not report.ok:
        ctx.exit(ExitCode.FAILED)


def _print(report: CheckReport, db: str, elapsed: float) -> None:
    console = stdout_console()
    cut = any(p.session_id is not None and not p.derived for p in report.problems)
    console.print(
        f"Checked {db}: {report.sessions} session(s), {report.events} event(s) in {elapsed:.1f} s"
        + (" (of a damaged log, the events before the damaged row)." if cut else ".")
    )
    for session_id, head in sorted(report.heads.items()):
        console.print(Text.assemble(("  ✓ ", "green"), (session_id, "bold"), f"  chain {head}"))
    for problem in report.problems:
        console.print(Text.assemble(("  ✗ ", "bold red"), describe_problem(problem, db)))
    # The counts again at the end: with many sessions the header has scrolled away.
    checked = f"{report.sessions} session(s) checked"
    if report.ok:
        console.print(
            Text(
                f"Sound: {checked}, {report.events} event(s), no problem found: every row "
                "decodes, chains and replays.",
                style="green",
            )
        )
        return
    damaged = len({p.session_id for p in report.problems if p.session_id is not None})
    where = [f"{damaged} session(s)"] if damaged else []
    if any(p.session_id is None for p in report.problems):
        where.append("the store as a whole")
    derived = sum(1 for p in report.problems if p.derived)
    events = len(report.problems) - derived
    parts = []
    if derived:
        mend = command_line("recover", options=("--rebuild", "--db", db))
        parts.append(f"{derived} in derived rows ({mend} mends them)")
    if events:
        parts.append(f"{events} in the event log (restore it from a backup)")
    console.print(
        Text(
            f"Damaged: {checked}, {len(report.problems)} problem(s) found in "
            f"{' and '.join(where)}; {'; '.join(parts)}.",
            style="bold red",
        )
    )
