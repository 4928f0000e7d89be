"""Deterministic simulation at volume, and how fast planted bugs are caught (issue 12).

    python benchmarks/bench_sim.py             # 10,000 seeded sessions on every core, the bugs
    python benchmarks/bench_sim.py --quick     # 300 sessions and two bugs: a CI smoke run
    python benchmarks/bench_sim.py --check     # exit 1 unless the issue's limits hold
    python benchmarks/bench_sim.py --seed 4242 # replay one seed and print its steps
    python benchmarks/bench_sim.py --json out.json

Volume: ``runtime.testing.simulate(seed)`` for seeds 0 … N-1, one session
each, up to 20 steps (sends with drawn turn plans, posts, interrupts,
invalid input, completions in drawn orders, crashes, clean restarts, settle)
on ``fake_tools(hang=True)`` and a live and a silent channel; every step is
checked (DESIGN §11), and liveness at the end. The seeds are split over one
process per core. Limit: 10,000 sessions in at most 120 s, 0 violations.

Bugs: each planted bug of the mutation tests (``tests/testing/buggy.py``)
runs in ``actors.testing.simulation_machine`` under Hypothesis until it is
caught and shrunk. Limit: every bug caught, each with at most 8 steps.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "testing"))


def _chunk(seeds: range) -> dict[str, Any]:
    from runtime.testing import InvariantViolation, simulate

    failures: list[dict[str, Any]] = []
    inputs = events = 0
    started = time.perf_counter()
    for seed in seeds:
        try:
            run = simulate(seed, failures_dir=os.environ.get("AMBER_FAILURES_DIR"))
        except InvariantViolation as exc:
            failures.append({"seed": seed, "error": str(exc)[:300]})
            continue
        inputs += run.inputs
        events += run.events
    return {
        "runs": len(seeds),
        "failures": failures,
        "inputs": inputs,
        "events": events,
        "seconds": time.perf_counter() - started,
    }


def volume(sessions: int, processes: int) -> dict[str, Any]:
    bounds = [sessions * i // processes for i in range(processes + 1)]
    chunks = [range(bounds[i], bounds[i + 1]) for i in range(processes)]
    started = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        parts = pool.map(_chunk, chunks)
    elapsed = time.perf_counter() - started
    failures = [f for part in parts for f in part["failures"]]
    inputs = sum(p["inputs"] for p in parts)
    return {
        "sessions": sessions,
        "processes": processes,
        "seconds": round(elapsed, 1),
        "ms_per_session_per_core": round(1000 * sum(p["seconds"] for p in parts) / sessions, 2),
        "machine_inputs": inputs,
        "inputs_per_second": round(inputs / elapsed),
        "events": sum(p["events"] for p in parts),
        "violations": len(failures),
        "first_failures": failures[:3],
    }


def _bugs(quick: bool) -> list[tuple[str, dict[str, Any]]]:
    from buggy import (
        DeliversInputs,
        DeliversTwice,
        EditsMessages,
        NeverDelivers,
        hangs,
        raising_tool,
    )

    from actors import FakePlatform

    bugs: list[tuple[str, dict[str, Any]]] = [
        ("tool that never returns", {"tools": [hangs]}),
        ("adapter that delivers twice",
         {"adapters": lambda: [DeliversTwice(client=FakePlatform("discord"))]}),
    ]  # fmt: skip
    if not quick:
        bugs += [
            ("tool whose invoke raises", {"tools": [raising_tool()]}),
            ("adapter that marks inputs delivered",
             {"adapters": lambda: [DeliversInputs(client=FakePlatform("discord"))]}),
            ("adapter that never delivers",
             {"adapters": lambda: [NeverDelivers(platform="discord")]}),
            ("adapter that edits messages in place",
             {"adapters": lambda: [EditsMessages(client=FakePlatform("discord"))]}),
        ]  # fmt: skip
    return bugs


def caught(quick: bool) -> list[dict[str, Any]]:
    from hypothesis import HealthCheck, Phase, settings
    from hypothesis.stateful import run_state_machine_as_test

    from actors.testing import simulation_machine
    from runtime.testing import InvariantViolation

    out = []
    for name, options in _bugs(quick):
        machine = simulation_machine(name="Buggy", failures_dir=tempfile.mkdtemp(), **options)
        started = time.perf_counter()
        try:
            run_state_machine_as_test(
                machine,
                settings=settings(
                    max_examples=200,
                    stateful_step_count=10,
                    deadline=None,
                    database=None,
                    suppress_health_check=list(HealthCheck),
                    report_multiple_bugs=False,
                    phases=[Phase.generate, Phase.shrink],
                    derandomize=True,
                ),
            )
        except InvariantViolation as exc:
            notes = "\n".join(getattr(exc, "__notes__", []))
            steps = [
                line
                for line in notes.splitlines()
                if line.startswith("state.") and "invariants" not in line
            ]
            out.append({"bug": name, "caught": True, "steps": len(steps),
                        "seconds": round(time.perf_counter() - started, 1),
                        "violation": str(exc)[:120]})  # fmt: skip
        else:
            out.append({"bug": name, "caught": False, "steps": None,
                        "seconds": round(time.perf_counter() - started, 1)})  # fmt: skip
    return out


def replay(seed: int) -> int:
    from runtime.testing import InvariantViolation, simulate

    try:
        run = simulate(seed)
    except InvariantViolation as exc:
        print(exc)
        for note in getattr(exc, "__notes__", []):
            print(note)
        return 1
    print(f"seed {seed}: {run.inputs} machine inputs, {run.events} events, "
          f"{run.seconds:.1f} simulated seconds, no violation; its steps:")  # fmt: skip
    for line in run.steps:
        print(f"    {line}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a CI smoke run")
    parser.add_argument("--check", action="store_true", help="exit 1 unless the limits hold")
    parser.add_argument("--sessions", type=int, default=None, help="seeded sessions to run")
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=None, help="replay one seed")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args()
    if args.seed is not None:
        return replay(args.seed)
    sessions = args.sessions or (300 if args.quick else 10_000)
    result: dict[str, Any] = {"cores": os.cpu_count(), "python": sys.version.split()[0]}
    result["volume"] = volume(sessions, max(1, args.processes))
    v = result["volume"]
    print(f"{v['sessions']} simulated sessions on {v['processes']} processes: "
          f"{v['seconds']} s "
          f"({v['ms_per_session_per_core']} ms per session per core, "
          f"{v['inputs_per_second']:,} machine inputs/s), "
          f"{v['violations']} violations")  # fmt: skip
    for failure in v["first_failures"]:
        print(f"  seed {failure['seed']}: {failure['error']}")
    result["bugs"] = caught(args.quick)
    for bug in result["bugs"]:
        state = f"caught in {bug['steps']} steps" if bug["caught"] else "NOT CAUGHT"
        print(f"  {bug['bug']}: {state} ({bug['seconds']} s)")
    seconds = [b["seconds"] for b in result["bugs"]]
    result["bug_seconds_median"] = statistics.median(seconds) if seconds else None
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    if args.check:
        problems = []
        if not args.quick and (v["sessions"] < 10_000 or v["seconds"] > 120):
            problems.append(
                f"{v['sessions']} sessions took {v['seconds']} s (limit: 10,000 in 120 s)"
            )
        if v["violations"]:
            problems.append(f"{v['violations']} violations")
        for bug in result["bugs"]:
            if not bug["caught"] or bug["steps"] > 8:
                problems.append(f"{bug['bug']}: {bug}")
        for problem in problems:
            print(f"CHECK FAILED: {problem}")
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
