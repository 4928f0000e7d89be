"""Deliberately buggy tools, adapters and models: each breaks one contract or invariant.

The mutation tests (``test_kit_mutations.py``) plug each into the kit and
check that it fails with a message naming what broke.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import attrs
import trio

from actors import (
    Adapter,
    LiveChannelAdapter,
    MessageFinish,
    MessageStart,
    ModelRequest,
    Tool,
    ToolCallDelta,
    ToolOutcome,
    Update,
    tool,
)
from runtime import ChannelKind, Chunk, Presentation


class DeliversTwice(LiveChannelAdapter):
    """Reports every message it renders itself, then lets the base class report it again."""

    def render(self, update: Update, presentation: Presentation) -> None:
        super().render(update, presentation)
        if update.message.status.value in ("pending", "responded"):
            self.deliver(update.message)


class DeliversInputs(LiveChannelAdapter):
    """Marks the person's own messages delivered when it echoes them."""

    def render(self, update: Update, presentation: Presentation) -> None:
        super().render(update, presentation)
        if self.category(update.message).is_input:
            self.deliver(update.message)


class NeverDelivers(Adapter):
    """Shows messages but overrides on_update and forgets to report them."""

    kind = ChannelKind.LIVE

    def on_update(self, update: Update) -> None:
        pass

    def render(self, update: Update, presentation: Presentation) -> None:
        pass


class EditsMessages(LiveChannelAdapter):
    """Forces the frozen message it renders open and rewrites its content."""

    def render(self, update: Update, presentation: Presentation) -> None:
        super().render(update, presentation)
        object.__setattr__(update.message, "content", update.message.content + " (edited)")


@tool(timeout=None)
async def stubborn(seconds: float = 0.01) -> str:
    """Sleeps, and ignores cancellation while it does (a shielded scope that never ends)."""
    with trio.CancelScope(shield=True):
        await trio.sleep_forever()
    return "never"


@tool(timeout=None)
async def hangs(task: str = "") -> str:
    """Waits forever for something that never comes (no time limit set)."""
    await trio.sleep_forever()
    return "never"


@attrs.frozen(kw_only=True, eq=False)
class RaisingTool(Tool):
    """A hand-written Tool whose invoke lets an exception out instead of an error outcome."""

    async def invoke(self, arguments: Mapping[str, Any]) -> ToolOutcome:
        raise RuntimeError("database is locked")


def raising_tool() -> RaisingTool:
    """A ``RaisingTool`` named ``query`` (schema of ``query(sql: str)``)."""

    @tool
    def query(sql: str) -> str:
        """Run a query."""
        return sql

    fields = {str(a.alias): getattr(query, a.name) for a in attrs.fields(Tool)}
    return RaisingTool(**fields)


@tool
def echo(text: str = "") -> str:
    """Echo the text (a working tool)."""
    return text


class ReusedCallIds:
    """A model (an OpenAI-compatible server, say) whose tool call ids restart at call_0 each time."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        yield MessageStart()
        if request.call_index == 0:
            yield ToolCallDelta(index=0, id="call_0", name="echo", arguments='{"text": "x"}')
            yield MessageFinish(stop_reason="tool_use")
        else:
            from actors import TextDelta

            yield TextDelta(text="done")
            yield MessageFinish(stop_reason="end_turn")
