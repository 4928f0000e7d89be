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
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from actors import RuntimeStopped, Settings
from actors._drafts import user_draft
from actors._leasing import LeaseKeeper, store_input
from actors._router import Router
from actors._storage import StoreThread
from runtime import StoreError
from runtime.store import PostgresStore
from runtime.store._pg_schema import name_key

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
TTL = timedelta(seconds=30)


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


class FlakyStore:
    """A ``StoreThread`` whose store's renewals fail with ``StoreError`` ``fail`` times (the
    database out of reach for a moment)."""

    def __init__(self, inner: StoreThread) -> None:
        self.inner = inner
        self.fail = 0

    def call(self, fn: Callable[[Any], Any]) -> Future[Any]:
        return self.inner.call(lambda s: fn(_Flaky(s, self)))


class _Flaky:
    def __init__(self, store: Any, flaky: FlakyStore) -> None:
        self._store = store
        self._flaky = flaky

    def renew_all(self, leases: Any, *, now: datetime, ttl: timedelta) -> Any:
        if not self._flaky.fail:
            return self._store.renew_all(leases, now=now, ttl=ttl)
        self._flaky.fail -= 1

        def unreachable(sessions: object) -> Any:
            raise StoreError("Cannot reach the database (a test's outage).")

        self._store._write = unreachable  # the store's own renewal meets the error
        try:
            return self._store.renew_all(leases, now=now, ttl=ttl)
        finally:
            del self._store._write

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


@pytest.fixture
def schema(pg_schema: Callable[[], str]) -> str:
    return pg_schema()


@pytest.fixture
def other(postgres_dsn: str, schema: str) -> Iterator[PostgresStore]:
    """Another worker's store on the same schema."""
    with PostgresStore(postgres_dsn, schema=schema) as store:
        yield store


@pytest.fixture
def store(postgres_dsn: str, schema: str) -> Iterator[StoreThread]:
    thread = StoreThread(PostgresStore(postgres_dsn, schema=schema))
    thread.start()
    yield thread
    thread.stop()


def keeper_on(store: Any, router: Any = None, **options: Any) -> LeaseKeeper:
    return LeaseKeeper(
        store=store,
        router=router or Router(),
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


class TestPickUpRacingClose:
    def test_a_pick_up_the_closing_router_refuses_gives_its_lease_back(
        self, store: StoreThread, other: PostgresStore
    ) -> None:
        """The keeper took a session's lease to pick it up, and the router, closing
        meanwhile, refuses to load it: the lease is given back at once (no lease held for a
        session that does not run here), and another worker takes the session."""
        waiting_input(other, "s")
        keeper = keeper_on(store, wake=True)  # its Router is closed: it loads nothing
        keeper._pick_up("s")
        assert keeper.taken == 1
        assert store.call(lambda s: dict(s.held)).result(60) == {}
        assert other.acquire("s", owner="w2", now=NOW, ttl=TTL) is not None


class TestLost:
    def test_a_lost_lease_is_not_claimed_as_held(
        self, store: StoreThread, other: PostgresStore
    ) -> None:
        """Once renewal finds a lease taken over, the session is not claimed on the strength
        of it: a claim finds another worker holds it. Until then the store keeps it (every
        write refused)."""
        keeper = keeper_on(store)
        assert keeper.ensure("s")
        taken = other.acquire("s", owner="w2", now=NOW + timedelta(hours=1), ttl=TTL)
        assert taken is not None
        keeper._renew()
        assert keeper.lost == 1
        assert "s" in store.call(lambda s: dict(s.held)).result(60)
        keeper._renew()  # found lost once: not counted (nor its session stopped) again
        assert keeper.lost == 1
        assert keeper.ensure("s") is False
        assert store.call(lambda s: dict(s.held)).result(60) == {}
        assert other.lease("s") == taken


class TestRenewalAlongsideRelease:
    """A renewal round reads the held leases and renews them in one store call: a lease
    given back just before it stays given back, and one lost is marked lost only if it
    is still the one held."""

    def renew_around(self, store: StoreThread, between: Callable[[], None]) -> LeaseKeeper:
        """A keeper holding 's' whose renewal round runs just after ``between``."""
        gated = GatedStore(store)
        keeper = keeper_on(gated)
        assert keeper.ensure("s")
        first = gated.calls + 1  # the renewal round
        gated.before_call = lambda n: between() if n == first else None
        keeper._renew()
        gated.before_call = lambda n: None
        return keeper

    def test_a_released_lease_does_not_come_back(
        self, store: StoreThread, other: PostgresStore
    ) -> None:
        """Given back just before the renewal, the lease is not renewed: the store does not
        hold it again, and another worker takes it at once."""

        def release() -> None:
            lease = store.call(lambda s: s.held["s"]).result(60)
            assert store.call(lambda s: s.release(lease, announce=False)).result(60)

        keeper = self.renew_around(store, release)
        assert store.call(lambda s: dict(s.held)).result(60) == {}
        assert keeper.lost == 0
        taken = other.acquire("s", owner="w2", now=NOW + timedelta(seconds=1), ttl=TTL)
        assert taken is not None

    def test_a_session_taken_again_after_a_stale_renewal_is_renewed(
        self, store: StoreThread, other: PostgresStore
    ) -> None:
        """Given back and taken by another worker just before the renewal, the session is
        not marked lost here (it is not held here); once this worker takes it again, its
        new lease is renewed."""

        def release_and_take() -> None:
            lease = store.call(lambda s: s.held["s"]).result(60)
            assert store.call(lambda s: s.release(lease, announce=False)).result(60)
            taken = other.acquire("s", owner="w2", now=NOW, ttl=TTL)
            assert taken is not None
            other.release(taken)

        keeper = self.renew_around(store, release_and_take)
        assert keeper.lost == 0
        assert keeper.ensure("s")
        now = NOW + timedelta(seconds=20)
        keeper._clock = lambda: now
        keeper._renew()
        lease = store.call(lambda s: s.lease("s")).result(60)
        assert (lease.owner, lease.token, lease.expires_at) == ("w1", 3, now + TTL)

    def test_a_lease_taken_again_before_the_lost_mark_is_not_marked(
        self, store: StoreThread, other: PostgresStore
    ) -> None:
        """The renewal meets LeaseLost (another worker took the session over); before it
        marks the session lost, this worker has taken the session again (the other gave it
        back). The fresh lease is not marked lost, nor the session dropped."""
        late = NOW + 2 * TTL

        def take_over() -> None:  # before the renewal: the other worker takes it (expired)
            assert other.acquire("s", owner="w2", now=late, ttl=TTL) is not None

        def taken_back() -> None:  # before the mark: given back there, taken again here
            other.release(other.held["s"])
            assert store.call(lambda s: s.acquire("s", owner="w1", now=late, ttl=TTL)).result(60)

        gated = GatedStore(store)
        keeper = keeper_on(gated)
        assert keeper.ensure("s")
        first = gated.calls + 1  # the renewal round; then the check before the mark
        steps = {first: take_over, first + 1: taken_back}
        gated.before_call = lambda n: steps.get(n, lambda: None)()
        keeper._renew()
        gated.before_call = lambda n: None
        assert "s" not in keeper._lost
        assert keeper.lost == 0
        held = store.call(lambda s: dict(s.held)).result(60)
        assert held["s"].token == 3

    def test_a_claim_clears_a_stale_lost_mark(self, store: StoreThread) -> None:
        """A session marked lost whose lease is no longer held here (given back since) is
        renewed again once a claim takes a fresh lease for it."""
        keeper = keeper_on(store)
        keeper._lost.add("s")  # as a renewal that met LeaseLost after the lease was given back
        assert keeper.ensure("s")
        now = NOW + timedelta(seconds=20)
        keeper._clock = lambda: now
        keeper._renew()
        lease = store.call(lambda s: s.lease("s")).result(60)
        assert (lease.token, lease.expires_at) == (1, now + TTL)


class SlowRouter:
    """A live-session table whose loads take ``ttl / 3`` (wall clock and monotonic)."""

    def __init__(self, live: list[str], advance: Callable[[], None]) -> None:
        self.live = set(live)
        self.advance = advance

    def live_sessions(self) -> list[str]:
        return sorted(self.live)

    def load(self, session_id: str) -> None:
        self.advance()
        self.live.add(session_id)

    def unless_live(self, session_id: str, fn: Callable[[], object]) -> None:
        if session_id not in self.live:
            fn()


def waiting_input(store: PostgresStore, session_id: str) -> None:
    settings = Settings()
    draft = user_draft(
        "send", session_id, "waiting", {"sender": "Chii"}, lambda: NOW, settings.input_limits
    )
    turn = settings.turn_settings(tools=(), model_name=None, runner="w0", exclusive=False)
    store_input(store, session_id, draft, settings=turn, at=NOW)


class TestRenewal:
    def test_a_round_is_one_store_call_with_the_keepers_time(self, store: StoreThread) -> None:
        """Renewing many leases takes one store call (one transaction), not one per lease,
        and every lease gets the same expiry, from the keeper's own clock: none drifts
        toward its expiry behind the others."""
        gated = GatedStore(store)
        keeper = keeper_on(gated)
        sessions = [f"s{n}" for n in range(5)]
        for session_id in sessions:
            assert keeper.ensure(session_id)
        now = NOW + timedelta(seconds=20)
        keeper._clock = lambda: now
        before = gated.calls
        keeper._renew()
        assert gated.calls - before == 1
        held = store.call(lambda s: dict(s.held)).result(60)
        expiries = {lease.session_id: lease.expires_at for lease in held.values()}
        assert expiries == dict.fromkeys(sessions, now + TTL)

    def test_leases_are_renewed_between_pick_ups(
        self, store: StoreThread, other: PostgresStore
    ) -> None:
        """Picking up many sessions, each slow to load, does not hold renewals back: the
        leases held are renewed between pick-ups, and none lapses meanwhile."""
        for n in range(6):
            waiting_input(other, f"w{n}")
        now, mono = [NOW], [1000.0]
        lapsed: list[str] = []

        def load_takes_a_third_of_the_ttl() -> None:
            now[0] += TTL / 3
            mono[0] += TTL.total_seconds() / 3
            held = other.lease("h")
            if held is None or held.expires_at <= now[0]:
                lapsed.append(f"at {now[0] - NOW}: {held}")

        keeper = keeper_on(
            store,
            router=SlowRouter(["h"], load_takes_a_third_of_the_ttl),
            wake=True,
            monotonic=lambda: mono[0],
        )
        keeper._clock = lambda: now[0]
        assert keeper.ensure("h")
        keeper.poll_now()
        assert keeper.taken == 7
        assert lapsed == []
        assert other.lease("h").expires_at > now[0]  # type: ignore[union-attr]

    def test_a_failed_renewal_keeps_the_lease_for_the_next(self, store: StoreThread) -> None:
        """A renewal that meets a database error, with time left before expiry, keeps the
        lease held (writes stay fenced) and the session running; the next renewal pushes
        its expiry on."""
        flaky = FlakyStore(store)
        now = [NOW]
        keeper = keeper_on(flaky, ttl=30.0)
        keeper._clock = lambda: now[0]
        dropped: list[str] = []
        keeper._router.drop = lambda session_id, **_: dropped.append(session_id)  # type: ignore[method-assign]
        assert keeper.ensure("s")
        flaky.fail = 1
        now[0] = NOW + timedelta(seconds=10)
        keeper._renew()
        held = store.call(lambda s: dict(s.held)).result(60)
        assert [(lease.token, lease.expires_at) for lease in held.values()] == [(1, NOW + TTL)]
        assert dropped == []
        now[0] = NOW + timedelta(seconds=20)
        keeper._renew()
        lease = store.call(lambda s: s.lease("s")).result(60)
        assert (lease.token, lease.expires_at) == (1, now[0] + TTL)
        assert store.call(lambda s: s.held["s"]).result(60) == lease
        assert dropped == []


class _Asked(Exception):
    """What a store call asked for (``_asks``)."""


class _Probe:
    def __getattr__(self, name: str) -> Any:
        raise _Asked(name)


def _asks(fn: Callable[[Any], Any]) -> str | None:
    """The first store attribute ``fn`` uses (it is not run against the store)."""
    try:
        fn(_Probe())
    except _Asked as asked:
        return str(asked)
    except Exception:
        return None
    return None


class ListenerGate:
    """A ``StoreThread`` whose calls for a new listener wait at a gate (on the caller's
    thread: the keeper's, reconnecting), and which tells when the listeners are woken (a
    stop began)."""

    def __init__(self, inner: StoreThread) -> None:
        self.inner = inner
        self.reconnecting, self.release, self.waking = (threading.Event() for _ in range(3))
        self.gated = False

    def call(self, fn: Callable[[Any], Any]) -> Future[Any]:
        asked = _asks(fn)
        if asked == "listener" and self.gated:
            self.reconnecting.set()
            assert self.release.wait(60)
        elif asked == "wake_listeners":
            self.waking.set()
        return self.inner.call(fn)


class TestStopRacingAReconnect:
    def test_the_listener_made_meanwhile_is_closed_and_the_name_let_go(
        self, store: StoreThread, postgres_dsn: str, schema: str
    ) -> None:
        """stop() while the keeper's thread reconnects its listening connection: the new
        connection is closed too, so the runner's name is free once stop returns. stop
        closed the listener it read before the thread ended, the old one: the new one stayed
        open, holding the name (a runtime of that name starting in this process was refused,
        or stopped itself on finding its name taken)."""
        gate = ListenerGate(store)
        keeper = keeper_on(gate)
        keeper.start()
        stopper = threading.Thread(target=keeper.stop)
        try:
            gate.gated = True
            with psycopg.connect(postgres_dsn, autocommit=True) as admin:
                pid = keeper._listener._conn.info.backend_pid
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
                assert gate.reconnecting.wait(60)
                stopper.start()
                assert gate.waking.wait(60)  # the stop read the listener, and joins the thread
                gate.release.set()
                stopper.join(60)
                assert not stopper.is_alive()
                key = name_key(schema, "w1")
                # The server lets a closed connection's locks go when its backend exits, a
                # moment after the close: wait for it (a connection left open holds it on).
                deadline = time.monotonic() + 60
                while admin.execute(
                    "SELECT pg_try_advisory_lock(%s::bigint)", (key,)
                ).fetchone() != (True,):
                    assert time.monotonic() < deadline, "the runner's name is still held"
                    time.sleep(0.01)
        finally:
            gate.release.set()
            if stopper.is_alive() or not stopper.ident:
                keeper.stop()
