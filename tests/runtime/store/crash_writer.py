"""The child of the crash test: appends scripted events to a store until it is killed.

Usage: ``python crash_writer.py PATH SEED``

It prints ``opening`` before it opens the store, ``ready`` once it has opened
it (and recovered orphaned turns, in some runs), then for every batch, once
``append`` has returned, one ``SESSION SEQ`` line per session of the batch,
flushed at once: a line on stdout means the events up to that seq are
committed. Batches mix sessions and sizes, and snapshots come often, so a
kill lands in every part of a write.
"""

from __future__ import annotations

import random
import sys
from datetime import timedelta

from scenario import T0, continue_session

from runtime import SessionState
from runtime.store import SQLiteStore, recover_orphans

SESSIONS = ("a", "b", "c")


def main() -> None:
    path, seed = sys.argv[1], int(sys.argv[2])
    rng = random.Random(seed)
    print("opening", flush=True)
    store = SQLiteStore(path, snapshot_every=7, chunk_size=4)
    if rng.random() < 0.3:
        recover_orphans(store, now=T0 + timedelta(days=1))
    heads = {
        sid: store.load_state(sid) if sid in store else SessionState.empty(sid) for sid in SESSIONS
    }
    print("ready", flush=True)
    while True:
        batch = []
        touched = rng.sample(SESSIONS, rng.randint(1, len(SESSIONS)))
        for sid in touched:
            events, heads[sid] = continue_session(heads[sid], rng.choice([1, 1, 2, 3, 8, 25]))
            batch += events
        store.append(batch)
        sys.stdout.write("".join(f"{sid} {heads[sid].seq}\n" for sid in touched))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
