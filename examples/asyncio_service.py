"""Amber as the core of an asyncio service: two sessions answered at once.

A small asyncio program of the shape of a FastAPI, aiohttp or Discord bot:
its handlers ``await rt.ask_async(...)`` for a whole reply, or iterate
``rt.stream(...)`` to pass text on as it streams. Nothing blocks the event
loop; a handler that gives up (its task is cancelled: a client hung up)
interrupts the turn that was answering it.

Run: python examples/asyncio_service.py
"""

from __future__ import annotations

import asyncio

from actors import (
    ModelRequest,
    Reply,
    Response,
    Runtime,
    ScriptedModel,
    TextPiece,
    ToolCallStarted,
    ToolResult,
    call,
    reply,
    tool,
)

PRICES = {"tea": 3.5, "coffee": 4.0, "cake": 5.25}


@tool
def price(item: str) -> str:
    """The price of an item on the menu.

    Args:
        item: The item.
    """
    return (
        f"{item}: {PRICES[item.lower()]:.2f} EUR" if item.lower() in PRICES else "not on the menu"
    )


def agent(request: ModelRequest) -> Response:
    """Look the price up, then answer (a stand-in for a real model)."""
    if request.call_index == 0:
        item = request.view.messages[-1].text.split()[-1].strip("?")
        return call("price", {"item": item})
    return reply(f"Here you are: {request.view.messages[-1].text}.", piece=5)


async def handle_request(rt: Runtime, user: str, text: str) -> str:
    """A request handler (an HTTP POST, a chat event): the whole reply, awaited."""
    answer: Reply = await rt.ask_async(f"web:{user}", text, sender=user, timeout=30)
    return answer.text if answer.ok else f"(sorry: {answer.reason})"


async def handle_stream(rt: Runtime, user: str, text: str) -> list[str]:
    """A streaming handler (server-sent events, an edited chat message): pieces as they come."""
    sent: list[str] = []
    # ``async with``: a handler that leaves early (the client hung up) interrupts the turn.
    async with rt.stream(f"web:{user}", text, sender=user) as events:
        async for event in events:
            if isinstance(event, ToolCallStarted):
                sent.append(f"[looking up {event.arguments['item']}]")
            elif isinstance(event, ToolResult):
                sent.append(f"[{event.content}]")
            elif isinstance(event, TextPiece):
                sent.append(event.text)
    return sent


async def main() -> None:
    with Runtime(model=ScriptedModel(agent), store=":memory:", tools=[price]) as rt:
        # Two users at once: both turns run concurrently; the loop stays free.
        tea, cake = await asyncio.gather(
            handle_request(rt, "ana", "How much is the tea?"),
            handle_request(rt, "ben", "How much is the cake?"),
        )
        print(f"ana <- {tea}")
        print(f"ben <- {cake}")
        pieces = await handle_stream(rt, "ana", "And the coffee?")
        print(f"ana <- (streamed in {len(pieces)} pieces) {''.join(pieces)}")


if __name__ == "__main__":
    asyncio.run(main())
