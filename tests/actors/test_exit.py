"""A program that never stops its runtime still exits (a bot that crashed, a script that forgot)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

WAIT = 120.0
"""Seconds the child may take to exit before the test fails (a hang guard, not a judge)."""

SCRIPT = """
import asyncio
import threading
from actors import FakePlatform, LiveChannelAdapter, Runtime, ScriptedModel, call, reply, tool

@tool
def post(text: str) -> str:
    '''Post it.

    Args:
        text: What to post.
    '''
    return "posted"

async def main() -> None:
    adapter = LiveChannelAdapter.start(client=FakePlatform("discord"))
    model = ScriptedModel([call("post", {"text": "hi"}), reply("done")])
    rt = Runtime(model=model, store=STORE, tools=[post], adapters=[adapter])
    rt.start()
    rt.subscribe(on_update=lambda update: None)
    answer = await rt.ask_async("s1", "post hi", chatbot_id="discord", channel_id="general")
    print(answer.text, flush=True)
    main_thread = threading.main_thread()
    kept = [t.name for t in threading.enumerate() if t is not main_thread and not t.daemon]
    print(kept, flush=True)  # non-daemon threads keep the process alive at exit
    raise SystemExit(3)  # crashed: the runtime is never stopped

asyncio.run(main())
"""

BUSY = """
import threading
from actors import Runtime, ScriptedModel, call, reply, tool
started = threading.Event()

@tool
def block(text: str) -> str:
    '''Block for ever.

    Args:
        text: What.
    '''
    started.set()
    threading.Event().wait()
    return "never"

rt = Runtime(model=ScriptedModel([call("block", {"text": "x"}), reply("done")]), store=STORE,
             tools=[block]).start()
rt.send("s1", "go")
assert started.wait(60)
print("running", flush=True)
raise SystemExit(3)  # the sync tool call runs on in a worker thread, never to end
"""

POSTGRES = """
from runtime.store import PostgresStore
STORE = PostgresStore({dsn!r}, schema={schema!r})
"""


def run_forgotten(store: str, script: str = SCRIPT) -> subprocess.CompletedProcess[str]:
    """Run ``script`` in a child whose ``STORE`` is made by ``store`` (Python source), with
    every warning shown (``-W default``: a file left open at exit says so on stderr)."""
    return subprocess.run(
        [sys.executable, "-W", "default", "-c", f"{store}\n{script}"],
        capture_output=True,
        text=True,
        timeout=WAIT,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        check=False,
    )


class TestAForgottenRuntime:
    def test_the_process_exits_without_a_stop(self, tmp_path: Path) -> None:
        """Its session, tool, adapter and subscriber actors ran in pykka's non-daemon
        threads: a program that ended (or crashed) without ``Runtime.stop()`` hung at exit
        for good, so a supervisor never restarted the bot. They are daemon threads now, like
        the store and effects threads: the exit is a crash the next start recovers from."""
        result = run_forgotten(f"STORE = {str(tmp_path / 'bot.db')!r}")
        assert (result.returncode, result.stdout) == (3, "done\n[]\n"), result.stderr

    def test_its_exit_is_quiet_on_sqlite(self, tmp_path: Path) -> None:
        """Nothing on stderr at exit (a daemon thread dying at shutdown may print
        "Exception ignored in ..." or a fatal error): the runner lock's file, held until
        the process ends, was left to the interpreter to close, which warned that it was
        unclosed (``ResourceWarning``, shown under ``-W default`` or ``-X dev``)."""
        result = run_forgotten(f"STORE = {str(tmp_path / 'bot.db')!r}")
        assert (result.returncode, result.stdout, result.stderr) == (3, "done\n[]\n", "")

    def test_its_exit_is_quiet_on_postgres(
        self, postgres_dsn: str, pg_schema: Callable[[], str]
    ) -> None:
        """The same on PostgreSQL, where the runtime also runs its lease keeper and answer
        watch (daemon threads): the process exits, and nothing is on stderr."""
        result = run_forgotten(POSTGRES.format(dsn=postgres_dsn, schema=pg_schema()))
        assert (result.returncode, result.stdout, result.stderr) == (3, "done\n[]\n", "")

    def test_a_sync_tool_still_running_does_not_keep_it(self, tmp_path: Path) -> None:
        """A sync tool call that never ends runs in the effects loop's worker thread (a
        daemon thread): the process exits all the same, quietly."""
        result = run_forgotten(f"STORE = {str(tmp_path / 'bot.db')!r}", BUSY)
        assert (result.returncode, result.stdout, result.stderr) == (3, "running\n", "")
