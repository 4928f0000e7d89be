"""A private PostgreSQL server for the restart test (imported by name, like ``harness``).

The shared test server must not be restarted under other tests, so this one is
made for the test: ``initdb`` into a temporary folder, started on a free port
of 127.0.0.1 with trust authentication, restarted on demand, removed after.
It runs as the ``postgres`` user when the tests run as root (``initdb``
refuses root).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
from pathlib import Path

GUARD = 120.0
"""Seconds a server command may take (a hang guard)."""


def binaries() -> Path | None:
    """The folder of ``initdb`` and ``pg_ctl`` (Debian's layout, or the PATH), if any."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), reverse=True)
    if found:
        return Path(found[0]).parent
    pg_ctl = shutil.which("pg_ctl")
    return Path(pg_ctl).parent if pg_ctl else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrivateServer:
    """One throwaway PostgreSQL server; ``dsn`` reaches its ``postgres`` database."""

    def __init__(self, root: Path, bin_dir: Path) -> None:
        self.bin = bin_dir
        self.data = root / "data"
        self.log = root / "server.log"
        self.port = _free_port()
        self.dsn = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._root_user = os.geteuid() == 0
        if self._root_user:
            shutil.chown(root, "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        self.start()

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self.bin / tool), *args]
        if self._root_user:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=GUARD)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed ({done.returncode}):\n{done.stdout}{done.stderr}")

    def _ctl(self, action: str, *extra: str) -> None:
        options = f"-p {self.port} -k {self.data} -c listen_addresses=127.0.0.1"
        self._run(
            "pg_ctl", action, "-D", str(self.data), "-l", str(self.log), "-w",
            "-t", str(int(GUARD)), "-o", options, *extra,
        )  # fmt: skip

    def start(self) -> None:
        self._ctl("start")

    def restart(self) -> None:
        """Stop (fast: every connection is cut) and start again on the same port."""
        self._ctl("restart", "-m", "fast")

    def stop(self) -> None:
        self._ctl("stop", "-m", "immediate")
