"""``amber web``: serve the time-travel viewer (``actors._web``) on a local port.

The viewer needs the ``web`` extra (Starlette, Jinja2, uvicorn); without it
the command says how to install it and exits 1. It binds 127.0.0.1 unless
``--host`` names another address, which prints a warning: sessions hold
private conversations and the viewer has no login. Ctrl-C, SIGTERM or SIGHUP
stops it at any moment, the store opening included ("Stopped.", exit 0).
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import signal
import socket
import sys
from importlib.util import find_spec
from types import FrameType
from typing import TYPE_CHECKING

import click

from ._app import CliError, ExitCode, db_option
from ._params import Port
from ._signals import stop_signals

if TYPE_CHECKING:
    import uvicorn

__all__ = ["WEB_EXTRA", "is_loopback", "web"]

WEB_EXTRA = ("starlette", "jinja2", "uvicorn")
"""The modules ``amber web`` needs (the web extra: ``pip install '.[web]'`` in the checkout)."""


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _missing() -> list[str]:
    return [name for name in WEB_EXTRA if find_spec(name) is None]


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free one), or a one-line error."""
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise CliError(
            f"Cannot serve on host {host!r}: {exc.strerror}. Pass --host 127.0.0.1 (the default) "
            "or an address of this machine.",
            ExitCode.USAGE,
        ) from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        why = "the port is in use" if exc.errno == errno.EADDRINUSE else exc.strerror
        raise CliError(
            f"Cannot serve on {host}:{port}: {why}. Pass another --port, or --port 0 for a free "
            "one.",
            ExitCode.FAILED,
        ) from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


@click.command("web")
@db_option()
@click.option(
    "--port",
    type=Port(),
    default=8400,
    show_default=True,
    help="The port to serve on (0: any free port).",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="The address to serve on. Anything but this machine's loopback makes every session "
    "readable by whoever can reach it (a warning is printed).",
)
def web(db: str, port: int, host: str) -> None:
    """Serve a local web page to travel in the stored sessions.

    The sessions list, each session's timeline with the state at any seq,
    the diff from the seq before, model calls, projections, charts; fork,
    export and verify. Reads never change the store. Ctrl-C stops it.
    """
    with stop_signals(signal.SIGINT) as stop, contextlib.ExitStack() as serving:
        # Ctrl-C, SIGTERM and SIGHUP are the way to stop the viewer at any moment: before
        # it serves (the store opening, the app being built) they end the setup (a
        # ``StopSignal``, which ``stop_signals`` swallows); while it serves, the server.
        with stop.raising():
            server, sock = _set_up(db, port, host, serving)

        # SIGTERM and SIGHUP shut the server down as Ctrl-C does (uvicorn takes SIGINT and
        # SIGTERM while it serves, then raises them again: here they are only noted).
        def shut_down(signum: int, frame: FrameType | None) -> None:
            stop.handle(signum, frame)
            server.should_exit = True

        for signum in stop.signals:
            signal.signal(signum, shut_down)
        if stop.received is None:  # a signal between the setup and the handlers: no serving
            server.run(sockets=[sock])
    with contextlib.suppress(OSError):  # SIGHUP: the terminal may be gone
        click.echo("Stopped.")


def _set_up(
    db: str, port: int, host: str, serving: contextlib.ExitStack
) -> tuple[uvicorn.Server, socket.socket]:
    """The server of the viewer of ``db`` and its bound socket (closed when ``serving``
    ends), once the store is checked; says where it serves."""
    missing = _missing()
    if missing:
        raise CliError(
            f"amber web needs the web extra ({', '.join(missing)} not installed): "
            "python3 -m pip install '.[web]' in your Amber checkout ('amber[web]' where Amber "
            "comes from a package index)",
            ExitCode.FAILED,
        )
    import uvicorn

    from .._web import LOCAL_HOSTS, Source, create_app

    source = Source(db, freeze_gc=True)
    count = source.check()  # no store, or not a store: the CLI's error and exit code
    local = is_loopback(host)
    sock = serving.enter_context(_bind(host, port))
    bound = sock.getsockname()[1]  # the port the OS picked, for --port 0
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    if not local:
        click.echo(
            f"amber: warning: serving on {host}, not this machine's loopback: anyone who can "
            f"reach {shown}:{bound} can read every session in {db} (private conversations) and "
            "fork sessions. The viewer has no login.",
            err=True,
        )
    allowed = [*LOCAL_HOSTS, host.strip("[]")] if local else ["*"]
    app = create_app(source, allowed_hosts=allowed)
    click.echo(
        f"Serving {db} ({count} session{'s' * (count != 1)}) at http://{shown}:{bound}/ "
        "(Ctrl-C to stop)"
    )
    sys.stdout.flush()
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    return uvicorn.Server(config), sock
