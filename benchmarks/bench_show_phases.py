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
"""

from __future__ import annotations

import argparse
import gc
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=Path("/tmp/amber-long.db"))
    parser.add_argument("--at", type=int, action="append", help="seqs (default: 50000, -1)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if not args.db.exists():
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_long import bench_appends

        print(f"Writing the 100,000-event session to {args.db} …")
        bench_appends(args.db, 100_000, 100, 10_000)
        gc.unfreeze()
    _instrument()
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
