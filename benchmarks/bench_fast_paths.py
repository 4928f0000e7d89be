"""Long sessions stay fast (issue 16): cached model views, forks, steps, the command line.

Run from the repository root::

    python benchmarks/bench_fast_paths.py            # full run (~1 min on 2 cores)
    python benchmarks/bench_fast_paths.py --quick    # smoke run for CI (a few seconds)
    python benchmarks/bench_fast_paths.py --check    # exit 1 when a limit below is missed

Everything runs with CPython's cyclic GC **on**, as users run it. Figures are
medians of interleaved repeats; ratios compare figures of the same run.

What it measures (findings in ``docs/performance-views.md``):

1. CPU per turn against the session's length, no window: the pure turn
   machine (``step``) drives one turn (a question, a tool call, its result, a
   reply: two model calls), and each model call's request is built as a
   provider model builds it (``build_payload`` for OpenAI, its digest, the
   ``RequestSent`` chunk that records it), on a session of 100 and of 5,000
   prior messages. Limit: 5,000 costs at most 1.5x of 100 for the machine
   with a scripted model (no payload, as ``bench_runtime`` measures a turn);
   the figure with the request built and digested is reported beside it (the
   digest hashes the whole request: O(n) in C).
2. The provider view of a 10,000-message session, from scratch (a fresh
   ``ViewCache``) and after one more turn (the cache of the view before it),
   for OpenAI, Anthropic and Gemini. Limits: 20 ms from scratch (not met:
   see the docs), 1 ms after one more turn.
3. ``Timeline.fork`` of a session of 100 and of 100,000 messages. Limits:
   1 ms at 100,000, and within 2x of the fork at 100 (a fork shares its
   source's state: constant time).
4. 3,000 steps built in memory, messages included: ``new_message``, a
   ``MessageAdded``, ``Timeline.append``, 3,000 times. Limit: 50 ms.
5. ``amber --version`` in a fresh process (wall clock), beside a bare
   interpreter start. Limit: 0.3 s.

``--check`` exits 1 when any limit is missed, the known misses included.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

try:
    import runtime  # noqa: F401
except ImportError:  # a plain checkout, not installed: use the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_views import T0, build

from runtime import (
    CallModel,
    Category,
    Decision,
    Draft,
    InputArrived,
    MessageAdded,
    MessageFinish,
    MessageStart,
    ModelChunk,
    ModelEnded,
    RequestSent,
    Resume,
    SessionMachine,
    SessionState,
    TextDelta,
    Timeline,
    ToolCall,
    ToolCallDelta,
    ToolDone,
    ToolOutcome,
    ToolSpec,
    TurnEnded,
    TurnOutcome,
    TurnSettings,
    TurnStarted,
    ViewCache,
    apply,
    build_payload,
    cached_view,
    digest,
    new_message,
    step,
    to_anthropic,
    to_gemini,
    to_openai,
)

TOOL = ToolSpec(name="sh", description="Run a command.", parameters={"type": "object"})
SETTINGS = TurnSettings(tools=(TOOL,), system_prompt="Be brief.", passivate_after=None)
LIMITS = {
    "turn_ratio": 1.5,
    "scratch_ms": 20.0,
    "after_turn_ms": 1.0,
    "fork_ms": 1.0,
    "fork_ratio": 2.0,
    "steps_ms": 50.0,
    "version_s": 0.3,
}


def ended(messages: int, session_id: str = "bench") -> SessionState:
    """``bench_views.build`` with its last turn ended: an idle session."""
    state = build(messages, session_id)
    if state.active_turn_id is not None:
        event = TurnEnded(
            session_id=session_id,
            seq=state.seq + 1,
            at=T0 + timedelta(seconds=state.seq + 1),
            turn_id=state.active_turn_id,
            outcome=TurnOutcome.PROCESSED,
        )
        state = apply(state, event)
    return state


class Driver:
    """Steps one session's turn machine through whole turns, building each request."""

    def __init__(self, state: SessionState, payload: bool = False) -> None:
        self.machine = SessionMachine.load(state)
        self.payload = payload
        self.now = 1e6
        self.turns = 0

    def __call__(self, kind: type, **fields: Any) -> Decision:
        self.now += 1.0
        at = T0 + timedelta(seconds=self.now)
        decision = step(self.machine, SETTINGS, kind(at=at, mono=self.now, **fields))
        self.machine = decision.machine
        return decision

    def model(self, decision: Decision, *chunks: Any) -> Decision:
        """Build the request of the decision's model call as a provider model does, then
        stream ``chunks`` and end the call."""
        (call,) = [c for c in decision.commands if isinstance(c, CallModel)]
        request = call.request
        if self.payload:
            payload = build_payload(
                "openai", request.view, model="m", system=request.system, tools=(), params={}
            )
            found = digest(payload)
        else:
            found = "sha256:" + "0" * 64  # a scripted model: no payload
        sent = RequestSent(provider="openai", model="m", payload_digest=found)
        for chunk in (sent, MessageStart(), *chunks, MessageFinish()):
            self(ModelChunk, run_id=call.run_id, chunk=chunk)
        return self(ModelEnded, run_id=call.run_id)

    def turn(self) -> None:
        """A question, a tool call and its result, a reply."""
        n = self.turns = self.turns + 1
        draft = Draft(category=Category.USER_QUESTION, content=f"question {n} " * 8, sender="U")
        self(InputArrived, draft=draft)
        first = self(Resume)
        call_id = f"c{n}"
        used = self.model(
            first, ToolCallDelta(index=0, id=call_id, name="sh", arguments='{"command": "ls"}')
        )
        assert any(True for _ in used.commands)
        done = self(ToolDone, call_id=call_id, outcome=ToolOutcome(content="file.txt\n" * 20))
        self.model(done, TextDelta(text=f"answer {n} " * 12))
        assert self.machine.state.active_turn is None, "the turn did not end"


def turn_cpu(sizes: list[int], turns: int, repeats: int, payload: bool = False) -> dict[int, float]:
    """CPU seconds per turn (median of ``repeats`` blocks of ``turns``), interleaved."""
    drivers = {size: Driver(ended(size, f"s{size}"), payload) for size in sizes}
    for driver in drivers.values():
        driver.turn()  # warm up: the first view is built from scratch, then cached
    samples: dict[int, list[float]] = {size: [] for size in sizes}
    for _ in range(repeats):
        for size, driver in drivers.items():
            start = time.process_time()
            for _ in range(turns):
                driver.turn()
            samples[size].append((time.process_time() - start) / turns)
    return {size: statistics.median(values) for size, values in samples.items()}


def more(state: SessionState) -> SessionState:
    """``state`` after one more turn (question, tool call, result, reply), still running."""
    sid = state.session_id
    n = state.seq

    def emit(make: Callable[..., Any], **fields: Any) -> None:
        nonlocal state
        at = T0 + timedelta(seconds=state.seq + 1)
        state = apply(state, make(session_id=sid, seq=state.seq + 1, at=at, **fields))

    def add(category: Category, id: str, **fields: Any) -> None:
        message = new_message(category, id=id, session_id=sid, created_at=T0, **fields)
        emit(MessageAdded, message=message)

    if state.active_turn_id is not None:
        emit(TurnEnded, turn_id=state.active_turn_id, outcome=TurnOutcome.PROCESSED)
    add(Category.USER_QUESTION, f"mu{n}", sender="U", content="one more")
    emit(TurnStarted, turn_id=f"mt{n}")
    call = ToolCall(id=f"mc{n}", name="sh", arguments={"command": "ls"}, index=0)
    add(Category.TOOL_CALL, f"mcall{n}", turn_id=f"mt{n}", tool_call=call)
    add(Category.TOOL_RESULT, f"mr{n}", turn_id=f"mt{n}", sender="sh", tool_call_id=f"mc{n}",
        content="ok")  # fmt: skip
    return state


PROVIDERS: dict[str, Callable[..., Any]] = {
    "openai": to_openai,
    "anthropic": to_anthropic,
    "gemini": to_gemini,
}


def provider_views(messages: int, repeats: int) -> dict[str, dict[str, float]]:
    """Milliseconds for each provider view of a ``messages``-message session: from scratch
    (a fresh cache), and after one more turn (from the cache of the view before it, which
    was spelled for that provider then)."""
    state = build(messages)
    after = more(state)
    out: dict[str, dict[str, float]] = {}
    for name, spell in PROVIDERS.items():
        scratch: list[float] = []
        for _ in range(repeats):
            start = time.perf_counter()
            cache, view = cached_view(ViewCache.empty(), state)
            spell(view, system="Be brief.")
            scratch.append(time.perf_counter() - start)
        later: list[float] = []
        for _ in range(repeats):
            start = time.perf_counter()
            _, next_view = cached_view(cache, after)
            spell(next_view, system="Be brief.")
            later.append(time.perf_counter() - start)
        out[name] = {
            "scratch_ms": statistics.median(scratch) * 1e3,
            "after_turn_ms": statistics.median(later) * 1e3,
        }
    return out


def fork_ms(sizes: list[int], repeats: int) -> dict[int, float]:
    """Milliseconds (median) to fork a session of each size at its head."""
    out: dict[int, float] = {}
    for size in sizes:
        state = build(size)
        timeline = Timeline.from_state(state)
        times = []
        for n in range(repeats):
            start = time.perf_counter()
            timeline.fork(state.seq, f"fork-{n}", at=T0)
            times.append(time.perf_counter() - start)
        out[size] = statistics.median(times) * 1e3
    return out


def steps_ms(steps: int, repeats: int) -> float:
    """Milliseconds (median) to build ``steps`` steps in memory, messages included."""

    def run() -> Timeline:
        timeline = Timeline.start("steps")
        for n in range(steps):
            message = new_message(
                Category.USER_QUESTION,
                id=f"m{n}",
                session_id="steps",
                created_at=T0,
                content=f"question {n}: " + "words " * 30,
                sender="U",
            )
            event = MessageAdded(session_id="steps", seq=n + 1, at=T0, message=message)
            timeline = timeline.append(event)
        return timeline

    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def version_s(repeats: int) -> tuple[float, float]:
    """Seconds (median, wall clock) of ``amber --version`` and of a bare ``python -c pass``,
    each in a fresh process, interleaved."""
    amber = [sys.executable, "-c", "from actors._cli import main; raise SystemExit(main())"]
    cli: list[float] = []
    bare: list[float] = []
    for _ in range(repeats):
        for command, into in (([*amber, "--version"], cli), ([sys.executable, "-c", "pass"], bare)):
            start = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True)
            into.append(time.perf_counter() - start)
    return statistics.median(cli), statistics.median(bare)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run for CI")
    parser.add_argument("--check", action="store_true", help="exit 1 when a limit is missed")
    parser.add_argument("--json", type=Path, help="write the figures as JSON")
    args = parser.parse_args(argv)
    quick = args.quick
    print(f"Python {platform.python_version()}, {os.cpu_count()} cores, GC on: {gc.isenabled()}")
    figures: dict[str, Any] = {}
    failures: list[str] = []

    small, large = 100, (1_000 if quick else 5_000)
    turns, repeats = (3, 3) if quick else (10, 7)
    cpu = turn_cpu([small, large], turns, repeats)
    built = turn_cpu([small, large], turns, repeats, payload=True)
    ratio = cpu[large] / cpu[small]
    figures["turn_cpu_ms"] = {str(k): v * 1e3 for k, v in cpu.items()}
    figures["turn_ratio"] = ratio
    figures["turn_with_payload_cpu_ms"] = {str(k): v * 1e3 for k, v in built.items()}
    print("\n1. CPU per turn (a tool call and a reply: two model calls), no window")
    print("   prior messages   turn machine   + OpenAI request built and digested")
    for size in (small, large):
        print(f"   {size:>14,} {cpu[size] * 1e3:11.2f} ms {built[size] * 1e3:14.2f} ms")
    print(
        f"   ratio {large:,} / {small}: {ratio:.2f}x (limit {LIMITS['turn_ratio']}x); with the "
        f"request {built[large] / built[small]:.2f}x"
    )
    if ratio > LIMITS["turn_ratio"]:
        failures.append(f"CPU per turn ratio {ratio:.2f}x > {LIMITS['turn_ratio']}x")

    size = 2_000 if quick else 10_000
    views = provider_views(size, repeats=3 if quick else 7)
    figures["provider_views"] = views
    print(f"\n2. Provider view of a {size:,}-message session (ms)")
    print("   provider    from scratch   after one more turn")
    for name, row in views.items():
        print(f"   {name:<10} {row['scratch_ms']:12.1f} {row['after_turn_ms']:18.3f}")
        if not quick and row["after_turn_ms"] > LIMITS["after_turn_ms"]:
            failures.append(f"{name} after one more turn {row['after_turn_ms']:.2f} ms > 1 ms")
        if not quick and row["scratch_ms"] > LIMITS["scratch_ms"]:
            failures.append(f"{name} from scratch {row['scratch_ms']:.1f} ms > 20 ms")

    small_fork, large_fork = 100, (3_000 if quick else 100_000)
    forks = fork_ms([small_fork, large_fork], repeats=3 if quick else 7)
    fork_ratio = forks[large_fork] / forks[small_fork]
    figures["fork_ms"] = {str(k): v for k, v in forks.items()}
    print("\n3. Timeline.fork at the head")
    for size, ms in forks.items():
        print(f"   {size:>7,} messages: {ms:8.2f} ms")
    print(f"   ratio: {fork_ratio:.1f}x (limits {LIMITS['fork_ms']} ms, {LIMITS['fork_ratio']}x)")
    if not quick and forks[large_fork] > LIMITS["fork_ms"]:
        failures.append(f"fork at {large_fork:,} messages {forks[large_fork]:.1f} ms > 1 ms")
    if not quick and fork_ratio > LIMITS["fork_ratio"]:
        failures.append(f"fork ratio {fork_ratio:.1f}x > {LIMITS['fork_ratio']}x")

    steps = steps_ms(3_000, repeats=3 if quick else 9)
    figures["steps_3000_ms"] = steps
    print(f"\n4. 3,000 steps built in memory, messages included: {steps:.1f} ms (limit 50 ms)")
    if steps > LIMITS["steps_ms"]:
        failures.append(f"3,000 steps {steps:.1f} ms > 50 ms")

    cli, bare = version_s(repeats=3 if quick else 9)
    figures["version_s"] = cli
    figures["python_start_s"] = bare
    print(f"\n5. amber --version: {cli:.3f} s (a bare interpreter: {bare:.3f} s; limit 0.3 s)")
    if cli > LIMITS["version_s"]:
        failures.append(f"amber --version {cli:.3f} s > 0.3 s")

    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    if failures:
        print("\nLimits missed:\n  " + "\n  ".join(failures))
    return 1 if args.check and failures else 0


if __name__ == "__main__":
    sys.exit(main())
