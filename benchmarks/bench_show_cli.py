"""``amber show S --at SEQ`` as a user runs it: wall time above bare interpreter start-up.

Run from the repository root::

    python benchmarks/bench_show_cli.py                      # /tmp/amber-long.db, 7 rounds
    python benchmarks/bench_show_cli.py --quick              # 3 rounds, seqs 10, 50000, head
    python benchmarks/bench_show_cli.py --check              # exit 1 if a seq is over 150 ms
    python benchmarks/bench_show_cli.py --baseline /work/main --at 50000 --at -1
    python benchmarks/bench_show_cli.py --baseline /work/main --cpu   # and CPU time
    python benchmarks/bench_show_cli.py --baseline /work/main --cpu --sessions --at 10

The store is the 100,000-event session of ``bench_long.py`` (written by its
``bench_appends`` if ``--db`` does not exist yet, ~1-2 min; the same file as
``bench_show_phases.py``). Each round runs ``python -c pass`` and then the
command at each seq, in fresh processes, stdout read through a pipe,
interleaved (so a busy machine slows all alike); the figure is the median
of the rounds minus the median of ``python -c pass``. Issue 16 asks for at
most 150 ms above start-up at any seq (``--check``). ``--json`` times
``show --json`` too (reported only: it prints tens of MB late in the
session). ``--baseline DIR`` times another checkout beside this one. ``--cpu``
also prints the CPU time each command used (user + system, medians, above
``python -c pass``'s): on a busy machine it moves less than the wall time.
``--sessions`` times ``amber sessions`` and ``amber sessions --json`` as well
(reported only; ``bench_long.py`` checks it).

Bytecode is cached as an installed Amber has it (under a
``PYTHONPYCACHEPREFIX`` per checkout, written by a warm-up run, so that
neither checkout's tree is written to and ``PYTHONDONTWRITEBYTECODE`` does
not make every start compile Amber again).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SESSION = "long"
LIMIT_MS = 150.0
# What the installed `amber` runs: the console script's function (`console_main`; a checkout
# from before it had `main`, called as `sys.exit(main())`).
_MAIN = "import sys, actors._cli as cli; sys.exit(getattr(cli, 'console_main', cli.main)())"


def _env(checkout: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(checkout)
    digest = hashlib.sha1(str(checkout).encode()).hexdigest()[:10]
    cache = Path(tempfile.gettempdir()) / f"amber-pycache-{digest}"
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


CPU: dict[tuple[str, ...], list[float]] = {}
"""CPU time (user + system) of each command run by ``_wall``, by its arguments."""


def _cpu_used() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _wall(args: list[str], env: dict[str, str]) -> float:
    cpu = _cpu_used()
    began = time.perf_counter()
    # From a neutral folder: `python -c` puts the working directory first on sys.path, so run
    # from a checkout it would import that checkout whatever PYTHONPATH says.
    with subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tempfile.gettempdir()
    ) as proc:
        _, err = proc.communicate()
    elapsed = time.perf_counter() - began
    CPU.setdefault((*args, env["PYTHONPATH"]), []).append(_cpu_used() - cpu)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{err.decode()[-2000:]}")
    return elapsed


def _head(db: Path) -> int:
    sys.path.insert(0, str(ROOT))
    from runtime.store import SQLiteStore

    with SQLiteStore(db) as store:
        return store.session(SESSION).seq


def _ensure(db: Path) -> None:
    if db.exists():
        return
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_long import bench_appends

    print(f"Writing the 100,000-event session to {db} …")
    bench_appends(db, 100_000, 100, 10_000)
    gc.unfreeze()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=Path("/tmp/amber-long.db"))
    parser.add_argument("--at", type=int, action="append", help="seqs (-1: the head)")
    parser.add_argument("--repeats", type=int, help="rounds (default 7; --quick 3)")
    parser.add_argument("--quick", action="store_true", help="3 rounds of 3 seqs")
    parser.add_argument("--check", action="store_true", help=f"exit 1 if over {LIMIT_MS:.0f} ms")
    parser.add_argument("--json", action="store_true", help="time show --json as well")
    parser.add_argument("--baseline", type=Path, help="another checkout to time beside this one")
    parser.add_argument(
        "--cpu", action="store_true", help="also the CPU time (steadier on a busy machine)"
    )
    parser.add_argument(
        "--sessions", action="store_true", help="time amber sessions (and --json) as well"
    )
    args = parser.parse_args()
    args.db = args.db.resolve()
    _ensure(args.db)
    head = _head(args.db)
    default = [10, head // 2, -1] if args.quick else [10, 49_100, head // 2, 75_000, -1]
    seqs = [head + 1 + s if s < 0 else s for s in (args.at or default)]
    repeats = args.repeats or (3 if args.quick else 7)
    baseline = {"baseline": args.baseline.resolve()} if args.baseline else {}
    checkouts = {"branch": ROOT, **baseline}
    envs = {name: _env(path) for name, path in checkouts.items()}
    cases: dict[tuple[str, str], list[str]] = {}
    for name in checkouts:
        for seq in seqs:
            for output in ("text", "json") if args.json else ("text",):
                extra = ["--json"] if output == "json" else []
                command = [sys.executable, "-c", _MAIN, "show", SESSION, "--at", str(seq)]
                cases[(name, f"{output} --at {seq}")] = [*command, *extra, "--db", str(args.db)]
        if args.sessions:
            for extra in ([], ["--json"]):
                command = [sys.executable, "-c", _MAIN, "sessions", *extra, "--db", str(args.db)]
                cases[(name, " ".join(["sessions", *extra]))] = command
    python = [sys.executable, "-c", "pass"]
    for (name, _), command in cases.items():
        _wall(command, envs[name])  # warm-up: writes the bytecode caches
    times: dict[tuple[str, str], list[float]] = {key: [] for key in cases}
    bare: list[float] = []
    for _ in range(repeats):
        bare.append(_wall(python, envs["branch"]))
        for key, command in cases.items():
            times[key].append(_wall(command, envs[key[0]]))
    start = statistics.median(bare) * 1e3
    print(
        f"amber show {SESSION} --at SEQ{' and amber sessions' * args.sessions} on {args.db} "
        f"(head {head:,}): medians of {repeats} "
        f"interleaved rounds, ms above `python -c pass` ({start:.0f} ms)"
    )
    over = []
    labels = list(dict.fromkeys(label for _, label in cases))
    print(f"  {'command':<22}" + "".join(f"{name:>12}" for name in checkouts))
    for label in labels:
        row = []
        for name in checkouts:
            above = statistics.median(times[(name, label)]) * 1e3 - start
            row.append(f"{above:+12.0f}")
            if name == "branch" and label.startswith("text") and above > LIMIT_MS:
                over.append(label)
        print(f"  {label:<22}" + "".join(row))
    if args.cpu:
        bare_cpu = statistics.median(CPU[(*python, envs["branch"]["PYTHONPATH"])]) * 1e3
        print(f"CPU time (user + system), ms above `python -c pass`'s ({bare_cpu:.0f} ms)")
        for label in labels:
            row = []
            for name in checkouts:
                command = (*cases[(name, label)], envs[name]["PYTHONPATH"])
                used = statistics.median(CPU[command][1:]) * 1e3  # not the warm-up run
                row.append(f"{used - bare_cpu:+12.0f}")
            print(f"  {label:<22}" + "".join(row))
    if over:
        print(f"over {LIMIT_MS:.0f} ms above start-up: {', '.join(over)}")
    return 1 if args.check and over else 0


if __name__ == "__main__":
    sys.exit(main())
