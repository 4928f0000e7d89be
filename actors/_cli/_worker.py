"""``amber worker``: one of several processes that run the sessions of a PostgreSQL store.

``amber worker --db postgresql://… --app mymodule:make_app`` imports
``make_app``, calls it, and runs a ``Runtime`` with what it returns (a mapping
with ``model`` and optionally ``tools``, ``settings`` and ``adapters``) on the
store, as a worker: it takes the leases of sessions with work that nobody
runs, is woken by ``NOTIFY`` when input arrives, renews its leases, and takes
over the sessions of a worker that died once their leases expire
(docs/scaling.md). It runs until SIGTERM, SIGHUP or Ctrl-C, then stops its sessions
(their running turns give their input back) and gives its leases back. It
stops the same way, and exits with code 1 saying why (``StoreBusy``), when
another worker took its name while its connection to the store was down.

Its options can come from a TOML file (``--config worker.toml``), keys as the
options' names in a ``[worker]`` table::

    [worker]
    db = "postgresql://amber@db.internal/amber"
    app = "mybot.app:make_app"
    lease_ttl = 30
    poll = 30
    name = "worker-1"

An option given on the command line (or ``--db`` through ``AMBER_DB``) wins
over the file.
"""

from __future__ import annotations

import importlib
import logging
import signal
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import click

from runtime import InvalidArgument
from runtime.store import is_postgres_url

from .._runtime import Runtime
from .._seconds import MAX_SECONDS, time_limit
from .._settings import MAX_LEASE_TTL, Settings
from ._app import CliError, ExitCode, Seconds, no_pg_store, open_any_store, pg_schema
from ._signals import stop_signals

__all__ = ["load_app", "read_config", "worker"]

_KEYS = frozenset({"model", "tools", "settings", "adapters"})


def load_app(ref: str) -> dict[str, Any]:
    """What ``module:factory`` makes: the keyword arguments of the worker's ``Runtime``.

    Raises:
        CliError: the reference, the import, the call or what it returned is wrong.
    """
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise CliError(
            f"--app takes MODULE:FACTORY (like 'mybot.app:make_app'); got {ref!r}.", ExitCode.USAGE
        )
    sys.path.insert(0, ".")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise CliError(f"Cannot load --app {ref!r}: {exc}.", ExitCode.NOT_FOUND) from exc
    made = factory()
    if not isinstance(made, Mapping) or "model" not in made or set(made) - _KEYS:
        raise CliError(
            f"--app {ref!r} must return a mapping with 'model' and optionally 'tools', "
            f"'settings', 'adapters'; it returned {made!r:.200}.",
            ExitCode.USAGE,
        )
    return dict(made)


_CONFIG: dict[str, type | tuple[type, ...]] = {
    "db": str, "app": str, "lease_ttl": (int, float), "poll": (int, float), "name": str,
}  # fmt: skip
"""The keys of a worker's config file and the TOML types each takes."""

_SECONDS = {"lease_ttl": (1.0, MAX_LEASE_TTL), "poll": (0.1, MAX_SECONDS)}
"""The keys that are numbers of seconds, and the least and most each takes (as its option)."""


def read_config(path: str) -> dict[str, Any]:
    """The ``[worker]`` table of a TOML file, as the command's option defaults.

    Raises:
        CliError: the file is missing or not TOML, or a key is unknown or of the wrong type.
    """
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CliError(
            f"No worker config at {path!r}: the file does not exist.", ExitCode.NOT_FOUND
        ) from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CliError(
            f"Cannot read the worker config {path!r}: {exc}. It must be a TOML file with a "
            "[worker] table (docs/scaling.md).",
            ExitCode.USAGE,
        ) from exc
    table = data.get("worker")
    if not isinstance(table, dict):
        raise CliError(
            f"The worker config {path!r} has no [worker] table; put the options under one "
            f"(keys: {', '.join(_CONFIG)}).",
            ExitCode.USAGE,
        )
    for key, value in table.items():
        wanted = _CONFIG.get(key)
        if wanted is None:
            raise CliError(
                f"The worker config {path!r} has an unknown key {key!r}; the keys are "
                f"{', '.join(_CONFIG)}.",
                ExitCode.USAGE,
            )
        if isinstance(value, bool) or not isinstance(value, wanted):
            kind = "a string" if wanted is str else "a number of seconds"
            raise CliError(
                f"In the worker config {path!r}, {key} must be {kind} (got {value!r}).",
                ExitCode.USAGE,
            )
        if key in _SECONDS:
            try:
                low, high = _SECONDS[key]
                time_limit(value, what=key, minimum=low, maximum=high)
            except InvalidArgument as exc:
                raise CliError(f"In the worker config {path!r}, {exc}", ExitCode.USAGE) from None
    return {("app_ref" if key == "app" else key): value for key, value in table.items()}


def _config(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.default_map = {**(ctx.default_map or {}), **read_config(value)}


@click.command()
@click.option(
    "--config", type=click.Path(dir_okay=False), callback=_config, is_eager=True,
    expose_value=False, metavar="FILE",
    help="A TOML file whose [worker] table gives these options (the command line wins).",
)  # fmt: skip
@click.option(
    "--db", required=True, envvar="AMBER_DB", metavar="URL",
    help="The PostgreSQL store (postgresql://…; schema $AMBER_PG_SCHEMA, default amber): "
    "here, in $AMBER_DB or as db in --config.",
)  # fmt: skip
@click.option(
    "--app", "app_ref", required=True, metavar="MODULE:FACTORY",
    help="A function returning the model, tools and settings (see docs/scaling.md): "
    "here or as app in --config.",
)  # fmt: skip
@click.option(
    "--lease-ttl", type=Seconds(1, maximum=MAX_LEASE_TTL), default=None,
    help="Seconds a session's lease lasts unrenewed (default: the settings', 30).",
)  # fmt: skip
@click.option(
    "--poll", type=Seconds(0.1), default=None,
    help="Seconds between polls for work nobody runs (default: the settings', 30).",
)  # fmt: skip
@click.option("--name", help="This worker's name in lease rows (default: a new runner id).")
def worker(
    db: str, app_ref: str, lease_ttl: float | None, poll: float | None, name: str | None
) -> None:
    """Run sessions of a PostgreSQL store as one of several workers, until SIGTERM.

    The worker takes the lease of every session with work waiting that no
    other worker runs, is woken when input arrives, and takes over the
    sessions of a worker that stopped renewing its leases.
    """
    if not is_postgres_url(db):
        raise CliError(
            f"amber worker runs on a PostgreSQL store; --db must be a postgresql:// URL (got "
            f"{db!r}). One process runs a SQLite store: use 'amber chat' or a Runtime.",
            ExitCode.USAGE,
        )
    schema = pg_schema()
    runtime: Runtime | None = None
    with stop_signals(signal.SIGINT) as stop:
        with stop.raising():  # a signal while --app loads ends the command: nothing runs yet
            app = load_app(app_ref)
        settings = app.pop("settings", None) or Settings()
        changes = {"lease_ttl": lease_ttl, "lease_poll": poll}
        settings = attrs.evolve(settings, **{k: v for k, v in changes.items() if v is not None})
        _log_to_stderr()
        # A worker makes its store when the schema has none (a new deployment); a mistyped
        # $AMBER_PG_SCHEMA would then leave it idle on an empty store: say so where it logs.
        empty = no_pg_store(db, schema)
        with stop.sparing_threads():
            store = open_any_store(db, create=True)
            # Workers started together all found no store; only the one that made it says so.
            if empty is not None and getattr(store, "made", False):
                click.echo(
                    f"amber worker: warning: {empty} The worker made an empty store in "
                    f"{schema!r} and runs the input posted to it.",
                    err=True,
                )
            runtime = Runtime(store=store, settings=settings, resume="all", runner=name, **app)
        with stop.running(runtime):
            click.echo(f"amber worker {runtime.runner} running on {db}", err=True)
            # A runtime stops on its own when another took its name while it was disconnected.
            while runtime.running and not stop.event.wait(1.0):
                pass
            why = f" ({stop.name})" if stop.name else ""
            click.echo(f"amber worker {runtime.runner} stopping{why}", err=True)
    if runtime is None:
        click.echo(
            f"amber worker: stopped by {stop.name} while --app loaded; nothing had started.",
            err=True,
        )
        return
    if runtime.failed is not None:
        raise runtime.failed  # exit code 1, saying why


def _log_to_stderr() -> None:
    """The worker's log on stderr: leases taken, lost and given back, sessions that failed."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    amber_log = logging.getLogger("amber")
    amber_log.addHandler(handler)
    amber_log.setLevel(logging.INFO)
