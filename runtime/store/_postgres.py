"""``PostgresStore``: the event store in a PostgreSQL schema, for several processes (DESIGN §10).

The same tables and statements as ``SQLiteStore`` (``_sql``, ``_db``), through
psycopg 3 and its connection pool. Durability: ``append`` returns once its
transaction has committed (PostgreSQL's default ``synchronous_commit = on``:
the commit is in the write-ahead log on disk). A batch is one transaction
(group commit), all or nothing.

Several processes write one store. A write takes a transaction-level
advisory lock per session it touches (in one order, so writers never
deadlock), so two writers of one session take turns, and the second finds
the first's events (``SeqConflict`` if it built on an older head); writers of
different sessions do not wait for each other. Reads run in ``REPEATABLE READ``
transactions: one consistent view of the store.

Leases (``_leases``) say which worker owns a session; a store that holds a
session's lease checks its fencing token in every write to it. After each
write that stores events the store sends a notification on the schema's
channel (``NOTIFY``, delivered at commit) with the session ids, which
``listen()`` waits for: an owner wakes when another process stores input. A
lease given back is announced the same way, so a worker woken by the last writes
of a stopping owner, which could not take the session then, takes it at once.
"""

from __future__ import annotations

import secrets
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import ConnectionPool

from .._errors import InvalidArgument, LeaseLost, StoreClosed, StoreError
from ._check import Problem
from ._db import Db
from ._leases import (
    Lease,
    acquire,
    check_fence,
    current,
    not_held,
    release,
    renew,
    renew_all,
)
from ._pg_db import PgDb, pg_errors
from ._pg_names import DEFAULT_SCHEMA, schema_problem
from ._pg_schema import (
    PG_TRIGGERS,
    lock_space,
    migrate,
    name_key,
    present_guards,
    recreate_guards,
)
from ._scan import missing_guards
from ._sql import SqlStore

__all__ = ["Listener", "PostgresStore"]

_MAX_NOTIFY = 7000  # bytes of session ids per notification (PostgreSQL's limit is 8000)


def _redacted(dsn: str) -> str:
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        raise InvalidArgument(
            f"{dsn!r} is not a PostgreSQL connection string ({exc}); pass one like "
            "'postgresql://user@host:5432/database'."
        ) from None
    params.pop("password", None)
    return make_conninfo("", **params)


class PostgresStore(SqlStore):
    """An event store in one schema of a PostgreSQL database.

    Args:
        dsn: the database (``postgresql://user@host:port/database`` or a key=value string).
        schema: the schema that holds the store's tables; created (with them) if missing.
        snapshot_every: snapshot a session once this many events have been
            stored since its last snapshot (checked after each ``append``).
        chunk_size: messages (and turns) per snapshot chunk.
        cache_size: how many session heads to keep in memory.
        pool_size: the most connections the store opens at once.
        connect_timeout: seconds to wait for a connection before ``StoreError``.
        create: make the schema and its tables if they are missing (``False``: a
            missing store is ``NotAStore``; read-only tools never create one).

    Raises:
        NotAStore: the schema holds another application's tables (or, with
            ``create=False``, no store).
        SchemaVersionError: the store was written by a newer Amber, or its version is unknown.
        StoreError: the database cannot be reached.

    Like ``SQLiteStore``, a store is used from one thread at a time; several
    processes (or several stores in one process) may share the database.
    """

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        snapshot_every: int = 100,
        chunk_size: int = 64,
        cache_size: int = 128,
        pool_size: int = 2,
        connect_timeout: float = 30.0,
        create: bool = True,
    ) -> None:
        super().__init__(
            snapshot_every=snapshot_every, chunk_size=chunk_size, cache_size=cache_size
        )
        problem = schema_problem(schema)
        if problem is not None:
            raise InvalidArgument(problem)
        if not isinstance(dsn, str):
            raise InvalidArgument(f"dsn must be a str (got {dsn!r}).")
        self._dsn = dsn
        self._schema = schema
        self._lock_space = lock_space(schema)
        self._where = f"{_redacted(dsn)} schema {schema}"
        self._channel = f"amber_{self._lock_space & 0xFFFFFFFF:08x}"
        self._held: dict[str, Lease] = {}
        self._notify: set[str] = set()
        self._writer = secrets.token_hex(8)  # names this store's writes in notifications
        setup = sql.SQL("SET search_path TO {}").format(sql.Identifier(schema))

        def configure(conn: psycopg.Connection[Any]) -> None:
            conn.execute(setup)

        try:
            with psycopg.Connection.connect(
                dsn, autocommit=True, connect_timeout=max(1, int(connect_timeout))
            ) as conn:
                found = migrate(conn, schema, self._where, create=create)
        except psycopg.Error as exc:
            raise StoreError(f"Cannot open the store {self._where!r}: {exc}.") from exc
        self.made = found == 0
        """True if opening made the store (the schema held none); of several processes
        opening a new schema at once, one made it."""
        self._pool: ConnectionPool[Any] | None = ConnectionPool(
            dsn,
            min_size=1,
            max_size=max(1, pool_size),
            kwargs={"autocommit": True},
            configure=configure,
            check=ConnectionPool.check_connection,
            timeout=connect_timeout,
            open=True,
            name=f"amber:{schema}",
        )

    # -- plumbing ----------------------------------------------------------------------

    @property
    def dsn(self) -> str:
        """The database, as given (with its password, if it has one)."""
        return self._dsn

    @property
    def schema(self) -> str:
        """The schema that holds the store's tables."""
        return self._schema

    @property
    def shared(self) -> bool:
        """True: several runtimes share this store, owning sessions through leases."""
        return True

    @property
    def channel(self) -> str:
        """The ``LISTEN`` channel on which the store announces sessions with new events."""
        return self._channel

    @property
    def _name(self) -> str:
        return self._where

    @property
    def closed(self) -> bool:
        """True once ``close()`` was called."""
        return self._pool is None

    def _pool_or_closed(self) -> ConnectionPool[Any]:
        if self._pool is None:
            raise StoreClosed(
                f"The store {self._where!r} is closed; open a new PostgresStore to use it again."
            )
        return self._pool

    @contextmanager
    def _read(self) -> Iterator[Db]:
        pool = self._pool_or_closed()
        with pg_errors(self._where, write=False), pool.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield PgDb(conn)

    @contextmanager
    def _write(self, sessions: Collection[str] | None) -> Iterator[Db]:
        pool = self._pool_or_closed()
        with pg_errors(self._where, write=True), pool.connection() as conn, conn.transaction():
            if sessions is None:
                conn.execute("LOCK TABLE events IN SHARE ROW EXCLUSIVE MODE")
            elif sessions:
                # One order for every writer: two writers never wait for each other in a cycle.
                conn.execute(
                    "SELECT pg_advisory_xact_lock(%s, h) FROM "
                    "(SELECT DISTINCT hashtext(s) AS h FROM unnest(%s::text[]) AS s ORDER BY h) "
                    "AS k",
                    (self._lock_space, list(sessions)),
                )
            self._notify.clear()
            yield PgDb(conn)
            self._announce(conn)

    def _announce(self, conn: psycopg.Connection[Any]) -> None:
        """Notify the channel of the sessions this transaction stored events of (at commit).

        The payload is this store's writer id and a line per session id, so that a
        listener of this same store can leave out its own writes.
        """
        if not self._notify:
            return
        ids = sorted(self._notify)
        self._notify.clear()
        lines: list[str] = []
        size = len(self._writer) + 1
        for session_id in ids:
            size += len(session_id.encode()) + 1
            if lines and size > _MAX_NOTIFY:
                self._send(conn, lines)
                lines, size = [], len(self._writer) + len(session_id.encode()) + 2
            lines.append(session_id)
        self._send(conn, lines)

    def _send(self, conn: psycopg.Connection[Any], session_ids: list[str]) -> None:
        payload = "\n".join([self._writer, *session_ids])
        conn.execute("SELECT pg_notify(%s, %s)", (self._channel, payload))

    def _fence(self, db: Db, sessions: Collection[str]) -> None:
        check_fence(db, self._held, sessions)
        self._notify.update(sessions)

    def _store_problems(self, db: Db) -> list[Problem]:
        assert isinstance(db, PgDb)
        return missing_guards(PG_TRIGGERS, present_guards(db.conn, self._schema))

    def _recreate_guards(self, db: Db) -> None:
        assert isinstance(db, PgDb)
        recreate_guards(db.conn, self._schema)

    def _release(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None
            self._held.clear()

    # -- leases ------------------------------------------------------------------------

    @property
    def held(self) -> MappingProxyType[str, Lease]:
        """The leases this store holds, by session: its writes to them are fenced."""
        return MappingProxyType(self._held)

    def acquire(
        self, session_id: str, *, owner: str, now: datetime, ttl: timedelta
    ) -> Lease | None:
        """Take the session's lease for ``owner`` if it is free or expired at ``now``.

        Returns:
            The lease (its token one more than the last owner's), or None when
            another owner holds it until after ``now``. From now on this store's
            writes to the session are fenced by the lease.
        """
        with self._write([session_id]) as db:
            lease = acquire(db, session_id, owner=owner, now=now, ttl=ttl)
        if lease is not None:
            self._held[session_id] = lease
        return lease

    def renew(self, lease: Lease, *, now: datetime, ttl: timedelta) -> Lease:
        """Push the lease's expiry to ``now + ttl``.

        A renewal that fails leaves the store holding ``lease`` as it was: a lost one
        keeps refusing writes to the session (``LeaseLost``) until ``release``, and one
        that met a database error may be renewed again before it expires.

        Only the lease this store holds is renewed: one given back (``release``), or an
        older one of a session taken again since, is refused without a database call (its
        row still names this owner and token after a release, so a renewal would bring it
        back).

        Raises:
            LeaseLost: another owner took it over, or this store no longer holds it.
            StoreClosed: the store was closed (which gave its leases back).
            StoreError: the database could not be reached (the lease is unchanged).
        """
        self._pool_or_closed()  # a closed store says so (close() gives every lease back)
        held = self._held.get(lease.session_id)
        if held is None or (held.owner, held.token) != (lease.owner, lease.token):
            raise not_held(lease, held)
        with self._write(()) as db:
            renewed = renew(db, lease, now=now, ttl=ttl)
        self._held[lease.session_id] = renewed
        return renewed

    def renew_all(
        self, leases: Iterable[Lease], *, now: datetime, ttl: timedelta
    ) -> dict[str, Lease | LeaseLost]:
        """Renew several leases in one transaction (one round trip, one ``now``), as
        ``renew`` renews one: a worker renews all it holds at once, so that renewing many
        sessions neither takes a round trip each nor lets the last ones drift toward
        their expiry.

        Returns:
            By session: the renewed lease (held from now on), or the ``LeaseLost`` that
            ``renew`` would raise for it (taken over, or not held here: a given-back
            lease is refused without a database call). A lost lease stays held, as with
            ``renew``.

        Raises:
            StoreClosed: the store was closed (which gave its leases back).
            StoreError: the database could not be reached (every lease is unchanged).
        """
        self._pool_or_closed()
        got: dict[str, Lease | LeaseLost] = {}
        mine: list[Lease] = []
        for lease in leases:
            held = self._held.get(lease.session_id)
            if held is None or (held.owner, held.token) != (lease.owner, lease.token):
                got[lease.session_id] = not_held(lease, held)
            else:
                mine.append(lease)
        if mine:
            with self._write(()) as db:
                renewed = renew_all(db, mine, now=now, ttl=ttl)
            for session_id, outcome in renewed.items():
                if isinstance(outcome, Lease):
                    self._held[session_id] = outcome
            got.update(renewed)
        return got

    def release(self, lease: Lease, *, announce: bool = True) -> bool:
        """Give the lease up (it expires at once). False when it was lost already.

        A lease given back is announced on the channel (in the same transaction), so a
        worker that could not take the session a moment before, while this store held it,
        takes it now instead of at its next poll. ``announce=False`` leaves the others to
        their next poll (a session whose load failed: workers that all fail to load it
        would hand it to each other as fast as they could).
        """
        self._held.pop(lease.session_id, None)
        with self._write(()) as db:
            released = release(db, lease)
            if released and announce:
                self._notify.add(lease.session_id)
            return released

    def lease(self, session_id: str) -> Lease | None:
        """The session's lease as stored (whoever holds it), or None if it never had one."""
        with self._read() as db:
            return current(db, session_id)

    # -- notifications -----------------------------------------------------------------

    def wake_listeners(self) -> None:
        """Send an empty notification: every listener's ``wait`` returns (with no ids)."""
        with self._write(()) as db:
            assert isinstance(db, PgDb)
            db.conn.execute("SELECT pg_notify(%s, '')", (self._channel,))  # no writer, no ids

    def listener(self, *, others_only: bool = False) -> Listener:
        """A connection that waits for this store's notifications (close it when done).

        ``others_only``: leave out the sessions this store object wrote itself.
        """
        self._pool_or_closed()
        return Listener(
            self._dsn,
            self._channel,
            self._where,
            skip=self._writer if others_only else None,
            schema=self._schema,
        )

    def __repr__(self) -> str:
        state = "closed" if self._pool is None else "open"
        return f"<PostgresStore {self._where!r} {state}>"


class Listener:
    """``LISTEN`` on a store's channel: ``wait()`` returns the sessions that got events.

    Its own connection (outside the pool), for the thread that waits; a
    notification sent while it was not connected is lost, so callers also poll
    now and then (``wait`` returns an empty set on its timeout).
    """

    def __init__(
        self, dsn: str, channel: str, where: str, *, skip: str | None = None, schema: str = ""
    ) -> None:
        self._where = where
        self._skip = skip
        self._schema = schema
        try:
            self._conn: psycopg.Connection[Any] = psycopg.Connection.connect(dsn, autocommit=True)
            self._conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
        except psycopg.Error as exc:
            raise StoreError(f"Cannot listen on {where!r}: {exc}.") from exc

    def wait(self, timeout: float) -> set[str]:
        """The session ids notified within ``timeout`` seconds (empty: none came).

        Raises:
            StoreError: the connection broke (make a new listener).
        """
        found: set[str] = set()
        try:
            for note in self._conn.notifies(timeout=timeout, stop_after=1):  # wakes on any
                self._read(note.payload, found)
            # Whatever else already arrived, without waiting.
            for note in self._conn.notifies(timeout=0):
                self._read(note.payload, found)
        except psycopg.Error as exc:
            raise StoreError(
                f"Lost the notification connection to {self._where!r}: {exc}."
            ) from exc
        return found

    def _read(self, payload: str, found: set[str]) -> None:
        writer, _, ids = payload.partition("\n")
        if writer != self._skip:
            found.update(filter(None, ids.split("\n")))

    def hold(self, name: str) -> bool:
        """Take the store's lock on a runner's ``name`` for as long as this connection
        lives (a session-level advisory lock keyed by a 64-bit digest of the schema and
        the name, ``name_key``: a process that dies lets it go with its connection);
        False when another connection holds it. Taking it again here is fine.

        Raises:
            StoreError: the connection broke.
        """
        try:
            row = self._conn.execute(
                "SELECT pg_try_advisory_lock(%s::bigint)", (name_key(self._schema, name),)
            ).fetchone()
        except psycopg.Error as exc:
            raise StoreError(
                f"Lost the notification connection to {self._where!r}: {exc}."
            ) from exc
        return row is not None and bool(row[0])

    def fileno(self) -> int:
        """The connection's socket (to wait on it with ``select``)."""
        return self._conn.fileno()

    def close(self) -> None:
        """Close the connection. Closing twice is fine."""
        self._conn.close()
