"""Embed Amber's runtime in a trio program.

``Runtime``'s methods block (they wait on actors and the store), so a trio
program calls them through ``trio.to_thread.run_sync``. Replies come back
through a subscription: its callback runs on a runtime thread and hands each
update to the trio loop with ``TrioToken.run_sync_soon``, where ``ask``
awaits it. Two sessions run at once while the program keeps doing its own
work (a heartbeat) on the same loop.

Run: python examples/embed_trio.py
"""

from __future__ import annotations

import contextlib

import trio

from actors import Delta, ModelRequest, Response, Runtime, ScriptedModel, Update, call, reply, tool
from runtime import Category, category_of


@tool
async def search(query: str) -> str:
    """Search the docs (slow-ish).

    Args:
        query: What to look for.
    """
    await trio.sleep(0.2)  # async tools run on the runtime's own trio loop
    return f"3 pages match {query!r}"


class Replies:
    """Turns the runtime's updates into awaitable replies, one channel per session."""

    def __init__(self) -> None:
        self.token = trio.lowlevel.current_trio_token()
        self.channels: dict[str, trio.MemorySendChannel[str]] = {}

    def open(self, session_id: str) -> trio.MemoryReceiveChannel[str]:
        send, receive = trio.open_memory_channel[str](10)
        self.channels[session_id] = send
        return receive

    def on_update(self, item: Update | Delta) -> None:
        """Runs on a runtime thread: hand replies to the trio loop, never block it."""
        if isinstance(item, Update) and item.is_new and category_of(item.message) is Category.REPLY:
            channel = self.channels.get(item.session_id)
            if channel is not None:
                with contextlib.suppress(trio.RunFinishedError):  # shutting down
                    self.token.run_sync_soon(channel.send_nowait, item.message.content)


def answer(request: ModelRequest) -> Response:
    """A scripted model serving every session: it searches for the question's topic."""
    question = next(m.text for m in request.view.messages if m.role == "user")
    topic = "trio" if "trio" in question else "pykka"
    if request.call_index == 0:
        return call("search", {"query": topic})
    return reply(f"I found 3 pages about {topic}.")


async def ask(rt: Runtime, replies: Replies, session_id: str, question: str) -> None:
    answers = replies.open(session_id)
    await trio.to_thread.run_sync(rt.send, session_id, question)
    with trio.fail_after(10):
        answer = await answers.receive()
    print(f"[{session_id}] {question} -> {answer}")


async def heartbeat(done: trio.Event) -> None:
    beats = 0
    while not done.is_set():
        beats += 1
        await trio.sleep(0.05)
    print(f"the program's own work went on meanwhile: {beats} heartbeats")


async def main() -> None:
    model = ScriptedModel(answer)
    replies = Replies()
    rt = Runtime(model=model, store=":memory:", tools=[search])
    await trio.to_thread.run_sync(rt.start)
    subscription = rt.subscribe(replies.on_update)
    try:
        done = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(heartbeat, done)
            async with trio.open_nursery() as questions:
                questions.start_soon(ask, rt, replies, "alice", "How do I use trio?")
                questions.start_soon(ask, rt, replies, "bob", "And pykka?")
            done.set()
    finally:
        subscription.close()
        await trio.to_thread.run_sync(rt.stop)
    print("both sessions answered; the runtime stopped cleanly")


if __name__ == "__main__":
    trio.run(main)
