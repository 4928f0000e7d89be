"""The fuzz campaign: the fuzz suite's targets, a million times, with figures.

    python3 tests/fuzz/campaign.py --inputs 1000000 --jobs 2 --seed 1

Each job runs its share of every target's inputs from its own seeded
``random.Random`` (input ``i`` of job ``j`` comes from ``seed``, ``j`` and ``i``
alone, so any finding replays with ``--replay TARGET:JOB:INDEX``). It prints,
per target, the inputs run, how many were accepted and how many were refused
by which error, and the two numbers that must be 0: unhandled exceptions (not
an ``AmberError``) and silently wrong states (accepted, but what reads back
is not what it should be). Exit status 1 if either is not 0.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import multiprocessing
import pathlib
import random
import shutil
import sys
import time
from collections.abc import Callable
from typing import Any

import actors  # noqa: F401  (the installed packages first: tests/runtime is no package)
import runtime  # noqa: F401

sys.path.append(str(pathlib.Path(__file__).resolve().parent.parent))
sys.setrecursionlimit(3000)

from fuzz import inputs, targets  # noqa: E402

# Shares of the inputs: cheap targets get most of them, stores and command lines fewer.
WEIGHTS: dict[str, float] = {
    "json_bytes": 0.41,
    "python_data": 0.26,
    "user_input": 0.20,
    "append_memory": 0.08,
    "append_sqlite": 0.01,
    "damaged_store": 0.02,
    "command_line": 0.02,
}


class _Context:
    """What a job builds once: the corpus, a sound store, a CLI store, a runner."""

    def __init__(self) -> None:
        from click.testing import CliRunner

        self.corpus = inputs.corpus()
        self.folder = targets.temp_folder()
        self.store = targets.StoreFixture(
            self.folder,
            {"s": inputs.session_log("s", 45), "x": inputs.session_log("x", 12)},
            snapshot_every=20,
        )
        self.cli_db = self.store.copy()
        self.cli_runs = 0
        self.runner = CliRunner()
        self.bases = [inputs.scenario.conversation("s", n) for n in range(1, 26)]

    def run(self, target: str, rng: random.Random) -> str:
        if target == "json_bytes":
            kind, raw = inputs.json_bytes(rng, self.corpus)
            return targets.decode_bytes(raw, kind)
        if target == "python_data":
            kind, data = inputs.python_data(rng, self.corpus)
            return targets.decode_data(data, kind)
        if target == "user_input":
            fields, session_id = inputs.input_fields(rng)
            return targets.make_input(fields, session_id)
        if target == "append_memory":
            base = rng.choice(self.bases)
            return targets.append_events(
                base, inputs.events_after(rng, base), targets.memory_store()
            )
        if target == "append_sqlite":
            from runtime.store import SQLiteStore

            base = rng.choice(self.bases)
            path = self.folder / "append.db"
            for suffix in ("", "-wal", "-shm"):
                pathlib.Path(f"{path}{suffix}").unlink(missing_ok=True)
            with SQLiteStore(path, snapshot_every=rng.randint(1, 8)) as store:
                return targets.append_events(base, inputs.events_after(rng, base), store)
        if target == "damaged_store":
            return targets.damaged_store(self.store, inputs.damage(rng))
        if target == "command_line":
            self.cli_runs += 1
            if self.cli_runs % 200 == 0:  # commands like fork add sessions: start afresh
                self.cli_db = self.store.copy()
            return targets.run_cli(self.runner, inputs.cli_args(rng, str(self.cli_db)))
        raise ValueError(f"unknown target {target!r}")

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def _rng(seed: int, job: int, index: int) -> random.Random:
    return random.Random(f"{seed}:{job}:{index}")


def _job(args: tuple[int, int, dict[str, int]]) -> dict[str, Any]:
    seed, job, counts = args
    context = _Context()
    results: dict[str, Any] = {}
    try:
        for target, count in counts.items():
            outcomes: collections.Counter[str] = collections.Counter()
            findings: list[dict[str, Any]] = []
            started = time.perf_counter()
            for index in range(count):
                try:
                    outcome = context.run(target, _rng(seed, job, index))
                except targets.Unhandled as exc:
                    outcome = "UNHANDLED"
                    findings.append({"kind": "unhandled", "replay": f"{target}:{job}:{index}",
                                     "detail": str(exc)[:500]})  # fmt: skip
                except targets.WrongState as exc:
                    outcome = "WRONG_STATE"
                    findings.append({"kind": "wrong state", "replay": f"{target}:{job}:{index}",
                                     "detail": str(exc)[:500]})  # fmt: skip
                outcomes[outcome] += 1
            results[target] = {
                "inputs": count,
                "seconds": time.perf_counter() - started,
                "outcomes": dict(outcomes),
                "findings": findings[:20],
                "unhandled": outcomes["UNHANDLED"],
                "wrong_states": outcomes["WRONG_STATE"],
            }
    finally:
        context.close()
    return results


def _merge(parts: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for part in parts:
        for target, result in part.items():
            into = merged.setdefault(
                target,
                {"inputs": 0, "seconds": 0.0, "outcomes": collections.Counter(), "findings": [],
                 "unhandled": 0, "wrong_states": 0},
            )  # fmt: skip
            into["inputs"] += result["inputs"]
            into["seconds"] += result["seconds"]
            into["outcomes"].update(result["outcomes"])
            into["findings"] += result["findings"]
            into["unhandled"] += result["unhandled"]
            into["wrong_states"] += result["wrong_states"]
    return merged


def _summary(outcomes: dict[str, int]) -> str:
    accepted = outcomes.get("accepted", 0)
    refused = {
        k: v for k, v in outcomes.items() if k not in ("accepted", "UNHANDLED", "WRONG_STATE")
    }
    top = ", ".join(f"{k} {v}" for k, v in sorted(refused.items(), key=lambda kv: -kv[1])[:4])
    return f"accepted {accepted}; refused/outcomes: {top}"


def main(argv: list[str] | None = None) -> int:
    """Run the campaign; print and optionally save the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=10_000, help="total inputs (all targets)")
    parser.add_argument("--jobs", type=int, default=2, help="processes")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", action="append", choices=sorted(WEIGHTS), help="only these")
    parser.add_argument("--out", type=pathlib.Path, help="write the figures as JSON here")
    parser.add_argument("--replay", help="TARGET:JOB:INDEX: run one input and show what happens")
    options = parser.parse_args(argv)
    if options.replay:
        target, job, index = options.replay.split(":")
        context = _Context()
        try:
            print(context.run(target, _rng(options.seed, int(job), int(index))))
        finally:
            context.close()
        return 0
    weights = {k: v for k, v in WEIGHTS.items() if not options.only or k in options.only}
    total_weight = sum(weights.values())
    per_job = [
        {t: round(options.inputs * w / total_weight / options.jobs) for t, w in weights.items()}
        for _ in range(options.jobs)
    ]
    started = time.perf_counter()
    work = [(options.seed, job, counts) for job, counts in enumerate(per_job)]
    if options.jobs == 1:
        parts = [_job(work[0])]
    else:
        # A job that dies (a crash in C code) breaks the pool loudly instead of hanging it.
        context = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
        with concurrent.futures.ProcessPoolExecutor(options.jobs, mp_context=context) as pool:
            parts = list(pool.map(_job, work))
    merged = _merge(parts)
    elapsed = time.perf_counter() - started
    total = sum(r["inputs"] for r in merged.values())
    unhandled = sum(r["unhandled"] for r in merged.values())
    wrong = sum(r["wrong_states"] for r in merged.values())
    print(f"amber fuzz campaign: seed {options.seed}, {options.jobs} job(s), {elapsed:.0f} s wall")
    print(f"{'target':15} {'inputs':>9} {'unhandled':>9} {'wrong':>6} {'s (cpu)':>8}  outcomes")
    for target, result in merged.items():
        print(
            f"{target:15} {result['inputs']:9d} {result['unhandled']:9d} "
            f"{result['wrong_states']:6d} {result['seconds']:8.0f}  {_summary(result['outcomes'])}"
        )
    print(f"{'total':15} {total:9d} {unhandled:9d} {wrong:6d}")
    for result in merged.values():
        for finding in result["findings"][:5]:
            print(f"  {finding['kind']} [{finding['replay']}]: {finding['detail']}")
    if options.out:
        options.out.write_text(
            json.dumps(
                {"seed": options.seed, "jobs": options.jobs, "seconds": elapsed, "inputs": total,
                 "unhandled": unhandled, "wrong_states": wrong,
                 "targets": {k: {**v, "outcomes": dict(v["outcomes"])} for k, v in merged.items()}},
                indent=2,
            )
        )  # fmt: skip
    return 1 if unhandled or wrong else 0


def run(function: Callable[[], int]) -> None:
    """Exit with ``function()``'s status."""
    raise SystemExit(function())


if __name__ == "__main__":
    run(main)
