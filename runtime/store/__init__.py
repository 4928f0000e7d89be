"""Durable event stores: an append-only log per session, snapshots, recovery (DESIGN §9).

``SQLiteStore`` keeps sessions in one SQLite file (WAL, ``synchronous=FULL``,
one transaction per batch); ``MemoryStore`` keeps them in memory for tests.
Both follow the ``Store`` protocol: every event is applied before it is
stored, a batch is all or nothing, reads never skip a bad row.
``recover_orphans`` gives back the inputs of turns whose runner died.
``PostgresStore`` keeps sessions in a PostgreSQL schema, for several worker
processes, with leases that fence a session's writes to its one owner; it
needs the ``postgres`` extra (psycopg), imported only when it is used.
See ``docs/store.md`` and ``docs/scaling.md``.
"""

# Names load on first use (PEP 562): ``amber show`` opens a SQLiteStore without
# importing the memory store, the checker, export and import, or psycopg.
import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from .._errors import CorruptRow as CorruptRow
    from .._errors import NotAStore as NotAStore
    from .._errors import SchemaVersionError as SchemaVersionError
    from .._errors import SeqConflict as SeqConflict
    from .._errors import SessionExists as SessionExists
    from .._errors import StoreClosed as StoreClosed
    from .._errors import StoreError as StoreError
    from .._errors import UnknownSession as UnknownSession
    from ._chain import CHAIN_FORMAT as CHAIN_FORMAT
    from ._check import CheckReport as CheckReport
    from ._check import Problem as Problem
    from ._check import RebuildReport as RebuildReport
    from ._leases import Lease as Lease
    from ._memory import MemoryStore as MemoryStore
    from ._pg_names import DEFAULT_SCHEMA as DEFAULT_SCHEMA
    from ._pg_names import is_postgres_url as is_postgres_url
    from ._postgres import Listener as Listener
    from ._postgres import PostgresStore as PostgresStore
    from ._protocol import SessionInfo as SessionInfo
    from ._protocol import Store as Store
    from ._recovery import DEFAULT_ORPHAN_AGE as DEFAULT_ORPHAN_AGE
    from ._recovery import recover_orphans as recover_orphans
    from ._recovery import waits_for_approval as waits_for_approval
    from ._schema import SCHEMA_VERSION as SCHEMA_VERSION
    from ._sql import SqlStore as SqlStore
    from ._sqlite import SQLiteStore as SQLiteStore
    from ._transfer import EXPORT_FORMAT as EXPORT_FORMAT
    from ._transfer import EXPORT_VERSION as EXPORT_VERSION

__all__ = [
    "CHAIN_FORMAT",
    "DEFAULT_ORPHAN_AGE",
    "DEFAULT_SCHEMA",
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "SCHEMA_VERSION",
    "CheckReport",
    "CorruptRow",
    "Lease",
    "Listener",
    "MemoryStore",
    "NotAStore",
    "PostgresStore",
    "Problem",
    "RebuildReport",
    "SQLiteStore",
    "SchemaVersionError",
    "SeqConflict",
    "SessionExists",
    "SessionInfo",
    "SqlStore",
    "Store",
    "StoreClosed",
    "StoreError",
    "UnknownSession",
    "is_postgres_url",
    "recover_orphans",
    "waits_for_approval",
]

_SOURCES: dict[str, str] = {
    "CorruptRow": ".._errors",
    "NotAStore": ".._errors",
    "SchemaVersionError": ".._errors",
    "SeqConflict": ".._errors",
    "SessionExists": ".._errors",
    "StoreClosed": ".._errors",
    "StoreError": ".._errors",
    "UnknownSession": ".._errors",
    "CHAIN_FORMAT": "._chain",
    "CheckReport": "._check",
    "Problem": "._check",
    "RebuildReport": "._check",
    "Lease": "._leases",
    "MemoryStore": "._memory",
    "DEFAULT_SCHEMA": "._pg_names",
    "is_postgres_url": "._pg_names",
    "SessionInfo": "._protocol",
    "Store": "._protocol",
    "DEFAULT_ORPHAN_AGE": "._recovery",
    "recover_orphans": "._recovery",
    "waits_for_approval": "._recovery",
    "SCHEMA_VERSION": "._schema",
    "SqlStore": "._sql",
    "SQLiteStore": "._sqlite",
    "EXPORT_FORMAT": "._transfer",
    "EXPORT_VERSION": "._transfer",
    "Listener": "._postgres",
    "PostgresStore": "._postgres",
}
"""Public name -> the module of this package that defines it."""


def __getattr__(name: str) -> _typing.Any:
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        module = _importlib.import_module(source, __name__)
    except ImportError as exc:
        if source != "._postgres":
            raise
        # PostgresStore needs psycopg (the postgres extra), so the embedded default needs
        # nothing but the base install.
        raise ImportError(
            f"runtime.store.{name} needs psycopg 3 and psycopg-pool ({exc}); install them "
            "with: python3 -m pip install '.[postgres]' in your Amber checkout "
            "('amber[postgres]' where Amber comes from a package index)."
        ) from exc
    value = getattr(module, name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
