"""A fork of a long session loads as fast as its source; ``amber fork`` reads one state.

Run from the repository root::

    python benchmarks/bench_fork_load.py            # a 100,000-event source (~1-2 min)
    python benchmarks/bench_fork_load.py --quick    # 10,000 events (~15 s)
    python benchmarks/bench_fork_load.py --check    # exit 1 if a limit is not met

Every figure is measured with the cyclic GC on, each load in a fresh process, the
loads interleaved (median of the rounds). What it measures:

1. ``load_state`` of the source (its snapshot and tail) and of a fork of it at its
   head, written by ``amber fork`` (one ``branch_imported`` event carrying the whole
   state, snapshotted in the same write). Limit: the fork within 1.5x of the source
   (before the snapshot at import: 4.3x, 6.5 s against 1.5 s at 45,455 messages);
2. ``amber fork`` itself at the head and at the middle seq, in a fresh process (it
   reads the state at ``--at`` from the nearest snapshot, not the whole timeline),
   against ``load_state`` of the source: reported, not checked.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:
    import runtime  # noqa: F401
except ImportError:  # a plain checkout, not installed: use the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runtime.store import SQLiteStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_long  # the long session's generator

SOURCE = bench_long.SESSION


def child_load(path: str, session_id: str) -> None:
    with SQLiteStore(path) as store:
        began = time.perf_counter()
        store.load_state(session_id)
        print(json.dumps({"seconds": time.perf_counter() - began}))


def child_fork(path: str, at: str, new_id: str) -> None:
    from actors._cli import cli

    began = time.perf_counter()
    try:
        cli.main(["fork", SOURCE, "--at", at, "--as", new_id, "--db", path],
                 standalone_mode=False)  # fmt: skip
    finally:
        sys.stdout = sys.__stdout__
    print(json.dumps({"seconds": time.perf_counter() - began}))


def _child(*args: str) -> float:
    out = subprocess.run(
        [sys.executable, __file__, *args], check=True, capture_output=True, text=True
    ).stdout
    return float(json.loads(out.splitlines()[-1])["seconds"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller run, for CI")
    parser.add_argument("--check", action="store_true", help="exit 1 if a limit is not met")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument("--child-load", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--child-fork", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_load:
        child_load(*args.child_load)
        return 0
    if args.child_fork:
        child_fork(*args.child_fork)
        return 0
    count = 10_000 if args.quick else 100_000
    rounds = 3 if args.quick else 5
    print(f"Amber fork-load benchmark — Python {platform.python_version()}, "
          f"{os.cpu_count()} cores, GC on, {count:,}-event source")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="amber-fork-") as tmp:
        db = str(Path(tmp) / "long.db")
        bench_long.bench_appends(Path(db), count, 100, 10_000)
        with SQLiteStore(db) as store:
            head = store.session(SOURCE).seq
            messages = store.session(SOURCE).messages
        forks: dict[str, list[float]] = {"head": [], "middle": []}
        loads: dict[str, list[float]] = {"source": [], "fork": []}
        for number in range(rounds):  # interleaved
            forks["head"].append(_child("--child-fork", db, str(head), f"fh{number}"))
            forks["middle"].append(_child("--child-fork", db, str(head // 2), f"fm{number}"))
            loads["source"].append(_child("--child-load", db, SOURCE))
            loads["fork"].append(_child("--child-load", db, f"fh{number}"))
    median = {name: statistics.median(found) for name, found in {**loads, **{
        f"amber fork --at {name}": found for name, found in forks.items()}}.items()}  # fmt: skip
    ratio = median["fork"] / median["source"]
    print(f"\n1. load_state, {messages:,} messages (median of {rounds}, fresh processes)")
    print(f"   source {median['source'] * 1e3:8.0f} ms")
    print(f"   fork   {median['fork'] * 1e3:8.0f} ms   fork / source: {ratio:.2f}")
    print(f"\n2. amber fork (the command, in a fresh process, median of {rounds})")
    for name in ("amber fork --at head", "amber fork --at middle"):
        print(f"   {name:<24}{median[name] * 1e3:8.0f} ms")
    limits = {"a fork's load_state within 1.5x of its source's": ratio <= 1.5}
    print()
    for name, met in limits.items():
        print(f"Limit {name}: {'met' if met else 'NOT met'}")
    if args.json:
        args.json.write_text(json.dumps({"count": count, "messages": messages,
            "median_s": median, "ratio": ratio, "limits": limits}, indent=2))  # fmt: skip
    return 0 if all(limits.values()) or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
