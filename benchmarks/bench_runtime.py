"""Runtime benchmark: turns per second, the cost of a message hop, memory per session.

Run from the repository root::

    python benchmarks/bench_runtime.py            # full run (~2 min on 2 cores)
    python benchmarks/bench_runtime.py --quick    # CI smoke run (~10 s)
    python benchmarks/bench_runtime.py --check    # exit 1 if the hop ratio is above 3x
    python benchmarks/bench_runtime.py --json out.json
    python benchmarks/bench_runtime.py --profile  # also cProfile every thread of long turns

Everything runs on the real ``actors.Runtime``: a SQLite file in a temporary
directory, default ``Settings`` except ``passivate_after=None``, a
``ScriptedModel`` and a trivial ``@tool``. The cyclic GC stays on. Nothing
sleeps to wait for an actor: the script waits on ``wait_idle``,
``wait_passivated``, futures and thread joins.

What it measures (findings in ``docs/performance-runtime.md``):

1. the message hop. The target: ``runtime.state(session_id)`` (the runtime's
   lock, its table of live sessions, an ask through the cached proxy, the
   answer) against a raw pykka ``ActorRef.ask`` round trip to a
   ``ThreadingActor`` whose ``on_receive`` returns a field; each call timed,
   interleaved in rounds; requirement: the median of the rounds' ratios <= 3.
   Also: a raw proxy call (the mechanism ``state`` uses), ``wait_idle`` on an
   idle session, and the delivery hop (``gateway.delivered`` -> a tell to the
   session) against a raw ``tell``;
2. turns per second: one session doing turns one after another, and 100
   sessions each sent a turn at once (from 100 threads, each then waiting for
   its session to be idle), in interleaved rounds; latency per turn (send to
   idle), store commits against events stored (group commit);
3. a turn's cost against the session's history (sessions preloaded with
   0 to 11,000 events, interleaved);
4. memory per session: N sessions that have done one turn, live and idle,
   against N sessions passivated (100, and 300: more than the store's cache
   of 128 heads), each case in a fresh process (tracemalloc, RSS, threads).
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import gc
import json
import os
import platform
import pstats
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pykka

# Measure the checkout this script is in, even when another one is installed (editable).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from actors import (
    ModelRequest,
    Response,
    Runtime,
    ScriptedModel,
    Settings,
    call,
    reply,
    tool,
)
from runtime import Event, SessionState, Status
from runtime.store import Store

_ROOT = Path(__file__).resolve().parent.parent
WAIT = 120.0
"""Seconds to wait for any actor before the benchmark gives up."""
TEXT = "Please run the echo tool once, then answer."


@tool
def echo(text: str) -> str:
    """Return ``text`` (the trivial tool every benchmark turn calls)."""
    return text


def script(request: ModelRequest) -> Response:
    """Every turn: one tool call, then a final reply."""
    if request.call_index == 0:
        return call("echo", {"text": "ping"})
    return reply("pong")


class _Unrecorded(list[ModelRequest]):
    """A ``requests`` list that keeps nothing.

    ``ScriptedModel`` records every request, and so every state it was shown,
    for tests to inspect; a real model keeps none, and neither does this one
    (else the memory figures would count the model's record of each session).
    """

    def append(self, request: ModelRequest) -> None:
        return None


def make_model() -> ScriptedModel:
    model = ScriptedModel(script)
    model.requests = _Unrecorded()
    return model


def make_runtime(path: Path, settings: Settings | None = None) -> Runtime:
    return Runtime(
        model=make_model(),
        store=path,
        tools=[echo],
        settings=settings or Settings(passivate_after=None),
    ).start()


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def fresh(folder: Path, name: str) -> Path:
    path = folder / name
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return path


def turn(rt: Runtime, session_id: str) -> tuple[float, float, SessionState]:
    """One turn: send, then wait until idle. (send seconds, turn seconds, state)."""
    start = time.perf_counter()
    sent = rt.send(session_id, TEXT)
    stored = time.perf_counter()
    state = rt.wait_idle(session_id, timeout=WAIT)
    done = time.perf_counter()
    if state.message(sent.id).status is not Status.PROCESSED:
        raise RuntimeError(f"turn in {session_id} ended {state.message(sent.id).status}")
    return stored - start, done - start, state


def turn_time(state: SessionState) -> float:
    """The last turn's own clock (``turn_metrics.turn_time``: TurnStarted stored -> reply)."""
    metrics: Any = state.messages[-1].metadata["turn_metrics"]
    return float(metrics["turn_time"])


# -- 1. the message hop ---------------------------------------------------------------


class _Note:
    __slots__ = ("expected", "message_id")

    def __init__(self, message_id: str, expected: Status) -> None:
        self.message_id = message_id
        self.expected = expected


_PING = object()


class Probe(pykka.ThreadingActor):
    """The raw baseline: a field returned by a method and by ``on_receive``."""

    def __init__(self) -> None:
        super().__init__()
        self._value = object()

    def value(self) -> object:
        return self._value

    def on_receive(self, message: Any) -> Any:
        if message is _PING:
            return self._value
        return isinstance(message, _Note)


def timed_calls(fn: Callable[[], object], calls: int) -> list[int]:
    clock = time.perf_counter_ns
    out = []
    for _ in range(calls):
        start = clock()
        fn()
        out.append(clock() - start)
    return out


def bench_hop(folder: Path, rounds: int, calls: int) -> dict[str, Any]:
    rt = make_runtime(fresh(folder, "hop.db"))
    try:
        sid = "hop"
        turn(rt, sid)
        state = rt.state(sid)
        ref = Probe.start()
        proxy = ref.proxy()
        missing = "msg_not_there"

        def deliver() -> None:
            rt.router.delivered(sid, missing, Status.RESPONDED)

        def tell() -> None:
            ref.tell(_Note(missing, Status.RESPONDED))

        asks: dict[str, Callable[[], object]] = {
            "state": lambda: rt.state(sid),
            "raw_ask": lambda: ref.ask(_PING),
            "raw_proxy": lambda: proxy.value().get(),
            "wait_idle": lambda: rt.wait_idle(sid, timeout=WAIT),
            "deliver": deliver,
            "raw_tell": tell,
        }
        drains: dict[str, Callable[[], object]] = {
            "deliver": lambda: rt.state(sid),
            "raw_tell": lambda: ref.ask(_PING),
        }
        medians: dict[str, list[float]] = {kind: [] for kind in asks}
        sustained: dict[str, list[float]] = {kind: [] for kind in drains}
        kinds = list(asks)
        for _ in range(2):  # warm-up, untimed
            for kind in kinds:
                timed_calls(asks[kind], calls // 4)
                if kind in drains:
                    drains[kind]()
        for r in range(rounds):
            order = kinds[r % len(kinds) :] + kinds[: r % len(kinds)]
            for kind in order:
                block = time.perf_counter()
                times = timed_calls(asks[kind], calls)
                if kind in drains:  # wait until the actor has handled every tell
                    drains[kind]()
                    sustained[kind].append((time.perf_counter() - block) / calls * 1e6)
                medians[kind].append(statistics.median(times) / 1e3)
        assert rt.state(sid).seq == state.seq  # the stale deliveries changed nothing
        ref.stop()
    finally:
        rt.stop()
    ratio_rounds = [a / b for a, b in zip(medians["state"], medians["raw_ask"], strict=True)]
    proxy_rounds = [a / b for a, b in zip(medians["state"], medians["raw_proxy"], strict=True)]
    deliver_rounds = [a / b for a, b in zip(medians["deliver"], medians["raw_tell"], strict=True)]
    return {
        "rounds": rounds,
        "calls_per_round": calls,
        "median_us": {kind: statistics.median(v) for kind, v in medians.items()},
        "rounds_us": medians,
        "sustained_us_per_message": {k: statistics.median(v) for k, v in sustained.items()},
        "ratio_state_vs_raw_ask": statistics.median(ratio_rounds),
        "ratio_state_vs_raw_ask_rounds": ratio_rounds,
        "ratio_state_vs_raw_proxy": statistics.median(proxy_rounds),
        "ratio_deliver_vs_raw_tell": statistics.median(deliver_rounds),
    }


# -- 2. turns per second ----------------------------------------------------------------


def _thread_role(name: str) -> str:
    if name.startswith(("amber-store", "amber-effects")):
        return name
    if name.startswith(("SessionActor-", "ToolActor-")):
        return name.split("-")[0]
    if name.startswith(("MainThread", "sender")):
        return "callers"
    return "other"


def thread_cpu() -> dict[int, tuple[str, float]]:
    """CPU seconds of each live thread (its CPU-time clock), by ident; empty where unsupported."""
    out = {}
    for thread in threading.enumerate():
        if thread.ident is None:
            continue
        try:
            seconds = time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
        except (AttributeError, OSError):
            continue
        out[thread.ident] = (_thread_role(thread.name), seconds)
    return out


class _Counters:
    def __init__(self, rt: Runtime) -> None:
        store = rt._store
        assert store is not None
        self._store = store
        self.commits = store.commits
        self.appended = store.appended
        self.cpu = time.process_time()
        self.threads = thread_cpu()

    def since(self) -> dict[str, Any]:
        by_role: dict[str, float] = {}
        for tid, (role, seconds) in thread_cpu().items():
            before = self.threads.get(tid, (role, 0.0))[1]
            by_role[role] = by_role.get(role, 0.0) + seconds - before
        return {
            "commits": self._store.commits - self.commits,
            "events": self._store.appended - self.appended,
            "cpu_s": time.process_time() - self.cpu,
            "cpu_s_by_thread": by_role,
        }


def solo_block(rt: Runtime, sid: str, turns: int) -> dict[str, Any]:
    counters = _Counters(rt)
    sends, latencies, inside = [], [], []
    start = time.perf_counter()
    for _ in range(turns):
        sent, took, state = turn(rt, sid)
        sends.append(sent)
        latencies.append(took)
        inside.append(turn_time(state))
    wall = time.perf_counter() - start
    return {
        "turns": turns,
        "wall_s": wall,
        "send_s": sends,
        "latency_s": latencies,
        "turn_time_s": inside,
        **counters.since(),
    }


def crowd_block(rt: Runtime, pool: ThreadPoolExecutor, sids: list[str]) -> dict[str, Any]:
    """Every session gets one turn at once: one thread each sends, then waits for idle."""
    gate = threading.Barrier(len(sids) + 1)

    def one(sid: str) -> tuple[float, float, float, float]:
        gate.wait(WAIT)
        began = time.perf_counter()
        sent, took, state = turn(rt, sid)
        return began, sent, took, turn_time(state)

    futures = [pool.submit(one, sid) for sid in sids]
    counters = _Counters(rt)
    gate.wait(WAIT)
    results = [future.result(WAIT) for future in futures]
    figures = counters.since()
    first = min(began for began, *_ in results)
    last = max(began + took for began, _, took, _ in results)
    return {
        "turns": len(sids),
        "wall_s": last - first,
        "send_s": [sent for _, sent, _, _ in results],
        "latency_s": [took for _, _, took, _ in results],
        "turn_time_s": [inside for *_, inside in results],
        **figures,
    }


def summarize(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    latencies = [x for b in blocks for x in b["latency_s"]]
    sends = [x for b in blocks for x in b["send_s"]]
    inside = [x for b in blocks for x in b["turn_time_s"]]
    turns = sum(b["turns"] for b in blocks)
    commits = sum(b["commits"] for b in blocks)
    events = sum(b["events"] for b in blocks)
    return {
        "turns": turns,
        "turns_per_s": statistics.median(b["turns"] / b["wall_s"] for b in blocks),
        "turns_per_s_rounds": [b["turns"] / b["wall_s"] for b in blocks],
        "latency_ms": {
            "median": statistics.median(latencies) * 1e3,
            "p95": quantile(latencies, 0.95) * 1e3,
            "max": max(latencies) * 1e3,
        },
        "send_ms_median": statistics.median(sends) * 1e3,
        "turn_time_ms_median": statistics.median(inside) * 1e3,
        "cpu_ms_per_turn": sum(b["cpu_s"] for b in blocks) / turns * 1e3,
        "cpu_ms_per_turn_by_thread": {
            role: sum(b["cpu_s_by_thread"].get(role, 0.0) for b in blocks) / turns * 1e3
            for role in sorted({r for b in blocks for r in b["cpu_s_by_thread"]})
        },
        "commits": commits,
        "events": events,
        "events_per_commit": events / commits if commits else 0.0,
        "commits_per_turn": commits / turns,
    }


def bench_turns(folder: Path, rounds: int, solo_turns: int, crowd: int) -> dict[str, Any]:
    rt = make_runtime(fresh(folder, "turns.db"))
    solo_blocks: list[dict[str, Any]] = []
    crowd_blocks: list[dict[str, Any]] = []
    try:
        sids = [f"crowd-{i:03d}" for i in range(crowd)]
        with ThreadPoolExecutor(max_workers=crowd, thread_name_prefix="sender") as pool:
            # Warm-up (untimed): every crowd session's actor started, every sender thread
            # made. Each round's solo session is new (its actor started by an untimed
            # turn), so its history stays as short as the crowd's: section 3 measures
            # what a long history costs.
            crowd_block(rt, pool, sids)
            for r in range(rounds):
                solo = f"solo-{r}"
                turn(rt, solo)
                if r % 2:
                    crowd_blocks.append(crowd_block(rt, pool, sids))
                    solo_blocks.append(solo_block(rt, solo, solo_turns))
                else:
                    solo_blocks.append(solo_block(rt, solo, solo_turns))
                    crowd_blocks.append(crowd_block(rt, pool, sids))
        live = len(rt.live_sessions())
    finally:
        rt.stop()
    return {
        "rounds": rounds,
        "solo_turns_per_round": solo_turns,
        "solo": summarize(solo_blocks),
        "crowd": summarize(crowd_blocks),
        "crowd_sessions": crowd,
        "live_sessions": live,
    }


# -- 3. a turn's cost against the session's history -------------------------------------


def append(events: list[Event], store: Store) -> object:
    return store.append(events)


def bench_history(folder: Path, sizes: list[int], rounds: int) -> dict[str, Any]:
    from bench_store import session_events  # the store benchmark's realistic session

    rt = make_runtime(fresh(folder, "history.db"))
    try:
        sids = {size: f"history-{size}" for size in sizes}
        for size, sid in sids.items():
            if size:
                rt.call_store(functools.partial(append, session_events(size, sid)), timeout=WAIT)
        messages = {}
        for size, sid in sids.items():  # warm-up: load each session, one turn
            messages[size] = len(turn(rt, sid)[2].messages)
        latency: dict[int, list[float]] = {size: [] for size in sizes}
        sends: dict[int, list[float]] = {size: [] for size in sizes}
        cpu: dict[int, list[float]] = {size: [] for size in sizes}
        for r in range(rounds):
            order = sizes[r % len(sizes) :] + sizes[: r % len(sizes)]
            for size in order:
                before = time.process_time()
                sent, took, _ = turn(rt, sids[size])
                cpu[size].append(time.process_time() - before)
                sends[size].append(sent)
                latency[size].append(took)
    finally:
        rt.stop()
    return {
        str(size): {
            "events_preloaded": size,
            "messages": messages[size],
            "latency_ms_median": statistics.median(latency[size]) * 1e3,
            "send_ms_median": statistics.median(sends[size]) * 1e3,
            "cpu_ms_median": statistics.median(cpu[size]) * 1e3,
        }
        for size in sizes
    }


def profile_long_turns(folder: Path, preload: int, turns: int, top: int) -> None:
    """cProfile every thread while a session with ``preload`` events takes ``turns`` turns."""
    from bench_store import session_events

    path = fresh(folder, "profile.db")
    with Runtime(model=make_model(), store=path, tools=[echo]) as rt:
        rt.call_store(functools.partial(append, session_events(preload, "profiled")), timeout=WAIT)
    profiles: list[tuple[str, cProfile.Profile]] = []

    def install(frame: Any, event: str, arg: Any) -> None:
        profile = cProfile.Profile()
        profiles.append((threading.current_thread().name, profile))
        profile.enable()

    threading.setprofile(install)  # every thread the runtime starts from now on
    try:
        rt = make_runtime(path)
        turn(rt, "profiled")  # load the session
        start = time.perf_counter()
        for _ in range(turns):
            turn(rt, "profiled")
        wall = time.perf_counter() - start
        rt.stop()
    finally:
        threading.setprofile(None)
    print(
        f"\n   profile: {turns} turns of a session preloaded with {preload:,} events, "
        f"{wall / turns * 1e3:.0f} ms per turn under the profiler"
    )
    for name, profile in profiles:
        if name.startswith("SessionActor") or name == "amber-store":
            print(f"\n   thread {name}, cumulative time, Amber's functions:")
            stats = pstats.Stats(profile)
            stats.sort_stats("cumulative").print_stats(r"/(actors|runtime)/", top)


# -- 4. memory per session (each case in a fresh process) -------------------------------


def vm_bytes() -> tuple[int, int]:
    """(resident, virtual) bytes of this process, from /proc (0, 0 where there is none)."""
    found = {"VmRSS:": 0, "VmSize:": 0}
    try:
        with open("/proc/self/status") as status:
            for line in status:
                key = line.split(maxsplit=1)[0] if line.strip() else ""
                if key in found:
                    found[key] = int(line.split()[1]) * 1024
    except OSError:
        pass
    return found["VmRSS:"], found["VmSize:"]


def join_stopped_actors(name: str) -> None:
    for thread in threading.enumerate():
        if thread.name.startswith(f"{name}-"):
            thread.join(WAIT)


def child_memory(kind: str, sessions: int, folder: str) -> None:
    passivate = kind == "passivated"
    settings = Settings(passivate_after=0.05 if passivate else None)
    rt = make_runtime(fresh(Path(folder), f"memory-{kind}.db"), settings)
    try:
        turn(rt, "warm-up")  # imports, caches, trio's worker thread, SQLite pages
        if passivate:
            assert rt.wait_passivated("warm-up", timeout=WAIT)
            join_stopped_actors("SessionActor")
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.take_snapshot()
        (rss0, vm0), traced0, threads0 = (
            vm_bytes(),
            tracemalloc.get_traced_memory()[0],
            threading.active_count(),
        )
        sids = [f"{kind}-{i:04d}" for i in range(sessions)]
        for sid in sids:
            turn(rt, sid)
        if passivate:
            for sid in sids:
                assert rt.wait_passivated(sid, timeout=WAIT), sid
            join_stopped_actors("SessionActor")
        gc.collect()
        (rss1, vm1), traced1, threads1 = (
            vm_bytes(),
            tracemalloc.get_traced_memory()[0],
            threading.active_count(),
        )
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        top = [
            {
                "site": f"{Path(s.traceback[0].filename).name}:{s.traceback[0].lineno}",
                "bytes_per_session": s.size_diff / sessions,
            }
            for s in after.compare_to(base, "lineno")[:8]
        ]
        actor_threads = sum(1 for t in threading.enumerate() if t.name.startswith("SessionActor-"))
        live = len(rt.live_sessions())
    finally:
        rt.stop()
    print(
        json.dumps(
            {
                "kind": kind,
                "sessions": sessions,
                "live_sessions": live,
                "traced_bytes_per_session": (traced1 - traced0) / sessions,
                "rss_bytes_per_session": (rss1 - rss0) / sessions,
                "virtual_bytes_per_session": (vm1 - vm0) / sessions,
                "threads_before": threads0,
                "threads_after": threads1,
                "session_actor_threads": actor_threads - (0 if passivate else 1),  # minus warm-up's
                "top_sites": top,
            }
        )
    )


def bench_memory(folder: Path, cases: list[tuple[str, int]], repeats: int) -> dict[str, Any]:
    """Each case (live or passivated, N sessions) in a fresh process, ``repeats`` times."""
    runs: dict[str, list[dict[str, Any]]] = {f"{kind} {n}": [] for kind, n in cases}
    for _ in range(repeats):
        for kind, n in cases:
            command = [sys.executable, __file__, "--child-memory", kind, "--sessions", str(n)]
            out = subprocess.run(
                [*command, "--folder", str(folder)], capture_output=True, text=True, check=True
            ).stdout
            runs[f"{kind} {n}"].append(json.loads(out.strip().splitlines()[-1]))
    results: dict[str, Any] = {}
    for case, found in runs.items():
        results[case] = {
            key: statistics.median(r[key] for r in found)
            for key in (
                "traced_bytes_per_session",
                "rss_bytes_per_session",
                "virtual_bytes_per_session",
            )
        }
        results[case].update(
            {
                key: found[0][key]
                for key in (
                    "kind",
                    "sessions",
                    "threads_before",
                    "threads_after",
                    "session_actor_threads",
                    "live_sessions",
                    "top_sites",
                )
            }
        )
    return results


# -- main ------------------------------------------------------------------------------


def source_version() -> str:
    """The commit measured, and whether ``actors/`` or ``runtime/`` had uncommitted changes."""
    root = _ROOT
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", "actors", "runtime"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (no git)"
    return f"{head} + uncommitted changes in actors/ or runtime/" if dirty else head


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller run, for CI")
    parser.add_argument("--check", action="store_true", help="exit 1 if the hop ratio is > 3")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="cProfile every thread of long turns (a session of 5,500 events)",
    )
    parser.add_argument("--child-memory", help=argparse.SUPPRESS)
    parser.add_argument("--sessions", type=int, default=100, help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_memory:
        child_memory(args.child_memory, args.sessions, args.folder)
        return 0

    if args.quick:
        hop_rounds, hop_calls = 5, 300
        turn_rounds, solo_turns, crowd = 1, 10, 100
        sizes, history_rounds = [0, 1_100], 1
        memory_cases, memory_repeats = [("live", 10), ("passivated", 10)], 1
    else:
        hop_rounds, hop_calls = 15, 2_000
        turn_rounds, solo_turns, crowd = 5, 20, 100
        sizes, history_rounds = [0, 2_200, 11_000], 5
        # 300 passivated sessions: more than the SQLite store's cache of 128 heads.
        memory_cases = [("live", 100), ("passivated", 100), ("passivated", 300)]
        memory_repeats = 3
    machine: dict[str, Any] = {
        "amber": source_version(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": (
            len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        ),
        "load_average": os.getloadavg(),
    }
    print(
        f"Amber runtime benchmark — Python {machine['python']}, SQLite {machine['sqlite']}, "
        f"{machine['cpu_count']} cores ({machine['cpus_usable']} usable), "
        f"{machine['platform']}; load average {machine['load_average'][0]:.2f}; "
        f"GC on {gc.isenabled()}, thresholds {gc.get_threshold()}; "
        f"Amber at {machine['amber']}"
    )
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="amber-bench-") as tmp:
        folder = Path(tmp)

        hop = bench_hop(folder, hop_rounds, hop_calls)
        m = hop["median_us"]
        print(
            f"\n1. Message hop (median µs per call; {hop_rounds} interleaved rounds of "
            f"{hop_calls:,} calls each)"
        )
        print(f"   runtime.state(sid)                    {m['state']:>7.1f}   (the target hop)")
        print(f"   raw pykka ActorRef.ask                {m['raw_ask']:>7.1f}")
        print(f"   raw pykka proxy call .get()           {m['raw_proxy']:>7.1f}")
        print(f"   runtime.wait_idle(sid), already idle  {m['wait_idle']:>7.1f}")
        print(
            f"   gateway.delivered -> session tell     {m['deliver']:>7.1f}   (caller side; "
            f"{hop['sustained_us_per_message']['deliver']:.1f} µs/message until handled)"
        )
        print(
            f"   raw pykka ActorRef.tell               {m['raw_tell']:>7.1f}   (caller side; "
            f"{hop['sustained_us_per_message']['raw_tell']:.1f} µs/message until handled)"
        )
        print(
            f"   ratio state / raw ask: {hop['ratio_state_vs_raw_ask']:.2f}x (median of rounds; "
            f"target <= 3x); state / raw proxy call: {hop['ratio_state_vs_raw_proxy']:.2f}x; "
            f"delivered / raw tell: {hop['ratio_deliver_vs_raw_tell']:.2f}x"
        )

        turns = bench_turns(folder, turn_rounds, solo_turns, crowd)
        print(
            f"\n2. Turns (user message -> tool call -> tool -> reply -> turn ended), SQLite, "
            f"{turn_rounds} interleaved round(s)"
        )
        for key, label in [
            ("solo", "1 session, sequential"),
            ("crowd", f"{crowd} sessions at once"),
        ]:
            t = turns[key]
            lat = t["latency_ms"]
            print(
                f"   {label:<24} {t['turns_per_s']:>6.1f} turns/s   latency median "
                f"{lat['median']:.1f} ms, p95 {lat['p95']:.1f} ms, max {lat['max']:.0f} ms; "
                f"send {t['send_ms_median']:.1f} ms; CPU {t['cpu_ms_per_turn']:.1f} ms/turn"
            )
            shares = ", ".join(
                f"{role} {ms:.1f}"
                for role, ms in sorted(t["cpu_ms_per_turn_by_thread"].items(), key=lambda x: -x[1])
                if ms >= 0.05
            )
            print(f"   {'':<24} CPU ms/turn by thread: {shares}")
            print(
                f"   {'':<24} {t['commits']:,} commits for {t['events']:,} events "
                f"({t['events_per_commit']:.2f} events/commit, "
                f"{t['commits_per_turn']:.2f} commits/turn)"
            )

        history = bench_history(folder, sizes, history_rounds)
        print(
            f"\n3. One turn against the session's history ({history_rounds} interleaved round(s))"
        )
        for figures in history.values():
            print(
                f"   {figures['events_preloaded']:>6,} events preloaded, "
                f"{figures['messages']:>5,} messages: {figures['latency_ms_median']:>7.1f} ms "
                f"per turn, CPU {figures['cpu_ms_median']:.1f} ms; send "
                f"{figures['send_ms_median']:.1f} ms"
            )

        memory = bench_memory(folder, memory_cases, memory_repeats)
        print(
            f"\n4. Memory per session (one turn each, a fresh process per case, median of "
            f"{memory_repeats})"
        )
        for case, figures in memory.items():
            print(
                f"   {case + ' sessions':<23} tracemalloc "
                f"{figures['traced_bytes_per_session'] / 1024:>5.1f} KiB, RSS "
                f"{figures['rss_bytes_per_session'] / 1024:>6.1f} KiB, virtual "
                f"{figures['virtual_bytes_per_session'] / 2**20:>4.1f} MiB per session; threads "
                f"{figures['threads_before']} -> {figures['threads_after']} "
                f"({figures['session_actor_threads']} session actors), "
                f"{figures['live_sessions']} live"
            )
            sites = ", ".join(
                f"{s['site']} {s['bytes_per_session']:.0f} B" for s in figures["top_sites"][:5]
            )
            print(f"   {'':<23} largest sites: {sites}")

        if args.profile:
            profile_long_turns(folder, 5_500, 10, 25)
    elapsed = time.perf_counter() - began
    print(f"\nTotal {elapsed:.0f} s.")
    results = {
        "machine": machine,
        "quick": args.quick,
        "seconds": elapsed,
        "hop": hop,
        "turns": turns,
        "history": history,
        "memory": memory,
    }
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    ok = hop["ratio_state_vs_raw_ask"] <= 3.0
    print(
        f"Requirement (runtime.state hop <= 3x a raw pykka ask, median of rounds): "
        f"{'met' if ok else 'NOT met'} ({hop['ratio_state_vs_raw_ask']:.2f}x)"
    )
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
