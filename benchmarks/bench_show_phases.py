"""Where ``amber show --at SEQ --json`` spends its time late in a long session, in one process.

Run from the repository root::

    python benchmarks/bench_show_phases.py                  # writes /tmp/amber-long.db once
    python benchmarks/bench_show_phases.py --db FILE --at 50000 --at -1 --repeats 3

The store is the 100,000-event session of ``bench_long.py`` (written by its
``bench_appends`` if ``--db`` does not exist yet, ~1-2 min). For each seq,
``load_span`` is timed whole and in its phases (the snapshot's chunks parsed,
messages and turns built, the indexes derived, the state checked, the tail
events applied), then what ``show --json`` does with the state: ``to_data``
(GC off, as ``show`` builds it) and ``orjson.dumps``. Timers wrap the
functions of ``runtime.store._snapshot`` and ``_travel`` (a few µs each).
Findings in docs/performance-long.md, section 4.

``--compare`` times ``load_span`` eager (the default, as ``show --json`` reads)
and lazy (``lazy=True``, as the text ``show`` reads: messages decoded when read,
``runtime/store/_lazy.py``) interleaved, and prints the medians of each phase::

    python benchmarks/bench_show_phases.py --db /tmp/amber-long.db --compare --repeats 5
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

try:
    import runtime  # noqa: F401
except ImportError:  # a plain checkout, not installed: use the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import orjson

import runtime.store._lazy as lazy_reads
import runtime.store._snapshot as snapshot
import runtime.store._travel as travel
from runtime import to_data
from runtime.store import SQLiteStore

TIMES: dict[str, float] = {}


def _timed(key: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            TIMES[key] = TIMES.get(key, 0.0) + time.perf_counter() - began

    return timed


def _instrument() -> None:
    snapshot._loads = _timed("chunks parsed", snapshot._loads)  # type: ignore[assignment]
    snapshot._unpack = _timed("chunks parsed", snapshot._unpack)  # type: ignore[assignment]
    for part, label in (("messages", "messages built"), ("turns", "turns built")):
        snapshot._ROWS[part] = _timed(label, snapshot._ROWS[part])
    snapshot.assemble_state = _timed("indexes derived", snapshot.assemble_state)  # type: ignore[assignment]
    snapshot.check_consistent = _timed("check_consistent", snapshot.check_consistent)  # type: ignore[assignment]
    travel._applied = _timed("tail applied", travel._applied)  # type: ignore[assignment]
    # The lazy read's phases: the key columns instead of the messages, its own checks.
    facts = lazy_reads.Facts
    facts.add = _timed("messages built", facts.add)  # type: ignore[method-assign]
    facts.state = _timed("indexes derived", facts.state)  # type: ignore[method-assign]
    facts.problems = _timed("check_consistent", facts.problems)  # type: ignore[method-assign]


def phases(path: Path, seq: int) -> dict[str, float]:
    """The phases of ``show long --at SEQ --json`` in this process, in seconds."""
    TIMES.clear()
    with SQLiteStore(path) as store:
        if seq < 0:
            seq = store.session("long").seq + 1 + seq
        began = time.perf_counter()
        line = store.load_span("long", seq, seq)
        loaded = time.perf_counter() - began
    state = line.at(seq)
    out = {"load_span": loaded, **TIMES}
    gc.disable()
    began = time.perf_counter()
    data = {"event": None, "state": to_data(state)}
    out["to_data (GC off)"] = time.perf_counter() - began
    gc.enable()
    began = time.perf_counter()
    text = orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    out["orjson.dumps"] = time.perf_counter() - began
    out["MB"] = len(text) / 1e6
    out["messages"] = len(state.messages)
    out["first_seq"] = line.first_seq
    return out


def load_phases(path: Path, seq: int, *, lazy: bool) -> dict[str, float]:
    """``load_span`` at ``seq`` and its phases in this process, in seconds."""
    TIMES.clear()
    with SQLiteStore(path) as store:
        if seq < 0:
            seq = store.session("long").seq + 1 + seq
        began = time.perf_counter()
        store.load_span("long", seq, seq, lazy=lazy)
        loaded = time.perf_counter() - began
    return {"load_span": loaded, **TIMES}


def compare(path: Path, seqs: list[int], repeats: int) -> None:
    """Eager and lazy ``load_span`` interleaved: the median of each phase, in ms."""
    for seq in seqs:
        runs: dict[bool, list[dict[str, float]]] = {False: [], True: []}
        for _ in range(repeats):
            for lazy in (False, True):
                runs[lazy].append(load_phases(path, seq, lazy=lazy))
                gc.unfreeze()  # load_span froze what it built: let it go before the next
                gc.collect()
        print(f"seq {seq}, medians of {repeats} (ms):      eager     lazy   change")
        for key in runs[False][0]:
            eager, lazy = (
                statistics.median(run.get(key, 0.0) for run in runs[flag]) * 1e3
                for flag in (False, True)
            )
            change = f"{(lazy - eager) / eager:+.0%}" if eager else ""
            label = "key columns / messages built" if key == "messages built" else key
            print(f"  {label:<30} {eager:8.0f} {lazy:8.0f} {change:>8}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=Path("/tmp/amber-long.db"))
    parser.add_argument("--at", type=int, action="append", help="seqs (default: 50000, -1)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--compare", action="store_true", help="load_span eager vs lazy, interleaved (medians)"
    )
    args = parser.parse_args()
    if not args.db.exists():
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_long import bench_appends

        print(f"Writing the 100,000-event session to {args.db} …")
        bench_appends(args.db, 100_000, 100, 10_000)
        gc.unfreeze()
    _instrument()
    if args.compare:
        compare(args.db, args.at or [49_100, 50_000, -1], args.repeats)
        return 0
    for seq in args.at or [50_000, -1]:
        for _ in range(args.repeats):
            found = phases(args.db, seq)
            counts = (
                f"seq {seq} (from {found.pop('first_seq'):.0f}, {found.pop('messages'):.0f} "
                f"messages, {found.pop('MB'):.1f} MB of JSON):"
            )
            print(counts, ", ".join(f"{k} {v * 1e3:.0f} ms" for k, v in found.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
