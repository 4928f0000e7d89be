"""Projection benchmark: what each view of a long session costs.

Run from the repository root::

    python benchmarks/bench_views.py            # full run (~1 min on 2 cores)
    python benchmarks/bench_views.py --quick    # smoke run for CI (a few seconds)

Everything runs with CPython's cyclic GC **on**, as users run it. Each figure
is the median of several repeats (``--repeats``).

What it measures (see ``docs/performance-views.md`` for the findings):

1. every view of a 10,000-message session: ``session_history``,
   ``clean_history``, ``to_openai``, ``to_anthropic``, ``to_gemini`` (whole
   history), the same with a 200-message window, ``ui_segments`` of the
   latest turn and a ``visibility`` lookup; time per emitted message;
2. linearity: the whole-history views and the windowed one at 1,250 to
   20,000 messages. Whole views must cost the same per message at every size
   (linear in what they emit); windowed views must cost the same in total at
   every size (they touch only the window).

Each figure is taken with the GC on, and again after ``gc.freeze()`` (what
DESIGN §13 advises after loading): with the GC on, a full collection that a
view's allocations trigger walks every live object, the session included, so
its cost grows with what else is in memory, not with the view.

The session is made of turns of ten messages: a question, a thought, three
tool calls, three results, a notification and a reply; the last turn is
running. ``--check`` exits with status 1 when the windowed view's total or
the frozen whole view's per-message cost varies by more than ``BOUND``
(2.5x) across sizes 16x apart, on the fastest of the repeats (which a busy
machine disturbs least): enough to catch a view that is not linear, not so
tight that a noisy neighbour fails it.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

try:
    import runtime  # noqa: F401
except ImportError:  # a plain checkout, not installed: use the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runtime import (
    Category,
    MessageAdded,
    SessionState,
    ToolCall,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
    Window,
    apply,
    clean_history,
    new_message,
    session_history,
    to_anthropic,
    to_gemini,
    to_openai,
    ui_segments,
    visibility,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
PER_TURN = 10
WINDOW = Window(max_messages=200)
BOUND = 2.5
"""Largest/smallest ratio --check allows across sizes 16x apart: a quadratic view
would show ~16x; run-to-run noise on a shared 2-core VM reaches ~2x."""


def build(messages: int, session_id: str = "bench") -> SessionState:
    """A session of ``messages`` messages in turns of ten; the last turn is running."""
    state = SessionState.empty(session_id)
    seq = 0

    def emit(make: Callable[..., Any], **fields: Any) -> None:
        nonlocal state, seq
        seq += 1
        state = apply(
            state, make(session_id=session_id, seq=seq, at=T0 + timedelta(seconds=seq), **fields)
        )

    def add(category: Category, id: str, **fields: Any) -> None:
        at = T0 + timedelta(seconds=seq)
        emit(
            MessageAdded,
            message=new_message(category, id=id, session_id=session_id, created_at=at, **fields),
        )

    turns = messages // PER_TURN
    for n in range(turns):
        turn = f"t{n}"
        add(Category.USER_QUESTION, f"u{n}", sender="Chii", content=f"question {n} " * 8)
        emit(TurnStarted, turn_id=turn)
        add(Category.THOUGHT, f"th{n}", turn_id=turn, content=f"thinking about {n} " * 10)
        for k in range(3):
            call = ToolCall(
                id=f"call_{n}_{k}", name="sh", arguments={"command": f"ls {k}"}, index=k
            )
            add(Category.TOOL_CALL, f"c{n}_{k}", turn_id=turn, tool_call=call)
        for k in range(3):
            add(
                Category.TOOL_RESULT, f"r{n}_{k}", turn_id=turn, sender="sh",
                tool_call_id=f"call_{n}_{k}", content=f"file_{k}.txt\n" * 20,
            )  # fmt: skip
        add(Category.NOTIFICATION, f"n{n}", turn_id=turn, content="progress")
        add(Category.REPLY, f"a{n}", turn_id=turn, content=f"answer {n} " * 12)
        if n < turns - 1:
            emit(TurnEnded, turn_id=turn, outcome=TurnOutcome.PROCESSED)
    return state


@contextmanager
def frozen() -> Iterator[None]:
    """Move every live object out of the collector's sight while measuring."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


SAMPLES: list[float] = []
"""Every timing's fastest repeat, in order, for the linearity check."""


def median_seconds(fn: Callable[[], Any], repeats: int) -> float:
    """The median of ``repeats`` timings (the fastest is kept in ``SAMPLES``)."""
    fn()  # warm up: first-touch page faults and caches are not the view's cost
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    SAMPLES.append(min(times))
    return statistics.median(times)


def views(state: SessionState) -> dict[str, Callable[[], Any]]:
    latest = state.active_turn_id
    return {
        "session_history": lambda: session_history(state),
        "clean_history": lambda: clean_history(state),
        "to_openai": lambda: to_openai(state, system="Be brief."),
        "to_anthropic": lambda: to_anthropic(state, system="Be brief."),
        "to_gemini": lambda: to_gemini(state, system="Be brief."),
        "clean_history, 200-message window": lambda: clean_history(state, window=WINDOW),
        "to_openai, 200-message window": lambda: to_openai(state, window=WINDOW),
        "ui_segments (latest turn)": lambda: ui_segments(state, latest),
    }


def emitted(result: Any) -> int:
    if isinstance(result, dict):
        result = result.get("messages", result.get("contents"))
    return len(result)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--check", action="store_true", help="exit 1 when a ratio is off")
    args = parser.parse_args()
    repeats = args.repeats or (3 if args.quick else 9)
    size = 2_000 if args.quick else 10_000
    sizes = [500, 1_000, 2_000] if args.quick else [1_250, 2_500, 5_000, 10_000, 20_000]

    print(f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores")
    print(
        f"command: {' '.join([Path(sys.executable).name, *sys.argv])}; GC on; median of {repeats}"
    )
    print()

    state = build(size)
    gc.collect()
    print(f"1. views of a {len(state.messages):,}-message session")
    print(f"   {'view':<36} {'median':>10} {'emitted':>8} {'per emitted':>12} {'frozen':>10}")
    results = {}
    for name, fn in views(state).items():
        results[name] = (median_seconds(fn, repeats), emitted(fn()))
    with frozen():
        for name, fn in views(state).items():
            seconds, n = results[name]
            after = median_seconds(fn, repeats)
            print(
                f"   {name:<36} {seconds * 1e3:>8.2f} ms {n:>8,} "
                f"{seconds / max(n, 1) * 1e6:>9.2f} µs {after * 1e3:>7.2f} ms"
            )
    lookup = median_seconds(
        lambda: [visibility("silent", Category.THOUGHT) for _ in range(10_000)], repeats
    )
    print(f"   {'visibility() lookup':<36} {lookup / 10_000 * 1e6:>9.3f} µs per call")
    print("   (frozen: the same view after gc.freeze(), as DESIGN §13 advises after loading)")
    del state
    gc.collect()
    print()

    print("2. linearity: µs per stored message for whole views, ms in total for the window")
    header = ("messages", "to_openai", "clean_history", "windowed", "to_openai frozen")
    widths = (9, 12, 14, 10, 17)
    print("   " + " ".join(f"{h:>{w}}" for h, w in zip(header, widths, strict=True)))
    rows = []
    fastest = []
    for n in sizes:
        s = build(n)
        gc.collect()
        del SAMPLES[:]
        row = (
            median_seconds(lambda s=s: to_openai(s), repeats) / n * 1e6,
            median_seconds(lambda s=s: clean_history(s), repeats) / n * 1e6,
            median_seconds(lambda s=s: clean_history(s, window=WINDOW), repeats) * 1e3,
        )
        with frozen():
            row += (median_seconds(lambda s=s: to_openai(s), repeats) / n * 1e6,)
        rows.append(row)
        fastest.append((SAMPLES[2], SAMPLES[3] / n))
        print(
            f"   {n:>9,} {row[0]:>9.2f} µs {row[1]:>11.2f} µs {row[2]:>7.2f} ms {row[3]:>14.2f} µs"
        )
        del s
        gc.collect()

    def spread(values: list[float]) -> float:
        return max(values) / min(values)

    print(
        "   largest/smallest median: "
        + ", ".join(
            f"{name} {spread([r[i] for r in rows]):.2f}x"
            for i, name in enumerate(("to_openai", "clean_history", "windowed", "to_openai frozen"))
        )
    )
    windowed = spread([f[0] for f in fastest])
    frozen_whole = spread([f[1] for f in fastest])
    print(
        f"   largest/smallest fastest run: windowed {windowed:.2f}x, "
        f"to_openai frozen {frozen_whole:.2f}x (--check bound {BOUND}x)"
    )
    if args.check and (windowed > BOUND or frozen_whole > BOUND):
        print("FAILED: a view is not linear in what it emits")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
