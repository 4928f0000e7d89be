"""A program that never stops its runtime still exits (a bot that crashed, a script that forgot)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

WAIT = 120.0
"""Seconds the child may take to exit before the test fails (a hang guard, not a judge)."""

SCRIPT = """
import asyncio
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
    raise SystemExit(3)  # crashed: the runtime is never stopped

asyncio.run(main())
"""


class TestAForgottenRuntime:
    def test_the_process_exits_without_a_stop(self, tmp_path: Path) -> None:
        """Its session, tool, adapter and subscriber actors ran in pykka's non-daemon
        threads: a program that ended (or crashed) without ``Runtime.stop()`` hung at exit
        for good, so a supervisor never restarted the bot. They are daemon threads now, like
        the store and effects threads: the exit is a crash the next start recovers from."""
        script = f"STORE = {str(tmp_path / 'bot.db')!r}\n{SCRIPT}"
        result = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            timeout=WAIT,
            env={**os.environ, "PYTHONIOENCODING": "utf-8"},
            check=False,
        )
        assert (result.returncode, result.stdout) == (3, "done\n"), result.stderr
