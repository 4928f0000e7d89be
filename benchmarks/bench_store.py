"""Store benchmark: durable appends, rehydration with and without snapshots, bytes per event.

Run from the repository root::

    python benchmarks/bench_store.py            # full run (~1-2 min on 2 cores)
    python benchmarks/bench_store.py --quick    # smoke run (~15 s)
    python benchmarks/bench_store.py --check    # exit 1 if a requirement is not met
    python benchmarks/bench_store.py --json out.json

Every figure is measured with the cyclic GC on. Each rehydration runs in a
fresh Python process (a runtime starting cold, with nothing else in its
heap), repeated, and the median is reported. Files live in a temporary
directory on the same disk as ``$TMPDIR``.

What it measures (findings in ``docs/performance-store.md``):

1. durable append throughput (events/s): one event per ``append`` (one
   fsync each) vs batches of 10 and 100 (group commit), each event checked
   by the reducer before it is stored;
2. rehydrating a 10,000-event session: ``load_state`` from the log alone
   (no snapshot) vs from a snapshot (tail 0, and tail 99: the worst case with
   the default ``snapshot_every=100``); requirement: with snapshots at most
   1/10 of the full replay;
3. the cost of one snapshot of that session after 100 more events (chunked:
   only what changed is written) and of a full rewrite;
4. file bytes per event, with and without snapshots.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

try:
    import runtime  # noqa: F401
except ImportError:  # a plain checkout, not installed: use the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runtime import (
    Category,
    Event,
    MessageAdded,
    SessionState,
    Status,
    StatusChanged,
    ToolCall,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
    apply,
    new_message,
)
from runtime.store import SQLiteStore

T0 = datetime(2026, 5, 27, 12, 50, tzinfo=UTC)
SESSION = "bench"
NEVER = 10**9  # snapshot_every that never triggers


def session_events(count: int, session_id: str = SESSION) -> list[Event]:
    """A scripted agent session: turns of 11 events (question, thought, tool call and
    result, reply, turn end, four deliveries), with realistic text sizes."""
    state = SessionState.empty(session_id)
    events: list[Event] = []

    def emit(make: Callable[..., Event]) -> None:
        nonlocal state
        event = make(session_id=session_id, seq=state.seq + 1, at=T0 + timedelta(seconds=state.seq))
        state = apply(state, event)
        events.append(event)

    def add(category: Category, mid: str, **fields: Any) -> None:
        message = new_message(category, id=mid, session_id=session_id, created_at=T0, **fields)
        emit(lambda **kw: MessageAdded(message=message, **kw))

    turn = 0
    while len(events) < count:
        turn += 1
        t = f"turn_{turn}"
        add(
            Category.USER_QUESTION,
            f"u{turn}",
            sender="Chii",
            content=f"Please run the unit tests of the history module ({turn}) and tell me.",
        )
        emit(lambda t=t, **kw: TurnStarted(turn_id=t, **kw))
        add(
            Category.THOUGHT,
            f"th{turn}",
            turn_id=t,
            parent_id=f"u{turn}",
            content="I need to run pytest on tests/test_history.py with the shell tool.",
        )
        call = ToolCall(
            id=f"call_{turn}",
            name="run_shell_command",
            arguments={"command": "uv run pytest tests/test_history.py"},
        )
        add(
            Category.TOOL_CALL,
            f"c{turn}",
            turn_id=t,
            parent_id=f"u{turn}",
            tool_call=call,
            metadata={"tool_name": "run_shell_command"},
        )
        add(
            Category.TOOL_RESULT,
            f"r{turn}",
            turn_id=t,
            parent_id=f"c{turn}",
            tool_call_id=call.id,
            sender="run_shell_command",
            content="collected 5 items\n\ntests/test_history.py ..... [100%]\n5 passed in 0.42s",
        )
        add(
            Category.REPLY,
            f"a{turn}",
            turn_id=t,
            parent_id=f"u{turn}",
            content="All five tests of the history module pass.",
        )
        emit(
            lambda t=t, **kw: TurnEnded(
                turn_id=t,
                outcome=TurnOutcome.PROCESSED,
                metrics={"tool_calls": 1},
                duration_ms=812.5,
                **kw,
            )
        )
        for prefix in ("th", "c", "r", "a"):
            mid = f"{prefix}{turn}"
            expected = state.message(mid).status
            emit(
                lambda mid=mid, expected=expected, **kw: StatusChanged(
                    message_id=mid, expected=expected, status=Status.DELIVERED, **kw
                )
            )
    return events[:count]  # fmt: skip


def fresh(folder: Path, name: str) -> Path:
    path = folder / name
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return path


def file_bytes(path: Path) -> int:
    """Size of the store once its WAL is checkpointed into the main file."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return path.stat().st_size


# -- 1. durable appends ---------------------------------------------------------------


def bench_appends(folder: Path, events: list[Event], batch_sizes: list[int]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for size in batch_sizes:
        path = fresh(folder, f"append_{size}.db")
        with SQLiteStore(path, snapshot_every=100) as store:
            start = time.perf_counter()
            for i in range(0, len(events), size):
                store.append(events[i : i + size])
            elapsed = time.perf_counter() - start
        results[str(size)] = {
            "events": len(events),
            "seconds": elapsed,
            "events_per_s": len(events) / elapsed,
            "ms_per_append": elapsed / -(-len(events) // size) * 1e3,
        }
    return results


# -- 2. rehydration (each in a fresh process) -----------------------------------------


def child_load(path: str) -> None:
    """Run in a fresh process: time opening the store and ``load_state``."""
    start = time.perf_counter()
    store = SQLiteStore(path)
    opened = time.perf_counter()
    state = store.load_state(SESSION)
    loaded = time.perf_counter()
    print(json.dumps({"open": opened - start, "load": loaded - opened, "seq": state.seq}))


def timed_loads(paths: dict[str, Path], repeats: int) -> dict[str, dict[str, Any]]:
    """Load each store ``repeats`` times, interleaved, so noise hits them alike."""
    runs: dict[str, list[dict[str, Any]]] = {key: [] for key in paths}
    for _ in range(repeats):
        for key, path in paths.items():
            out = subprocess.run(
                [sys.executable, __file__, "--child-load", str(path)],
                capture_output=True, text=True, check=True,
            ).stdout  # fmt: skip
            runs[key].append(json.loads(out))
    results = {}
    for key, found in runs.items():
        loads = [run["load"] for run in found]
        results[key] = {
            "median_s": statistics.median(loads),
            "min_s": min(loads),
            "open_median_s": statistics.median(run["open"] for run in found),
            "seq": found[0]["seq"],
        }
    return results


def build(path: Path, events: list[Event], *, every: int, snapshot_at: int | None = None) -> None:
    with SQLiteStore(path, snapshot_every=every) as store:
        for i in range(0, len(events), 500):
            chunk = events[i : i + 500]
            if snapshot_at is not None and chunk[0].seq <= snapshot_at < chunk[-1].seq:
                cut = snapshot_at - chunk[0].seq + 1
                store.append(chunk[:cut])
                store.snapshot(SESSION)
                store.append(chunk[cut:])
            else:
                store.append(chunk)


def bench_rehydrate(folder: Path, events: list[Event], repeats: int) -> dict[str, Any]:
    n = len(events)
    plain = fresh(folder, "no_snapshots.db")
    build(plain, events, every=NEVER)
    at_head = fresh(folder, "snapshot_tail0.db")
    build(at_head, events, every=100)
    tail = fresh(folder, "snapshot_tail99.db")
    build(tail, events, every=NEVER, snapshot_at=n - 99)
    loads = timed_loads({"full": plain, "tail0": at_head, "tail99": tail}, repeats)
    full, tail0, tail99 = loads["full"], loads["tail0"], loads["tail99"]
    return {
        "events": n,
        "full_replay": full,
        "snapshot_tail_0": tail0,
        "snapshot_tail_99": tail99,
        "ratio_tail_0": tail0["median_s"] / full["median_s"],
        "ratio_tail_99": tail99["median_s"] / full["median_s"],
        "ratio_tail_99_min": tail99["min_s"] / full["min_s"],
        "files": {"no_snapshots": plain, "snapshots": at_head},
    }


# -- 3. one snapshot of a long session -------------------------------------------------


def bench_snapshot(path: Path, more: list[Event]) -> dict[str, Any]:
    with SQLiteStore(path, snapshot_every=NEVER) as store:
        store.load_state(SESSION)
        store.append(more)
        statements: list[str] = []
        store._conn().set_trace_callback(statements.append)
        start = time.perf_counter()
        store.snapshot(SESSION)
        incremental = time.perf_counter() - start
        chunks_written = sum(
            1 for s in statements if s.startswith("INSERT OR REPLACE INTO snapshot_chunks")
        )
        start = time.perf_counter()
        store.snapshot(SESSION, rebuild=True)
        rebuild = time.perf_counter() - start
        messages = len(store.load_state(SESSION).messages)
    return {
        "events_since_last": len(more),
        "messages": messages,
        "incremental_ms": incremental * 1e3,
        "chunk_rows_written": chunks_written,
        "rebuild_ms": rebuild * 1e3,
    }  # fmt: skip


# -- main ------------------------------------------------------------------------------


def bench_checksums(path: Path, repeats: int) -> dict[str, Any]:
    """What the hash chain and the snapshot digests cost on reads, against the reads.

    ``load_timeline`` reads, decodes, chains and replays every row; the chain's
    share is timed alone over the same rows (hashing each stored body after
    the previous hash, as ``ChainCheck.row`` does). ``load_state`` (snapshot +
    tail) checks a digest of every snapshot row it reads; their share is the
    digests of those rows alone.
    """
    from runtime.store._chain import ChainCheck, digest, genesis

    with contextlib.closing(sqlite3.connect(path)) as db:
        rows = db.execute(
            "SELECT seq, CAST(body AS BLOB), hash FROM events WHERE session_id = ? ORDER BY seq",
            (SESSION,),
        ).fetchall()
        snapshot_rows = [
            row[0]
            for row in db.execute(
                "SELECT CAST(record AS BLOB) FROM snapshots WHERE session_id = ? UNION ALL "
                "SELECT CAST(body AS BLOB) FROM snapshot_chunks WHERE session_id = ?",
                (SESSION, SESSION),
            )
        ]
    with SQLiteStore(path) as store:
        events = store.events(SESSION)
    full, chain, state, digests = [], [], [], []
    for _ in range(repeats):
        with SQLiteStore(path) as store:
            started = time.perf_counter()
            store.load_timeline(SESSION)
            full.append(time.perf_counter() - started)
        started = time.perf_counter()
        check = ChainCheck(SESSION, genesis(SESSION))
        for (seq, body, stored), event in zip(rows, events, strict=True):
            check.row(seq, stored, body, event)
        chain.append(time.perf_counter() - started)
        with SQLiteStore(path) as store:
            started = time.perf_counter()
            store.load_state(SESSION)
            state.append(time.perf_counter() - started)
        started = time.perf_counter()
        for text in snapshot_rows:
            digest(text)
        digests.append(time.perf_counter() - started)
    count = len(rows)
    return {
        "events": count,
        "load_timeline_median_ms": statistics.median(full) * 1e3,
        "chain_median_ms": statistics.median(chain) * 1e3,
        "chain_us_per_event": statistics.median(chain) / count * 1e6,
        "chain_share": statistics.median(chain) / statistics.median(full),
        "load_state_median_ms": statistics.median(state) * 1e3,
        "snapshot_digest_median_ms": statistics.median(digests) * 1e3,
        "snapshot_bytes": sum(len(text) for text in snapshot_rows),
        "digest_share": statistics.median(digests) / statistics.median(state),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller run, for CI")
    parser.add_argument("--check", action="store_true", help="exit 1 if a requirement fails")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument("--child-load", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_load:
        child_load(args.child_load)
        return 0

    n = 2_000 if args.quick else 10_000
    singles = 200 if args.quick else 1_000
    repeats = 3 if args.quick else 9
    events = session_events(n + 100)
    main_events, more = events[:n], events[n:]
    machine = {
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
    }
    print(f"Amber store benchmark — Python {machine['python']}, SQLite {machine['sqlite']}, "
          f"{machine['cpu_count']} cores, {machine['platform']}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="amber-bench-") as tmp:
        folder = Path(tmp)
        appends = bench_appends(folder, main_events[:singles], [1]) | bench_appends(
            folder, main_events, [10, 100]
        )
        print("\n1. Durable append throughput (WAL, synchronous=FULL, each event applied first)")
        for size, figures in appends.items():
            rate, per = figures["events_per_s"], figures["ms_per_append"]
            print(f"   batch {size:>3}: {rate:>9,.0f} events/s "
                  f"({per:.2f} ms per append, {figures['events']} events)")  # fmt: skip
        rehydrate = bench_rehydrate(folder, main_events, repeats)
        print(f"\n2. Rehydrate a {n:,}-event session (load_state in a fresh process, "
              f"median of {repeats})")  # fmt: skip
        for key, label in [
            ("full_replay", "no snapshot (replay the log)"),
            ("snapshot_tail_0", "snapshot at the head"),
            ("snapshot_tail_99", "snapshot + 99-event tail"),
        ]:
            figures = rehydrate[key]
            median, low = figures["median_s"] * 1e3, figures["min_s"] * 1e3
            opening = figures["open_median_s"] * 1e3
            print(f"   {label:<30} {median:>8.1f} ms "
                  f"(min {low:.1f}; opening the file {opening:.1f} ms)")  # fmt: skip
        print(f"   ratio snapshot/full (medians): {rehydrate['ratio_tail_0']:.3f} (tail 0), "
              f"{rehydrate['ratio_tail_99']:.3f} (tail 99; minima "
              f"{rehydrate['ratio_tail_99_min']:.3f}); requirement <= 0.100")  # fmt: skip
        snapshot = bench_snapshot(rehydrate["files"]["snapshots"], more)
        print(f"\n3. One snapshot of that session ({snapshot['messages']:,} messages) after "
              f"{snapshot['events_since_last']} more events")  # fmt: skip
        rows = snapshot["chunk_rows_written"]
        print(f"   chunked: {snapshot['incremental_ms']:.1f} ms, {rows} chunk rows written; "
              f"rebuild (replay, rewrite all): {snapshot['rebuild_ms']:.1f} ms")  # fmt: skip
        plain_bytes = file_bytes(rehydrate["files"]["no_snapshots"])
        snap_bytes = file_bytes(rehydrate["files"]["snapshots"])
        body_bytes = sum(len(e.message.content) for e in main_events if isinstance(e, MessageAdded))
        sizes = {
            "no_snapshots_bytes_per_event": plain_bytes / n,
            "snapshots_bytes_per_event": snap_bytes / (n + len(more)),
            "message_text_bytes_per_event": body_bytes / n,
        }
        print("\n4. File bytes per event (after a WAL checkpoint)")
        print(f"   log only:        {sizes['no_snapshots_bytes_per_event']:>6.0f} B/event")
        print(f"   log + snapshots: {sizes['snapshots_bytes_per_event']:>6.0f} B/event "
              f"(message text: {sizes['message_text_bytes_per_event']:.0f} B/event)")  # fmt: skip
        sums = bench_checksums(rehydrate["files"]["snapshots"], repeats)
        print(f"\n5. Checksums on reads (the hash chain and the snapshot digests, median of "
              f"{repeats})")  # fmt: skip
        full_ms, chain_ms = sums["load_timeline_median_ms"], sums["chain_median_ms"]
        print(f"   load_timeline ({sums['events']:,} events): {full_ms:.0f} ms, of which the "
              f"chain {chain_ms:.1f} ms ({sums['chain_us_per_event']:.2f} µs/event, "
              f"{sums['chain_share']:.1%})")  # fmt: skip
        state_ms, digest_ms = sums["load_state_median_ms"], sums["snapshot_digest_median_ms"]
        print(f"   load_state (snapshot + tail): {state_ms:.1f} ms, of which the digests of "
              f"{sums['snapshot_bytes'] / 1e6:.1f} MB of snapshot rows {digest_ms:.2f} ms "
              f"({sums['digest_share']:.1%})")  # fmt: skip
        del rehydrate["files"]
    results = {"machine": machine, "quick": args.quick, "appends": appends,
               "rehydrate": rehydrate, "snapshot": snapshot, "sizes": sizes,
               "checksums": sums}  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    # Minima: the least disturbed run of each (timeit's advice on a shared machine).
    ok = rehydrate["ratio_tail_99_min"] <= 0.1
    print(f"\nRequirement (snapshot path <= 1/10 of full replay, worst tail, minima): "
          f"{'met' if ok else 'NOT met'}")  # fmt: skip
    cheap = sums["chain_share"] <= 0.1 and sums["digest_share"] <= 0.25
    print(f"Requirement (chain <= 10% of a full read, digests <= 25% of load_state): "
          f"{'met' if cheap else 'NOT met'}")  # fmt: skip
    ok = ok and cheap
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
