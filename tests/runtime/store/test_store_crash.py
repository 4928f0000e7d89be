"""Crash safety: a writer killed with SIGKILL at random moments never loses or tears an event.

A child process (``crash_writer.py``) appends events to one store file in a
loop and prints each committed seq. The test reads those lines (with a
timeout, never sleeping) and kills the child after a random number of them,
or while it is opening the store. After every kill the file must open; every
event the child reported is there; every event decodes and applies (none is
partial); each log is gapless and only grew; the snapshot path equals the
full replay. The next child then goes on writing the same file.
"""

from __future__ import annotations

import os
import pathlib
import queue
import random
import signal
import sqlite3
import subprocess
import sys
import threading
from datetime import timedelta
from typing import IO

import pytest

import runtime
from runtime import Event, Status
from runtime.store import SQLiteStore, recover_orphans

from .scenario import T0

WRITER = pathlib.Path(__file__).with_name("crash_writer.py")
ROOT = pathlib.Path(runtime.__file__).resolve().parent.parent
ROUNDS = int(os.environ.get("AMBER_CRASH_ROUNDS", "24"))
"""Kills per run (docs/reliability.md reports a longer run: AMBER_CRASH_ROUNDS=200)."""
TIMEOUT = 30.0  # seconds to wait for one line; only reached if something is broken


def pump(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    """Move the child's stdout lines into a queue (None at end of file)."""
    for line in stream:
        lines.put(line.rstrip("\n"))
    lines.put(None)


def next_line(lines: queue.Queue[str | None], child: subprocess.Popen[str]) -> str:
    try:
        line = lines.get(timeout=TIMEOUT)
    except queue.Empty:  # pragma: no cover - a hung child
        child.kill()
        pytest.fail(f"the writer printed nothing for {TIMEOUT} s")
    if line is None:  # pragma: no cover - the child died on its own
        child.wait()
        pytest.fail(f"the writer exited early: {child.stderr.read() if child.stderr else ''}")
    return line


def record(line: str, committed: dict[str, int]) -> None:
    session_id, seq = line.split()
    committed[session_id] = max(committed.get(session_id, 0), int(seq))


def check(path: pathlib.Path, committed: dict[str, int], seen: dict[str, list[Event]]) -> int:
    """Everything the test can ask of the file after a kill; returns the events stored."""
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    db.close()
    total = 0
    with SQLiteStore(path) as store:
        stored = {info.session_id: info.seq for info in store.list_sessions()}
        for session_id, seq in committed.items():
            assert stored.get(session_id, 0) >= seq, (
                f"{session_id}: committed {seq}, stored {stored}"
            )
        for session_id, last in stored.items():
            events = store.events(session_id)  # decodes every row; a gap is CorruptRow
            assert [e.seq for e in events] == list(range(1, last + 1))
            before = seen.get(session_id, [])
            assert events[: len(before)] == before, "a stored event changed or vanished"
            seen[session_id] = events
            timeline = store.load_timeline(session_id)  # every event applies: none is partial
            assert store.load_state(session_id) == timeline.head
            store.verify(session_id)  # the snapshot equals the replayed state at its seq
            total += last
        report = store.check()  # every row, the hash chains, summaries and snapshots
        assert report.ok, [str(p) for p in report.problems]
    with SQLiteStore(path) as cold:  # a cold cache: snapshot + tail only
        for session_id in stored:
            assert cold.load_state(session_id) == seen_head(cold, session_id)
    return total


def seen_head(store: SQLiteStore, session_id: str) -> object:
    return store.load_timeline(session_id).head


@pytest.mark.slow
def test_sigkill_at_random_moments(tmp_path: pathlib.Path) -> None:
    """Many rounds of write-and-SIGKILL leave a store that opens whole, with every committed event."""
    rng = random.Random(20260527)
    path = tmp_path / "crash.db"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    committed: dict[str, int] = {}
    seen: dict[str, list[Event]] = {}
    kills_while_opening = 0
    for _ in range(ROUNDS):
        child = subprocess.Popen(
            [sys.executable, str(WRITER), str(path), str(rng.randrange(2**32))],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
        )  # fmt: skip
        lines: queue.Queue[str | None] = queue.Queue()
        assert child.stdout is not None
        reader = threading.Thread(target=pump, args=(child.stdout, lines), daemon=True)
        reader.start()
        assert next_line(lines, child) == "opening"
        if rng.random() < 0.15:  # kill while it opens, migrates, recovers
            kills_while_opening += 1
        else:
            assert next_line(lines, child) == "ready"
            for _ in range(rng.choice([0, 1, 1, 2, 3, 5, 8, 13, 21])):
                record(next_line(lines, child), committed)
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=TIMEOUT) == -signal.SIGKILL
        reader.join(timeout=TIMEOUT)
        while (line := lines.get_nowait()) is not None:  # printed before the kill: committed
            if line not in {"opening", "ready"}:
                record(line, committed)
        child.stdout.close()
        if child.stderr is not None:
            child.stderr.close()
        check(path, committed, seen)
    assert kills_while_opening > 0
    assert sum(committed.values()) > 100, committed
    print(
        f"\n{ROUNDS} SIGKILLs ({kills_while_opening} while opening), "
        f"{sum(committed.values())} events acknowledged and all found, "
        f"{sum(len(v) for v in seen.values())} events stored, check() sound after every kill"
    )
    # After the last crash, recovery leaves no input processing.
    with SQLiteStore(path) as store:
        recover_orphans(store, now=T0 + timedelta(days=2))
        for info in store.list_sessions():
            assert info.counts.get(Status.PROCESSING, 0) == 0
            assert info.active_turn_id is None
