"""Write a custom adapter: show a session on your own chat platform.

``BoardAdapter`` draws a turn the way a chat that can edit messages would:
a ``💭`` line for a thought, a ``⏳`` line per tool call that its result edits
to ✅ or ❌, then the reply. The ``Adapter`` base class applies the channel's
rules and reports each message delivered once ``render`` returns; when the
platform refuses a send, ``render`` raises and the message stays pending.

Run: python examples/custom_adapter.py
"""

from __future__ import annotations

import itertools
import threading

from actors import Adapter, Runtime, ScriptedModel, Update, calls, reply, tool
from runtime import Category, ChannelKind, Presentation, Status


class Board:
    """A tiny chat platform: numbered posts that can be edited, and an outage switch."""

    def __init__(self) -> None:
        self.posts: dict[str, str] = {}
        self.down = False
        self.refused = threading.Event()
        self._ids = (f"p{n}" for n in itertools.count(1))

    def post(self, channel: str, text: str) -> str:
        if self.down:
            self.refused.set()
            raise ConnectionError("the board is down")
        post_id = next(self._ids)
        self.posts[post_id] = f"#{channel} {text}"
        return post_id

    def edit(self, post_id: str, text: str) -> None:
        channel = self.posts[post_id].split(" ", 1)[0]
        self.posts[post_id] = f"{channel} {text}"


class BoardAdapter(Adapter):
    """Shows sessions of the ``board`` platform on a ``Board``."""

    kind = ChannelKind.LIVE  # thoughts and tool calls are status lines; nudges stay hidden

    def __init__(self, board: Board) -> None:
        super().__init__(platform="board")
        self.board = board
        self.lines: dict[tuple[str, str], str] = {}  # (session, tool call id) -> post id

    def render(self, update: Update, presentation: Presentation) -> None:
        message = update.message
        category = self.category(message)
        channel = message.channel_id or "general"
        if category.is_input:
            return  # the person posted it themselves
        if category is Category.THOUGHT:
            self.board.post(channel, "💭 " + message.content.splitlines()[0])
        elif category is Category.TOOL_CALL and message.tool_call is not None:
            post = self.board.post(channel, f"⏳ {message.tool_call.name}")
            self.lines[(update.session_id, message.tool_call.id)] = post
        elif category is Category.TOOL_RESULT and message.tool_call_id is not None:
            post = self.lines.pop((update.session_id, message.tool_call_id), None)
            mark = (
                f"❌ {message.sender} ({message.error_type})"
                if message.is_error
                else f"✅ {message.sender}"
            )
            if post is None:
                self.board.post(channel, mark)
            else:
                self.board.edit(post, mark)
        else:
            self.board.post(channel, message.content)
        # Returning reports the message delivered; raising leaves it undelivered.

    def changed(self, update: Update, presentation: Presentation) -> None:
        message = update.message
        if message.tool_call is not None and message.status is Status.INTERRUPTED:
            post = self.lines.pop((update.session_id, message.tool_call.id), None)
            if post is not None:
                self.board.edit(post, f"⏹ {message.tool_call.name} (interrupted)")


@tool
def lookup(city: str) -> str:
    """Population of a city.

    Args:
        city: The city.
    """
    known = {"Tokyo": "14 million", "Osaka": "2.7 million"}
    if city not in known:
        raise KeyError(f"no data for {city}")
    return known[city]


def main() -> None:
    board = Board()
    model = ScriptedModel(
        [
            calls(
                [("lookup", {"city": "Tokyo"}), ("lookup", {"city": "Atlantis"})],
                reasoning="Look both up at once.",
            ),
            reply("Tokyo has about 14 million people; I found nothing on Atlantis."),
            reply("Osaka has about 2.7 million people."),
        ]
    )
    person = {"sender": "Chii", "chatbot_id": "board", "channel_id": "cities"}
    with Runtime(
        model=model,
        store=":memory:",
        tools=[lookup],
        adapters=[BoardAdapter.start(board)],
    ) as rt:
        rt.send("s1", "How many people live in Tokyo and in Atlantis?", **person)
        state = rt.wait_idle("s1", timeout=10)
        print("What the board shows (one post per line; tool lines were edited in place):")
        for post_id, text in board.posts.items():
            print(f"  {post_id}: {text}")
        print("\nDelivery, as stored:")
        for message in state:
            print(f"  {message.id} {message.type:11} {message.status}")

        board.down = True  # the platform refuses the next send
        rt.send("s1", "And Osaka?", **person)
        rt.wait_idle("s1", timeout=10, settled=False)
        assert board.refused.wait(10)  # the adapter tried, and the board said no (logged)
        last = rt.state("s1").messages[-1]
        print(f"\nWith the board down the reply stays {last.status}: {last.content!r}")
        assert last.status is Status.PENDING


if __name__ == "__main__":
    main()
