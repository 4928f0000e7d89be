"""SIGTERM and SIGHUP to the commands that run sessions: a clean stop, never an orphan.

``amber chat`` and ``amber resume`` run as processes on pipes with the scripted
model; each gets the signal while the scripted ``wait`` tool runs (or at the
prompt), and must stop its runtime as ``amber worker`` does: exit 0, one line
saying it stopped and why, and a store whose turn gave its input back.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import Output, amber

from runtime import Status
from runtime.store import SQLiteStore

AMBER = [sys.executable, "-c", "from actors._cli import main; raise SystemExit(main())"]
"""The ``amber`` console script, run with this interpreter."""

GUARD = 120.0
"""Seconds a process may take to exit (a hang guard, never a verdict)."""

_ESCAPES = re.compile(rb"\x1b\[[0-9;?<>=]*[A-Za-z]")
"""A terminal's control sequences (colors, cursor moves), to find the text drawn."""


class Amber:
    """One ``amber`` process on pipes, stdout and stderr read together."""

    def __init__(self, *args: str, ignore_sighup: bool = False) -> None:
        """``ignore_sighup``: start with SIGHUP ignored, as ``nohup`` does."""
        env = {**os.environ, "COLUMNS": "100", "PYTHONIOENCODING": "utf-8"}
        ignore = "import signal; signal.signal(signal.SIGHUP, signal.SIG_IGN); "
        command = [AMBER[0], AMBER[1], ignore + AMBER[2]] if ignore_sighup else AMBER
        self.proc = subprocess.Popen(
            [*command, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
        )
        self.out = Output(self.proc.stdout)

    def type(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def stop(self, signum: int) -> int:
        """Send ``signum``; the exit code (negative: killed by the signal)."""
        self.proc.send_signal(signum)
        code = self.proc.wait(GUARD)
        self.out.join()
        return code

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(GUARD)
        self.out.join()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


@pytest.fixture
def processes() -> Iterator[list[Amber]]:
    started: list[Amber] = []
    try:
        yield started
    finally:
        for process in started:
            process.close()


def run(processes: list[Amber], *args: str, ignore_sighup: bool = False) -> Amber:
    process = Amber(*args, ignore_sighup=ignore_sighup)
    processes.append(process)
    return process


def given_back(db: Path, session: str, question: str) -> None:
    """The session has no active turn, and ``question`` waits to be answered again."""
    with SQLiteStore(db) as store:
        state = store.load_state(session)
        store.verify(session)
    assert state.active_turn is None
    (asked,) = [m for m in state.messages if m.content == question]
    assert asked.status is Status.PENDING_AGENT


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_chat_stops_cleanly_while_a_tool_runs(
    tmp_path: Path, processes: list[Amber], signum: signal.Signals
) -> None:
    """The running turn gives its input back (no orphan for the next start to recover),
    the chat says why it stopped and how to go on, and exits 0."""
    db = tmp_path / "chat.db"
    chat = run(processes, "chat", "--no-stream", "--db", str(db))
    chat.out.wait_for("you> ")
    chat.type("sleep 60")
    chat.out.wait_for("🛠️ wait")
    assert chat.stop(signum) == 0, chat.out.text
    assert (
        f"amber chat: stopped by {signum.name}; the runtime stopped cleanly (every event is on "
        f"disk). Continue: amber chat --session chat --db {db}\n"
    ) in chat.out.text
    assert "Traceback" not in chat.out.text
    assert "Bye." not in chat.out.text
    given_back(db, "chat", "sleep 60")


def test_chat_stops_cleanly_at_the_prompt(tmp_path: Path, processes: list[Amber]) -> None:
    """At the prompt, after a turn that ended: the same line, exit 0, the reply stored."""
    db = tmp_path / "chat.db"
    chat = run(processes, "chat", "--no-stream", "--db", str(db))
    chat.type("hello")
    chat.out.wait_for("you> ", count=2)
    assert chat.stop(signal.SIGTERM) == 0, chat.out.text
    assert "amber chat: stopped by SIGTERM" in chat.out.text
    assert "Traceback" not in chat.out.text
    with SQLiteStore(db) as store:
        state = store.load_state("chat")
    assert state.active_turn is None
    assert [m.status for m in state.messages] == [Status.PROCESSED, Status.DELIVERED]


def test_resume_stops_cleanly_while_a_tool_runs(tmp_path: Path, processes: list[Amber]) -> None:
    """amber resume answering a fork's question: SIGTERM while the tool runs gives the
    input back again, and the line says how to resume."""
    db = tmp_path / "chat.db"
    chat = run(processes, "chat", "--no-stream", "--db", str(db))
    chat.type("sleep 60")
    chat.out.wait_for("🛠️ wait")
    assert chat.stop(signal.SIGTERM) == 0, chat.out.text
    assert amber("fork", "chat", "--at", "1", "--as", "asked", "--db", db).exit_code == 0
    resume = run(processes, "resume", "asked", "--db", str(db))
    resume.out.wait_for("🛠️ wait")
    assert resume.stop(signal.SIGTERM) == 0, resume.out.text
    assert (
        "amber resume: stopped by SIGTERM; the runtime stopped cleanly (every event is on "
        f"disk). asked may have input left: amber resume asked --db {db} goes on.\n"
    ) in resume.out.text
    assert "Traceback" not in resume.out.text
    given_back(db, "asked", "sleep 60")


def test_nohup_keeps_sighup_ignored(tmp_path: Path, processes: list[Amber]) -> None:
    """A chat started with SIGHUP ignored (nohup) leaves it ignored: it runs on."""
    db = tmp_path / "chat.db"
    chat = run(processes, "chat", "--no-stream", "--db", str(db), ignore_sighup=True)
    chat.out.wait_for("you> ")
    chat.proc.send_signal(signal.SIGHUP)
    chat.type("hello")
    chat.out.wait_for("You said: hello")
    assert chat.stop(signal.SIGTERM) == 0, chat.out.text
    assert "amber chat: stopped by SIGTERM" in chat.out.text


def test_inspect_gives_the_terminal_back_on_sigterm(tmp_path: Path, processes: list[Amber]) -> None:
    """amber inspect (no sessions run) quits on SIGTERM as on q: exit 0, and the terminal
    is back off the alternate screen (killed, it was left there, in raw mode)."""
    db = tmp_path / "chat.db"
    chat = run(processes, "chat", "--no-stream", "--db", str(db))
    chat.type("hello")
    chat.type("/exit")
    assert chat.proc.wait(GUARD) == 0, chat.out.text
    main, tty = pty.openpty()
    fcntl.ioctl(tty, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color"}
    proc = subprocess.Popen(
        [*AMBER, "inspect", "chat", "--db", str(db)],
        stdin=tty, stdout=tty, stderr=tty, env=env, start_new_session=True,
    )  # fmt: skip
    os.close(tty)
    seen = b""
    try:
        deadline = time.monotonic() + GUARD
        while b"Active turn:" not in _ESCAPES.sub(b"", seen):  # the app drew the state
            assert time.monotonic() < deadline, seen[-2000:]
            if select.select([main], [], [], 0.5)[0]:
                seen += os.read(main, 65536)
        drawn = len(seen)
        proc.send_signal(signal.SIGTERM)
        while select.select([main], [], [], GUARD)[0]:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        assert proc.wait(GUARD) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(GUARD)
        os.close(main)
    after = seen[drawn:]
    assert b"\x1b[?1049l" in after  # off the alternate screen
    assert b"Traceback" not in after


def test_demo_stops_cleanly(tmp_path: Path, processes: list[Amber]) -> None:
    """amber demo runs real tools too: SIGTERM mid-demo stops its runtime, exit 0, no
    turn left active."""
    db = tmp_path / "demo.db"
    demo = run(processes, "demo", "--db", str(db))
    demo.out.wait_for("🛠️ run_shell_command")
    assert demo.stop(signal.SIGTERM) == 0, demo.out.text
    assert (
        "amber demo: stopped by SIGTERM; the runtime stopped cleanly (every event is on disk). "
        f"The demo session is cut short; run it again: amber demo --db {db}\n"
    ) in demo.out.text
    assert "Traceback" not in demo.out.text
    with SQLiteStore(db) as store:
        assert store.load_state("demo").active_turn is None
        store.verify("demo")
