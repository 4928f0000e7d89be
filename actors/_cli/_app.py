"""What every ``amber`` command shares: exit codes, errors, options, output, the store.

Exit codes are part of the CLI's contract (scripts rely on them):

====  ============  ==========================================================
code  name          when
====  ============  ==========================================================
0     ``OK``        the command did what was asked
1     ``FAILED``    a check failed (``replay --verify`` found a divergence) or
                    an operation could not finish; the message says why
2     ``USAGE``     bad arguments or options (click's own usage errors)
3     ``NOT_FOUND`` no such store file, session, seq, message or import file
4     ``BAD_STORE`` the file is not an Amber store or export, is damaged, or
                    was written by a newer Amber
5     ``CONFLICT``  the target session exists already (``fork --as``, ``import``)
130   ``INTERRUPTED`` stopped by Ctrl-C
====  ============  ==========================================================

Errors are one line on stderr: what went wrong, what was found, how to fix it.
"""

from __future__ import annotations

import enum
import gc
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click
import orjson

from runtime import (
    AmberError,
    CorruptRow,
    DecodeError,
    InvalidArgument,
    InvalidInput,
    NotAStore,
    ReplayMismatch,
    SchemaVersionError,
    SeqOutOfRange,
    SessionExists,
    Timeline,
    UnknownMessage,
    UnknownSession,
    canonical,
    storable_text,
)
from runtime._article import article
from runtime._log import before_first_record
from runtime.store import DEFAULT_SCHEMA, SQLiteStore, SqlStore, Store, is_postgres_url
from runtime.store._pg_names import schema_problem, url_problem

from ._hints import command_line, name_store, quoted, shell_line
from ._params import Seconds as Seconds
from ._params import parse_seq as parse_seq
from ._params import read_seq as read_seq
from ._params import session_argument as session_argument
from ._params import session_id_option as session_id_option

if TYPE_CHECKING:
    import logging

    from rich.console import Console

    from ._plain import PlainConsole

__all__ = [
    "DEFAULT_DB",
    "CliError",
    "ExitCode",
    "Seconds",
    "db_option",
    "emit_json",
    "fail",
    "json_option",
    "no_gc",
    "open_store",
    "parse_seq",
    "pg_schema",
    "plain_stdout",
    "read_seq",
    "report",
    "require_folder",
    "require_session",
    "require_sqlite_file",
    "resolve_seq",
    "session_argument",
    "session_id_option",
    "stdout_console",
    "text_console",
    "translate",
]

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_DB = "amber.db"
"""The store file every command uses unless told otherwise (``--db`` or ``AMBER_DB``)."""


class ExitCode(enum.IntEnum):
    """The ``amber`` exit codes (see the module docstring)."""

    OK = 0
    """Done."""
    FAILED = 1
    """A check failed or an operation could not finish."""
    USAGE = 2
    """Bad arguments."""
    NOT_FOUND = 3
    """No such store file, session, seq, message or file."""
    BAD_STORE = 4
    """Not an Amber store or export, damaged, or from a newer Amber."""
    CONFLICT = 5
    """The target session exists already."""
    INTERRUPTED = 130
    """Ctrl-C."""


class CliError(Exception):
    """An error the CLI reports as one line on stderr, with its exit code.

    ``AmberGroup`` prints it as ``amber: <message>`` and exits with ``code``.
    """

    def __init__(self, message: str, code: ExitCode = ExitCode.FAILED) -> None:
        super().__init__(" ".join(message.split()))
        self.code = code
        """The exit code."""


def fail(error: CliError) -> NoReturn:
    """Print ``error`` on stderr as one line and exit with its code.

    Text that cannot be printed (bytes of a damaged row kept as surrogate
    escapes) is spelled out instead of failing the print.
    """
    report(error)
    raise click.exceptions.Exit(int(error.code))


def report(error: CliError) -> None:
    """Print ``error`` on stderr as one line, as ``fail`` does, and go on."""
    click.echo(f"amber: {storable_text(str(error))}", err=True)


_CODES: tuple[tuple[type[BaseException], ExitCode], ...] = (
    (InvalidArgument, ExitCode.USAGE),
    (InvalidInput, ExitCode.USAGE),
    (UnknownSession, ExitCode.NOT_FOUND),
    (UnknownMessage, ExitCode.NOT_FOUND),
    (SeqOutOfRange, ExitCode.NOT_FOUND),
    (NotAStore, ExitCode.BAD_STORE),
    (CorruptRow, ExitCode.BAD_STORE),
    (SchemaVersionError, ExitCode.BAD_STORE),
    (DecodeError, ExitCode.BAD_STORE),
    (SessionExists, ExitCode.CONFLICT),
    (ReplayMismatch, ExitCode.FAILED),
)


def translate(exc: AmberError, db: str | None = None) -> CliError:
    """The ``CliError`` (message and exit code) for an error from the core or the store;
    the commands it suggests name ``db`` (the command's ``--db``) with ``--db``."""
    message = name_store(f"{type(exc).__name__}: {exc}", db)
    for kind, code in _CODES:
        if isinstance(exc, kind):
            return CliError(message, code)
    return CliError(message, ExitCode.FAILED)


DB_KEY = "amber.db"
"""The key of ``click.Context.meta`` (shared by a command's context and the group's) that
holds the ``--db`` the command was given: ``AmberGroup`` names it in the commands that the
store's errors suggest."""


def _remember_db(ctx: click.Context, param: click.Parameter, value: str) -> str:
    ctx.meta[DB_KEY] = value
    return value


# --- options -----------------------------------------------------------------------------


def db_option(*, create: bool = False) -> Callable[[F], F]:
    """``--db PATH|URL``: the store (default ``./amber.db``, or ``$AMBER_DB``): a SQLite
    file or a PostgreSQL URL."""
    what = "created if missing" if create else "must exist"
    return click.option(
        "--db",
        default=DEFAULT_DB,
        envvar="AMBER_DB",
        show_default=True,
        metavar="PATH|URL",
        callback=_remember_db,
        help=f"The Amber store: a SQLite file or a postgresql:// URL (schema $AMBER_PG_SCHEMA, "
        f"default amber); {what}. Also read from $AMBER_DB.",
    )


def json_option(fn: F) -> F:
    """``--json``: print data as JSON instead of tables."""
    return click.option(
        "--json", "as_json", is_flag=True, help="Print the data as JSON (for scripts)."
    )(fn)


# --- the store ---------------------------------------------------------------------------


def require_sqlite_file(db: str, command: str) -> None:
    """``USAGE`` if ``db`` is a PostgreSQL URL: ``command`` runs its runtime on a SQLite file
    (a runtime on PostgreSQL is a program's or ``amber worker``'s)."""
    if is_postgres_url(db):
        raise CliError(
            f"amber {command} runs its runtime on a SQLite file (--db PATH), not on a "
            f"PostgreSQL store (got {db!r}). Run the runtime on PostgreSQL in your program "
            "(Runtime(store='postgresql://…')) or with 'amber worker'; every read command "
            "works on the URL.",
            ExitCode.USAGE,
        )


def open_any_store(db: str, *, create: bool = False) -> SqlStore:
    """The store ``--db`` names, open: a SQLite file, or a PostgreSQL URL (``postgresql://…``;
    its schema is ``$AMBER_PG_SCHEMA``, default ``amber``). Unless ``create``, it must exist:
    read commands never make a new, empty store out of a mistyped path. Close it when done.
    """
    try:
        if is_postgres_url(db):
            try:
                from runtime.store import PostgresStore
            except ImportError as exc:
                raise CliError(str(exc), ExitCode.BAD_STORE) from exc
            schema = pg_schema()
            try:
                return PostgresStore(db, schema=schema, create=create)
            except NotAStore as exc:
                raise no_pg_store(db, schema) or translate(exc, db) from exc
        problem = url_problem(db)
        if problem is not None:
            raise CliError(f"--db {problem}", ExitCode.USAGE)
        path = Path(db)
        if create:
            require_folder(path, f"a store at {db!r}")
        else:
            _check_file(db, path)
        return SQLiteStore(path)
    except AmberError as exc:
        raise translate(exc, db) from exc


def pg_schema() -> str:
    """The schema of a PostgreSQL ``--db``: ``$AMBER_PG_SCHEMA``, default ``amber``; a name
    PostgreSQL would cut (over 63 bytes) is ``USAGE``, naming the variable."""
    schema = os.environ.get("AMBER_PG_SCHEMA") or DEFAULT_SCHEMA
    problem = schema_problem(schema)
    if problem is not None:
        raise CliError(
            f"$AMBER_PG_SCHEMA: {problem} Set AMBER_PG_SCHEMA to another name.", ExitCode.USAGE
        )
    return schema


def no_pg_store(db: str, schema: str) -> CliError | None:
    """The error for a PostgreSQL schema that is missing or has no tables (no store yet),
    saying where a store may be and how to fill this one; None if the schema holds tables
    (another application's: the store's own error says so) or cannot be looked at."""
    import psycopg

    from runtime.store._pg_schema import stores_there

    try:
        with psycopg.connect(db, connect_timeout=10) as conn:
            found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
            exists = found.fetchone() is not None
            row = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = %s", (schema,))
            tables = row.fetchone()
            stores = stores_there(conn, schema)
    except psycopg.Error:
        return None
    if tables is None or tables[0]:
        return None
    set_to = f"it is {schema!r}" if os.environ.get("AMBER_PG_SCHEMA") else f"unset: {schema!r}"
    migrate = command_line("migrate", options=("--from", "STORE.db", "--to", "URL"))
    load = command_line("import", "FILE", options=("--db", "URL"))
    return CliError(
        f"Schema {schema!r} of the PostgreSQL database that --db names holds no Amber store (it "
        f"{'exists but is empty' if exists else 'does not exist'}). {stores} If your store "
        f"is in another schema, set AMBER_PG_SCHEMA to it ({set_to}). To make one here: "
        f"{quoted(migrate)} copies every session of a SQLite store, {quoted(load)} one "
        "session that 'amber export' wrote.",
        ExitCode.BAD_STORE,
    )


@contextmanager
def open_store(db: str, *, create: bool = False) -> Iterator[SqlStore]:
    """``open_any_store`` as a ``with`` block (closed at its end).

    While it is open, the store's warnings (``amber.store``: a damaged snapshot or
    checkpoint passed over for an older stored state) are printed on stderr, each once, as
    one ``amber: warning:`` line naming this store in the command that mends it. The
    handler that prints them is attached when the first record is logged (or at once if
    ``logging`` is loaded already), so a read of a sound store does not import ``logging``.
    """
    store = open_any_store(db, create=create)
    attached: list[logging.Handler] = []

    def attach() -> None:
        import logging

        from ._store_warnings import StoreWarnings

        attached.append(StoreWarnings(db))
        logging.getLogger("amber.store").addHandler(attached[0])

    cancel = before_first_record(attach)
    if "logging" in sys.modules:
        cancel()
        attach()
    try:
        yield store
    finally:
        cancel()
        if attached:
            import logging

            logging.getLogger("amber.store").removeHandler(attached[0])
        store.close()


def require_folder(path: Path, what: str) -> None:
    """``NOT_FOUND`` if the directory ``path`` would be created in does not exist (``what``
    names the file: ``a store at 'x.db'``), saying how to make it."""
    folder = path.parent
    if folder.is_dir():
        return
    if folder.exists():
        raise CliError(
            f"Cannot create {what}: {str(folder)!r} is a file, not a directory. Pass a path "
            "in a directory.",
            ExitCode.NOT_FOUND,
        )
    dashes = ["--"] if str(folder).startswith("-") else []  # else mkdir reads it as options
    make = shell_line(["mkdir", "-p", *dashes, str(folder)])
    raise CliError(
        f"Cannot create {what}: the directory {str(folder)!r} does not exist. Create it first "
        f"({quoted(make)}), or pass a path in an existing directory.",
        ExitCode.NOT_FOUND,
    )


def _check_file(db: str, path: Path) -> None:
    if not path.exists():
        raise CliError(
            f"No Amber store at {db!r}: the file does not exist. Pass --db PATH (or set "
            "AMBER_DB) to point at a store; 'amber demo' makes one.",
            ExitCode.NOT_FOUND,
        )
    if path.is_file() and path.stat().st_size == 0:
        raise CliError(
            f"{db!r} is an empty file, not an Amber store. Pass --db PATH to point at a store.",
            ExitCode.BAD_STORE,
        )


def require_session(store: Store, session_id: str, db: str) -> None:
    """Fail with ``NOT_FOUND`` (and the closest ids) if the store lacks ``session_id``."""
    if session_id in store:
        return
    known = [info.session_id for info in store.list_sessions()]
    import difflib

    close = [s for s in known if s.startswith(session_id)] or difflib.get_close_matches(
        session_id, known, n=3
    )
    if close:
        hint = "did you mean " + " or ".join(repr(s) for s in close[:3]) + "?"
    elif known:
        listing = command_line("sessions", options=("--db", db))
        hint = f"it holds {len(known)} session(s); list them with: {listing}"
    else:
        hint = "it holds no session yet; 'amber demo' makes one."
    raise CliError(f"No session {session_id!r} in {db!r}; {hint}", ExitCode.NOT_FOUND)


def resolve_seq(seq: int, timeline: Timeline, *, option: str = "--at") -> int:
    """A seq the timeline holds: negatives count back from the head (-1 is the head)."""
    return resolve_seq_between(
        seq, timeline.session_id, timeline.first_seq, timeline.last_seq, option=option
    )


def resolve_seq_between(
    seq: int, session_id: str, first: int, last: int, *, option: str = "--at"
) -> int:
    """A seq from ``first`` to ``last``: negatives count back from ``last`` (-1 is ``last``)."""
    resolved = last + 1 + seq if seq < 0 else seq
    if not first <= resolved <= last:
        lowest = first - last - 1  # the negative seq of ``first``
        raise CliError(
            f"Session {session_id!r} has no seq {seq}: it holds seq {first} (before "
            f"the first event) to {last}. Pass {option} between {first} and {last}, or "
            f"between {lowest} and -1 to count back from the head (-1 is the head, {lowest} "
            f"seq {first}).",
            ExitCode.NOT_FOUND,
        )
    return resolved


# --- output ------------------------------------------------------------------------------


def plain_stdout() -> bool:
    """Whether stdout is surely not a terminal for rich (a pipe or a file, and neither
    ``FORCE_COLOR`` nor ``TTY_COMPATIBLE`` set), so that what ``stdout_console`` would print
    is the text without styles: a command may then skip importing rich's console."""
    if "FORCE_COLOR" in os.environ or "TTY_COMPATIBLE" in os.environ:
        return False
    isatty = getattr(sys.stdout, "isatty", None)
    try:
        return isatty is not None and not isatty()
    except ValueError:  # a closed file: rich says the same
        return True


def stdout_console() -> Console:
    """A console on the current stdout (colors only on a terminal, no auto-highlighting, and
    no markup: a path or an id with "[bold]" in it prints as it is)."""
    from rich.console import Console  # not for --json: imported when something is printed

    return Console(highlight=False, markup=False, soft_wrap=True)


def text_console() -> Console | PlainConsole:
    """``stdout_console()``, or, when stdout is not a terminal (``plain_stdout``), a
    ``PlainConsole`` that prints texts as it would without importing rich's console."""
    from ._plain import PlainConsole, plain_works

    if plain_stdout() and plain_works():
        return PlainConsole(stdout_console)
    return stdout_console()


def _default(value: Any) -> Any:
    if isinstance(value, bytes):
        import base64  # only for bytes in the data (not imported by every command)

        return base64.b64encode(value).decode("ascii")
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, frozenset | set):
        return sorted(value, key=str)
    if isinstance(value, Mapping):  # not a dict: a frozen map (in its keys' hash order)
        return {str(k): canonical(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return list(value)
    raise TypeError(f"Cannot print {article(type(value).__name__)} as JSON.")


def emit_json(data: object) -> None:
    """Print ``data`` as indented JSON on stdout (bytes as base64, pyrsistent thawed, a
    frozen map's keys sorted: its own order changes from process to process).

    The UTF-8 text orjson makes is written to stdout's bytes as it is (tens of megabytes
    for a long session's state: decoding it to ``str`` and encoding it back cost ~40 ms).
    """
    text = orjson.dumps(
        canonical(data), default=_default, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
    )
    stream = sys.stdout
    binary = getattr(stream, "buffer", None)
    if binary is None:  # a text-only stdout (a StringIO)
        click.echo(text.decode())
        return
    stream.flush()
    binary.write(text)
    binary.write(b"\n")
    binary.flush()


@contextmanager
def no_gc() -> Iterator[None]:
    """No cyclic GC in the block (if it was on): for building output that is thrown away
    at once. A long state's JSON data is ~1,000,000 dicts, lists and strings, and each
    collection while they are built would walk them again (~25% of the time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
