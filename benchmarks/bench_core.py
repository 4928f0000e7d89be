"""Core benchmark: the cost of a transition as a session's history grows.

Run from the repository root::

    python benchmarks/bench_core.py            # full run (~2-3 min on 2 cores)
    python benchmarks/bench_core.py --quick    # smoke run for CI (~20 s)

Everything is measured with CPython's cyclic GC **on**, as users run it
(DESIGN §13): the script never calls ``gc.disable()``. Every state a
benchmark produces is kept alive until its timing ends, as a ``Timeline``
keeps every state. Each figure is the median over several repeats; ratios
compare figures taken in the same run.

What it measures (see ``docs/performance.md`` for the findings):

1. apply cost per event (a mixed batch: full turns of 11 events, new ids
   each) on a state holding 100 messages vs one holding 100,000
   (requirement: <= 1.5x);
2. retained bytes per transition of a 100,000-event timeline, beyond the
   events and their message payloads (tracemalloc; requirement: <= 2 KiB);
3. ``Timeline.at(k)`` at 100,000 events vs 100 events (requirement: <= 2x);
4. Amber vs seed 002's naive ``ImmutableSessionState`` (copies a tuple of
   every message on each add): per-add cost at 100 / 10,000 / 100,000
   messages and the time to build a 10,000-message history;
5. per-event time while one timeline grows to 100,000 messages, with the time
   spent in young and full collections;
6. the GC trap itself: keeping every version of a C ``pvector`` vs of the
   pure-Python ``PVector`` the runtime uses;
7. the persistent structures under a state, alone, at 100 / 10,000 /
   100,000 entries (where the growth in 1 comes from).

``--check`` exits with status 1 when a requirement is not met. ``--json PATH``
writes every figure as JSON.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import linecache
import os
import platform
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

try:
    import runtime  # noqa: F401
except ImportError:  # a plain checkout, not installed: use the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from immutables import Map
from pyrsistent import pvector
from pyrsistent._pvector import python_pvector

from runtime import (
    Category,
    Event,
    Message,
    MessageAdded,
    SessionState,
    Status,
    StatusChanged,
    Timeline,
    ToolCall,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
    apply,
    new_message,
)

SESSION = "sess_bench"
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
EVENTS_PER_TURN = 11
MESSAGES_PER_TURN = 5
FRESH_TURNS = 10_000_000  # turn numbers for measured batches: never in a built history

perf = time.perf_counter
K = TypeVar("K")


# --------------------------------------------------------------------------- workload


def turn_events(turn: int, start_seq: int, session_id: str = SESSION) -> list[Event]:
    """One realistic turn: 11 events that add 5 messages.

    User question; TurnStarted; thought; tool call; tool result; reply; four
    deliveries (thought, call, result, reply); TurnEnded(processed).
    """
    at = T0 + timedelta(seconds=start_seq)
    seq = start_seq
    events: list[Event] = []

    def add(message: Message) -> None:
        nonlocal seq
        seq += 1
        events.append(MessageAdded(session_id=session_id, seq=seq, at=at, message=message))

    def next_seq() -> int:
        nonlocal seq
        seq += 1
        return seq

    question, thought, call, result, reply = (
        f"msg_{turn}_{part}" for part in ("q", "think", "call", "result", "reply")
    )
    turn_id = f"turn_{turn}"
    call_id = f"call_{turn}"

    def message(category: Category, id: str, content: str, **fields: Any) -> Message:
        return new_message(
            category,
            id=id,
            session_id=session_id,
            created_at=at,
            content=content,
            chatbot_id="discord",
            channel_id="chan_general",
            **fields,
        )

    add(
        message(
            Category.USER_QUESTION,
            question,
            f"Question {turn}: what's the weather in Paris, and should I take an umbrella?",
            sender="Chii",
        )
    )
    events.append(TurnStarted(session_id=session_id, seq=next_seq(), at=at, turn_id=turn_id))
    add(
        message(
            Category.THOUGHT,
            thought,
            "The user asks about today's weather in Paris. I should call the weather tool "
            "and then answer about the umbrella.",
            turn_id=turn_id,
            parent_id=question,
        )
    )
    add(
        message(
            Category.TOOL_CALL,
            call,
            'get_weather(city="Paris", units="metric")',
            turn_id=turn_id,
            parent_id=question,
            tool_call=ToolCall(
                id=call_id, name="get_weather", arguments={"city": "Paris", "units": "metric"}
            ),
        )
    )
    add(
        message(
            Category.TOOL_RESULT,
            result,
            '{"city": "Paris", "temp_c": 17, "sky": "light rain", "precip_mm": 2.4, '
            '"wind_kmh": 14}',
            turn_id=turn_id,
            parent_id=call,
            tool_call_id=call_id,
            sender="get_weather",
        )
    )
    add(
        message(
            Category.REPLY,
            reply,
            "It's 17 °C in Paris with light rain (about 2 mm expected), so yes, take an umbrella.",
            turn_id=turn_id,
            parent_id=question,
        )
    )
    for message_id, expected in (
        (thought, Status.RESPONDED),
        (call, Status.RESPONDED),
        (result, Status.RESPONDED),
        (reply, Status.PENDING),
    ):
        events.append(
            StatusChanged(
                session_id=session_id,
                seq=next_seq(),
                at=at,
                message_id=message_id,
                expected=expected,
                status=Status.DELIVERED,
            )
        )
    events.append(
        TurnEnded(
            session_id=session_id,
            seq=next_seq(),
            at=at,
            turn_id=turn_id,
            outcome=TurnOutcome.PROCESSED,
            duration_ms=2150.0,
            metrics={"tool_calls": 1, "input_tokens": 812, "output_tokens": 64},
        )
    )
    return events


def history_events(turns: int, first_turn: int = 0, start_seq: int = 0) -> list[Event]:
    """``turns`` consecutive turns starting at ``start_seq``."""
    events: list[Event] = []
    for turn in range(first_turn, first_turn + turns):
        events.extend(turn_events(turn, start_seq + len(events)))
    return events


def user_question(number: int, created_at: datetime = T0) -> Message:
    """A user question with a fresh id (the payload of the per-add benchmark)."""
    return new_message(
        Category.USER_QUESTION,
        id=f"msg_add_{number}",
        session_id=SESSION,
        created_at=created_at,
        content=f"Follow-up {number}: and what about tomorrow morning?",
        sender="Chii",
        chatbot_id="discord",
        channel_id="chan_general",
    )


# --------------------------------------------------------------- seed 002: the naive way


@dataclass(frozen=True)
class NaiveSessionState:
    """Seed 002's ``ImmutableSessionState``: every add copies the whole tuple."""

    session_id: str
    messages: tuple[Message, ...] = field(default_factory=tuple)
    current_turn: int = 0
    token_count: float = 0
    last_updated: datetime = field(default_factory=lambda: datetime.now(UTC))

    def add_message(self, message: Message) -> NaiveSessionState:
        new_messages = tuple(list(self.messages) + [message])  # noqa: RUF005 (the seed's code)
        return NaiveSessionState(
            session_id=self.session_id,
            messages=new_messages,
            current_turn=self.current_turn + 1,
            token_count=self.token_count + len(message.content.split()) * 1.3,
            last_updated=datetime.now(UTC),
        )


# --------------------------------------------------------------------------- timing


@dataclass
class Figure:
    """Per-operation timings of one benchmark, in seconds, one sample per repeat."""

    samples: list[float]
    gc_samples: list[float] = field(default_factory=list)
    """Time spent in the collector during each repeat, per operation."""

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.samples)

    @property
    def gc_median(self) -> float:
        return statistics.median(self.gc_samples) if self.gc_samples else 0.0

    def as_dict(self, unit: float = 1e6) -> dict[str, Any]:
        return {
            "median_us": self.median * unit,
            "mean_us": self.mean * unit,
            "min_us": min(self.samples) * unit,
            "max_us": max(self.samples) * unit,
            "gc_median_us": self.gc_median * unit,
            "repeats": len(self.samples),
        }


@dataclass
class Job:
    """Something to time: ``run(prepare())`` does ``ops`` operations.

    ``prepare`` (not timed) makes fresh inputs for each repeat, so that no
    repeat finds the previous one's data hot in the CPU caches.
    """

    run: Callable[[Any], Any]
    ops: int
    prepare: Callable[[], Any] = lambda: None


def interleaved(jobs: dict[K, Job], repeats: int, warmup: int = 1) -> dict[K, Figure]:
    """Time each job ``repeats`` times, in rotation.

    Jobs take turns (the order rotates every repeat), so that drift in the
    machine's speed hits every figure alike and their ratios stay fair.
    Whatever a run returns (the states it made) stays alive until its timing
    has been read, as a timeline would hold them.
    """
    figures = {name: Figure([]) for name in jobs}
    names = list(jobs)
    clock = GcClock()
    with clock.running():
        for repeat in range(warmup + repeats):
            shift = repeat % len(names)
            for name in names[shift:] + names[:shift]:
                job = jobs[name]
                data = job.prepare()
                in_gc = clock.young + clock.full
                start = perf()
                kept = job.run(data)
                elapsed = perf() - start
                in_gc = clock.young + clock.full - in_gc
                del kept, data
                if repeat >= warmup:
                    figures[name].samples.append(elapsed / job.ops)
                    figures[name].gc_samples.append(in_gc / job.ops)
    return figures


def per_op(job: Job, repeats: int, warmup: int = 1) -> Figure:
    """Time one job alone (see ``interleaved``)."""
    return interleaved({"job": job}, repeats, warmup)["job"]


class GcClock:
    """Wall time spent in the collector, split into young (gen 0/1) and full (gen 2)."""

    def __init__(self) -> None:
        self.young = 0.0
        self.full = 0.0
        self.full_count = 0
        self.full_max = 0.0
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = perf()
            return
        elapsed = perf() - self._start
        if info["generation"] == 2:
            self.full += elapsed
            self.full_count += 1
            self.full_max = max(self.full_max, elapsed)
        else:
            self.young += elapsed

    @contextmanager
    def running(self) -> Iterator[GcClock]:
        gc.callbacks.append(self)
        try:
            yield self
        finally:
            gc.callbacks.remove(self)


def build_timeline(events: Sequence[Event]) -> Timeline:
    """Append events one by one, as a session actor does."""
    timeline = Timeline.start(SESSION)
    for event in events:
        timeline = timeline.append(event)
    return timeline


def seq_with_messages(messages: int) -> int:
    """Seq right after the turn that brings a built history to ``messages`` messages."""
    assert messages % MESSAGES_PER_TURN == 0
    return messages // MESSAGES_PER_TURN * EVENTS_PER_TURN


# --------------------------------------------------------------------------- benchmarks


_fresh = itertools.count(FRESH_TURNS)


def apply_job(base: SessionState, turns: int) -> Job:
    """Apply ``turns`` different full turns (11 mixed events each) to ``base``.

    Each turn starts from ``base`` (``apply`` is pure, so each is a valid
    branch), so every state measured holds the base's messages plus at most
    five; every state made is kept. Each turn has new ids, as real turns do:
    replaying one turn over and over would keep the same trie paths hot in
    the CPU caches and hide what a large history costs.
    """

    def prepare() -> list[list[Event]]:
        return [turn_events(next(_fresh), base.seq) for _ in range(turns)]

    def run(batches: list[list[Event]]) -> list[SessionState]:
        kept = []
        for batch in batches:
            state = base
            for event in batch:
                state = apply(state, event)
                kept.append(state)
        return kept

    return Job(run, turns * EVENTS_PER_TURN, prepare)


def amber_add_job(base: SessionState, adds: int) -> Job:
    """``adds`` different ``MessageAdded`` events (user questions), each applied to ``base``."""

    def prepare() -> list[Event]:
        return [
            MessageAdded(
                session_id=SESSION, seq=base.seq + 1, at=T0, message=user_question(next(_fresh))
            )
            for _ in range(adds)
        ]

    def run(events: list[Event]) -> list[SessionState]:
        return [apply(base, event) for event in events]

    return Job(run, adds, prepare)


def naive_add_job(base: NaiveSessionState, adds: int) -> Job:
    """Seed 002's ``add_message`` of ``adds`` different messages, each on ``base``."""

    def prepare() -> list[Message]:
        return [user_question(next(_fresh)) for _ in range(adds)]

    def run(messages: list[Message]) -> list[NaiveSessionState]:
        return [base.add_message(message) for message in messages]

    return Job(run, adds, prepare)


def naive_from(state: SessionState) -> NaiveSessionState:
    """A naive state holding the same messages as ``state``."""
    return NaiveSessionState(session_id=SESSION, messages=tuple(state.messages))


def lookup_job(
    timeline: Timeline, lookups: int, rng: random.Random, *, entries_only: bool = False
) -> Job:
    """``timeline.at(k)`` for ``lookups`` random k.

    With ``entries_only``, index ``timeline.entries`` directly instead (the
    persistent vector alone, without ``at``'s checks), to show where the time goes.
    """
    keys = [rng.randint(timeline.first_seq, timeline.last_seq) for _ in range(lookups)]
    if entries_only:
        entries = timeline.entries
        positions = [k - timeline.first_seq - 1 for k in keys if k > timeline.first_seq]

        def run_entries(_: None) -> None:
            for i in positions:
                entries[i]

        return Job(run_entries, len(positions))
    at = timeline.at

    def run(_: None) -> None:
        for k in keys:
            at(k)

    return Job(run, lookups)


def structure_jobs(size: int, ops: int) -> dict[str, Job]:
    """The persistent structures under a state, alone, at ``size`` entries.

    Each op makes a new version from the same base and every version is kept,
    as in a timeline: ``immutables.Map.set`` of a new key (the id indexes),
    pure-Python ``PVector.append`` (the message list) and ``PVector.set`` at a
    random position (a status change on an old message).
    """
    base_map: Map[str, int] = Map({f"msg_{i}_q": i for i in range(size)})
    base_vector: Any = python_pvector(range(size))  # type: ignore[no-untyped-call]
    positions = [random.Random(size).randrange(size) for _ in range(ops)]

    def new_keys() -> list[str]:
        return [f"msg_{next(_fresh)}_new" for _ in range(ops)]

    def map_set(keys: list[str]) -> list[Any]:
        return [base_map.set(key, 1) for key in keys]

    def vector_append(_: None) -> list[Any]:
        return [base_vector.append(i) for i in range(ops)]

    def vector_set(_: None) -> list[Any]:
        return [base_vector.set(p, -1) for p in positions]

    return {
        "Map.set (new key)": Job(map_set, ops, new_keys),
        "PVector.append": Job(vector_append, ops),
        "PVector.set (random position)": Job(vector_set, ops),
    }


def bench_builds(messages: int, repeats: int) -> dict[str, Figure]:
    """Build a ``messages``-message history from empty, Amber's way and seed 002's way."""
    turn_events_ = history_events(messages // MESSAGES_PER_TURN)
    questions = [user_question(i) for i in range(messages)]
    adds = [
        MessageAdded(session_id=SESSION, seq=i + 1, at=T0, message=m)
        for i, m in enumerate(questions)
    ]

    def naive_keep_all() -> list[NaiveSessionState]:
        state = NaiveSessionState(session_id=SESSION)
        kept = [state]
        for message in questions:
            state = state.add_message(message)
            kept.append(state)
        return kept

    def naive_keep_last() -> NaiveSessionState:
        state = NaiveSessionState(session_id=SESSION)
        for message in questions:
            state = state.add_message(message)
        return state

    return interleaved(
        {
            "amber_turns": Job(lambda _: build_timeline(turn_events_), 1),
            "amber_adds": Job(lambda _: build_timeline(adds), 1),
            "naive_keep_all": Job(lambda _: naive_keep_all(), 1),
            "naive_keep_last": Job(lambda _: naive_keep_last(), 1),
        },
        repeats,
        warmup=0,
    )


def measure_memory(events: Sequence[Event]) -> dict[str, Any]:
    """Bytes a timeline of ``events`` retains beyond the events themselves.

    The events (and the message payloads they carry) already exist before
    tracing starts; only what the timeline allocates and keeps is counted.
    """
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        timeline = build_timeline(events)
        retained_raw = tracemalloc.get_traced_memory()[0] - before
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - before
        snapshot = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    top = []
    for stat in snapshot.statistics("lineno")[:8]:
        frame = stat.traceback[0]
        name = frame.filename
        for marker in ("site-packages/", "/work/main/"):
            if marker in name:
                name = name.split(marker, 1)[1]
        top.append(
            {
                "where": f"{name}:{frame.lineno}",
                "code": linecache.getline(frame.filename, frame.lineno).strip(),
                "bytes_per_event": stat.size / len(events),
            }
        )
    del snapshot
    return {
        "events": len(events),
        "messages": len(timeline.head.messages),
        "bytes_per_transition": retained / len(events),
        "bytes_per_transition_before_gc_collect": retained_raw / len(events),
        "top_allocation_sites": top,
        "timeline": timeline,
    }


def payload_bytes_per_event(turns: int) -> float:
    """Bytes the events of ``turns`` turns (with their messages) take."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        events = history_events(turns, first_turn=20_000_000)
        size = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    return size / len(events)


def bench_growth(
    turns: int, window_turns: int, chunk_turns: int, freeze_every: int | None = None
) -> tuple[Timeline, list[dict[str, Any]]]:
    """Grow one timeline by ``turns`` full turns, appending events one by one.

    Events are made a chunk at a time just before they are applied (not
    timed), as a session actor makes each event just before applying it.
    Per window: time per event, and time spent in young and full collections.
    With ``freeze_every``, ``gc.freeze()`` runs after every that many events
    (DESIGN §13's advice; off by default).
    """
    timeline = Timeline.start(SESSION)
    rows: list[dict[str, Any]] = []
    clock = GcClock()
    append = Timeline.append
    turn = 0
    with clock.running():
        while turn < turns:
            young, full, full_count = clock.young, clock.full, clock.full_count
            clock.full_max = 0.0
            chunks: list[float] = []
            elapsed = 0.0
            applied = 0
            for _ in range(window_turns // chunk_turns):
                events: list[Event] = []
                for _ in range(chunk_turns):
                    events.extend(turn_events(turn, timeline.last_seq + len(events)))
                    turn += 1
                start = perf()
                for event in events:
                    timeline = append(timeline, event)
                    if freeze_every and timeline.last_seq % freeze_every == 0:
                        gc.freeze()
                took = perf() - start
                chunks.append(took / len(events))
                elapsed += took
                applied += len(events)
            rows.append(
                {
                    "events": timeline.last_seq,
                    "messages": len(timeline.head.messages),
                    "mean_us": elapsed / applied * 1e6,
                    "median_chunk_us": statistics.median(chunks) * 1e6,
                    "young_gc_us": (clock.young - young) / applied * 1e6,
                    "full_gc_us": (clock.full - full) / applied * 1e6,
                    "full_gcs": clock.full_count - full_count,
                    "longest_full_gc_ms": clock.full_max * 1e3,
                }
            )
    return timeline, rows


def bench_gc_trap(steps: int, window: int) -> dict[str, list[float]]:
    """Keep every version of a vector while appending: µs/step per window, GC on."""
    out: dict[str, list[float]] = {}
    for name, make in (("C pvector", pvector), ("pure-Python PVector", python_pvector)):
        vector: Any = make()
        kept = []
        per_window = []
        start = perf()
        for i in range(1, steps + 1):
            vector = vector.append(i)
            kept.append(vector)
            if i % window == 0:
                now = perf()
                per_window.append((now - start) / window * 1e6)
                start = now
        del kept, vector
        out[name] = per_window
    return out


# --------------------------------------------------------------------------- report


def us(seconds: float) -> str:
    return f"{seconds * 1e6:10.2f}"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        lines.append(
            "  ".join(
                c.rjust(w) if i else c.ljust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # not available on this platform
        return "n/a"


def say(text: str = "") -> None:
    print(text, flush=True)


@dataclass
class Config:
    big_messages: int
    memory_events: int
    small_lookup_events: int
    build_messages: int
    apply_turns: int
    apply_repeats: int
    add_count: int
    add_repeats: int
    naive_big_adds: int
    lookups: int
    lookup_repeats: int
    build_repeats: int
    growth_window_turns: int
    growth_chunk_turns: int
    trap_steps: int
    trap_window: int
    structure_ops: int
    structure_repeats: int


FULL = Config(
    big_messages=100_000,
    memory_events=100_000,
    small_lookup_events=100,
    build_messages=10_000,
    apply_turns=100,
    apply_repeats=15,
    add_count=500,
    add_repeats=15,
    naive_big_adds=20,
    lookups=20_000,
    lookup_repeats=15,
    build_repeats=3,
    growth_window_turns=2_000,
    growth_chunk_turns=50,
    trap_steps=10_000,
    trap_window=1_000,
    structure_ops=20_000,
    structure_repeats=7,
)

QUICK = Config(
    big_messages=20_000,
    memory_events=20_000,
    small_lookup_events=100,
    build_messages=2_000,
    apply_turns=40,
    apply_repeats=5,
    add_count=200,
    add_repeats=5,
    naive_big_adds=20,
    lookups=5_000,
    lookup_repeats=5,
    build_repeats=2,
    growth_window_turns=400,
    growth_chunk_turns=50,
    trap_steps=5_000,
    trap_window=1_000,
    structure_ops=5_000,
    structure_repeats=3,
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="small sizes, few repeats (CI smoke run)"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if a requirement is not met")
    parser.add_argument("--json", metavar="PATH", help="also write every figure to PATH as JSON")
    parser.add_argument("--seed", type=int, default=2026, help="seed for the random lookups")
    parser.add_argument(
        "--gc-freeze",
        type=int,
        metavar="N",
        help="call gc.freeze() every N events while the big timeline grows (section 5) "
        "and keep it frozen afterwards; off by default",
    )
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    rng = random.Random(args.seed)
    results: dict[str, Any] = {}
    started = perf()
    small_n, big_n = 100, cfg.big_messages
    mid_n = 10_000 if big_n > 10_000 else big_n // 2

    command = " ".join(
        ["python benchmarks/bench_core.py", *(sys.argv[1:] if argv is None else argv)]
    )
    say("Amber core benchmark")
    say(f"command : {command}")
    python = f"{platform.python_implementation()} {platform.python_version()}"
    say(f"python  : {python} ({sys.executable})")
    say(f"machine : os.cpu_count() = {os.cpu_count()}, {platform.machine()}, {platform.platform()}")
    say(f"gc      : enabled={gc.isenabled()}, thresholds={gc.get_threshold()}")
    say(f"load    : {load()} (1/5/15-min load average; other work on the machine skews timings)")
    say(
        f"mode    : {'quick' if args.quick else 'full'}"
        + (f", gc.freeze() every {args.gc_freeze:,} events in [C]" if args.gc_freeze else "")
    )
    if not gc.isenabled():
        say(
            "warning: the cyclic GC is disabled in this interpreter; figures are not representative"
        )
    results["env"] = {
        "command": command,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "gc_enabled": gc.isenabled(),
        "gc_threshold": gc.get_threshold(),
        "mode": "quick" if args.quick else "full",
        "gc_freeze_every": args.gc_freeze,
        "load_at_start": load(),
    }

    # ---- A. A fresh process with one small session.
    say(f"\n[A] a fresh process with one {small_n}-message session…")
    small_timeline = build_timeline(history_events(small_n // MESSAGES_PER_TURN))
    small_state = small_timeline.head
    lookup_small_timeline = build_timeline(
        history_events(cfg.small_lookup_events // EVENTS_PER_TURN + 1)[: cfg.small_lookup_events]
    )
    apply_alone = per_op(apply_job(small_state, cfg.apply_turns), cfg.apply_repeats)
    trap = bench_gc_trap(cfg.trap_steps, cfg.trap_window)

    say(f"[A] building a {cfg.build_messages:,}-message history both ways…")
    builds = bench_builds(cfg.build_messages, cfg.build_repeats)

    # ---- B. Memory of a memory_events-event timeline, and at() at that size.
    say(f"\n[B] memory of a {cfg.memory_events:,}-event timeline (tracemalloc)…")
    t = perf()
    events = history_events(-(-cfg.memory_events // EVENTS_PER_TURN))[: cfg.memory_events]
    payload = payload_bytes_per_event(200)
    memory = measure_memory(events)
    del events
    say(f"    done in {perf() - t:.1f} s")
    lookup_big_timeline = memory.pop("timeline")
    lookups = interleaved(
        {
            "small": lookup_job(lookup_small_timeline, cfg.lookups, rng),
            "big": lookup_job(lookup_big_timeline, cfg.lookups, rng),
            "small entries": lookup_job(lookup_small_timeline, cfg.lookups, rng, entries_only=True),
            "big entries": lookup_job(lookup_big_timeline, cfg.lookups, rng, entries_only=True),
        },
        cfg.lookup_repeats,
    )
    del lookup_big_timeline
    gc.collect()

    # ---- C. One session grows to big_n messages; then everything at that size.
    big_turns = big_n // MESSAGES_PER_TURN
    say(
        f"\n[C] growing one timeline to {big_n:,} messages "
        f"({big_turns * EVENTS_PER_TURN:,} events)…"
    )
    t = perf()
    big_timeline, growth = bench_growth(
        big_turns, cfg.growth_window_turns, cfg.growth_chunk_turns, args.gc_freeze
    )
    say(f"    done in {perf() - t:.1f} s")
    big_state = big_timeline.head
    mid_state = big_timeline.at(seq_with_messages(mid_n))
    assert len(mid_state.messages) == mid_n
    assert len(big_state.messages) == big_n
    say("[C] apply and add at every size, interleaved…")
    applies = interleaved(
        {
            n: apply_job(state, cfg.apply_turns)
            for n, state in ((small_n, small_state), (mid_n, mid_state), (big_n, big_state))
        },
        cfg.apply_repeats,
    )
    add_pairs = {}
    for n, state in ((small_n, small_state), (mid_n, mid_state), (big_n, big_state)):
        naive_adds = cfg.add_count if n <= 10_000 else cfg.naive_big_adds
        add_pairs[n] = interleaved(
            {
                "amber": amber_add_job(state, cfg.add_count),
                "naive": naive_add_job(naive_from(state), naive_adds),
            },
            cfg.add_repeats,
        )
    structures = {}
    for n in (small_n, mid_n, big_n):
        structures[n] = interleaved(structure_jobs(n, cfg.structure_ops), cfg.structure_repeats)

    # ------------------------------------------------------------------ report
    say("\n" + "=" * 78)
    say(
        f"1. apply cost per event: {cfg.apply_turns} different full turns (11 mixed events "
        f"each) per repeat, each applied to the same base state, every state kept; GC on; "
        f"{cfg.apply_repeats} repeats"
    )
    say(f"   measured interleaved, with the {big_n:,}-message timeline alive:")
    say(
        table(
            ["state holds", "median µs/event", "mean µs/event", "in GC µs/event"],
            [
                (f"{n:,} messages", us(f.median), us(f.mean), us(f.gc_median))
                for n, f in applies.items()
            ],
        )
    )
    ratio_apply = applies[big_n].median / applies[small_n].median
    ratio_alone = applies[big_n].median / apply_alone.median
    say(f"   ratio {big_n:,} / {small_n} messages: {ratio_apply:.2f}x  (requirement <= 1.5x)")
    say(
        f"   for reference, {small_n} messages in a fresh process (nothing else alive): "
        f"{us(apply_alone.median).strip()} µs/event median; "
        f"{big_n:,}-message figure / this = {ratio_alone:.2f}x"
    )
    results["apply"] = {
        **{str(n): f.as_dict() for n, f in applies.items()},
        "small_fresh_process": apply_alone.as_dict(),
        "ratio": ratio_apply,
        "ratio_vs_fresh_process": ratio_alone,
    }

    say(
        f"\n2. memory per transition: {memory['events']:,}-event timeline "
        f"({memory['messages']:,} messages), every state kept"
    )
    per = memory["bytes_per_transition"]
    say(
        f"   retained beyond the events and their payloads: {per:,.0f} B/transition = "
        f"{per / 1024:.2f} KiB  (requirement <= 2 KiB)"
    )
    say(
        f"   (before gc.collect(): {memory['bytes_per_transition_before_gc_collect']:,.0f} B; "
        f"the events with their messages take {payload:,.0f} B/event on their own)"
    )
    say("   largest allocation sites (B/transition):")
    for site in memory["top_allocation_sites"]:
        say(f"     {site['bytes_per_event']:6.0f}  {site['where']:28}  {site['code'][:60]}")
    results["memory"] = {**memory, "payload_bytes_per_event": payload}

    say(
        f"\n3. timeline.at(k), random k, interleaved, {cfg.lookup_repeats} repeats x "
        f"{cfg.lookups:,} calls"
    )
    ratio_lookup = lookups["big"].median / lookups["small"].median
    say(
        table(
            ["timeline", "median µs/call"],
            [
                (f"{cfg.small_lookup_events:,} events", us(lookups["small"].median)),
                (f"{cfg.memory_events:,} events", us(lookups["big"].median)),
                (
                    f"  of which entries[k] alone, {cfg.small_lookup_events:,} events",
                    us(lookups["small entries"].median),
                ),
                (
                    f"  of which entries[k] alone, {cfg.memory_events:,} events",
                    us(lookups["big entries"].median),
                ),
            ],
        )
    )
    say(f"   ratio: {ratio_lookup:.2f}x  (requirement <= 2x)")
    results["lookup"] = {
        "small": lookups["small"].as_dict(),
        "big": lookups["big"].as_dict(),
        "small_entries_only": lookups["small entries"].as_dict(),
        "big_entries_only": lookups["big entries"].as_dict(),
        "small_events": cfg.small_lookup_events,
        "big_events": cfg.memory_events,
        "ratio": ratio_lookup,
    }

    say(
        f"\n4. add one message: Amber apply(MessageAdded) vs seed 002's tuple copy; "
        f"every new state kept; GC on; {cfg.add_repeats} repeats, interleaved"
    )
    rows = []
    results["add"] = {}
    for n, pair in add_pairs.items():
        a, b = pair["amber"], pair["naive"]
        rows.append((f"{n:,}", us(a.median), us(b.median), f"{b.median / a.median:.2f}x"))
        results["add"][str(n)] = {
            "amber": a.as_dict(),
            "naive": b.as_dict(),
            "naive_over_amber": b.median / a.median,
        }
    say(table(["messages", "Amber µs/add", "naive µs/add", "naive / Amber"], rows))
    say(
        f"   building a {cfg.build_messages:,}-message history from empty "
        f"(fresh process, median of {cfg.build_repeats}):"
    )
    turns_n = cfg.build_messages // MESSAGES_PER_TURN
    labels = {
        "amber_turns": f"Amber: {turns_n:,} full turns ({turns_n * EVENTS_PER_TURN:,} events), "
        "Timeline.append, every state kept",
        "amber_adds": f"Amber: {cfg.build_messages:,} MessageAdded, Timeline.append, "
        "every state kept",
        "naive_keep_all": f"naive: {cfg.build_messages:,} add_message, every state kept",
        "naive_keep_last": f"naive: {cfg.build_messages:,} add_message, newest state only",
    }
    say(table(["build", "seconds"], [(labels[k], f"{f.median:8.3f}") for k, f in builds.items()]))
    build_ratio = builds["naive_keep_all"].median / builds["amber_adds"].median
    say(
        f"   naive / Amber for the same {cfg.build_messages:,} adds, every state kept: "
        f"{build_ratio:.2f}x"
    )
    results["build"] = {
        k: {"label": labels[k], "median_s": f.median, "samples_s": f.samples}
        for k, f in builds.items()
    }
    results["build"]["naive_over_amber"] = build_ratio

    say(
        "\n5. per-event time while one timeline grows (Timeline.append one by one, GC on"
        + (f", gc.freeze() every {args.gc_freeze:,} events)" if args.gc_freeze else ")")
    )
    say(
        table(
            [
                "events",
                "messages",
                "mean µs/ev",
                f"median of {cfg.growth_chunk_turns * EVENTS_PER_TURN}-ev chunks",
                "young GC µs/ev",
                "full GC µs/ev",
                "full GCs",
                "longest full GC ms",
            ],
            [
                (
                    f"{r['events']:,}",
                    f"{r['messages']:,}",
                    f"{r['mean_us']:.1f}",
                    f"{r['median_chunk_us']:.1f}",
                    f"{r['young_gc_us']:.1f}",
                    f"{r['full_gc_us']:.1f}",
                    r["full_gcs"],
                    f"{r['longest_full_gc_ms']:.0f}",
                )
                for r in growth
            ],
        )
    )
    first, last = growth[0], growth[-1]
    total_mean = statistics.fmean(r["mean_us"] for r in growth)
    say(
        f"   last / first window (median of chunks): "
        f"{last['median_chunk_us'] / first['median_chunk_us']:.2f}x; mean over all "
        f"{last['events']:,} events, GC included: {total_mean:.1f} µs/event"
    )
    results["growth"] = growth

    say(
        f"\n6. the GC trap: append to a vector and keep every version; µs/step per "
        f"{cfg.trap_window:,} steps, GC on (fresh process)"
    )
    say(
        table(
            ["vector", *(f"@{(i + 1) * cfg.trap_window:,}" for i in range(len(trap["C pvector"])))],
            [(name, *(f"{v:.1f}" for v in values)) for name, values in trap.items()],
        )
    )
    results["gc_trap"] = trap

    say(
        f"\n7. the structures under a state, alone: {cfg.structure_ops:,} new versions of one "
        f"base per repeat, every version kept, GC on, {cfg.structure_repeats} repeats "
        f"(µs/op, in GC µs/op)"
    )
    names = list(structures[small_n])
    say(
        table(
            ["entries", *names],
            [
                (
                    f"{n:,}",
                    *(
                        f"{figs[name].median * 1e6:.2f} ({figs[name].gc_median * 1e6:.2f})"
                        for name in names
                    ),
                )
                for n, figs in structures.items()
            ],
        )
    )
    results["structures"] = {
        str(n): {name: f.as_dict() for name, f in figs.items()} for n, figs in structures.items()
    }

    checks = [
        (f"apply cost, {big_n:,} vs {small_n} messages <= 1.5x", ratio_apply, ratio_apply <= 1.5),
        ("memory per transition <= 2 KiB (2048 B)", per, per <= 2048),
        (
            f"timeline.at, {cfg.memory_events:,} vs {cfg.small_lookup_events} events <= 2x",
            ratio_lookup,
            ratio_lookup <= 2.0,
        ),
    ]
    say("\nrequirements")
    for name, value, ok in checks:
        say(f"  {'PASS' if ok else 'FAIL'}  {name}: {value:,.2f}")
    results["requirements"] = [{"name": n, "value": v, "met": ok} for n, v, ok in checks]
    results["elapsed_s"] = perf() - started
    results["env"]["load_at_end"] = load()
    say(f"\ntotal time {results['elapsed_s']:.0f} s; load average at the end: {load()}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))
    if args.check and not all(ok for _, _, ok in checks):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
