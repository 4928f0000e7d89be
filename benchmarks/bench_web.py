"""Web viewer benchmark: page times of a 10,000-event session, through the test client.

Run from the repository root (needs the web extra and httpx: ``pip install -e '.[test]'``)::

    python benchmarks/bench_web.py            # full run (~15 s on 2 cores)
    python benchmarks/bench_web.py --quick    # smoke run (~7 s)
    python benchmarks/bench_web.py --check    # exit 1 if a limit of issue 18 is not met
    python benchmarks/bench_web.py --json out.json
    python benchmarks/bench_web.py --long STORE.db --session ID   # pages of a long stored session

The session is ``web_session.agent_session(10_000)`` (turns with two model
calls, a tool call and result, deliveries; every seventh tool fails, every
thirteenth turn is interrupted), stored in a temporary SQLite file with the
default snapshots (every 100 events). Each request goes through Starlette's
``TestClient`` into the application ``amber web`` serves, with the same
``Source`` settings (``freeze_gc=True``); the cyclic GC is on. Figures are
medians over repeats; each repeat of the cold figures starts a new
application (an empty cache), the store file stays warm in the OS cache.

What it measures (findings in ``docs/performance-web.md``):

1. the first screen of the session (``/session?s=ID``, the head) with an
   empty cache: answered from the latest snapshot while the whole log is
   replayed in the background; limit 300 ms;
2. how long that background replay takes, and the first screen once cached;
3. moving between seqs once the log is loaded: random seqs, and single
   steps; limit 50 ms (median; the 90th percentile is reported too);
4. other pages: the sessions list (cold), charts, the clean and anthropic
   views at a seq, a kind filter, a message, a model call.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
try:
    import runtime  # noqa: F401
except ImportError:  # a plain checkout, not installed: use the repository root
    sys.path.insert(0, str(HERE.parent))

from web_session import store_session  # noqa: E402

FIRST_SCREEN_MS = 300.0
"""Issue 18: a 10,000-event session's first screen."""
MOVE_MS = 50.0
"""Issue 18: moving between seqs."""


def _client(db: Path) -> tuple[Any, Any]:
    from starlette.testclient import TestClient

    from actors._web import Source, create_app

    source = Source(str(db), freeze_gc=True)
    return source, TestClient(create_app(source, allowed_hosts=["testserver"]))


def _get(client: Any, path: str) -> float:
    started = time.perf_counter()
    response = client.get(path)
    elapsed = (time.perf_counter() - started) * 1_000
    if response.status_code != 200:
        raise SystemExit(f"GET {path} answered {response.status_code}: {response.text[:300]}")
    return elapsed


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]


def run(events: int, repeats: int, moves: int) -> dict[str, Any]:
    """Every figure of the benchmark, in milliseconds."""
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "web.db"
        seq = store_session(db, events, "long")
        cold, background, warm, lists = [], [], [], []
        for _ in range(repeats):
            source, client = _client(db)
            cold.append(_get(client, "/session?s=long"))
            started = time.perf_counter()
            source.wait_loaded()
            background.append((time.perf_counter() - started) * 1_000)
            warm.append(_get(client, "/session?s=long"))
            client.close()
            source, client = _client(db)
            lists.append(_get(client, "/"))
            client.close()
        source, client = _client(db)
        _get(client, "/session?s=long")
        source.wait_loaded()
        rnd = random.Random(18)
        jumps = [_get(client, f"/session?s=long&at={rnd.randint(0, seq)}") for _ in range(moves)]
        start = seq // 2
        steps = [_get(client, f"/session?s=long&at={start + i}") for i in range(moves)]
        mid = seq * 9 // 10
        others = {
            "charts": _get(client, "/charts?s=long"),
            "view clean": _get(client, f"/session?s=long&at={mid}&view=clean"),
            "view anthropic": _get(client, f"/session?s=long&at={mid}&view=anthropic"),
            "kind filter": _get(client, f"/session?s=long&at={mid}&kind=turn_ended"),
            "message": _get(client, "/message?s=long&id=q000100"),
            "model call": _get(client, "/call?s=long&id=run_000100"),
        }
        client.close()
    return {
        "events": seq,
        "first_screen_cold_ms": statistics.median(cold),
        "first_screen_cold_max_ms": max(cold),
        "background_load_ms": statistics.median(background),
        "first_screen_cached_ms": statistics.median(warm),
        "sessions_list_cold_ms": statistics.median(lists),
        "move_random_ms": statistics.median(jumps),
        "move_random_p90_ms": _p90(jumps),
        "move_step_ms": statistics.median(steps),
        "move_step_p90_ms": _p90(steps),
        "other_pages_ms": others,
    }


LONG_PAGES = {
    "first screen": "/session?s={sid}",
    "kind filter": "/session?s={sid}&at={mid}&kind=turn_ended",
    "message": "/message?s={sid}&id={message}",
    "charts": "/charts?s={sid}",
}
"""The pages ``--long`` times (``mid``: the middle seq; ``message``: the middle message)."""


def run_long(db: Path, session_id: str, repeats: int) -> dict[str, Any]:
    """The pages of ``LONG_PAGES`` on a stored session, each with an empty cache (a new
    application per request), interleaved: ``repeats`` rounds of every page; medians."""
    from runtime.store import SQLiteStore

    with SQLiteStore(db) as store:
        head = store.load_state(session_id)
    message = head.messages[len(head.messages) // 2].id
    paths = {
        name: path.format(sid=session_id, mid=head.seq // 2, message=message)
        for name, path in LONG_PAGES.items()
    }
    times: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(repeats):
        for name, path in paths.items():
            _, client = _client(db)
            times[name].append(_get(client, path))
            client.close()
    return {
        "events": head.seq,
        "paths": paths,
        "medians_ms": {name: statistics.median(ms) for name, ms in times.items()},
        "times_ms": times,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats and moves")
    parser.add_argument("--check", action="store_true", help="exit 1 if a limit is not met")
    parser.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    parser.add_argument("--long", metavar="DB", help="time pages of a session stored in DB")
    parser.add_argument("--session", help="the session of --long")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of --long (3)")
    args = parser.parse_args()
    if args.long:
        if not args.session:
            parser.error("--long needs --session ID (amber sessions --db DB lists them)")
        found = run_long(Path(args.long), args.session, args.repeats)
        print(
            f"amber web, session {args.session!r} of {args.long} ({found['events']:,} events); "
            f"{os.cpu_count()} CPUs, CPython {platform.python_version()}; empty cache per "
            f"request, medians of {args.repeats} interleaved rounds"
        )
        for name, ms in found["medians_ms"].items():
            runs = ", ".join(f"{t:.0f}" for t in found["times_ms"][name])
            print(f"  {name:<14} {ms:9.1f} ms   ({runs})   {found['paths'][name]}")
        if args.json:
            Path(args.json).write_text(json.dumps(found, indent=2) + "\n")
        return 0
    repeats, moves = (3, 20) if args.quick else (9, 100)
    result = run(10_000, repeats, moves)
    result.update(
        cpus=os.cpu_count(), python=platform.python_version(), repeats=repeats, moves=moves
    )
    print(
        f"amber web, a {result['events']:,}-event session; {result['cpus']} CPUs, "
        f"CPython {result['python']}, GC on; medians of {repeats} (cold) and {moves} (moves)"
    )
    rows = [
        ("first screen, empty cache", result["first_screen_cold_ms"], FIRST_SCREEN_MS),
        ("  (slowest repeat)", result["first_screen_cold_max_ms"], None),
        ("  whole log, in the background", result["background_load_ms"], None),
        ("first screen, cached", result["first_screen_cached_ms"], None),
        ("sessions list, empty cache", result["sessions_list_cold_ms"], None),
        ("move to a random seq", result["move_random_ms"], MOVE_MS),
        ("  90th percentile", result["move_random_p90_ms"], None),
        ("step to the next seq", result["move_step_ms"], MOVE_MS),
        ("  90th percentile", result["move_step_p90_ms"], None),
    ]
    rows += [(name, ms, None) for name, ms in result["other_pages_ms"].items()]
    for name, ms, limit in rows:
        bound = f"  (limit {limit:.0f} ms)" if limit else ""
        print(f"  {name:<34} {ms:8.1f} ms{bound}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    failed = [name for name, ms, limit in rows if limit is not None and ms > limit]
    if args.check and failed:
        print(f"FAILED: {', '.join(failed)} over the limit", file=sys.stderr)
        return 1
    if args.check:
        print("OK: every limit met")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
