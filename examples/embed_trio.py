"""Embed Amber's runtime in a trio program: no glue, just ``await``.

``ask_async`` and ``stream`` are awaited from trio (or asyncio) directly:
the runtime's threads hand results to the loop, so the program never blocks
on the runtime. Two sessions run at once while the program keeps doing its
own work (a heartbeat) on the same loop, and one answer is streamed piece by
piece.

Run: python examples/embed_trio.py
"""

from __future__ import annotations

import trio

from actors import ModelRequest, Response, Runtime, ScriptedModel, TextPiece, call, reply, tool


@tool
async def search(query: str) -> str:
    """Search the docs (slow-ish).

    Args:
        query: What to look for.
    """
    await trio.sleep(0.2)  # async tools run on the runtime's own trio loop
    return f"3 pages match {query!r}"


def agent(request: ModelRequest) -> Response:
    """Search first, then answer with what the search found."""
    if request.call_index == 0:
        question = request.view.messages[-1].text
        return call("search", {"query": question}, reasoning="Look it up first.")
    found = request.view.messages[-1].text
    return reply(f"From the docs: {found}.", piece=6)


async def main() -> None:
    with Runtime(model=ScriptedModel(agent), store=":memory:", tools=[search]) as rt:
        beats = 0

        async def heartbeat() -> None:
            nonlocal beats
            while True:
                beats += 1
                await trio.sleep(0.05)

        async def ask(session: str, question: str) -> None:
            answer = await rt.ask_async(session, question, sender="you")
            print(f"[{session}] {question!r} -> {answer.text} ({answer.outcome})")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(heartbeat)
            async with trio.open_nursery() as asks:  # two sessions at once
                asks.start_soon(ask, "alice", "how do I fork a session?")
                asks.start_soon(ask, "bob", "what is a snapshot?")
            print("[carol] ", end="", flush=True)
            async for event in rt.stream("carol", "what does passivation do?"):
                if isinstance(event, TextPiece):
                    print(event.text, end="", flush=True)
            print()
            nursery.cancel_scope.cancel()
        print(f"the trio loop kept running meanwhile: {beats} heartbeats")


if __name__ == "__main__":
    trio.run(main)
