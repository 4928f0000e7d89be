"""``amber migrate``: copy every session, with its whole history, from one store to another.

``amber migrate --from amber.db --to postgresql://…`` moves an embedded store
to PostgreSQL (or back, or between schemas). Each session is exported and
imported (every event checked and applied again, one transaction per
session), so the copy is the same log event for event, and its hash chain
ends at the same head; the command checks that for every session it copied.
A session the target holds already is skipped when its log is the same and
is a conflict (nothing copied for it) when it differs. The source is only read,
and checked whole before the target is touched: a damaged source creates nothing.
"""

from __future__ import annotations

from pathlib import Path

import click

from runtime.store import CheckReport, is_postgres_url

from ._app import CliError, ExitCode, emit_json, json_option, open_store, stdout_console
from ._hints import command_line, quoted

__all__ = ["migrate"]


@click.command()
@click.option("--from", "source", required=True, metavar="PATH|URL", help="The store to copy.")
@click.option(
    "--to", "target", required=True, metavar="PATH|URL", help="The store to copy into (created)."
)
@json_option
def migrate(source: str, target: str, as_json: bool) -> None:
    """Copy every session with its full history from --from to --to.

    Either side is a SQLite file or a postgresql:// URL. Sessions the target
    already holds with the same log are skipped; one that differs is a
    conflict (exit 5) and nothing of it is copied. Every copied session's
    hash chain is checked to end where the source's does.
    """
    if source == target:
        raise CliError("--from and --to name the same store; pass two stores.", ExitCode.USAGE)
    copied: list[str] = []
    same: list[str] = []
    conflicts: list[str] = []
    with open_store(source) as src:
        # The whole source is checked before the target is touched: a damaged source
        # stops here, with no target created and nothing copied (the check's chain heads
        # are then what each copy must end at).
        new_file = not is_postgres_url(target) and not Path(target).exists()
        report = src.check()
        if not report.ok:
            raise CliError(_damaged(report, source, target, new_file), ExitCode.BAD_STORE)
        try:
            with open_store(target, create=True) as dst:
                for info in sorted(src.list_sessions(), key=lambda info: info.session_id):
                    session_id = info.session_id
                    data = src.export_session(session_id)
                    if session_id in dst:
                        there = dst.export_session(session_id)
                        (same if there == data else conflicts).append(session_id)
                        continue
                    dst.import_session(data)
                    copied.append(session_id)
                if copied:
                    got = dst.check().heads
                    wrong = [s for s in copied if report.heads.get(s) != got.get(s)]
                    if wrong:
                        then = (
                            f"{target!r} was removed"
                            if new_file
                            else f"run {quoted(command_line('check', options=('--db', target)))}"
                        )
                        raise CliError(
                            f"The copies of {len(wrong)} session(s) do not end at the source's "
                            f"chain head ({', '.join(wrong[:5])}); {then}.",
                            ExitCode.FAILED,
                        )
        except BaseException:
            if new_file:  # a store this command made: no half-copied file is left behind
                _remove_sqlite(Path(target))
            raise
    if as_json:
        emit_json({"copied": copied, "skipped": same, "conflicts": conflicts})
    else:
        console = stdout_console()
        console.print(
            f"Copied {len(copied)} session(s) from {source} to {target}"
            + (f"; {len(same)} already there with the same log" if same else "")
            + "."
        )
    if conflicts:
        raise CliError(
            f"{len(conflicts)} session(s) differ in the target and were not copied: "
            f"{', '.join(conflicts[:10])}. Export them one by one ('amber export') and import "
            "them under new ids (--as).",
            ExitCode.CONFLICT,
        )


def _damaged(report: CheckReport, source: str, target: str, new_file: bool) -> str:
    """The error for a source store that ``check()`` found damaged."""
    first = report.problems[0]
    fix = (
        f"Mend it with {quoted(command_line('recover --rebuild', options=('--db', source)))}"
        if report.rebuildable
        else f"Restore {source!r} from a backup"
    )
    return (
        f"The source store {source!r} is damaged ({len(report.problems)} problem(s)), so "
        f"nothing was copied"
        + (f" and {target!r} was not created" if new_file else f" to {target!r}")
        + f": {first}. {fix}, then migrate "
        f"again ({quoted(command_line('check', options=('--db', source)))} lists every problem)."
    )


def _remove_sqlite(path: Path) -> None:
    """Remove a SQLite store file and the files SQLite keeps beside it."""
    for name in (path.name, *(path.name + tail for tail in ("-wal", "-shm", "-journal"))):
        path.with_name(name).unlink(missing_ok=True)
