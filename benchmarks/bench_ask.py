"""What answers as values cost: ``ask`` against ``send`` + ``wait_idle``, and the async path.

    python benchmarks/bench_ask.py            # 400 round trips per path, interleaved
    python benchmarks/bench_ask.py --quick    # 60 per path: a CI smoke run
    python benchmarks/bench_ask.py --check    # exit 1 unless the issue's limits hold
    python benchmarks/bench_ask.py --json out.json

One session on an in-memory store, a ``ScriptedModel`` that answers at once
(no tool), the model's view windowed to 20 messages: each round trip is one
turn. The paths, run in rounds that
interleave them (so a noisy machine slows them alike), are:

- ``send+wait_idle``: ``rt.send(...)`` then ``rt.wait_idle(...)``;
- ``ask``: ``rt.ask(...)``;
- ``ask_async``: ``await rt.ask_async(...)`` in a running asyncio loop.

Limits (issue 13): ``ask`` ≤ 1.2 times ``send+wait_idle``; ``ask_async`` adds
≤ 100 µs over ``ask`` (medians of the same run).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from actors import Runtime, ScriptedModel, Settings, reply
from runtime import Window


def measure(rounds: int) -> dict[str, Any]:
    model = ScriptedModel([], fallback=reply("ok"), keep_requests=1)
    # A window keeps each turn's view small: the session grows by a turn per round trip,
    # and this measures the round trip, not the history (issue 16 is about that).
    settings = Settings(passivate_after=None, window=Window(max_messages=20))
    times: dict[str, list[float]] = {"send+wait_idle": [], "ask": [], "ask_async": []}
    with Runtime(model=model, store=":memory:", settings=settings) as rt:

        async def run() -> None:
            # One running loop, as in a service; the sync paths block it while they wait.
            for _ in range(20):  # warm up every path
                rt.ask("s", "hi")
                await rt.ask_async("s", "hi")
            for n in range(rounds):
                for path in _order(n):
                    started = time.perf_counter()
                    if path == "send+wait_idle":
                        rt.send("s", "hi")
                        rt.wait_idle("s", timeout=60, settled=False)
                    elif path == "ask":
                        rt.ask("s", "hi", timeout=60)
                    else:
                        await rt.ask_async("s", "hi", timeout=60)
                    times[path].append(time.perf_counter() - started)

        asyncio.run(run())
    medians = {path: statistics.median(values) * 1e6 for path, values in times.items()}
    return {
        "rounds": rounds,
        "median_us": {path: round(value, 1) for path, value in medians.items()},
        "ask_over_send_wait": round(medians["ask"] / medians["send+wait_idle"], 3),
        "async_added_us": round(medians["ask_async"] - medians["ask"], 1),
    }


def _order(n: int) -> list[str]:
    paths = ["send+wait_idle", "ask", "ask_async"]
    shift = n % len(paths)
    return paths[shift:] + paths[:shift]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a CI smoke run")
    parser.add_argument("--check", action="store_true", help="exit 1 unless the limits hold")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    assert gc.isenabled()
    result = measure(args.rounds or (60 if args.quick else 400))
    result["cores"] = os.cpu_count()
    result["python"] = sys.version.split()[0]
    for path, value in result["median_us"].items():
        print(f"{path:>15}: {value:8.1f} µs median per turn")
    print(f"ask / (send + wait_idle) = {result['ask_over_send_wait']}  (limit 1.2)")
    print(f"ask_async adds {result['async_added_us']} µs over ask  (limit 100)")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    if args.check:
        ok = result["ask_over_send_wait"] <= 1.2 and result["async_added_us"] <= 100
        if not ok:
            print("CHECK FAILED")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
