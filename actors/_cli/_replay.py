"""``amber replay``: rebuild sessions from their logs and check them against the store.

``replay --verify`` is the one command whose failing outcome is not an error:
a divergence exits 1 (``FAILED``) after printing every check, so a script
or a cron job can watch a store with ``amber replay --all --verify``.
"""

from __future__ import annotations

import time
from typing import Any

import attrs
import click
from rich.text import Text

from runtime import CorruptRow, ReplayMismatch, SessionState, Timeline, diff, replay
from runtime._article import counted
from runtime.store import SessionInfo, Store

from ._app import (
    ExitCode,
    db_option,
    emit_json,
    json_option,
    open_store,
    require_session,
    session_argument,
    stdout_console,
)
from ._hints import command_line, name_store, quoted

__all__ = ["Check", "replay_command", "verify_session"]


@attrs.frozen
class Check:
    """One check of ``replay --verify``: its name, whether it held, and what was found."""

    name: str
    ok: bool
    detail: str


def verify_session(store: Store, session: str) -> tuple[int, list[Check]]:
    """Replay ``session`` and compare it with what the store recorded (``replay --verify``).

    Damage in derived rows (a summary that fails its digest, a snapshot) is a
    failed check; damage in the log itself is a ``CorruptRow`` (exit 4).

    The store may be live (a runtime appending to the session meanwhile): the
    summary and then the head are read first, and each is compared with the
    replayed state at its own seq, so events written after them are no divergence.
    """
    checks: list[Check] = []
    info: SessionInfo | None
    try:
        info = store.session(session)
    except CorruptRow as exc:
        info, damaged_summary = None, str(exc)
    # Read before the log is replayed: a writer only adds events, so the replay (read
    # last) reaches at least the seqs of the summary and of the head.
    loaded: SessionState | str | None = None
    if info is not None:
        try:
            loaded = store.load_state(session)
        except CorruptRow as exc:  # a damaged snapshot: the replay below says how
            loaded = str(exc)
    try:
        line = store.verify(session)
    except ReplayMismatch as exc:
        return (0 if info is None else info.seq), [Check("snapshot", False, str(exc))]
    if info is None or loaded is None:
        # No summary to load the head from: the log replayed, the snapshot (if any) held.
        checks.append(Check("snapshot", True, "the snapshot, if any, equals the replayed state"))
        checks.append(Check("summary", False, damaged_summary))
        return line.last_seq, checks
    snap = (
        f"the snapshot at seq {info.snapshot_seq} equals the replayed state"
        if info.snapshot_seq
        else "no snapshot yet (fewer events than snapshot_every)"
    )
    checks.append(Check("snapshot", True, snap))
    if isinstance(loaded, str):
        checks.append(Check("head", False, f"the head does not load: {loaded}"))
    else:
        checks.append(_head_check(loaded, line))
    checks.append(_summary_check(info, line))
    return line.last_seq, checks


def _replayed_at(line: Timeline, seq: int) -> SessionState | None:
    """The replayed state at ``seq``, or None if the replay does not reach it."""
    return line.at(seq) if line.first_seq <= seq <= line.last_seq else None


def _head_check(loaded: SessionState, line: Timeline) -> Check:
    """The head loaded from the snapshot (and the events after it) against the replay."""
    replayed = _replayed_at(line, loaded.seq)
    if replayed is not None and loaded == replayed:
        return Check("head", True, f"snapshot + tail equals the replay at seq {loaded.seq}")
    if replayed is None:
        return Check(
            "head",
            False,
            f"the head loaded from the snapshot is at seq {loaded.seq}, but the log replays "
            f"only to seq {line.last_seq}",
        )
    delta = diff(replayed, loaded)
    return Check(
        "head",
        False,
        f"the head loaded from the snapshot differs from the replay at seq {loaded.seq}: "
        f"{len(delta.added)} added, {len(delta.changed)} changed",
    )


def _summary_check(info: SessionInfo, line: Timeline) -> Check:
    """The session's summary row against the replayed state at the summary's seq."""
    recorded = (info.seq, info.messages, dict(info.counts), info.active_turn_id)
    head = _replayed_at(line, info.seq)
    if head is None:
        return Check(
            "summary",
            False,
            f"the session row says seq {info.seq}, but the log replays only to seq {line.last_seq}",
        )
    replayed = (head.seq, len(head), head.status_counts(), head.active_turn_id)
    if recorded == replayed:
        return Check(
            "summary", True, f"the session row matches the replayed head at seq {info.seq}"
        )
    return Check(
        "summary",
        False,
        f"the session row says seq/messages/counts/turn {recorded!r}, the replay {replayed!r}",
    )


@click.command("replay")
@click.argument("session", required=False, callback=session_argument)
@click.option(
    "--verify", is_flag=True, help="Compare the replay with the stored snapshot and summary."
)
@click.option("--all", "all_sessions", is_flag=True, help="Every session of the store.")
@db_option()
@json_option
@click.pass_context
def replay_command(
    ctx: click.Context,
    session: str | None,
    verify: bool,
    all_sessions: bool,
    db: str,
    as_json: bool,
) -> None:
    """Rebuild SESSION from its log; --verify checks the store.

    Every event is decoded strictly and applied again. --verify then checks
    that the stored snapshot, the head loaded from it and the session's
    summary row all equal the replay. Exit status 1 if any check fails.
    """
    if session is None and not all_sessions:
        raise click.UsageError(
            "Pass the SESSION to replay (its id, as 'amber sessions' lists it), or --all for "
            "every session of the store."
        )
    if session is not None and all_sessions:
        raise click.UsageError(
            f"Pass a SESSION or --all, not both: --all replays every session, {session} too."
        )
    results: list[dict[str, Any]] = []
    with open_store(db) as store:
        if session is not None:
            try:
                require_session(store, session, db)
            except CorruptRow:
                if not verify:
                    raise  # --verify reports a damaged summary row as a failed check
        ids = [session] if session is not None else _session_ids(store)
        for sid in ids:
            started = time.perf_counter()
            damaged: CorruptRow | None = None
            try:
                if verify:
                    seq, checks = verify_session(store, sid)
                else:
                    seq, checks = replay(store.events(sid)).last_seq, []
            except CorruptRow as exc:
                if session is not None:
                    raise  # one session: the error itself (exit 4)
                # --all: a damaged log is reported with the session, and the others checked.
                damaged = exc
                seq = exc.seq if exc.seq is not None else 0
                checks = [Check("log", False, f"CorruptRow: {exc}")]
            elapsed = (time.perf_counter() - started) * 1000
            results.append(
                {
                    "session_id": sid,
                    "events": seq,
                    "ms": round(elapsed, 3),
                    "ok": all(c.ok for c in checks),
                    "damaged": damaged is not None,
                    "checks": [attrs.asdict(c) for c in checks],
                }
            )
    failed = [r for r in results if not r["ok"]]
    if as_json:
        emit_json({"ok": not failed, "sessions": results})
    else:
        _print_replays(results, verify, db)
    if any(r["damaged"] for r in results):
        ctx.exit(ExitCode.BAD_STORE)
    if failed:
        ctx.exit(ExitCode.FAILED)


def _session_ids(store: Store) -> list[str]:
    """Every session of the store, even when a summary row is damaged (from a full check)."""
    try:
        return [info.session_id for info in store.list_sessions()]
    except CorruptRow:
        report = store.check()
        found = {p.session_id for p in report.problems if p.session_id is not None}
        return sorted(set(report.heads) | found)


def _print_replays(results: list[dict[str, Any]], verify: bool, db: str) -> None:
    console = stdout_console()
    for result in results:
        what = (
            f": its log is damaged at seq {result['events']}"
            if result["damaged"]
            else f": {counted(result['events'], 'event')} in {result['ms']:.1f} ms"
        )
        console.print(Text.assemble("Replayed ", (result["session_id"], "bold"), what))
        for check in result["checks"]:
            mark = ("  ✓ ", "green") if check["ok"] else ("  ✗ ", "bold red")
            detail = name_store(check["detail"], db)
            console.print(Text.assemble(mark, (check["name"], "bold"), f": {detail}"))
    damaged = [r["session_id"] for r in results if r["damaged"]]
    if verify:
        bad = sum(1 for r in results if not r["ok"] and not r["damaged"])
        if bad:
            console.print(Text(f"Diverged: {bad} of {len(results)} session(s).", style="bold red"))
        elif not damaged:
            console.print(Text(f"Verified: {len(results)} session(s).", style="green"))
    if damaged:
        check = command_line("check", options=("--db", db))
        console.print(
            Text(
                f"Damaged: the log of {len(damaged)} of {len(results)} session(s) "
                f"({', '.join(damaged)}) does not replay; restore the file from a backup "
                f"({quoted(check)} lists every damaged row).",
                style="bold red",
            )
        )
