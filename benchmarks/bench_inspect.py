"""``amber inspect`` on a long session: time to the first draw and to every mark.

Run from the repository root::

    python benchmarks/bench_inspect.py                       # /tmp/amber-inspect.db, 100,000 events
    python benchmarks/bench_inspect.py --db FILE --repeats 3
    python benchmarks/bench_inspect.py --quick               # a 2,000-event store, for CI

The store is the scripted session of ``bench_long.py`` (written once if
``--db`` does not exist: 1-2 min for 100,000 events). The app runs headless
(Textual's ``run_test``, 160 x 50) in this process, GC on. For each seq
(10, the middle and the head): the first draw (from opening the session
to the pane showing that seq, as ``amber inspect`` does), the window of
rows around it drawn with the cursor on it, and every mark (the events read
for the turn and error jumps). Medians of
``--repeats`` runs, interleaved. Findings in docs/performance-long.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

try:
    import runtime  # noqa: F401
except ImportError:  # a plain checkout, not installed: use the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_long import SESSION, bench_appends
from textual.widgets import DataTable

from actors._inspect import InspectApp
from actors._inspect_source import StoredSession
from runtime.store import SQLiteStore

Opened = Callable[[], "Timed"]


class Timed(InspectApp):
    """The app, noting when its pane first shows a state."""

    drawn = 0.0
    windowed = 0.0

    def show(self, seq: int) -> None:
        """Draw, and note the time of the first draw."""
        super().show(seq)
        self.drawn = self.drawn or time.perf_counter()

    def _move_window(self, index: int) -> None:
        super()._move_window(index)
        self.windowed = self.windowed or time.perf_counter()


Figures = tuple[float, float, float]


def timed(open_app: Opened, seq: int) -> Figures:
    """Seconds to the first draw of ``seq`` (its pane), to its window of rows and to every
    mark read."""

    async def main() -> Figures:
        began = time.perf_counter()
        app = open_app()
        async with app.run_test(size=(160, 50)) as pilot:
            await pilot.pause()
            assert app.seq == seq, (app.seq, seq)
            table = app.query_one("#timeline", DataTable)
            assert app.windowed
            assert str(table.get_row_at(table.cursor_row)[0]) == str(seq)
            first, window = app.drawn - began, app.windowed - began
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert not app.loading
            assert len(app._marks) == app.source.last_seq + 1
            every = time.perf_counter() - began
            app.exit()
        return first, window, every

    return asyncio.run(main())


def lazy(db: Path, seq: int) -> Figures:
    """``amber inspect``'s way: a ``StoredSession`` (closed after)."""
    sources: list[StoredSession] = []

    def open_app() -> Timed:
        sources.append(StoredSession(lambda: SQLiteStore(db), SESSION))
        return Timed(sources[-1], seq=seq, db=str(db))

    try:
        return timed(open_app, seq)
    finally:
        for source in sources:
            source.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 2,000-event store, for CI")
    parser.add_argument("--db", type=Path, help="the store (written if missing)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per case (median)")
    args = parser.parse_args()
    count = 2_000 if args.quick else 100_000
    with tempfile.TemporaryDirectory(prefix="amber-inspect-") as tmp:
        db = args.db or (Path(tmp) / "quick.db" if args.quick else Path("/tmp/amber-inspect.db"))
        if not db.exists():
            print(f"Writing a {count:,}-event session to {db} ...", flush=True)
            bench_appends(db, count, 100, 10_000)
        with SQLiteStore(db) as store:
            head = store.session(SESSION).seq
        repeats = 1 if args.quick else args.repeats
        print(
            f"amber inspect on {head:,} events — Python {sys.version.split()[0]}, "
            f"{os.cpu_count()} cores, GC on, median of {repeats}; from opening the "
            "session (Textual's start-up included)"
        )
        figures: dict[int, list[Figures]] = {}
        for _ in range(repeats):
            for seq in (10, head // 2, head):
                figures.setdefault(seq, []).append(lazy(db, seq))
        for seq, runs in figures.items():
            first, window, every = (statistics.median(run[i] for run in runs) for i in range(3))
            print(
                f"  seq {seq:>7,}: first draw {first * 1e3:>6.0f} ms, its window of rows "
                f"{window * 1e3:>6.0f} ms, every mark {every:>5.1f} s"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
