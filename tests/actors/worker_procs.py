"""Real ``amber worker`` processes for the worker tests (imported by name, like ``harness``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from actors import Settings
from actors._drafts import user_draft
from actors._ids import utc_now
from actors._leasing import store_input
from runtime import Category, Message, SeqConflict, SessionState, category_of
from runtime.store import PostgresStore

HERE = Path(__file__).parent
GUARD = 120.0
"""Seconds any wait may take before the test fails (a hang guard, never a verdict)."""


class Worker:
    """One ``amber worker`` process; its stderr is collected line by line."""

    def __init__(
        self, dsn: str, schema: str, name: str, model: str, config: Path | None = None, **env: str
    ) -> None:
        """``config``: run with ``--config FILE`` alone (the file names the rest)."""
        self.name = name
        environment = {
            **os.environ, "AMBER_PG_SCHEMA": schema, "WORKER_MODEL": model, "WORKER_NAME": name,
            **env,
        }  # fmt: skip
        options = (
            ["--config", str(config)] if config is not None else [
                "--db", dsn, "--app", "worker_app:make_app", "--name", name,
                "--lease-ttl", "2", "--poll", "0.5",
            ]
        )  # fmt: skip
        self.proc = subprocess.Popen(
            [
                sys.executable, "-c", "from actors._cli import main; raise SystemExit(main())",
                "worker", *options,
            ],
            cwd=HERE, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        self.lines: list[str] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.wait_for(lambda text: f"amber worker {name} running" in text, "the worker starts")

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._lock:
                self.lines.append(line)

    @property
    def text(self) -> str:
        with self._lock:
            return "".join(self.lines)

    def wait_for(self, what: Callable[[str], bool], why: str) -> None:
        deadline = time.monotonic() + GUARD
        while not what(self.text):
            if self.proc.poll() is not None and not what(self.text):
                raise AssertionError(f"worker {self.name} exited ({why}):\n{self.text}")
            assert time.monotonic() < deadline, f"{why}: not within {GUARD} s\n{self.text}"
            time.sleep(0.05)

    def stop(self, signum: int = signal.SIGTERM) -> int:
        """Send ``signum`` (SIGTERM), wait for the exit and close the pipe; the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
        try:
            return self.proc.wait(GUARD)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(GUARD)
            self._reader.join(GUARD)
            assert self.proc.stderr is not None
            self.proc.stderr.close()


def send(store: PostgresStore, session_id: str, text: str) -> Message:
    """Store a person's input for a session, as a process that does not run it does."""
    settings = Settings()
    turn = settings.turn_settings(tools=(), model_name=None, runner="tests", exclusive=False)
    draft = user_draft("send", session_id, text, {"sender": "Chii"}, utc_now, settings.input_limits)
    for _ in range(20):
        try:
            return store_input(store, session_id, draft, settings=turn, at=utc_now())
        except SeqConflict:
            continue
    raise AssertionError(f"could not store input for {session_id}")


def replies(state: SessionState) -> list[str]:
    return [m.content for m in state.messages if category_of(m) is Category.REPLY]


def wait_until(what: Callable[[], bool], why: str) -> None:
    deadline = time.monotonic() + GUARD
    while not what():
        assert time.monotonic() < deadline, f"{why}: not within {GUARD} s"
        time.sleep(0.05)
