"""Session leases with fencing tokens in ``PostgresStore``: takeover, renewal, stale writes.

Expiry is driven by explicit times (``now``), never by sleeping: the store
reads no clock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from runtime import InvalidArgument, LeaseLost, StoreClosed, StoreError
from runtime.store import Lease, PostgresStore

from .scenario import continue_session, conversation

OpenPg = Callable[..., PostgresStore]
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
TTL = timedelta(seconds=30)


@pytest.fixture
def pair(open_pg: OpenPg) -> tuple[PostgresStore, PostgresStore]:
    """Two workers' stores on one schema, with session 's' at seq 3."""
    a = open_pg()
    b = open_pg(a.schema)
    a.append(conversation("s", 3))
    return a, b


def more(store: PostgresStore, count: int = 1) -> list:  # type: ignore[type-arg]
    return continue_session(store.load_state("s"), count)[0]


class TestAcquire:
    def test_first_owner_gets_token_1(self, pair: tuple[PostgresStore, PostgresStore]) -> None:
        """The first acquisition has token 1; the store then holds the lease."""
        a, _ = pair
        lease = a.acquire("s", owner="w1", now=NOW, ttl=TTL)
        assert lease == Lease(session_id="s", owner="w1", token=1, expires_at=NOW + TTL)
        assert a.held == {"s": lease}
        assert a.lease("s") == lease

    def test_a_held_lease_is_not_taken(self, pair: tuple[PostgresStore, PostgresStore]) -> None:
        """Before expiry another owner gets None, and the lease is unchanged."""
        a, b = pair
        lease = a.acquire("s", owner="w1", now=NOW, ttl=TTL)
        assert b.acquire("s", owner="w2", now=NOW + TTL - timedelta(seconds=1), ttl=TTL) is None
        assert b.lease("s") == lease
        assert "s" not in b.held

    def test_takeover_after_expiry_grows_the_token(
        self, pair: tuple[PostgresStore, PostgresStore]
    ) -> None:
        """At expiry another owner takes the lease with the next token."""
        a, b = pair
        a.acquire("s", owner="w1", now=NOW, ttl=TTL)
        taken = b.acquire("s", owner="w2", now=NOW + TTL, ttl=TTL)
        assert taken is not None
        assert (taken.owner, taken.token) == ("w2", 2)

    def test_every_takeover_grows_the_token(self, open_pg: OpenPg) -> None:
        """Tokens only grow, across owners, releases and re-acquisitions."""
        store = open_pg()
        tokens = []
        for i in range(5):
            lease = store.acquire("s", owner=f"w{i % 2}", now=NOW + i * TTL, ttl=TTL)
            assert lease is not None
            tokens.append(lease.token)
            if i == 2:
                store.release(lease)
        assert tokens == [1, 2, 3, 4, 5]

    def test_a_released_lease_is_free_at_once(
        self, pair: tuple[PostgresStore, PostgresStore]
    ) -> None:
        """After release another owner takes the lease before the old expiry."""
        a, b = pair
        lease = a.acquire("s", owner="w1", now=NOW, ttl=TTL)
        assert lease is not None
        assert a.release(lease) is True
        assert a.held == {}
        taken = b.acquire("s", owner="w2", now=NOW, ttl=TTL)
        assert taken is not None
        assert taken.token == 2

    def test_only_one_of_racing_owners_wins(self, open_pg: OpenPg) -> None:
        """Eight stores race for one free lease: exactly one gets it."""
        first = open_pg()
        stores = [open_pg(first.schema) for _ in range(8)]
        won: list[Lease] = []

        def race(store: PostgresStore, i: int) -> None:
            lease = store.acquire("s", owner=f"w{i}", now=NOW, ttl=TTL)
            if lease is not None:
                won.append(lease)

        threads = [threading.Thread(target=race, args=(s, i)) for i, s in enumerate(stores)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert len(won) == 1
        assert won[0].token == 1

    @pytest.mark.parametrize(
        ("field", "value", "message"),
        [
            ("owner", "", "owner must be a non-empty str"),
            ("now", datetime(2026, 1, 1), "now must be a timezone-aware datetime"),
            ("ttl", timedelta(0), "ttl must be a positive timedelta"),
        ],
    )
    def test_bad_arguments(self, open_pg: OpenPg, field: str, value: object, message: str) -> None:
        """Bad owners, naive times and empty ttls are refused, saying what is expected."""
        store = open_pg()
        options: dict[str, object] = {"owner": "w1", "now": NOW, "ttl": TTL, field: value}
        with pytest.raises(InvalidArgument, match=message):
            store.acquire("s", **options)  # type: ignore[arg-type]


class TestRenew:
    def test_renewal_pushes_the_expiry(self, pair: tuple[PostgresStore, PostgresStore]) -> None:
        """A renewed lease keeps its token and is not taken at the old expiry."""
        a, b = pair
        lease = a.acquire("s", owner="w1", now=NOW, ttl=TTL)
        assert lease is not None
        renewed = a.renew(lease, now=NOW + timedelta(seconds=20), ttl=TTL)
        assert renewed.token == lease.token
        assert renewed.expires_at == NOW + timedelta(seconds=50)
        assert b.acquire("s", owner="w2", now=NOW + TTL, ttl=TTL) is None

    def test_renewing_a_lost_lease_fails(self, pair: tuple[PostgresStore, PostgresStore]) -> None:
        """Once another owner took over, renewal raises LeaseLost; the store still holds the
        lost lease (its writes stay fenced) until it is released."""
        a, b = pair
        lease = a.acquire("s", owner="w1", now=NOW, ttl=TTL)
        assert lease is not None
        b.acquire("s", owner="w2", now=NOW + 2 * TTL, ttl=TTL)
        with pytest.raises(LeaseLost, match=r"'w2' holds it now with token 2") as info:
            a.renew(lease, now=NOW + 2 * TTL, ttl=TTL)
        assert (info.value.session_id, info.value.token, info.value.current) == ("s", 1, 2)
        assert a.held == {"s": lease}
        assert a.release(lease) is False
        assert a.held == {}

    def test_a_lost_lease_keeps_refusing_writes(
        self, pair: tuple[PostgresStore, PostgresStore]
    ) -> None:
        """After renewal found the lease lost, every later write to the session is still
        refused with LeaseLost (it must not go through unfenced), until the lease is
        released."""
        a, b = pair
        lease = a.acquire("s", owner="w1", now=NOW, ttl=TTL)
        assert lease is not None
        b.acquire("s", owner="w2", now=NOW + 2 * TTL, ttl=TTL)
        with pytest.raises(LeaseLost):
            a.renew(lease, now=NOW + 2 * TTL, ttl=TTL)
        for _ in range(3):
            with pytest.raises(LeaseLost, match=r"^Cannot append to session 's'"):
                a.append(more(a, 1))
            with pytest.raises(LeaseLost):
                a.renew(lease, now=NOW + 2 * TTL, ttl=TTL)
        assert b.load_state("s").seq == 3

    def test_a_renewal_that_met_a_database_error_keeps_the_lease(
        self, pair: tuple[PostgresStore, PostgresStore], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A renewal the database did not answer leaves the lease held as it was (fenced
        writes, another try at the next renewal): it is not dropped."""
        a, _ = pair
        lease = a.acquire("s", owner="w1", now=NOW, ttl=TTL)
        assert lease is not None

        def unreachable(sessions: object) -> None:
            raise StoreError("Cannot reach the database (a test's outage).")

        monkeypatch.setattr(a, "_write", unreachable)
        with pytest.raises(StoreError, match="a test's outage"):
            a.renew(lease, now=NOW + timedelta(seconds=10), ttl=TTL)
        monkeypatch.undo()
        assert a.held == {"s": lease}
        renewed = a.renew(lease, now=NOW + timedelta(seconds=20), ttl=TTL)
        assert renewed.expires_at == NOW + timedelta(seconds=50)
        assert a.held == {"s": renewed}

    def test_an_expired_lease_nobody_took_renews(
        self, pair: tuple[PostgresStore, PostgresStore]
    ) -> None:
        """Expiry alone loses nothing: with the token unchanged, renewal succeeds."""
        a, _ = pair
        lease = a.acquire("s", owner="w1", now=NOW, ttl=TTL)
        assert lease is not None
        assert a.renew(lease, now=NOW + 10 * TTL, ttl=TTL).token == 1

    def test_a_released_lease_is_not_renewed(
        self, pair: tuple[PostgresStore, PostgresStore]
    ) -> None:
        """A renewal of a lease given back (one copied before the release, as a keeper's
        renewal that runs alongside it) is refused with LeaseLost: the lease does not come
        back into ``held`` nor get a fresh expiry, and another owner takes it at once."""
        a, b = pair
        lease = a.acquire("s", owner="w1", now=NOW, ttl=TTL)
        assert lease is not None
        assert a.release(lease, announce=False) is True
        with pytest.raises(
            LeaseLost,
            match=r"^Cannot renew session 's': this store does not hold its lease \('w1' "
            r"token 1\) any more; it was given back here \(or never taken\)\. Take it again "
            r"with acquire\(\)\.$",
        ):
            a.renew(lease, now=NOW + timedelta(seconds=1), ttl=TTL)
        assert a.held == {}
        taken = b.acquire("s", owner="w2", now=NOW + timedelta(seconds=2), ttl=TTL)
        assert taken is not None
        assert taken.token == 2

    def test_a_closed_store_says_so(self, pair: tuple[PostgresStore, PostgresStore]) -> None:
        """A renewal on a closed store raises StoreClosed (``close`` gives every lease back,
        and a renewal must not read as a lease given back or taken over)."""
        a, _ = pair
        lease = a.acquire("s", owner="w1", now=NOW, ttl=TTL)
        assert lease is not None
        a.close()
        with pytest.raises(StoreClosed, match="is closed; open a new PostgresStore"):
            a.renew(lease, now=NOW + timedelta(seconds=1), ttl=TTL)

    def test_a_lease_taken_again_is_not_renewed_by_an_old_copy(
        self, pair: tuple[PostgresStore, PostgresStore]
    ) -> None:
        """A copy from before a release and a new acquisition is refused (it is not the
        lease held now); the new lease stays held as it was."""
        a, _ = pair
        old = a.acquire("s", owner="w1", now=NOW, ttl=TTL)
        assert old is not None
        a.release(old, announce=False)
        new = a.acquire("s", owner="w1", now=NOW + timedelta(seconds=1), ttl=TTL)
        assert new is not None
        with pytest.raises(LeaseLost, match=r"holds token 2 now"):
            a.renew(old, now=NOW + timedelta(seconds=2), ttl=TTL)
        assert a.held == {"s": new}


class TestRenewAll:
    """``renew_all``: every lease a worker holds renewed in one transaction, each with its
    own outcome."""

    def test_renews_each_and_reports_each_loss(
        self, pair: tuple[PostgresStore, PostgresStore], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Three leases renewed in one write transaction: the two still held get the new
        expiry, the one taken over is its LeaseLost (held on, writes fenced), as ``renew``
        says each."""
        a, b = pair
        leases = [a.acquire(s, owner="w1", now=NOW, ttl=TTL) for s in ("s1", "s2", "s3")]
        assert None not in leases
        taken = b.acquire("s2", owner="w2", now=NOW + 2 * TTL, ttl=TTL)
        assert taken is not None
        writes: list[object] = []
        write = a._write

        def counted(sessions: object) -> object:
            writes.append(sessions)
            return write(sessions)  # type: ignore[arg-type]

        monkeypatch.setattr(a, "_write", counted)
        now = NOW + timedelta(seconds=20)
        got = a.renew_all(leases, now=now, ttl=TTL)  # type: ignore[arg-type]
        monkeypatch.undo()
        assert len(writes) == 1
        assert sorted(got) == ["s1", "s2", "s3"]
        for session_id in ("s1", "s3"):
            renewed = got[session_id]
            assert isinstance(renewed, Lease)
            assert (renewed.token, renewed.expires_at) == (1, now + TTL)
            assert a.held[session_id] == renewed == a.lease(session_id)
        lost = got["s2"]
        assert isinstance(lost, LeaseLost)
        assert str(lost).startswith("Cannot renew session 's2': its lease was taken over")
        assert (lost.session_id, lost.token, lost.current) == ("s2", 1, 2)
        assert a.held["s2"] == leases[1]
        assert b.lease("s2") == taken

    def test_a_lease_not_held_here_is_lost_without_a_write(
        self, pair: tuple[PostgresStore, PostgresStore]
    ) -> None:
        """A lease given back (or an older one of a session taken again) is not renewed:
        its outcome is LeaseLost, and its row stays expired."""
        a, _ = pair
        lease = a.acquire("s", owner="w1", now=NOW, ttl=TTL)
        assert lease is not None
        assert a.release(lease)
        got = a.renew_all([lease], now=NOW + timedelta(seconds=1), ttl=TTL)
        assert isinstance(got["s"], LeaseLost)
        assert str(got["s"]).endswith("Take it again with acquire().")
        assert a.held == {}
        stored = a.lease("s")
        assert stored is not None
        assert stored.expires_at < NOW

    def test_a_database_error_keeps_every_lease(
        self, pair: tuple[PostgresStore, PostgresStore], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A renewal round the database did not answer raises StoreError and leaves every
        lease held as it was."""
        a, _ = pair
        leases = [a.acquire(s, owner="w1", now=NOW, ttl=TTL) for s in ("s1", "s2")]

        def unreachable(sessions: object) -> None:
            raise StoreError("Cannot reach the database (a test's outage).")

        monkeypatch.setattr(a, "_write", unreachable)
        with pytest.raises(StoreError, match="a test's outage"):
            a.renew_all(leases, now=NOW + timedelta(seconds=10), ttl=TTL)  # type: ignore[arg-type]
        monkeypatch.undo()
        assert dict(a.held) == {lease.session_id: lease for lease in leases if lease}

    def test_nothing_to_renew_is_no_write(
        self, pair: tuple[PostgresStore, PostgresStore], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """No leases: an empty answer, and no transaction."""
        a, _ = pair
        monkeypatch.setattr(a, "_write", lambda sessions: pytest.fail("a write for nothing"))
        assert a.renew_all([], now=NOW, ttl=TTL) == {}


class TestFencing:
    def test_the_owner_appends(self, pair: tuple[PostgresStore, PostgresStore]) -> None:
        """Appends under a current lease are stored."""
        a, _ = pair
        a.acquire("s", owner="w1", now=NOW, ttl=TTL)
        a.append(more(a, 2))
        assert a.load_state("s").seq == 5

    def test_a_stale_owner_is_refused(self, pair: tuple[PostgresStore, PostgresStore]) -> None:
        """After a takeover the old owner's append is refused with LeaseLost: nothing stored,
        even though its events would apply (nobody wrote in between)."""
        a, b = pair
        a.acquire("s", owner="w1", now=NOW, ttl=TTL)
        late = more(a, 2)
        b.acquire("s", owner="w2", now=NOW + TTL, ttl=TTL)
        with pytest.raises(
            LeaseLost,
            match=r"Cannot append to session 's': its lease was taken over \('w1' held token 1; 'w2' holds it now with token 2\)\. Nothing was stored",
        ):
            a.append(late)
        assert b.load_state("s").seq == 3
        b.append(more(b, 1))
        assert b.load_state("s").seq == 4

    def test_a_batch_with_one_lost_session_stores_nothing(
        self, pair: tuple[PostgresStore, PostgresStore]
    ) -> None:
        """A batch mixing a held session and a lost one is refused whole."""
        a, b = pair
        a.append(conversation("t", 1))
        a.acquire("s", owner="w1", now=NOW, ttl=TTL)
        a.acquire("t", owner="w1", now=NOW, ttl=TTL)
        batch = more(a, 1) + continue_session(a.load_state("t"), 1)[0]
        b.acquire("t", owner="w2", now=NOW + TTL, ttl=TTL)
        with pytest.raises(LeaseLost):
            a.append(batch)
        assert (a.load_state("s").seq, a.load_state("t").seq) == (3, 1)

    def test_late_appends_are_all_refused(self, pair: tuple[PostgresStore, PostgresStore]) -> None:
        """A paused owner wakes after a takeover and tries 20 appends: 0 are accepted."""
        a, b = pair
        a.acquire("s", owner="w1", now=NOW, ttl=TTL)
        b.acquire("s", owner="w2", now=NOW + TTL, ttl=TTL)
        accepted = 0
        for _ in range(20):
            try:
                a.append(more(a, 1))
                accepted += 1
            except LeaseLost:
                pass
        assert accepted == 0
        assert a.load_state("s").seq == 3

    def test_unleased_writers_are_not_fenced(
        self, pair: tuple[PostgresStore, PostgresStore]
    ) -> None:
        """A store that holds no lease on a session writes it as SQLiteStore does (seq rules
        only): tools, imports and migrations."""
        a, b = pair
        b.acquire("s", owner="w2", now=NOW, ttl=TTL)
        a.append(more(a, 1))
        assert b.load_state("s").seq == 4

    def test_a_takeover_waits_for_a_write_in_flight(
        self, pair: tuple[PostgresStore, PostgresStore]
    ) -> None:
        """The fence holds the lease row until the write commits: a takeover racing a write
        either sees it stored (and the new owner's load includes it) or refuses it."""
        a, b = pair
        a.acquire("s", owner="w1", now=NOW, ttl=TTL)
        outcome: list[str] = []

        def write() -> None:
            try:
                a.append(more(a, 1))
                outcome.append("stored")
            except LeaseLost:
                outcome.append("refused")

        thread = threading.Thread(target=write)
        thread.start()
        taken = b.acquire("s", owner="w2", now=NOW + TTL, ttl=TTL)
        head = b.load_state("s").seq
        thread.join(60)
        assert taken is not None
        final = b.load_state("s").seq
        assert outcome in (["stored"], ["refused"])
        if outcome == ["refused"]:
            assert final == 3
        else:
            # Stored before the takeover committed (it waited): the new owner's first load has it.
            assert final == head == 4


class TestRunnerNames:
    """``Listener.hold``: a runner's name held on the store for as long as its listening
    connection lives (one runtime per name)."""

    def test_one_holder_per_name_until_its_connection_closes(
        self, pair: tuple[PostgresStore, PostgresStore]
    ) -> None:
        """A second listener cannot hold a name the first holds (holding it again on the
        first is fine); once the first closes, the name is free; other names are free."""
        a, b = pair
        first, second = a.listener(), b.listener()
        try:
            assert first.hold("w1")
            assert first.hold("w1")
            assert not second.hold("w1")
            assert second.hold("w2")
            first.close()
            assert second.hold("w1")
        finally:
            first.close()
            second.close()

    def test_a_runner_named_like_a_session_does_not_block_its_writes(
        self, pair: tuple[PostgresStore, PostgresStore]
    ) -> None:
        """Names are locked apart from the sessions' write locks: a runner named 's' does
        not hold up writes to session 's'."""
        a, b = pair
        listener = b.listener()
        try:
            assert listener.hold("s")
            a.append(more(a, 1))
            assert a.load_state("s").seq == 4
        finally:
            listener.close()

    def test_names_whose_old_32_bit_hashes_collide_both_hold(
        self, pair: tuple[PostgresStore, PostgresStore]
    ) -> None:
        """Two names that ``hashtext`` (the lock key names had) maps to one value are two
        names: each holds its own, and each is still refused to another holder."""
        a, b = pair
        one, other = colliding_names(a)
        first, second, third = a.listener(), b.listener(), b.listener()
        try:
            assert first.hold(one)
            assert second.hold(other)
            assert not third.hold(one)
            assert not third.hold(other)
        finally:
            first.close()
            second.close()
            third.close()


def colliding_names(store: PostgresStore) -> tuple[str, str]:
    """Two runner names to which PostgreSQL's 32-bit ``hashtext`` gives one value, found
    by search on the server (a birthday search: a few hundred thousand names suffice)."""
    with store._pool_or_closed().connection() as conn:
        row = conn.execute(
            "SELECT array_agg(n ORDER BY n) FROM (SELECT 'w' || i AS n FROM "
            "generate_series(1, 1000000) AS i) AS t GROUP BY hashtext(n) "
            "HAVING count(*) > 1 LIMIT 1"
        ).fetchone()
    assert row is not None, "no two names collide in hashtext among a million"
    one, other = row[0][:2]
    return one, other
