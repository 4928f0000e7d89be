"""Embed Amber's runtime in a synchronous program.

A scripted model (no network, no API key) answers two questions on a
WeChat-like channel: the first with a tool call, the second is interrupted
by a third message while its slow tool runs. A fake platform records what
the silent channel really sent: intermediates are absorbed, never sent.

Run: python examples/embed_runtime.py
"""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path

import trio

from actors import (
    FakePlatform,
    Runtime,
    ScriptedModel,
    Settings,
    SilentChannelAdapter,
    call,
    reply,
    tool,
)
from runtime import Status


@tool
def weather(city: str) -> str:
    """Today's weather in a city.

    Args:
        city: the city's name.
    """
    return f"{city}: sunny, 24°C"


slow_started = threading.Event()


@tool(timeout=30)
async def long_report(topic: str) -> str:
    """Write a long report (slow)."""
    slow_started.set()
    await trio.sleep(30)
    return f"report on {topic}"


model = ScriptedModel(
    [
        call("weather", {"city": "Tokyo"}, reasoning="I should look the weather up."),
        reply("It is sunny in Tokyo, 24°C."),
        call("long_report", {"topic": "weather"}),  # interrupted by the next message
        reply("Sure, skipping the report. Anything else?"),
    ]
)

platform = FakePlatform()
with tempfile.TemporaryDirectory() as folder:
    db = Path(folder) / "amber.db"
    wechat = SilentChannelAdapter.start(platform, platform="wechat")
    with Runtime(
        model=model,
        store=db,
        tools=[weather, long_report],
        adapters=[wechat],
        settings=Settings(agent_name="Kesoku"),
    ) as rt:
        seen: list[str] = []
        rt.subscribe(lambda u: seen.append(f"{u.message.id[:10]} {u.message.status}"))

        person = {"sender": "Chii", "chatbot_id": "wechat", "channel_id": "room-1"}
        rt.send("demo", "What's the weather in Tokyo?", **person)
        rt.wait_idle("demo", timeout=10)

        first = rt.send("demo", "Write me a long report on it.", **person)
        slow_started.wait(10)
        rt.send("demo", "Actually, never mind.", **person)  # interrupts the running turn
        state = rt.wait_idle("demo", timeout=10)

        print("Messages (role/type, status, content):")
        for message in state:
            print(
                f"  {message.role:9} {message.type:11} {message.status:12} "
                f"{message.content.splitlines()[0][:48]!r}"
            )
        assert state.message(first.id).status is Status.INTERRUPTED

        print("\nWhat the WeChat-like channel sent (intermediates absorbed):")
        for text in platform.transcript("room-1"):
            print("  >", text)

        timeline = rt.timeline("demo")
        print(f"\n{len(timeline)} events stored in {db.name}; turns:")
        for turn in state.turn_list():
            print(f"  {turn.id}: {turn.status} ({turn.reason or 'answered'})")
        print(f"{len(seen)} updates went to the subscriber.")
