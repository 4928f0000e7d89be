"""How fast the LifecycleMachine runs against the in-memory runtime (the kit's issue: ≥ 200 steps/s;
a 100-example run under a minute).

    python benchmarks/bench_kit.py            # 100 examples x 50 steps (Hypothesis' defaults)
    python benchmarks/bench_kit.py --quick    # 20 examples, for CI smoke runs
    python benchmarks/bench_kit.py --store sqlite --examples 30

A "step" is one rule the machine runs (send, wait, restart …), with the
invariant checks after it; the figure includes starting and stopping a
runtime per example, as a real run pays it.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis.stateful import invariant, run_state_machine_as_test

from actors import tool
from actors.testing import lifecycle_machine


@tool
def word_count(text: str, unique: bool = False) -> int:
    """Count the words in a text.

    Args:
        text: The text.
        unique: Count each distinct word once.
    """
    words = text.split()
    return len(set(words)) if unique else len(words)


@tool(timeout=2)
async def lookup(key: str) -> str:
    """Look a key up (async)."""
    return f"{key} = 42"


def run(examples: int, steps: int, store: str) -> dict[str, Any]:
    counts = {"checks": 0, "examples": 0}
    base = lifecycle_machine(tools=[word_count, lookup], store=store, name="BenchMachine")

    class Counted(base):  # type: ignore[valid-type, misc]
        def __init__(self) -> None:
            super().__init__()
            counts["examples"] += 1

        @invariant()
        def amber_invariants(self) -> None:
            counts["checks"] += 1
            super().amber_invariants()

    started = time.perf_counter()
    run_state_machine_as_test(
        Counted,
        settings=settings(
            max_examples=examples,
            stateful_step_count=steps,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
    elapsed = time.perf_counter() - started
    # The invariant runs once before the first step and once after each step.
    approx_steps = counts["checks"] - counts["examples"]
    return {
        "store": store,
        "examples": counts["examples"],
        "steps": approx_steps,
        "seconds": round(elapsed, 2),
        "steps_per_second": round(approx_steps / elapsed, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 examples")
    parser.add_argument("--examples", type=int, default=None)
    parser.add_argument("--steps", type=int, default=50, help="stateful_step_count")
    parser.add_argument("--store", choices=["memory", "sqlite"], default="memory")
    parser.add_argument("--json", help="write the result to this file")
    args = parser.parse_args()
    examples = args.examples or (20 if args.quick else 100)
    result = run(examples, args.steps, args.store)
    print(
        f"{result['examples']} examples, ~{result['steps']} steps in {result['seconds']} s: "
        f"{result['steps_per_second']} steps/s ({args.store} store)"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
