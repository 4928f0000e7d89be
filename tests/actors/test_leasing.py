"""``LeaseKeeper`` on a real ``PostgresStore``: claiming, stopping, renewing.

The keeper is driven directly (its thread is not started unless a test says
so), with a plain ``Router`` and the store behind a ``StoreThread``. Times
come from a clock the test sets.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from datetime import UTC, datetime
from typing import Any

import pytest

from actors import RuntimeStopped, Settings
from actors._leasing import LeaseKeeper
from actors._router import Router
from actors._storage import StoreThread
from runtime.store import PostgresStore

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


class GatedStore:
    """A ``StoreThread`` whose calls may be held at a gate (to line up a race)."""

    def __init__(self, inner: StoreThread) -> None:
        self.inner = inner
        self.before_call: Callable[[int], None] = lambda n: None
        self.calls = 0
        self._lock = threading.Lock()

    def call(self, fn: Callable[[Any], Any]) -> Future[Any]:
        with self._lock:
            self.calls += 1
            n = self.calls
        self.before_call(n)
        return self.inner.call(fn)


@pytest.fixture
def store(postgres_dsn: str, pg_schema: Callable[[], str]) -> Iterator[StoreThread]:
    thread = StoreThread(PostgresStore(postgres_dsn, schema=pg_schema()))
    thread.start()
    yield thread
    thread.stop()


def keeper_on(store: Any, **options: Any) -> LeaseKeeper:
    return LeaseKeeper(
        store=store,
        router=Router(),
        owner="w1",
        clock=lambda: NOW,
        turn_settings=Settings().turn_settings(
            tools=(), model_name=None, runner="w1", exclusive=False
        ),
        **options,
    )


class TestClaims:
    def test_a_claim_after_stop_is_refused_and_takes_no_lease(self, store: StoreThread) -> None:
        """A claim that comes after ``stop`` (a call racing the runtime's stop) is refused:
        no lease is taken that nobody would renew or give back."""
        keeper = keeper_on(store)
        keeper.stop()
        with pytest.raises(RuntimeStopped, match=r"^The runtime is stopping"):
            keeper.ensure("s")
        assert store.call(lambda s: s.lease("s")).result(60) is None
        assert store.call(lambda s: dict(s.held)).result(60) == {}

    def test_racing_claims_of_one_session_take_its_lease_once(self, store: StoreThread) -> None:
        """Two pick-ups of one session at once (the keeper's thread and a caller) take its
        lease once: the second finds it held, the token stays 1."""
        gated = GatedStore(store)
        keeper = keeper_on(gated)
        second_done = threading.Event()

        def hold_the_first(n: int) -> None:
            # The first claim's acquire (its 2nd store call) waits until the second claim
            # is done; with claims under a lock the second cannot finish first, and the
            # wait ends at its bound (the outcome is judged by the token, not by the wait).
            if n == 2:
                second_done.wait(2.0)

        gated.before_call = hold_the_first
        results: list[bool] = []
        first = threading.Thread(target=lambda: results.append(keeper.ensure("s")))
        first.start()
        deadline = time.monotonic() + 60  # a hang guard
        while gated.calls < 2:  # the first claim is at its acquire
            assert time.monotonic() < deadline, "the first claim did not reach its acquire"
            time.sleep(0.001)
        results.append(keeper.ensure("s"))
        second_done.set()
        first.join(60)
        assert results == [True, True]
        lease = store.call(lambda s: s.lease("s")).result(60)
        assert (lease.owner, lease.token) == ("w1", 1)
        assert keeper.taken == 1
