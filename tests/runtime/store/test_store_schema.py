"""Schema versioning: what a store records, refusing newer or unknown versions, migrations."""

from __future__ import annotations

import pathlib
import sqlite3
from collections.abc import Callable, Iterator

import pytest

from runtime.store import SCHEMA_VERSION, SchemaVersionError, SQLiteStore
from runtime.store._schema import APPLICATION_ID, MIGRATIONS, migrate, run_step

from .scenario import conversation

OpenStore = Callable[..., SQLiteStore]


_RAW: list[sqlite3.Connection] = []


@pytest.fixture(autouse=True)
def _close_raw_connections() -> Iterator[None]:
    """Close the plain connections a test opened (Python 3.13 warns about unclosed ones)."""
    yield
    while _RAW:
        _RAW.pop().close()


def raw(path: pathlib.Path) -> sqlite3.Connection:
    """A plain connection to the store file (closed after the test)."""
    db = sqlite3.connect(path, isolation_level=None)
    _RAW.append(db)
    return db


def dump(path: pathlib.Path) -> list[tuple[object, ...]]:
    """The schema and every row of the store, to compare before and after."""
    db = raw(path)
    rows: list[tuple[object, ...]] = list(
        db.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name")
    )
    for table in ("amber_meta", "sessions", "events", "snapshots", "snapshot_chunks"):
        rows += list(db.execute(f"SELECT * FROM {table} ORDER BY 1, 2"))
    rows.append(db.execute("PRAGMA application_id").fetchone())
    return rows


class TestRecordedVersion:
    def test_new_store(self, open_store: OpenStore, db_path: pathlib.Path) -> None:
        """A new store records its schema version and carries Amber's application id."""
        open_store()
        db = raw(db_path)
        assert dict(db.execute("SELECT key, value FROM amber_meta")) == {
            "application": "amber",
            "schema_version": str(SCHEMA_VERSION),
        }
        assert db.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,)

    def test_newer_version_is_refused(self, open_store: OpenStore, db_path: pathlib.Path) -> None:
        """A store written by a newer Amber fails with a message saying to upgrade."""
        open_store().close()
        raw(db_path).execute("UPDATE amber_meta SET value = '5' WHERE key = 'schema_version'")
        with pytest.raises(
            SchemaVersionError,
            match=r"^'.*amber\.db' has schema version 5, newer than this Amber reads \(up to 4\); upgrade amber to open it\.$",
        ):
            open_store()

    @pytest.mark.parametrize("value", ["abc", "0", "-1", "1.5"])
    def test_unknown_version_is_refused(
        self, open_store: OpenStore, db_path: pathlib.Path, value: str
    ) -> None:
        """A version that is not a known number fails clearly."""
        open_store().close()
        raw(db_path).execute(
            "UPDATE amber_meta SET value = ? WHERE key = 'schema_version'", (value,)
        )
        with pytest.raises(
            SchemaVersionError,
            match=rf"^'.*amber\.db' is an Amber store with an unknown schema version \('{value}'; expected a number from 1 to 4\)\. It may be damaged; restore it from a backup\.$",
        ):
            open_store()

    def test_missing_version_is_refused(self, open_store: OpenStore, db_path: pathlib.Path) -> None:
        """An Amber file without a recorded version fails clearly."""
        open_store().close()
        raw(db_path).execute("DELETE FROM amber_meta WHERE key = 'schema_version'")
        with pytest.raises(SchemaVersionError, match=r"unknown schema version \(None; "):
            open_store()

    def test_refusing_leaves_the_file_alone(
        self, open_store: OpenStore, db_path: pathlib.Path
    ) -> None:
        """A refused store is not written to."""
        open_store().append(conversation("s", 3))
        raw(db_path).execute("UPDATE amber_meta SET value = '9' WHERE key = 'schema_version'")
        before = dump(db_path)
        with pytest.raises(SchemaVersionError):
            open_store()
        assert dump(db_path) == before


class TestMigrations:
    def test_migrate_again_changes_nothing(
        self, open_store: OpenStore, db_path: pathlib.Path
    ) -> None:
        """Running the migration on an up-to-date store is a no-op."""
        open_store(snapshot_every=3).append(conversation("s", 10))
        before = dump(db_path)
        db = raw(db_path)
        assert migrate(db, db_path) == SCHEMA_VERSION
        assert migrate(db, db_path) == SCHEMA_VERSION
        assert dump(db_path) == before

    def test_every_step_is_idempotent(self, open_store: OpenStore, db_path: pathlib.Path) -> None:
        """Each migration step can run twice on a populated store without changing it."""
        open_store(snapshot_every=3).append(conversation("s", 10))
        before = dump(db_path)
        db = raw(db_path)
        for version in sorted(MIGRATIONS):
            for step in MIGRATIONS[version]:
                run_step(db, step)
        assert dump(db_path) == before

    def test_reopening_keeps_everything(self, open_store: OpenStore, db_path: pathlib.Path) -> None:
        """Opening an existing store (which checks the migration) keeps its rows."""
        open_store(snapshot_every=3).append(conversation("s", 10))
        before = dump(db_path)
        open_store()
        assert dump(db_path) == before

    def test_an_interrupted_creation_starts_over(
        self, db_path: pathlib.Path, open_store: OpenStore
    ) -> None:
        """A file left in WAL mode with no tables (a crash before the schema committed) becomes a store."""
        db = raw(db_path)
        db.execute("PRAGMA journal_mode = WAL")
        db.close()
        open_store().append(conversation("s", 2))
        assert open_store().load_state("s").seq == 2
