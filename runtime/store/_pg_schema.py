"""The PostgreSQL store's schema: recognising it, creating it, migrating it.

An Amber store in PostgreSQL is one schema (``amber`` unless told otherwise)
whose ``amber_meta`` table says ``application = amber`` and records the
schema version. Opening a store checks both before anything is written, so
a schema holding other tables is never touched. A migration is one
transaction (PostgreSQL's DDL is transactional: a crash leaves the schema as
it was), taken under an advisory lock so that workers starting together
migrate once. Every step is idempotent.

Tables (version 1), the SQLite store's tables with PostgreSQL's types, plus
``leases``::

    amber_meta       key -> value ('schema_version', 'application')
    sessions         one summary row per session (seq, times, counts, active turn, cost,
                     whether it waits for approval, row_digest (version 2))
    events           (session_id, seq) -> kind, canonical JSON text, hash (chained, see _chain)
    snapshots        session_id -> the latest snapshot's seq, record and its digest
    snapshot_chunks  (session_id, part, chunk) -> version seq, chunk (zlib JSON), its digest
                     (parts: messages, turns, audit)
    snapshot_history (session_id, seq) -> an older snapshot's record (a checkpoint)
    chunk_versions   (session_id, part, chunk, seq) -> a chunk version a checkpoint names
    leases           session_id -> owner, fencing token, expiry (see _leases)

The database enforces what it can on its own: the primary key makes
``(session_id, seq)`` unique, the trigger ``events_gapless`` refuses an event
whose seq is not the session's last plus one or that has no hash, and
``events_append_only`` refuses to change or delete events. Identifiers are
quoted by ``psycopg.sql``; values are always parameters.
"""

from __future__ import annotations

import difflib
import hashlib
import zlib
from typing import Any

import psycopg
from psycopg import sql

from .._errors import NotAStore, SchemaVersionError
from ._summaries import OLDER_WRITER

__all__ = [
    "PG_SCHEMA_VERSION",
    "PG_TRIGGERS",
    "lock_space",
    "migrate",
    "present_guards",
    "stores_there",
]

PG_SCHEMA_VERSION = 2
"""The PostgreSQL schema this Amber writes, and the newest it reads."""
PG_TRIGGERS = ("events_append_only", "events_gapless")
"""The triggers that guard the log; ``check()`` reports one that is missing."""

_TABLES = (
    """CREATE TABLE IF NOT EXISTS {schema}.amber_meta (
        key   text PRIMARY KEY,
        value text NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS {schema}.sessions (
        session_id      text PRIMARY KEY CHECK (length(session_id) > 0),
        seq             bigint NOT NULL CHECK (seq >= 1),
        created_at      text NOT NULL,
        updated_at      text NOT NULL,
        messages        bigint NOT NULL,
        counts          text NOT NULL,
        active_turn_id  text,
        turn_started_at text,
        digest          text
    )""",
    """CREATE TABLE IF NOT EXISTS {schema}.events (
        session_id text NOT NULL,
        seq        bigint NOT NULL CHECK (seq >= 1),
        kind       text NOT NULL,
        body       text NOT NULL,
        hash       text NOT NULL,
        PRIMARY KEY (session_id, seq)
    )""",
    """CREATE TABLE IF NOT EXISTS {schema}.snapshots (
        session_id text PRIMARY KEY,
        seq        bigint NOT NULL CHECK (seq >= 1),
        record     text NOT NULL,
        digest     text
    )""",
    """CREATE TABLE IF NOT EXISTS {schema}.snapshot_chunks (
        session_id text NOT NULL,
        part       text NOT NULL CHECK (part IN ('messages', 'turns', 'audit')),
        chunk      bigint NOT NULL CHECK (chunk >= 0),
        seq        bigint NOT NULL,
        body       bytea NOT NULL,
        digest     text,
        PRIMARY KEY (session_id, part, chunk)
    )""",
    """CREATE TABLE IF NOT EXISTS {schema}.snapshot_history (
        session_id text NOT NULL,
        seq        bigint NOT NULL,
        record     text NOT NULL,
        digest     text NOT NULL,
        PRIMARY KEY (session_id, seq)
    )""",
    """CREATE TABLE IF NOT EXISTS {schema}.chunk_versions (
        session_id text NOT NULL,
        part       text NOT NULL,
        chunk      bigint NOT NULL,
        seq        bigint NOT NULL,
        body       bytea NOT NULL,
        digest     text,
        PRIMARY KEY (session_id, part, chunk, seq)
    )""",
    """CREATE TABLE IF NOT EXISTS {schema}.leases (
        session_id text PRIMARY KEY,
        owner      text NOT NULL,
        token      bigint NOT NULL CHECK (token >= 1),
        expires_at timestamptz NOT NULL
    )""",
    "INSERT INTO {schema}.amber_meta (key, value) VALUES ('application', 'amber') "
    "ON CONFLICT (key) DO NOTHING",
    # The shared row code reads a column as bytes with CAST(column AS BLOB): text as its
    # UTF-8 bytes, a bytea column (snapshot chunks, zlib-compressed) as it is.
    "CREATE OR REPLACE FUNCTION {schema}.amber_blob(text) RETURNS bytea "
    "LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ SELECT convert_to($1, 'UTF8') $$",
    "CREATE OR REPLACE FUNCTION {schema}.amber_blob(bytea) RETURNS bytea "
    "LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ SELECT $1 $$",
)

_GUARDS = (
    """CREATE OR REPLACE FUNCTION {schema}.amber_events_gapless() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        IF NEW.seq IS DISTINCT FROM coalesce(
            (SELECT max(seq) FROM {schema}.events WHERE session_id = NEW.session_id), 0) + 1
        THEN
            RAISE EXCEPTION 'amber: an event''s seq must be its session''s last seq plus one'
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        IF NEW.hash IS NULL OR length(NEW.hash) <> 64 THEN
            RAISE EXCEPTION 'amber: an event needs its chained hash'
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN NEW;
    END
    $$""",
    """CREATE OR REPLACE FUNCTION {schema}.amber_events_append_only() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'amber: events are append-only'
            USING ERRCODE = 'integrity_constraint_violation';
    END
    $$""",
    "DROP TRIGGER IF EXISTS events_gapless ON {schema}.events",
    "CREATE TRIGGER events_gapless BEFORE INSERT ON {schema}.events "
    "FOR EACH ROW EXECUTE FUNCTION {schema}.amber_events_gapless()",
    "DROP TRIGGER IF EXISTS events_append_only ON {schema}.events",
    "CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON {schema}.events "
    "FOR EACH ROW EXECUTE FUNCTION {schema}.amber_events_append_only()",
)

_SUMMARY_COST = (
    "ALTER TABLE {schema}.sessions ADD COLUMN IF NOT EXISTS cost text",
    "ALTER TABLE {schema}.sessions ADD COLUMN IF NOT EXISTS waits integer",
    # The row's digest moves to row_digest; digest stays for an older Amber's writes to
    # name (a worker still running one writes rows without the cost).
    "DO $$ BEGIN ALTER TABLE {schema}.sessions RENAME COLUMN digest TO row_digest; "
    "EXCEPTION WHEN duplicate_column THEN NULL; END $$",
    "ALTER TABLE {schema}.sessions ADD COLUMN IF NOT EXISTS digest text",
    "CREATE OR REPLACE FUNCTION {schema}.amber_sessions_older_writer() RETURNS trigger "
    "LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION '"
    + OLDER_WRITER
    + "' USING ERRCODE = 'integrity_constraint_violation'; END $$",
    "DROP TRIGGER IF EXISTS sessions_older_writer ON {schema}.sessions",
    "CREATE TRIGGER sessions_older_writer BEFORE INSERT OR UPDATE OF digest "
    "ON {schema}.sessions FOR EACH ROW WHEN (NEW.digest IS NOT NULL) "
    "EXECUTE FUNCTION {schema}.amber_sessions_older_writer()",
)
"""Version 2: summary rows hold the session's cost and whether it waits for approval (the
rows stored are filled by ``_fill``, in the same transaction), and their digest is
``row_digest``: the ``digest`` column an older Amber writes is refused, saying to upgrade
it (it would leave the cost stale, and the row damaged to every newer reader)."""

MIGRATIONS: dict[int, tuple[str, ...]] = {1: _TABLES + _GUARDS, 2: _SUMMARY_COST}
"""Statements that take a store from version ``n - 1`` to ``n``; each is idempotent."""


def _run(conn: psycopg.Connection[Any], schema: str, statements: tuple[str, ...]) -> None:
    # One round trip: the statements take no parameters (the schema is a quoted identifier).
    script = sql.SQL(";\n").join(
        sql.SQL(statement).format(schema=sql.Identifier(schema)) for statement in statements
    )
    conn.execute(script)


def recreate_guards(conn: psycopg.Connection[Any], schema: str) -> None:
    """Create the log's triggers again if something dropped them (idempotent)."""
    _run(conn, schema, _GUARDS)


def present_guards(conn: psycopg.Connection[Any], schema: str) -> set[str]:
    """The names of the triggers on the schema's ``events`` table."""
    rows = conn.execute(
        "SELECT t.tgname FROM pg_trigger AS t JOIN pg_class AS c ON c.oid = t.tgrelid "
        "JOIN pg_namespace AS n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relname = 'events' AND NOT t.tgisinternal",
        (schema,),
    )
    return {row[0] for row in rows}


def lock_space(schema: str) -> int:
    """The first key of the schema's advisory locks (a signed 32-bit hash of its name)."""
    value = zlib.crc32(b"amber\x00" + schema.encode())
    return value - (1 << 32) if value >= 1 << 31 else value


def name_key(schema: str, name: str) -> int:
    """The advisory lock key of runner ``name`` in ``schema``: a signed 64-bit digest.

    It is the one-``bigint`` form of ``pg_try_advisory_lock``, whose keys PostgreSQL
    keeps apart from the two-key form of ``lock_space``'s session locks (a runner named
    like a session never blocks its writers). The 32-bit ``hashtext`` of the name it
    replaces gave two different names one key (even odds among 77,000 names), and a
    runner was refused as if its name were taken; with 64 bits the odds that any two
    of n names share one are about n²/2⁶⁵ (3 in 10⁸ for a million names).
    """
    digest = hashlib.blake2b(
        schema.encode() + b"\x00" + name.encode(), digest_size=8, person=b"amber-runner"
    ).digest()
    return int.from_bytes(digest, "big", signed=True)


def _tables(conn: psycopg.Connection[Any], schema: str) -> list[str]:
    rows = conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
        "ORDER BY table_name",
        (schema,),
    )
    return [str(row[0]) for row in rows]


def stores_there(conn: psycopg.Connection[Any], schema: str, *, most: int = 8) -> str:
    """A sentence naming the schemas of the database that hold an Amber store, those closest
    to ``schema`` (a typo of one) first."""
    rows = conn.execute(
        "SELECT DISTINCT table_schema FROM information_schema.tables "
        "WHERE table_name = 'amber_meta' ORDER BY table_schema"
    )
    stores = [str(row[0]) for row in rows]
    if not stores:
        return "No schema in this database holds an Amber store."
    close = difflib.get_close_matches(schema, stores, n=most, cutoff=0.6)
    ordered = close + [name for name in stores if name not in close]
    more = f" (and {len(ordered) - most} more)" if len(ordered) > most else ""
    names = ", ".join(repr(name) for name in ordered[:most])
    return f"Schemas with an Amber store in this database: {names}{more}."


def schema_version(conn: psycopg.Connection[Any], schema: str, name: str) -> int:
    """The version the store records (0 for a missing or empty schema).

    Raises:
        NotAStore: the schema holds tables of another application.
        SchemaVersionError: the store records no version, or one that is not a known number.
    """
    tables = _tables(conn, schema)
    if not tables:
        return 0
    meta: dict[str, str] = {}
    if "amber_meta" in tables:
        meta = {
            str(key): str(value)
            for key, value in conn.execute(
                sql.SQL("SELECT key, value FROM {}.amber_meta").format(sql.Identifier(schema))
            )
        }
    if meta.get("application") != "amber":
        raise NotAStore(
            f"{name!r}: the schema {schema!r} holds tables but is not an Amber store (tables: "
            f"{', '.join(tables)}). Pass another schema (PostgresStore(dsn, schema=...)); Amber "
            "does not write into other applications' tables."
        )
    raw = meta.get("schema_version")
    if raw is None or not raw.isdigit() or int(raw) < 1:
        raise SchemaVersionError(
            f"{name!r} is an Amber store with an unknown schema version ({raw!r}; expected a "
            f"number from 1 to {PG_SCHEMA_VERSION}). It may be damaged; restore it from a backup."
        )
    return int(raw)


def migrate(conn: psycopg.Connection[Any], schema: str, name: str, *, create: bool = True) -> int:
    """Bring the schema up to ``PG_SCHEMA_VERSION`` in one transaction; returns the version
    it found (0: this call made the store; of several processes opening a new schema at
    once, one gets 0).

    ``conn`` is in autocommit mode. Running it again on a store that is up to date
    changes nothing.

    Raises:
        NotAStore: the schema holds another application's tables, or (``create=False``)
            holds no store.
        SchemaVersionError: the store is newer than this Amber, or its version is unknown.
    """
    with conn.transaction():
        # Workers that start together: the first migrates, the others then find it done.
        conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (lock_space(schema),))
        version = schema_version(conn, schema, name)
        if version == 0 and not create:
            raise NotAStore(
                f"{name!r} holds no Amber store: the schema {schema!r} is missing or empty. "
                f"{stores_there(conn, schema)} Pass the schema of a store (PostgresStore(dsn, "
                "schema=...); for the amber CLI set $AMBER_PG_SCHEMA to one of them), or make "
                "one there: PostgresStore(dsn, schema=..., create=True), 'amber migrate --from "
                "FILE --to URL' or 'amber import FILE --db URL'."
            )
        if version > PG_SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{name!r} has schema version {version}, newer than this Amber reads (up to "
                f"{PG_SCHEMA_VERSION}); upgrade amber to open it."
            )
        if version < PG_SCHEMA_VERSION:
            # No wait for the WAL flush here: the store's first durable commit flushes the
            # WAL up to it, and a schema lost to a crash before then is made again.
            conn.execute("SET LOCAL synchronous_commit = off")
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
            for target in range(version + 1, PG_SCHEMA_VERSION + 1):
                _run(conn, schema, MIGRATIONS[target])
                conn.execute(
                    sql.SQL(
                        "INSERT INTO {}.amber_meta (key, value) VALUES ('schema_version', %s) "
                        "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
                    ).format(sql.Identifier(schema)),
                    (str(target),),
                )
            if version >= 1:  # summary rows an older Amber wrote: fill their new columns
                from ._fill import fill_summaries
                from ._pg_db import PgDb

                conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(schema)))
                fill_summaries(PgDb(conn))
    return version
