"""The cost and the approval flag in the summary rows: what ``amber sessions`` lists.

Every store's ``SessionInfo`` carries the cost of the session's model calls and
whether its active turn waits for approval, equal to its head's (``SessionInfo.of``),
however the events came: batch by batch, a fork, an import, a rebuild; and a store
an older Amber wrote gets them when it is migrated.
"""

from __future__ import annotations

import math
import pathlib
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest

from runtime import (
    AuditStatus,
    CorruptRow,
    ModelCallFinished,
    ModelCallStarted,
    Usage,
    apply,
    replay,
    session_cost,
)
from runtime.store import SCHEMA_VERSION, MemoryStore, SessionInfo, SQLiteStore, Store
from runtime.store._summaries import SUMMARY_COLUMNS, summary_row_digest
from runtime.store._tally import Tally
from tests.runtime.store.costed import T0, costed_session

FIXTURES = pathlib.Path(__file__).parent / "fixtures"


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def make(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[Callable[[], Store]]:
    """A new store of each kind (they snapshot often, so loads start from one)."""
    opened: list[Store] = []
    if request.param == "memory":
        yield MemoryStore
    elif request.param == "sqlite":

        def sqlite() -> Store:
            opened.append(SQLiteStore(tmp_path / f"{len(opened)}.db", snapshot_every=5))
            return opened[-1]

        yield sqlite
    else:
        open_pg = request.getfixturevalue("open_pg")
        yield lambda: open_pg(snapshot_every=5)
    for store in opened:
        store.close()


def expected(store: Store, session_id: str) -> tuple[object, bool]:
    head = store.load_state(session_id)
    return session_cost(head.model_calls()), head.waits_for_approval


def listed(store: Store) -> dict[str, tuple[object, bool]]:
    return {info.session_id: (info.cost, info.waits_for_approval) for info in store.list_sessions()}


def overlapping(session_id: str, costs: list[float]) -> list[object]:
    """A turn whose calls all start, then finish in reverse order: their costs are added in
    another order than their sequence (a float sum of each order differs)."""
    out: list[object] = []

    def emit(cls: type, **fields: object) -> None:
        nonlocal state
        seq = state.seq + 1
        event = cls(session_id=session_id, seq=seq, at=T0 + timedelta(seconds=seq), **fields)
        state = apply(state, event)
        out.append(event)

    first = costed_session(session_id, [], waiting=True)[0][:2]  # a question, a turn
    state = replay(first).head
    out.extend(first)
    turn = state.active_turn_id
    for n, _ in enumerate(costs, 1):
        emit(ModelCallStarted, operation_id=f"op{n}", source_key=f"{turn}#{n}", turn_id=turn,
             sequence=n, role=f"role{n}")  # fmt: skip
    for n in reversed(range(1, len(costs) + 1)):
        emit(ModelCallFinished, operation_id=f"op{n}", source_key=f"{turn}#{n}",
             status=AuditStatus.COMPLETED, usage=Usage(input_tokens=1, output_tokens=1),
             cost_usd=costs[n - 1])  # fmt: skip
    return out


class TestEveryStore:
    def test_batch_by_batch(self, make: Callable[[], Store]) -> None:
        """Appended in batches of every size, the summary is the head's after each."""
        events, _ = costed_session("s", [0.1, None, 0.2, 0.3, 1e-9, None, 0.7], waiting=True)
        for size in (1, 3, 7, len(events)):
            store = make()
            for start in range(0, len(events), size):
                store.append(events[start : start + size])
                assert listed(store) == {"s": expected(store, "s")}
                assert store.session("s") == SessionInfo.of(
                    store.load_state("s"),
                    created_at=events[0].at,
                    snapshot_seq=store.session("s").snapshot_seq,
                )
            assert store.check().ok

    def test_calls_that_finish_out_of_order(self, make: Callable[[], Store]) -> None:
        """The sum is exact and rounded once: the same whatever order the calls finished in
        (added in sequence order, they give 0.6000000000000001; in the order they
        finished, 0.6)."""
        costs = [0.1, 0.2, 0.3]
        assert (0.1 + 0.2) + 0.3 != (0.3 + 0.2) + 0.1
        store = make()
        for event in overlapping("s", costs):
            store.append([event])  # type: ignore[list-item]
        (info,) = store.list_sessions()
        assert info.cost is not None
        assert (
            info.cost.usd
            == math.fsum(costs)
            == session_cost(store.load_state("s").audit.values()).usd
        )
        assert store.check().ok

    def test_fork_import_and_rebuild(self, make: Callable[[], Store]) -> None:
        """A fork (no audit rows of its own), an import and a rebuild: each the head's."""
        events, _ = costed_session("s", [0.1, 0.2, None], waiting=True)
        store = make()
        store.append(events)
        fork = replay(events).fork(len(events), "f", at=T0 + timedelta(days=1)).events()
        store.append(fork)
        other = make()
        other.import_session(store.export_session("s"))
        assert listed(store) == {"s": expected(store, "s"), "f": expected(store, "f")}
        assert listed(store)["f"][1] is True
        assert listed(other) == {"s": listed(store)["s"]}
        before = listed(store)
        store.rebuild()
        assert listed(store) == before
        assert store.check().ok


class TestMigration:
    @pytest.fixture
    def old_store(self, tmp_path: pathlib.Path) -> pathlib.Path:
        path = tmp_path / "v3.db"
        shutil.copyfile(FIXTURES / "summaries_v3.db", path)
        return path

    def test_a_version_3_store_gets_costs_and_flags(self, old_store: pathlib.Path) -> None:
        """Opening a store of schema version 3 fills the new columns from each head, and
        leaves the other columns as they were."""
        columns = (
            "session_id, seq, created_at, updated_at, messages, counts, active_turn_id, "
            "turn_started_at"
        )
        with sqlite3.connect(old_store) as db:
            version = "SELECT value FROM amber_meta WHERE key = 'schema_version'"
            assert db.execute(version).fetchone() == ("3",)
            rows = db.execute(f"SELECT {columns} FROM sessions ORDER BY 1").fetchall()
        db.close()
        with SQLiteStore(old_store) as store:
            found = listed(store)
            assert found == {sid: expected(store, sid) for sid in found}
            # What the Amber of version 3 listed (loading each head) for this file.
            usd = {sid: cost.usd if cost.priced else None for sid, (cost, _) in found.items()}  # type: ignore[attr-defined]
            assert usd == {"waiting": 0.6, "priced": 0.2500001, "running": None}
            assert {sid: waits for sid, (_, waits) in found.items()} == {
                "waiting": True, "priced": False, "running": False,
            }  # fmt: skip
            assert store.check().ok
        with sqlite3.connect(old_store) as db:
            assert db.execute(version).fetchone() == (str(SCHEMA_VERSION),)
            assert db.execute(f"SELECT {columns} FROM sessions ORDER BY 1").fetchall() == rows
            assert db.execute("SELECT count(*) FROM sessions WHERE cost IS NULL").fetchone() == (0,)
        db.close()

    def test_a_damaged_row_is_left_unfilled(self, old_store: pathlib.Path) -> None:
        """A summary row that fails its digest is left as it was (reads name it, as before);
        the other rows are filled; a rebuild writes it whole."""
        with sqlite3.connect(old_store) as db:
            db.execute("UPDATE sessions SET messages = 99 WHERE session_id = 'priced'")
        db.close()
        with SQLiteStore(old_store) as store:
            with pytest.raises(CorruptRow, match=r"^Session 'priced' seq 12: .* its digest"):
                store.session("priced")
            assert store.session("waiting").cost is not None
            with sqlite3.connect(old_store) as db:
                unfilled = db.execute("SELECT session_id FROM sessions WHERE cost IS NULL")
                assert unfilled.fetchall() == [("priced",)]
            db.close()
            store.rebuild()
            found = listed(store)
            assert found == {sid: expected(store, sid) for sid in found}
        with sqlite3.connect(old_store) as db:
            assert db.execute("SELECT count(*) FROM sessions WHERE cost IS NULL").fetchone() == (0,)
        db.close()

    def test_a_version_1_postgres_store_gets_them(
        self, open_pg: Callable[..., Store], pg_schema: Callable[[], str], postgres_dsn: str
    ) -> None:
        """A PostgreSQL store of schema version 1 (its summary rows without the columns, as
        that Amber wrote them) gets them filled when it is opened."""
        import psycopg
        from psycopg import sql

        schema = pg_schema()
        events, _ = costed_session("s", [0.1, 0.2, None], waiting=True)
        with open_pg(schema=schema, snapshot_every=5) as store:
            store.append(events[:12])
            store.append(events[12:])
            want = listed(store)
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
            conn.execute(
                "DROP TRIGGER sessions_older_writer ON sessions; ALTER TABLE sessions "
                "DROP COLUMN cost, DROP COLUMN waits, DROP COLUMN digest; "
                "ALTER TABLE sessions RENAME COLUMN row_digest TO digest"
            )
            row = conn.execute(
                "SELECT session_id, seq, created_at, updated_at, messages, counts, "
                "active_turn_id, turn_started_at FROM sessions"
            ).fetchone()
            from runtime.store._summaries import summary_digest

            conn.execute("UPDATE sessions SET digest = %s", (summary_digest(tuple(row)),))
            conn.execute("UPDATE amber_meta SET value = '1' WHERE key = 'schema_version'")
        with open_pg(schema=schema) as store:
            assert listed(store) == want
            assert want["s"][1] is True
            assert store.check().ok


def test_tally_reads_back() -> None:
    """The cost column holds the exact sum: read back, it is the same tally."""
    head = costed_session("s", [0.1, 1e-300, 3.5, None])[1]
    tally = Tally.of(head)
    assert Tally.from_text(tally.to_text()) == tally
    for bad, problem in (
        ('["1/0", 0, 0]', "is not a fraction"),
        ('["x", 0, 0]', "is not a fraction"),
        ('["1/2", -1, 0]', r"is not \[sum, priced, unpriced\]"),
        ("[]", r"is not \[sum, priced, unpriced\]"),
        (None, "not text"),
    ):
        with pytest.raises(ValueError, match=problem):
            Tally.from_text(bad)


class TestDamage:
    @pytest.mark.parametrize(
        ("cost", "sealed", "problem"),
        [
            ('["1/3", 1, 0]', False, r"does not match its digest"),
            ('["1/0", 1, 0]', True, r"does not decode \(.*is not a fraction"),
            ('"0.3"', True, r"does not decode \(.*is not \[sum, priced, unpriced\]"),
        ],
    )
    def test_an_edited_cost_is_named(
        self, tmp_path: pathlib.Path, cost: str, sealed: bool, problem: str
    ) -> None:
        """A cost column edited (or resealed by software that knows the digest, but not a
        cost) is a CorruptRow naming the session; a rebuild writes it again."""
        path = tmp_path / "s.db"
        with SQLiteStore(path) as store:
            store.append(costed_session("s", [0.1])[0])
            want = listed(store)
        with sqlite3.connect(path) as db:
            db.execute("UPDATE sessions SET cost = ?", (cost,))
            if sealed:
                row = db.execute(f"SELECT {SUMMARY_COLUMNS} FROM sessions").fetchone()
                db.execute("UPDATE sessions SET row_digest = ?", (summary_row_digest(tuple(row)),))
        db.close()
        with SQLiteStore(path) as store:
            with pytest.raises(CorruptRow, match=rf"^Session 's' seq 6: its summary row {problem}"):
                store.list_sessions()
            assert not store.check().ok
            store.rebuild()
            assert listed(store) == want


_OLD_WRITE = (
    "INSERT INTO sessions (session_id, seq, created_at, updated_at, messages, counts, "
    "active_turn_id, turn_started_at, digest) VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}) "
    "ON CONFLICT (session_id) DO UPDATE SET seq = excluded.seq, "
    "created_at = excluded.created_at, updated_at = excluded.updated_at, "
    "messages = excluded.messages, counts = excluded.counts, "
    "active_turn_id = excluded.active_turn_id, turn_started_at = excluded.turn_started_at, "
    "digest = excluded.digest"
)
"""The summary write of an Amber older than these columns (SQLite 3, PostgreSQL 1), verbatim:
a worker still running it on a store a newer one migrated."""


def _old_values(session_id: str, seq: int) -> tuple[object, ...]:
    from runtime.store._summaries import summary_digest

    values = (session_id, seq, T0.isoformat(), T0.isoformat(), 2, '{"done": 2}', None, None)
    return (*values, summary_digest(values))


class TestAnOlderWriter:
    """A process of an older Amber that opened the store before a newer one migrated it
    (a rolling upgrade) writes summary rows without the cost: the store refuses them,
    saying to upgrade it, instead of keeping a row every newer reader calls damaged
    (or a stale cost)."""

    @pytest.mark.parametrize("session_id", ["s", "new"])
    def test_sqlite_refuses_its_summary_write(
        self, tmp_path: pathlib.Path, session_id: str
    ) -> None:
        path = tmp_path / "s.db"
        with SQLiteStore(path) as store:
            store.append(costed_session("s", [0.1])[0])
            want = listed(store)
        db = sqlite3.connect(path)
        try:
            with pytest.raises(
                sqlite3.IntegrityError, match=r"runs an older one.*Upgrade amber in this process"
            ):
                db.execute(_OLD_WRITE.format(p="?"), _old_values(session_id, 9))
        finally:
            db.close()
        with SQLiteStore(path) as store:
            assert listed(store) == want
            assert store.check().ok

    @pytest.mark.parametrize("session_id", ["s", "new"])
    def test_postgres_refuses_its_summary_write(
        self,
        open_pg: Callable[..., Store],
        pg_schema: Callable[[], str],
        postgres_dsn: str,
        session_id: str,
    ) -> None:
        import psycopg
        from psycopg import sql

        schema = pg_schema()
        with open_pg(schema=schema) as store:
            store.append(costed_session("s", [0.1])[0])
            want = listed(store)
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
            with pytest.raises(
                psycopg.errors.IntegrityError,
                match=r"runs an older one.*Upgrade amber in this process",
            ):
                conn.execute(_OLD_WRITE.format(p="%s"), _old_values(session_id, 9))
        with open_pg(schema=schema) as store:
            assert listed(store) == want
            assert store.check().ok
