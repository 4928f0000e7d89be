"""``amber web``: its checks before serving, and a real server on a free port."""

from __future__ import annotations

import importlib.abc
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from cli_support import Recorded, amber, recorded
from web_support import AMBER, Page

from actors._cli import ExitCode
from actors._cli import _web as web_command

__all__ = ["recorded"]


class TestBeforeServing:
    def test_without_the_extra_it_says_how_to_install_it(
        self, recorded: Recorded, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Missing Starlette, Jinja2 or uvicorn: one line naming the extra, exit 1."""
        monkeypatch.setattr(
            web_command, "find_spec", lambda name: None if name != "jinja2" else object()
        )
        result = amber("web", "--db", recorded.db)
        assert result.exit_code == ExitCode.FAILED
        assert result.output == (
            "amber: amber web needs the web extra (starlette, uvicorn not installed): "
            "python3 -m pip install '.[web]' in your Amber checkout ('amber[web]' where Amber "
            "comes from a package index)\n"
        )

    def test_no_store_is_the_usual_error(self, tmp_path: Path) -> None:
        """A missing --db exits 3 before anything is served, and creates nothing."""
        result = amber("web", "--db", tmp_path / "typo.db")
        assert result.exit_code == ExitCode.NOT_FOUND
        assert "No Amber store at" in result.output
        assert not (tmp_path / "typo.db").exists()

    def test_a_busy_port_fails(self, recorded: Recorded) -> None:
        """A port in use is a one-line error, exit 1 (no warning: nothing is served)."""
        with socket.socket() as busy:
            busy.bind(("0.0.0.0", 0))
            busy.listen(1)
            port = busy.getsockname()[1]
            result = amber("web", "--db", recorded.db, "--host", "0.0.0.0", "--port", port)
        assert result.exit_code == ExitCode.FAILED
        assert result.output == (
            f"amber: Cannot serve on 0.0.0.0:{port}: the port is in use. Pass another --port, "
            "or --port 0 for a free one.\n"
        )

    def test_another_host_warns_with_the_bound_port(
        self, recorded: Recorded, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A non-loopback host prints the warning, naming the port the OS picked for --port 0
        (it said 0.0.0.0:0)."""
        import uvicorn

        monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: None)
        result = amber("web", "--db", recorded.db, "--host", "0.0.0.0", "--port", 0)
        assert result.exit_code == 0, result.output
        served = re.search(r"at http://0\.0\.0\.0:(\d+)/ \(Ctrl-C to stop\)", result.output)
        assert served, result.output
        port = served.group(1)
        assert port != "0"
        assert (
            "amber: warning: serving on 0.0.0.0, not this machine's loopback: anyone who can "
            f"reach 0.0.0.0:{port} can read every session in {recorded.db}"
        ) in result.output
        assert "0.0.0.0:0 " not in result.output

    def test_an_unknown_host_is_a_usage_error(self, recorded: Recorded) -> None:
        """A host name that does not resolve exits 2."""
        result = amber("web", "--db", recorded.db, "--host", "no-such-host.invalid")
        assert result.exit_code == ExitCode.USAGE
        assert "Cannot serve on host 'no-such-host.invalid'" in result.output

    @pytest.mark.parametrize(
        "signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name
    )
    @pytest.mark.parametrize("where", ["store", "app"])
    def test_a_stop_before_serving_stops_it(
        self,
        recorded: Recorded,
        monkeypatch: pytest.MonkeyPatch,
        signum: signal.Signals,
        where: str,
    ) -> None:
        """Ctrl-C, SIGTERM or SIGHUP while the store opens or the app is built stops the
        command as it does once it serves: "Stopped.", exit 0 (Ctrl-C there exited 130,
        "amber: Interrupted."; SIGTERM and SIGHUP killed it), and nothing is served."""
        import actors._web as viewer

        def stopped_here(*args: object, **kwargs: object) -> object:
            signal.raise_signal(signum)  # its handler runs before raise_signal returns
            raise AssertionError("the signal did not stop the command where it came")

        if where == "store":
            monkeypatch.setattr(viewer.Source, "check", stopped_here)
        else:
            monkeypatch.setattr(viewer, "create_app", stopped_here)
        served: list[object] = []
        import uvicorn

        monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: served.append(1))
        result = amber("web", "--db", recorded.db, "--port", 0)
        assert (result.exit_code, result.stdout, result.stderr) == (0, "Stopped.\n", "")
        assert served == []

    @pytest.mark.parametrize("port", ["abc", "-1", "65536", "80.5", "", "9" * 5000])
    def test_a_port_that_is_not_one(self, recorded: Recorded, port: str) -> None:
        """--port abc said "'abc' is not a valid integer range"; every bad port says what a
        port is."""
        result = amber("web", "--db", recorded.db, "--port", port)
        assert result.exit_code == ExitCode.USAGE
        assert result.stderr.splitlines()[-1] == (
            f"Error: Invalid value for '--port': {port!r} is not a port: pass a whole number "
            "from 1 to 65535, or 0 for any free port."
        )

    @pytest.mark.parametrize(
        ("host", "loopback"),
        [
            ("127.0.0.1", True),
            ("127.3.0.1", True),
            ("localhost", True),
            ("::1", True),
            ("[::1]", True),
            ("0.0.0.0", False),
            ("192.168.1.4", False),
            ("::", False),
            ("example.org", False),
        ],
    )
    def test_loopback_hosts(self, host: str, loopback: bool) -> None:
        """Only loopback addresses and localhost serve without the warning."""
        assert web_command.is_loopback(host) is loopback


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=str)
def test_serves_the_viewer(recorded: Recorded, signum: signal.Signals) -> None:
    """amber web --port 0 prints its address and serves the sessions list there; Ctrl-C,
    SIGTERM or SIGHUP stops it (exit 0, "Stopped.": SIGTERM and SIGHUP killed it)."""
    with subprocess.Popen(
        [*AMBER, "web", "--db", str(recorded.db), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "AMBER_DB": ""},
    ) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            match = re.fullmatch(
                rf"Serving {re.escape(str(recorded.db))} \(2 sessions\) at "
                r"(http://127\.0\.0\.1:\d+/) \(Ctrl-C to stop\)\n",
                line,
            )
            assert match, line
            with urllib.request.urlopen(match.group(1), timeout=30) as response:
                text = Page.of(response.read().decode()).text("sessions")
            assert "demo" in text
            assert "broken" in text
        finally:
            process.send_signal(signum)
            rest, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert rest == "Stopped.\n"
    assert err == ""


class _Interrupting(importlib.abc.MetaPathFinder):
    """A finder that raises ``KeyboardInterrupt`` when ``name`` is imported: Ctrl-C while
    that module loads."""

    def __init__(self, name: str) -> None:
        self.name = name

    def find_spec(self, fullname: str, path: object, target: object = None) -> None:
        if fullname == self.name:
            raise KeyboardInterrupt


class TestCtrlCBeforeTheCommandRuns:
    """A Ctrl-C while the group loads what it runs the command with (``_app``: ~60 ms of
    imports) fell outside the group's handler: click printed "Aborted!" and exited 1 for
    every command. It is the documented 130 ("amber: Interrupted."), and for ``amber web``,
    whose way to stop is Ctrl-C, "Stopped." and 0 as later on."""

    @pytest.mark.parametrize(
        ("argv", "code", "out", "err"),
        [
            (["web"], 0, "Stopped.\n", ""),
            (["sessions"], ExitCode.INTERRUPTED, "", "amber: Interrupted.\n"),
        ],
        ids=["web", "sessions"],
    )
    @pytest.mark.parametrize("loading", ["the group's helpers", "the command's module"])
    def test_while_the_command_loads(
        self,
        recorded: Recorded,
        monkeypatch: pytest.MonkeyPatch,
        argv: list[str],
        code: int,
        out: str,
        err: str,
        loading: str,
    ) -> None:
        own = {"web": "actors._cli._web", "sessions": "actors._cli._travel"}[argv[0]]
        module = "actors._cli._app" if loading == "the group's helpers" else own
        monkeypatch.delitem(sys.modules, module, raising=False)
        monkeypatch.setattr(sys, "meta_path", [_Interrupting(module), *sys.meta_path])
        cli_group = sys.modules["actors._cli"].cli
        monkeypatch.setattr(cli_group, "commands", {})  # each command's module loads again
        result = amber(*argv, "--db", recorded.db)
        assert (result.exit_code, result.stdout, result.stderr) == (code, out, err)
