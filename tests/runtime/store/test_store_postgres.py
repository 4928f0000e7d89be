"""What only ``PostgresStore`` does: schemas, migrations, guards, several writers, NOTIFY.

The Store protocol itself is tested for every store (test_store_api and the
others, parametrized over memory, SQLite and PostgreSQL); these tests need a
server (skipped without one, failed in CI: tests/conftest.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from psycopg import sql

from runtime import InvalidArgument, replay
from runtime.store import (
    CorruptRow,
    NotAStore,
    PostgresStore,
    SchemaVersionError,
    SeqConflict,
    StoreClosed,
    StoreError,
)
from runtime.store._pg_schema import PG_SCHEMA_VERSION

from .scenario import continue_session, conversation

OpenPg = Callable[..., PostgresStore]


def raw(dsn: str, schema: str) -> psycopg.Connection[Any]:
    conn = psycopg.connect(dsn, autocommit=True)
    conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
    return conn


class TestSchema:
    def test_new_schema_is_created_with_its_version(
        self, open_pg: OpenPg, postgres_dsn: str
    ) -> None:
        """A new store creates its schema, records application and version."""
        store = open_pg()
        with raw(postgres_dsn, store.schema) as conn:
            meta = dict(conn.execute("SELECT key, value FROM amber_meta").fetchall())
        assert meta == {"application": "amber", "schema_version": str(PG_SCHEMA_VERSION)}

    def test_schemas_are_separate_stores(self, open_pg: OpenPg) -> None:
        """Two schemas in one database hold separate sessions."""
        a, b = open_pg(), open_pg()
        a.append(conversation("s", 3))
        assert "s" in a
        assert "s" not in b
        assert b.list_sessions() == []

    def test_odd_schema_names_are_quoted(self, open_pg: OpenPg, pg_schema: Any) -> None:
        """A schema name that needs quoting (spaces, quotes, capitals) works."""
        name = pg_schema() + ' Odd "name"'
        store = open_pg(name)
        store.append(conversation("s", 2))
        assert store.load_state("s").seq == 2

    def test_reopening_migrates_nothing_and_keeps_everything(self, open_pg: OpenPg) -> None:
        """Opening a store again (migration a no-op) reads what was written."""
        store = open_pg(snapshot_every=3)
        events = conversation("s", 10)
        store.append(events)
        again = open_pg(store.schema, snapshot_every=3)
        assert again.load_state("s") == replay(events).head
        assert again.check().ok

    def test_a_foreign_schema_is_refused(
        self, open_pg: OpenPg, postgres_dsn: str, pg_schema: Any
    ) -> None:
        """A schema with other tables is not an Amber store, and is left alone."""
        name = pg_schema()
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
            conn.execute(sql.SQL("CREATE TABLE {}.users (id int)").format(sql.Identifier(name)))
        with pytest.raises(
            NotAStore, match=r"holds tables but is not an Amber store \(tables: users\)"
        ):
            open_pg(name)

    def test_a_newer_version_is_refused(self, open_pg: OpenPg, postgres_dsn: str) -> None:
        """A store written by a newer Amber is not opened."""
        store = open_pg()
        store.close()
        with raw(postgres_dsn, store.schema) as conn:
            conn.execute("UPDATE amber_meta SET value = '99' WHERE key = 'schema_version'")
        with pytest.raises(
            SchemaVersionError, match="has schema version 99, newer than this Amber"
        ):
            open_pg(store.schema)

    def test_an_unknown_version_is_refused(self, open_pg: OpenPg, postgres_dsn: str) -> None:
        """A version that is not a number is named."""
        store = open_pg()
        with raw(postgres_dsn, store.schema) as conn:
            conn.execute("UPDATE amber_meta SET value = 'x' WHERE key = 'schema_version'")
        with pytest.raises(SchemaVersionError, match=r"unknown schema version \('x'"):
            open_pg(store.schema)

    def test_concurrent_openers_migrate_once(self, postgres_dsn: str, pg_schema: Any) -> None:
        """Several stores opening a new schema at once all succeed (the migration is locked),
        and one of them says it made the store (workers started together each said so)."""
        name = pg_schema()
        errors: list[BaseException] = []
        stores: list[PostgresStore] = []

        def open_one() -> None:
            try:
                stores.append(PostgresStore(postgres_dsn, schema=name))
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=open_one) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        for store in stores:
            store.close()
        assert errors == []
        assert sorted(store.made for store in stores) == [False, False, False, True]
        with PostgresStore(postgres_dsn, schema=name) as again:
            assert not again.made

    def test_bad_arguments(self, postgres_dsn: str) -> None:
        """A bad schema name or DSN says what is expected."""
        with pytest.raises(InvalidArgument, match="schema must be a PostgreSQL identifier"):
            PostgresStore(postgres_dsn, schema="")
        with pytest.raises(InvalidArgument, match="is not a PostgreSQL connection string"):
            PostgresStore("nonsense = = =")

    def test_schema_limit_is_in_bytes(self) -> None:
        """PostgreSQL cuts an identifier to 63 bytes of UTF-8, not 63 characters: a longer
        name is refused before connecting (two such names would share one schema)."""
        name = "tenant_ä" + "ü" * 40  # 48 characters, 89 bytes
        unreachable = "postgresql://nobody@127.0.0.1:1/none"
        with pytest.raises(
            InvalidArgument,
            match=r"^schema must be a PostgreSQL identifier of 1 to 63 bytes in UTF-8 \(got "
            r"'tenant_äüü.*', 48 characters, 89 bytes\); PostgreSQL cuts a longer name to 63 "
            r"bytes, so two names could share one schema\. Use a shorter name\.$",
        ):
            PostgresStore(unreachable, schema=name, connect_timeout=1)
        with pytest.raises(StoreError, match="Cannot open the store"):  # 63 bytes: accepted
            PostgresStore(unreachable, schema="tenant_" + "ü" * 28, connect_timeout=1)

    def test_unreachable_server(self) -> None:
        """A server that does not answer is a StoreError naming the database."""
        with pytest.raises(StoreError, match="Cannot open the store"):
            PostgresStore("postgresql://nobody@127.0.0.1:1/none", connect_timeout=2)

    def test_password_is_not_shown(self, postgres_dsn: str, open_pg: OpenPg) -> None:
        """Messages and repr name the database without its password."""
        store = open_pg()
        assert "password" not in repr(store)
        with pytest.raises(StoreError) as info:
            PostgresStore("postgresql://nobody:s3cret@127.0.0.1:1/none", connect_timeout=2)
        assert "s3cret" not in str(info.value)


class TestGuards:
    def test_events_are_append_only(self, open_pg: OpenPg, postgres_dsn: str) -> None:
        """The database refuses to change or delete an event."""
        store = open_pg()
        store.append(conversation("s", 3))
        with raw(postgres_dsn, store.schema) as conn:
            with pytest.raises(psycopg.errors.IntegrityError, match="append-only"):
                conn.execute("UPDATE events SET kind = 'x' WHERE seq = 1")
            with pytest.raises(psycopg.errors.IntegrityError, match="append-only"):
                conn.execute("DELETE FROM events WHERE seq = 3")

    def test_a_gap_is_refused_by_the_database(self, open_pg: OpenPg, postgres_dsn: str) -> None:
        """An insert that skips a seq is refused by the trigger, not only by Amber."""
        store = open_pg()
        store.append(conversation("s", 3))
        with (
            raw(postgres_dsn, store.schema) as conn,
            pytest.raises(psycopg.errors.IntegrityError, match="last seq plus one"),
        ):
            conn.execute(
                "INSERT INTO events (session_id, seq, kind, body, hash) "
                "VALUES ('s', 5, 'x', '{}', repeat('0', 64))"
            )

    def test_a_dropped_guard_is_reported_and_restored(
        self, open_pg: OpenPg, postgres_dsn: str
    ) -> None:
        """check() names a missing trigger; rebuild() creates it again."""
        store = open_pg()
        store.append(conversation("s", 3))
        with raw(postgres_dsn, store.schema) as conn:
            conn.execute("DROP TRIGGER events_gapless ON events")
        report = store.check()
        assert [p.what for p in report.problems] == [
            "the trigger events_gapless that guards the log is missing (dropped by other "
            "software); rebuilding creates it again"
        ]
        assert report.rebuildable
        store.rebuild()
        assert store.check().ok

    def test_an_edited_body_is_named(self, open_pg: OpenPg, postgres_dsn: str) -> None:
        """The hash chain names a row edited behind Amber's back (triggers disabled)."""
        store = open_pg()
        store.append(conversation("s", 5))
        with raw(postgres_dsn, store.schema) as conn:
            conn.execute("ALTER TABLE events DISABLE TRIGGER events_append_only")
            conn.execute(
                "UPDATE events SET body = replace(body, 'run the tests', 'rm -rf /') WHERE seq = 1"
            )
        fresh = open_pg(store.schema)
        report = fresh.check()
        assert [(p.session_id, p.seq, p.derived) for p in report.problems][:1] == [("s", 1, False)]

    def test_a_dropped_table(self, open_pg: OpenPg, postgres_dsn: str) -> None:
        """A table another program dropped is CorruptRow saying to restore from a backup
        (it was a StoreError quoting the server)."""
        store = open_pg()
        store.append(conversation("s", 3))
        with raw(postgres_dsn, store.schema) as conn:
            conn.execute("DROP TABLE sessions CASCADE")
        with pytest.raises(CorruptRow, match=r"relation \"sessions\" does not exist") as caught:
            open_pg(store.schema).load_state("s")
        assert str(caught.value).endswith(
            ". A table of the store was dropped or changed by other software; restore it "
            "from a backup."
        )


class TestSeveralWriters:
    def test_a_stale_writer_gets_a_conflict(self, open_pg: OpenPg) -> None:
        """Two stores on one schema: the one that built on an old head is refused."""
        a = open_pg()
        b = open_pg(a.schema)
        a.append(conversation("s", 3))
        state = b.load_state("s")
        more = continue_session(state, 2)[0]
        a.append(continue_session(a.load_state("s"), 1)[0])
        with pytest.raises(SeqConflict, match="already holds seq 4"):
            b.append(more)
        assert b.load_state("s") == a.load_state("s")

    def test_racing_writers_never_duplicate_a_seq(self, open_pg: OpenPg) -> None:
        """Four threads, each with its own store, race to extend one session: every seq is
        stored once, and the log replays."""
        first = open_pg()
        first.append(conversation("s", 1))
        stores = [open_pg(first.schema) for _ in range(4)]
        stored: list[int] = []
        lock = threading.Lock()

        def writer(store: PostgresStore) -> None:
            for _ in range(15):
                try:
                    events = continue_session(store.load_state("s"), 1)[0]
                    store.append(events)
                except SeqConflict:
                    continue
                with lock:
                    stored.append(events[0].seq)

        threads = [threading.Thread(target=writer, args=(store,)) for store in stores]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert sorted(stored) == list(range(2, 2 + len(stored)))
        assert first.verify("s").last_seq == 1 + len(stored)

    def test_closed_store(self, open_pg: OpenPg) -> None:
        """A closed store refuses calls and names itself."""
        store = open_pg()
        store.close()
        store.close()
        with pytest.raises(StoreClosed, match="is closed; open a new PostgresStore"):
            store.load_state("s")


class TestNotify:
    def test_a_listener_hears_new_events(self, open_pg: OpenPg) -> None:
        """Appends announce their sessions on the store's channel at commit."""
        store = open_pg()
        listener = store.listener()
        try:
            other = open_pg(store.schema)
            other.append(conversation("a", 2) + conversation("b", 1))
            heard: set[str] = set()
            while heard != {"a", "b"}:
                got = listener.wait(60)  # a hang guard: the notification is already sent
                assert got, "no notification within 60 s"
                heard |= got
        finally:
            listener.close()

    def test_a_refused_append_announces_nothing(self, open_pg: OpenPg) -> None:
        """Nothing is announced for a batch that was not stored."""
        store = open_pg()
        store.append(conversation("a", 2))
        listener = store.listener()
        try:
            with pytest.raises(SeqConflict):
                store.append(conversation("a", 1))
            store.append(conversation("b", 1))  # a marker that does arrive
            assert listener.wait(60) == {"b"}
        finally:
            listener.close()

    def test_others_only_leaves_out_the_stores_own_writes(self, open_pg: OpenPg) -> None:
        """A worker's listener hears other processes' writes, not its own store's."""
        store = open_pg()
        listener = store.listener(others_only=True)
        try:
            store.append(conversation("mine", 1))
            open_pg(store.schema).append(conversation("theirs", 1))
            heard: set[str] = set()
            for _ in range(3):  # a wait returns at a notification, perhaps only 'mine'
                heard = listener.wait(60)  # a hang guard: both were sent already
                if heard:
                    break
            assert heard == {"theirs"}
        finally:
            listener.close()


class TestDamagedCheckpoints:
    def test_check_finds_it_and_reads_go_on(
        self,
        open_pg: OpenPg,
        postgres_dsn: str,
        monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        """A checkpoint's chunk version edited (its digest kept): ``check`` and ``verify``
        find it, reads go on from an older stored state with a warning, ``rebuild`` mends
        it (as on SQLite)."""
        import runtime.store._checkpoints as checkpoints
        from runtime import ReplayMismatch, replay

        monkeypatch.setattr(checkpoints, "CHECKPOINT_EVERY", 10)
        log = conversation("s", 40)
        store = open_pg(snapshot_every=3, chunk_size=2)
        for event in log:
            store.append([event])
        with raw(postgres_dsn, store.schema) as conn:
            updated = conn.execute(
                "UPDATE chunk_versions SET body = %s WHERE session_id = 's' AND part = 'messages'",
                (b'{"fields": [], "rows": []}',),
            ).rowcount
        assert updated
        problems = store.check().problems
        assert problems
        assert all(p.derived and "checkpoint" in str(p) for p in problems)
        with pytest.raises(ReplayMismatch, match="checkpoint at seq"):
            store.verify("s")
        full = replay(log)
        with caplog.at_level("WARNING", logger="amber.store"):
            for seq in range(1, len(log) + 1):
                assert store.load_span("s", seq, seq).at(seq) == full.at(seq)
        assert any("amber recover --rebuild" in r.getMessage() for r in caplog.records)
        store.rebuild()
        assert store.check().ok
