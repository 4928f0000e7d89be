"""The SQLite store's schema: recognising a file, creating it, migrating it.

An Amber store is an SQLite file whose header carries Amber's application id
and whose ``amber_meta`` table records the schema version. Opening a file
checks both before anything is written, so a foreign database is never
touched. Migrations run in one ``BEGIN IMMEDIATE`` transaction (a crash
leaves the file as it was) and are idempotent: each step is written so that
running it again changes nothing.

Tables (version 3)::

    amber_meta       key -> value ('schema_version', 'application')
    sessions         one summary row per session (seq, times, counts, active turn, cost,
                     whether it waits for approval, row_digest (version 4))
    events           (session_id, seq) -> kind, JSON body (compact or full), hash (chained)
    snapshots        session_id -> the latest snapshot's seq, record and its digest
    snapshot_chunks  (session_id, part, chunk) -> version seq, chunk (zlib JSON), its digest
                     (parts: messages, turns, audit)

Version 2 added the hash chain: ``events.hash`` (filled for the rows an
older Amber wrote, over their text as stored) and the snapshot digests
(snapshots written before have none and are dropped: they are derived data,
rebuilt from the log by the next append or ``amber recover --rebuild``).

Version 3 writes event bodies in the compact format (``_compact``), snapshot
chunks zlib-compressed, and the model-call audit rows as a third chunked
part (``audit``): ``snapshot_chunks`` is made again to allow it, and the old
snapshots (derived data) are dropped and rebuilt from the log. An Amber that
reads only version 2 cannot decode these rows, so the number tells it to
upgrade. Version 3 reads the event rows a version-2 store holds as they are.

The database enforces what it can on its own: the primary key makes
``(session_id, seq)`` unique, a trigger refuses an event whose seq is not
the session's last plus one, one refuses an event without a hash, and two
more refuse to change or delete events.

Text columns are read with invalid UTF-8 bytes kept as surrogate escapes
(``text_factory``), so damaged text reaches Amber's checks, which name the
row, instead of failing inside the driver; event bodies are read as bytes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from .._errors import NotAStore, SchemaVersionError, StoreError
from .._storable import storable_text
from ._chain import genesis, link
from ._checkpoints import TABLES as CHECKPOINT_TABLES
from ._summaries import OLDER_WRITER, summary_digest

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "TRIGGERS", "connect", "migrate", "run_step"]

APPLICATION_ID = 0x416D6272
"""SQLite header application id of an Amber store (``'Ambr'``)."""
SCHEMA_VERSION = 4
"""The schema this Amber writes, and the newest it reads."""
_SQLITE_MAGIC = b"SQLite format 3\x00"

_NO_UPDATE = """CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
    BEGIN
        SELECT RAISE(ABORT, 'amber: events are append-only');
    END"""

_GAPLESS = """CREATE TRIGGER IF NOT EXISTS events_gapless BEFORE INSERT ON events
    WHEN NEW.seq IS NOT
        coalesce((SELECT max(seq) FROM events WHERE session_id = NEW.session_id), 0) + 1
    BEGIN
        SELECT RAISE(ABORT, 'amber: an event''s seq must be its session''s last seq plus one');
    END"""

_NO_DELETE = """CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
    BEGIN
        SELECT RAISE(ABORT, 'amber: events are append-only');
    END"""

_V1 = (
    """CREATE TABLE IF NOT EXISTS amber_meta (
        key   TEXT PRIMARY KEY NOT NULL,
        value TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS sessions (
        session_id      TEXT PRIMARY KEY NOT NULL CHECK (length(session_id) > 0),
        seq             INTEGER NOT NULL CHECK (typeof(seq) = 'integer' AND seq >= 1),
        created_at      TEXT NOT NULL,
        updated_at      TEXT NOT NULL,
        messages        INTEGER NOT NULL,
        counts          TEXT NOT NULL,
        active_turn_id  TEXT,
        turn_started_at TEXT
    )""",
    """CREATE TABLE IF NOT EXISTS events (
        session_id TEXT NOT NULL,
        seq        INTEGER NOT NULL CHECK (typeof(seq) = 'integer' AND seq >= 1),
        kind       TEXT NOT NULL,
        body       TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    ) WITHOUT ROWID""",
    _GAPLESS,
    _NO_UPDATE,
    _NO_DELETE,
    """CREATE TABLE IF NOT EXISTS snapshots (
        session_id TEXT PRIMARY KEY NOT NULL,
        seq        INTEGER NOT NULL CHECK (typeof(seq) = 'integer' AND seq >= 1),
        record     TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS snapshot_chunks (
        session_id TEXT NOT NULL,
        part       TEXT NOT NULL CHECK (part IN ('messages', 'turns')),
        chunk      INTEGER NOT NULL CHECK (typeof(chunk) = 'integer' AND chunk >= 0),
        seq        INTEGER NOT NULL,
        body       TEXT NOT NULL,
        PRIMARY KEY (session_id, part, chunk)
    ) WITHOUT ROWID""",
    "INSERT OR IGNORE INTO amber_meta (key, value) VALUES ('application', 'amber')",
)

_HASH_REQUIRED = """CREATE TRIGGER IF NOT EXISTS events_hash_required BEFORE INSERT ON events
    WHEN NEW.hash IS NULL OR length(NEW.hash) != 64
    BEGIN
        SELECT RAISE(ABORT, 'amber: an event needs its chained hash');
    END"""


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def _v2_checksums(db: sqlite3.Connection) -> None:
    """Add the hash chain and the row digests; hash the rows already stored."""
    added = (
        ("events", "hash"),
        ("snapshots", "digest"),
        ("snapshot_chunks", "digest"),
        ("sessions", "digest"),
    )
    for table, column in added:
        if column not in _columns(db, table):
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} TEXT")
    # Once version 4 moved the digest to row_digest, the rows carry theirs there.
    digested = "row_digest" in _columns(db, "sessions")
    for row in db.execute(
        "SELECT session_id, seq, created_at, updated_at, messages, counts, active_turn_id, "
        "turn_started_at FROM sessions WHERE digest IS NULL AND NOT ?",
        (digested,),
    ).fetchall():
        db.execute(
            "UPDATE sessions SET digest = ? WHERE session_id = ?", (summary_digest(row), row[0])
        )
    # Snapshots without digests are derived data an older Amber wrote: dropped.
    db.execute(
        "DELETE FROM snapshot_chunks WHERE digest IS NULL OR session_id IN "
        "(SELECT session_id FROM snapshots WHERE digest IS NULL)"
    )
    db.execute("DELETE FROM snapshots WHERE digest IS NULL")
    sessions = [
        row[0] for row in db.execute("SELECT DISTINCT session_id FROM events WHERE hash IS NULL")
    ]
    if sessions:
        db.execute("DROP TRIGGER IF EXISTS events_no_update")
        for session_id in sessions:
            head = genesis(session_id)
            rows = db.execute(
                "SELECT seq, CAST(body AS BLOB), hash FROM events WHERE session_id = ? "
                "ORDER BY seq",
                (session_id,),
            ).fetchall()
            for seq, body, stored in rows:
                if stored is None:
                    # Over the text as stored: reads hash the stored text first.
                    stored = link(head, body if isinstance(body, bytes) else b"")
                    db.execute(
                        "UPDATE events SET hash = ? WHERE session_id = ? AND seq = ?",
                        (stored, session_id, seq),
                    )
                head = stored
        db.execute(_NO_UPDATE)
    db.execute(_HASH_REQUIRED)


Step = str | Callable[[sqlite3.Connection], None]
"""One migration step: an SQL statement, or a function of the connection."""


def _v3_audit_part(db: sqlite3.Connection) -> None:
    """Let snapshot chunks hold the model-call audit rows (a third part, ``audit``), and
    add the checkpoint tables (``_checkpoints``).

    SQLite cannot widen a CHECK in place: the chunk table is made again. Snapshots
    are derived data: the old ones are dropped, and the next append (or ``amber
    recover --rebuild``) writes new ones from the log.
    """
    for table in CHECKPOINT_TABLES:
        db.execute(table)
    row = db.execute("SELECT sql FROM sqlite_master WHERE name = 'snapshot_chunks'").fetchone()
    if row is not None and "'audit'" in row[0]:
        return
    db.execute("DROP TABLE IF EXISTS snapshot_chunks")
    db.execute("DELETE FROM snapshots")
    db.execute(
        """CREATE TABLE snapshot_chunks (
        session_id TEXT NOT NULL,
        part       TEXT NOT NULL CHECK (part IN ('messages', 'turns', 'audit')),
        chunk      INTEGER NOT NULL CHECK (typeof(chunk) = 'integer' AND chunk >= 0),
        seq        INTEGER NOT NULL,
        body       TEXT NOT NULL,
        digest     TEXT,
        PRIMARY KEY (session_id, part, chunk)
    ) WITHOUT ROWID"""
    )


def _v4_summary_cost(db: sqlite3.Connection) -> None:
    """Let summary rows hold the session's cost and whether it waits for approval
    (``amber sessions`` lists them without loading states); fill the rows stored."""
    from ._fill import fill_summaries  # the row code (states, snapshots): only to migrate

    # The row's digest moves to row_digest, and digest stays for an older Amber's writes
    # to name: one still running on this file would write rows without the cost (a row
    # every newer reader calls damaged), and the triggers refuse them, saying to upgrade.
    if "row_digest" not in _columns(db, "sessions"):
        db.execute("ALTER TABLE sessions RENAME COLUMN digest TO row_digest")
    for column, kind in (("cost", "TEXT"), ("waits", "INTEGER"), ("digest", "TEXT")):
        if column not in _columns(db, "sessions"):
            db.execute(f"ALTER TABLE sessions ADD COLUMN {column} {kind}")
    for trigger, when in (("insert", "INSERT"), ("update", "UPDATE OF digest")):
        db.execute(
            f"CREATE TRIGGER IF NOT EXISTS sessions_older_writer_{trigger} BEFORE {when} "
            f"ON sessions WHEN NEW.digest IS NOT NULL BEGIN SELECT RAISE(ABORT, '{OLDER_WRITER}'); "
            "END"
        )
    fill_summaries(db)


MIGRATIONS: dict[int, tuple[Step, ...]] = {
    1: _V1,
    2: (_v2_checksums,),
    3: (_v3_audit_part,),
    4: (_v4_summary_cost,),
}
"""Steps that take a store from version ``n - 1`` to ``n``; each is idempotent."""

TRIGGERS = ("events_gapless", "events_hash_required", "events_no_delete", "events_no_update")
"""The triggers that guard the log; ``amber check`` reports one that is missing."""


def run_step(db: sqlite3.Connection, step: Step) -> None:
    """Run one migration step."""
    if isinstance(step, str):
        db.execute(step)
    else:
        step(db)


def recreate_guards(db: sqlite3.Connection) -> None:
    """Create the log's triggers again if something dropped them (idempotent)."""
    for step in (_GAPLESS, _NO_UPDATE, _NO_DELETE, _HASH_REQUIRED):
        run_step(db, step)


def _text(raw: bytes) -> str:
    # Invalid UTF-8 becomes surrogate escapes, which Amber's checks then name.
    return raw.decode("utf-8", "surrogateescape")


def _describe(db: sqlite3.Connection) -> tuple[int, list[str]]:
    application_id = db.execute("PRAGMA application_id").fetchone()[0]
    tables = [
        row[0]
        for row in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name"
        )
    ]
    return application_id, tables


def connect(path: Path) -> tuple[sqlite3.Connection, str | None]:
    """Open (or create) the store at ``path``, migrated to ``SCHEMA_VERSION``.

    A store whose file or folder cannot be written (permissions, an immutable file, a
    read-only file system) is opened read-only: reads work, and the second value says why
    it cannot be written (None when it can).

    Raises:
        NotAStore: the file is not SQLite, or is another application's database.
        SchemaVersionError: the store is newer than this Amber, or its version is unknown.
        StoreError: the file cannot be opened or switched to WAL, or it needs writing (a
            new store, a migration) and cannot be written.
    """
    if path.is_dir():
        raise NotAStore(f"{str(path)!r} is a directory; pass the path of a store file.")
    try:
        with path.open("rb") as handle:
            header = handle.read(len(_SQLITE_MAGIC))
    except FileNotFoundError:
        header = b""
    except OSError as exc:
        raise StoreError(f"Cannot read {str(path)!r}: {exc}.") from exc
    if header and header != _SQLITE_MAGIC:
        raise NotAStore(
            f"{str(path)!r} is not an Amber store: it is not an SQLite database (it starts with "
            f"{header[:16]!r}). Pass the path of an Amber store, or a new path to create one."
        )
    try:
        # One thread at a time uses a store, but not always the one that opened it:
        # a runtime opens it, then hands it to its store thread.
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        if header and cannot_write(exc):
            return _read_only(path, exc)
        raise StoreError(f"Cannot open {str(path)!r}: {exc}.{_hint(path, exc)}") from exc
    db.text_factory = _text
    try:
        _check_identity(db, path)
        mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode != "wal":
            raise StoreError(
                f"Cannot switch {str(path)!r} to write-ahead logging (the journal mode stays "
                f"{mode!r}); put the store on a local file system."
            )
        # FULL: a commit is on disk before append() returns (WAL's default, NORMAL,
        # may lose the last commits on power loss).
        db.execute("PRAGMA synchronous = FULL")
        db.execute("PRAGMA busy_timeout = 10000")
        migrate(db, path)
        refused = _write_refused(db)
    except sqlite3.OperationalError as exc:
        # Not damage: the file cannot be opened (its folder is read-only, say), or written.
        db.close()
        if header and cannot_write(exc):
            return _read_only(path, exc)
        raise StoreError(f"Cannot open {str(path)!r}: {exc}.{_hint(path, exc)}") from exc
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
        # UnicodeDecodeError: SQLite's own message quotes bytes that are not UTF-8
        # (a damaged schema), and the driver fails to decode the message.
        db.close()
        raise _not_readable(path, exc) from exc
    except BaseException:
        db.close()
        raise
    # SQLite opened a file it cannot write for reading only (an immutable file, say).
    return db, None if refused is None else _why_read_only(refused)


def cannot_write(exc: BaseException) -> bool:
    """True if ``exc`` says SQLite cannot write the file, or make the files it needs beside
    it (-wal, -shm): permissions, an immutable file, a read-only file system."""
    name = str(getattr(exc, "sqlite_errorname", "") or "")
    if name.startswith(("SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM")):
        return True
    text = str(exc).lower()
    return "unable to open database file" in text or "readonly database" in text


def _busy(exc: BaseException) -> bool:
    """True if ``exc`` says another connection holds the lock SQLite needed."""
    name = str(getattr(exc, "sqlite_errorname", "") or "")
    return name.startswith("SQLITE_BUSY") or "database is locked" in str(exc).lower()


def _hint(path: Path, exc: BaseException) -> str:
    if _busy(exc):
        return (
            " Another process is writing the store (a runtime, or one that hangs): try again "
            "once it is done."
        )
    if not cannot_write(exc) or not path.parent.is_dir():
        return ""
    return (
        " Check that the file and its folder can be written (permissions, a read-only file "
        "system), or pass another path."
    )


def _why_read_only(cause: BaseException) -> str:
    return (
        f"its file or its folder cannot be written ({cause}: permissions, an immutable file, or "
        "a read-only file system)"
    )


WRITABLE = (
    "make the file and its folder writable, or copy the store (with its -wal file, if any) "
    "to a writable folder"
)
"""How to make a store that cannot be written writable (the end of a sentence)."""


def _write_refused(db: sqlite3.Connection) -> sqlite3.OperationalError | None:
    """Why SQLite refuses to write ``db`` (opened read-only), or None if it writes: a write
    made and rolled back (nothing reaches the file).

    It does not wait for the write lock: a connection SQLite opened read-only starts its
    ``BEGIN IMMEDIATE`` without taking it, so one told the lock is busy (another process
    writes the store) can write, and opens at once rather than after the busy timeout.
    """
    (timeout,) = db.execute("PRAGMA busy_timeout").fetchone()
    db.execute("PRAGMA busy_timeout = 0")
    try:
        db.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if _busy(exc):
            return None
        raise
    finally:
        db.execute(f"PRAGMA busy_timeout = {int(timeout)}")
    try:
        db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    except sqlite3.OperationalError as exc:
        if not cannot_write(exc):
            raise
        return exc
    finally:
        db.execute("ROLLBACK")
    return None


def _read_only(path: Path, cause: BaseException) -> tuple[sqlite3.Connection, str]:
    """``path`` opened for reading only (SQLite could not open it to write: ``cause``), and
    why it cannot be written.

    Where the -shm file cannot be made either (a read-only folder), only an immutable
    open reads it: SQLite then reads no -wal file, so that is done only when there is
    none (no writer can be at work: it would have made one).
    """
    why = _why_read_only(cause)
    uri = path.resolve().as_uri()
    wal = path.with_name(f"{path.name}-wal")
    tries = ["mode=ro"] + ([] if wal.exists() and wal.stat().st_size else ["mode=ro&immutable=1"])
    last: BaseException = cause
    for params in tries:
        try:
            db = sqlite3.connect(
                f"{uri}?{params}", uri=True, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            last = exc
            continue
        db.text_factory = _text
        try:
            _check_identity(db, path)
            version = schema_version(db, path)
        except sqlite3.OperationalError as exc:
            db.close()
            last = exc
            continue
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            db.close()
            raise _not_readable(path, exc) from exc
        except BaseException:
            db.close()
            raise
        if version == SCHEMA_VERSION:
            db.execute("PRAGMA query_only = ON")
            return db, why
        db.close()
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{str(path)!r} has schema version {version}, newer than this Amber reads "
                f"(up to {SCHEMA_VERSION}); upgrade amber to open it."
            )
        if version == 0:
            raise StoreError(
                f"{str(path)!r} holds no Amber store yet (an empty SQLite database), and {why}; "
                f"to make one there, {WRITABLE}."
            )
        raise StoreError(
            f"{str(path)!r} has schema version {version}: this Amber reads it once migrated to "
            f"version {SCHEMA_VERSION}, which writes it, but {why}. To migrate it, {WRITABLE}."
        )
    raise StoreError(
        f"Cannot open {str(path)!r} ({last}): {why}, and it cannot be read without writing "
        f"beside it (its -wal file). To read it, {WRITABLE}."
    ) from last


def _not_readable(path: Path, exc: BaseException) -> NotAStore:
    return NotAStore(
        f"{str(path)!r} cannot be read as an SQLite database ({storable_text(str(exc))}); it "
        "is not an Amber store, or it is damaged."
    )


def _check_identity(db: sqlite3.Connection, path: Path) -> None:
    application_id, tables = _describe(db)
    if application_id == APPLICATION_ID or (application_id == 0 and not tables):
        return
    listed = ", ".join(storable_text(name) for name in tables) if tables else "none"
    raise NotAStore(
        f"{str(path)!r} is an SQLite database but not an Amber store (application id "
        f"{application_id:#x}, tables: {listed}). Pass the path of an Amber store, or a new path "
        "to create one; Amber does not write into other databases."
    )


def schema_version(db: sqlite3.Connection, path: Path) -> int:
    """The version the store records (0 for a new, empty file).

    Raises:
        SchemaVersionError: the store records no version, or one that is not a known number.
    """
    application_id, tables = _describe(db)
    if application_id == 0 and not tables:
        return 0
    row = None
    if "amber_meta" in tables:
        row = db.execute("SELECT value FROM amber_meta WHERE key = 'schema_version'").fetchone()
    raw = None if row is None else row[0]
    if not isinstance(raw, str) or not raw.isdigit() or int(raw) < 1:
        raise SchemaVersionError(
            f"{str(path)!r} is an Amber store with an unknown schema version ({raw!r}; expected "
            f"a number from 1 to {SCHEMA_VERSION}). It may be damaged; restore it from a backup."
        )
    return int(raw)


def migrate(db: sqlite3.Connection, path: Path) -> int:
    """Bring the store up to ``SCHEMA_VERSION`` in one transaction; returns the version.

    Running it again on a store that is up to date changes nothing, and takes no write
    lock (an open while another process writes the store does not wait for it).

    Raises:
        SchemaVersionError: the store is newer than this Amber, or its version is unknown.
    """
    db.execute("BEGIN")  # a read: a version only grows, so an up-to-date one stays so
    try:
        current = schema_version(db, path)
    finally:
        db.execute("ROLLBACK")
    if current == SCHEMA_VERSION:
        return SCHEMA_VERSION
    db.execute("BEGIN IMMEDIATE")
    try:
        # Read inside the write lock: another process may have migrated meanwhile.
        version = schema_version(db, path)
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{str(path)!r} has schema version {version}, newer than this Amber reads "
                f"(up to {SCHEMA_VERSION}); upgrade amber to open it."
            )
        if version < SCHEMA_VERSION:
            db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            for target in range(version + 1, SCHEMA_VERSION + 1):
                for step in MIGRATIONS[target]:
                    run_step(db, step)
                db.execute(
                    "INSERT OR REPLACE INTO amber_meta (key, value) VALUES ('schema_version', ?)",
                    (str(target),),
                )
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return SCHEMA_VERSION
