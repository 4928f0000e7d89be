"""PostgreSQL benchmark: durable appends, workers answering sessions, takeover after SIGKILL.

Run from the repository root, with a PostgreSQL server (``$AMBER_TEST_POSTGRES``,
default ``postgresql://postgres@127.0.0.1:5432/test``; each run uses fresh
schemas and drops them)::

    python benchmarks/bench_postgres.py            # full run (~2 min on 2 cores)
    python benchmarks/bench_postgres.py --quick    # smoke run (~30 s)
    python benchmarks/bench_postgres.py --check    # exit 1 if a requirement is not met
    python benchmarks/bench_postgres.py --json out.json

Every figure is measured with the cyclic GC on; figures of one table come from
the same run. What it measures (findings in ``docs/performance-postgres.md``):

1. durable append throughput (events/s) of ``PostgresStore`` beside
   ``SQLiteStore``: one event per ``append`` vs batches of 10 and 100 (group
   commit), each event checked by the reducer before it is stored;
2. ``amber worker`` processes (1, 2, 3) answering 120 sessions (a
   ``ScriptedModel`` that answers at once): turns/s and durable events/s from
   the first input stored to the last answer;
3. takeover after SIGKILL: a worker with 20 turns in flight is killed; the
   time until another worker has answered all of them (lease ttl 2 s, poll
   0.5 s), median and worst over the trials.

This module is also the workers' app (``--app bench_postgres:make_app``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
try:
    import runtime  # noqa: F401
except ImportError:  # a plain checkout, not installed: use the repository root
    sys.path.insert(0, str(HERE.parent))

DSN = os.environ.get("AMBER_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
TTL, POLL = 2.0, 0.5
GUARD = 300.0  # seconds any wait may take (a hang guard)


def make_app() -> dict[str, Any]:
    """The workers' app: a model that answers every call at once (``hang``: never)."""
    from actors import ScriptedModel, Settings
    from runtime import hang, reply

    if os.environ.get("BENCH_MODEL") == "hang":
        model = ScriptedModel([], fallback=hang(), keep_requests=0)
    else:
        model = ScriptedModel([], fallback=reply("done"), keep_requests=0)
    return {"model": model, "settings": Settings(passivate_after=None)}


# -- helpers --------------------------------------------------------------------------------


@contextlib.contextmanager
def schemas() -> Iterator[Callable[[], str]]:
    """Fresh schema names; all are dropped at the end."""
    import psycopg
    from psycopg import sql

    made: list[str] = []

    def make() -> str:
        made.append(f"amber_bench_{uuid.uuid4().hex[:10]}")
        return made[-1]

    try:
        yield make
    finally:
        with psycopg.connect(DSN, autocommit=True) as conn:
            for name in made:
                drop = sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name))
                conn.execute(drop)


class Worker:
    """An ``amber worker`` process on ``schema``."""

    def __init__(self, schema: str, name: str, model: str = "fast") -> None:
        env = {**os.environ, "AMBER_PG_SCHEMA": schema, "BENCH_MODEL": model}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from actors._cli import main; raise SystemExit(main())",
             "worker", "--db", DSN, "--app", "bench_postgres:make_app", "--name", name,
             "--lease-ttl", str(TTL), "--poll", str(POLL)],
            cwd=HERE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        if not self.ready.wait(GUARD):
            raise RuntimeError(f"worker {name} did not start")

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if " running on " in line:
                self.ready.set()

    def stop(self, signum: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
        self.proc.wait(GUARD)


def send_all(store: Any, session_ids: list[str]) -> None:
    """Store one question per session, as a process that runs none of them."""
    from actors import Settings
    from actors._drafts import user_draft
    from actors._ids import utc_now
    from actors._leasing import store_input

    settings = Settings()
    turn = settings.turn_settings(tools=(), model_name=None, runner="bench", exclusive=False)
    for sid in session_ids:
        draft = user_draft("send", sid, "question", {"sender": "b"}, utc_now, settings.input_limits)
        store_input(store, sid, draft, settings=turn, at=utc_now())


def wait_answered(store: Any, session_ids: list[str]) -> None:
    """Until every session has its answer (no active turn, nothing pending)."""
    deadline = time.monotonic() + GUARD
    wanted = set(session_ids)
    while True:
        done = {
            info.session_id
            for info in store.list_sessions()
            if info.session_id in wanted and info.active_turn_id is None
            and not info.counts.get(_pending_agent()) and info.seq > 1
        }  # fmt: skip
        if done == wanted:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(wanted - done)} sessions unanswered after {GUARD} s")
        time.sleep(0.02)


def _pending_agent() -> Any:
    from runtime import Status

    return Status.PENDING_AGENT


# -- 1. durable appends ----------------------------------------------------------------------


def bench_appends(batch: int, total: int, make_schema: Callable[[], str]) -> dict[str, float]:
    """events/s of PostgresStore and SQLiteStore, ``batch`` events per append."""
    sys.path.insert(0, str(HERE.parent / "tests" / "runtime" / "store"))
    from scenario import continue_session  # the store tests' scripted session

    from runtime import SessionState
    from runtime.store import PostgresStore, SQLiteStore

    events, _ = continue_session(SessionState.empty("s"), total)
    result: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as folder:
        stores = {
            "postgres": lambda: PostgresStore(DSN, schema=make_schema()),
            "sqlite": lambda: SQLiteStore(Path(folder) / f"b{batch}.db"),
        }
        for name, opener in stores.items():
            with opener() as store:
                started = time.perf_counter()
                for start in range(0, total, batch):
                    store.append(events[start : start + batch])
                result[name] = total / (time.perf_counter() - started)
    return result


# -- 2. workers -------------------------------------------------------------------------------


def bench_workers(count: int, sessions: int, make_schema: Callable[[], str]) -> dict[str, float]:
    """Turns/s and events/s of ``count`` workers answering ``sessions`` sessions."""
    from runtime.store import PostgresStore

    schema = make_schema()
    ids = [f"s{i:04d}" for i in range(sessions)]
    with PostgresStore(DSN, schema=schema) as store:
        workers = [Worker(schema, f"w{i}") for i in range(count)]
        try:
            started = time.perf_counter()
            send_all(store, ids)
            wait_answered(store, ids)
            took = time.perf_counter() - started
            events = sum(info.seq for info in store.list_sessions())
        finally:
            for worker in workers:
                worker.stop()
    return {"turns_per_s": sessions / took, "events_per_s": events / took, "seconds": took}


# -- 3. takeover ------------------------------------------------------------------------------


def bench_takeover(sessions: int, make_schema: Callable[[], str]) -> float:
    """Seconds from SIGKILL of a worker with ``sessions`` turns in flight to all answered."""
    from runtime.store import PostgresStore

    schema = make_schema()
    ids = [f"k{i:03d}" for i in range(sessions)]
    with PostgresStore(DSN, schema=schema) as store:
        doomed = Worker(schema, "doomed", "hang")
        taker: Worker | None = None
        try:
            send_all(store, ids)
            deadline = time.monotonic() + GUARD
            while sum(1 for i in store.list_sessions() if i.active_turn_id) < sessions:
                if time.monotonic() > deadline:
                    raise RuntimeError("turns did not start")
                time.sleep(0.02)
            taker = Worker(schema, "taker")
            doomed.stop(signal.SIGKILL)
            killed = time.perf_counter()
            wait_answered(store, ids)
            return time.perf_counter() - killed
        finally:
            doomed.stop(signal.SIGKILL)
            if taker is not None:
                taker.stop()


# -- main -------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller run, for CI")
    parser.add_argument("--check", action="store_true", help="exit 1 if a requirement fails")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    import psycopg

    try:
        psycopg.connect(DSN, connect_timeout=5).close()
    except psycopg.Error as exc:
        print(f"No PostgreSQL at {DSN!r} ({exc}); set AMBER_TEST_POSTGRES.", file=sys.stderr)
        return 1
    quick = args.quick
    figures: dict[str, Any] = {
        "cores": os.cpu_count(), "python": platform.python_version(),
        "command": " ".join(["python", "benchmarks/bench_postgres.py", *sys.argv[1:]]),
    }  # fmt: skip
    with schemas() as make_schema:
        print("1. durable appends (events/s, PostgreSQL vs SQLite in the same run)")
        appends = {}
        for batch in (1, 10, 100):
            total = (200 if quick else 1000) if batch == 1 else (1000 if quick else 5000)
            runs = [bench_appends(batch, total, make_schema) for _ in range(1 if quick else 3)]
            pg = statistics.median(r["postgres"] for r in runs)
            lite = statistics.median(r["sqlite"] for r in runs)
            appends[batch] = {"postgres": pg, "sqlite": lite}
            print(f"   {batch:>3} per append: postgres {pg:8,.0f}   sqlite {lite:8,.0f}   "
                  f"ratio {pg / lite:.2f}")  # fmt: skip
        figures["appends"] = appends
        print("2. workers answering sessions (one scripted turn each)")
        sessions = 40 if quick else 120
        workers = {}
        for count in (1,) if quick else (1, 2, 3):
            runs = [bench_workers(count, sessions, make_schema) for _ in range(1 if quick else 3)]
            turns = statistics.median(r["turns_per_s"] for r in runs)
            events = statistics.median(r["events_per_s"] for r in runs)
            workers[count] = {"turns_per_s": turns, "events_per_s": events}
            print(f"   {count} worker(s), {sessions} sessions: {turns:6.1f} turns/s, "
                  f"{events:7,.0f} events/s")  # fmt: skip
        figures["workers"] = workers
        print(f"3. takeover after SIGKILL (lease ttl {TTL:g} s, poll {POLL:g} s)")
        in_flight = 10 if quick else 20
        trials = [bench_takeover(in_flight, make_schema) for _ in range(1 if quick else 5)]
        figures["takeover"] = {"median": statistics.median(trials), "worst": max(trials)}
        print(f"   median {statistics.median(trials):.2f} s, worst {max(trials):.2f} s "
              f"over {len(trials)} trial(s)")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    if args.check:
        failures = []
        if appends[100]["postgres"] < 1000:
            failures.append(f"group commit {appends[100]['postgres']:.0f} events/s < 1000")
        if workers[1]["turns_per_s"] < 5:
            failures.append(f"one worker {workers[1]['turns_per_s']:.1f} turns/s < 5")
        if max(trials) > TTL + 10:
            failures.append(f"takeover worst {max(trials):.1f} s > ttl + 10 s")
        for failure in failures:
            print(f"FAIL: {failure}", file=sys.stderr)
        return 1 if failures else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
