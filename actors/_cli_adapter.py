"""The CLI adapter: a session drawn on a terminal with rich.

Everything is shown (``ChannelKind.CLI``): thoughts, tool calls and tool
results in panels of the colors ``runtime.CHANNEL_RULES`` gives them (cyan,
yellow, magenta), replies as Markdown under a dim line of turn metrics,
notifications as dim italic lines, crash notices in a red panel, nudges and
background alerts in dim panels, and inputs echoed as ``you: …`` lines.

With ``stream=True`` the live text of a model message is printed as it
arrives; when the stored message then comes in with the same text, only its
trailer (metrics, interrupted marker) is printed, so nothing shows twice.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

import attrs
from rich.console import Console, RenderableType
from rich.json import JSON
from rich.markdown import Markdown
from rich.panel import Panel
from rich.text import Text

from runtime import (
    CHANNEL_RULES,
    INTERRUPTED_MARK,
    Category,
    ChannelKind,
    Delta,
    DeltaKind,
    Message,
    Presentation,
    Status,
    Update,
    canonical,
)

from ._adapter import Adapter
from ._errors import InvalidConfig
from ._metrics import format_turn_metrics
from ._terminal import safe

__all__ = ["CliAdapter"]

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

_log = logging.getLogger("amber.adapters")
_STREAMED = {Category.THOUGHT: DeltaKind.REASONING, Category.REPLY: DeltaKind.TEXT}
_StreamKey = tuple[str, str, DeltaKind]
"""(session_id, turn_id, kind) of a streamed message."""


def _color(category: Category) -> str:
    return CHANNEL_RULES[ChannelKind.CLI][category].color or "default"


def _interrupted(message: Message) -> bool:
    return message.metadata.get(INTERRUPTED_MARK) is True


def _title(text: str, message: Message) -> Text:
    return Text(f"{text} (interrupted)" if _interrupted(message) else text)


class CliAdapter(Adapter):
    """Shows a session on a terminal with rich panels, Markdown and dim lines.

    Args:
        console: where to print (default: a new ``rich.console.Console(markup=False)``).
            Tests pass ``Console(record=True, ...)`` and read ``export_text()``.
        platform: the ``chatbot_id`` it serves (default ``cli``).
        stream: print live deltas as they arrive (default off, so output is
            deterministic).
        echo_inputs: print inputs (``you: …``); off when the terminal already
            shows what the person typed.
        max_result_chars: how much of a tool result a panel shows; the rest
            is replaced by a note (the stored message keeps all of it).
    """

    kind = ChannelKind.CLI

    def __init__(
        self,
        console: Console | None = None,
        *,
        platform: str = "cli",
        sessions: Iterable[str] | None = None,
        channels: Iterable[str] | None = None,
        stream: bool = False,
        echo_inputs: bool = True,
        max_result_chars: int = 2000,
    ) -> None:
        super().__init__(platform=platform, sessions=sessions, channels=channels)
        if isinstance(max_result_chars, bool) or not isinstance(max_result_chars, int):
            raise InvalidConfig(f"max_result_chars must be an int (got {max_result_chars!r}).")
        if max_result_chars < 1:
            raise InvalidConfig(f"max_result_chars must be at least 1 (got {max_result_chars!r}).")
        self.console = console if console is not None else Console(markup=False)
        self.stream = stream
        self.echo_inputs = echo_inputs
        self.max_result_chars = max_result_chars
        self._open_stream: tuple[str, str, str, DeltaKind] | None = None
        self._streamed: dict[_StreamKey, str] = {}

    # --- updates -----------------------------------------------------------------

    def render(self, update: Update, presentation: Presentation) -> None:
        """Print a new message (see the module docstring for how each category looks)."""
        self._end_stream()
        message = update.message
        if _CONTROL.search(message.content):
            # Stored text is untrusted (tool output, model text): never let an escape
            # sequence reach the terminal (clear screen, retitle, hyperlinks …).
            message = attrs.evolve(message, content=safe(message.content))
        category = self.category(message)
        if category.is_input:
            if self.echo_inputs or category is Category.BACKGROUND_ALERT:
                self.console.print(self._input(category, message))
            return
        streamed = self._take_streamed(update.session_id, category, message)
        for renderable in self._output(category, message, streamed=streamed):
            self.console.print(renderable)

    def changed(self, update: Update, presentation: Presentation) -> None:
        """Print a dim line when a tool call is left unanswered by an interrupt."""
        self._end_stream()
        message = update.message
        if message.tool_call is not None and message.status is Status.INTERRUPTED:
            self.console.print(Text(f"⏹ {message.tool_call.name} interrupted", style="dim"))

    def on_delta(self, delta: Delta) -> None:
        """With ``stream=True``, print reply and reasoning text as it arrives."""
        if (
            not self.stream
            or delta.chatbot_id != self.platform
            or delta.kind is DeltaKind.TOOL_CALL
        ):
            return
        try:
            key = (delta.session_id, delta.turn_id, delta.stream_id, delta.kind)
            if self._open_stream != key:
                self._end_stream()
                self._open_stream = key
                if delta.kind is DeltaKind.REASONING:
                    self.console.print(Text("💭 ", style=_color(Category.THOUGHT)), end="")
                self._streamed[(delta.session_id, delta.turn_id, delta.kind)] = ""
            style = _color(Category.THOUGHT) if delta.kind is DeltaKind.REASONING else ""
            self.console.print(Text(safe(delta.text), style=style), end="")
            self._streamed[(delta.session_id, delta.turn_id, delta.kind)] += delta.text
        except Exception:
            _log.exception("CliAdapter could not print a delta of stream %r.", delta.stream_id)

    # --- pieces ------------------------------------------------------------------

    def _input(self, category: Category, message: Message) -> RenderableType:
        if category is Category.BACKGROUND_ALERT:
            return Panel(
                Text(message.content),
                title=Text("🔔 background alert"),
                title_align="left",
                border_style="dim",
            )
        if category is Category.CRON_PROMPT:
            line = Text.assemble(("⏰ cron: ", "bold"), message.content)
        elif category is Category.COMPACTION_REQUEST:
            line = Text("🗜 compaction requested", style="dim")
        else:
            line = Text.assemble(("you: ", "bold"), message.content)
        for attachment in message.attachments:
            line.append(f"\n📎 {attachment.name}", style="dim")
        for element in message.browser_elements:
            line.append(f"\n🔗 {element.tag or 'element'} on {element.url}", style="dim")
        return line

    def _output(
        self, category: Category, message: Message, *, streamed: bool
    ) -> list[RenderableType]:
        color = _color(category)
        if category is Category.THOUGHT:
            if streamed:
                return [Text("(interrupted)", style="dim")] if _interrupted(message) else []
            return [
                Panel(
                    Text(message.content),
                    title=_title("💭 thought", message),
                    title_align="left",
                    border_style=color,
                )
            ]
        if category is Category.TOOL_CALL:
            call = message.tool_call
            assert call is not None
            body = JSON.from_data(canonical(call.arguments), indent=2)
            return [
                Panel(body, title=Text(f"🛠️ {call.name}"), title_align="left", border_style=color)
            ]
        if category is Category.TOOL_RESULT:
            return [self._result(message, color)]
        if category is Category.REPLY:
            return self._reply(message, streamed=streamed)
        if category is Category.NOTIFICATION:
            return [Text(f"🔔 {message.content}", style="dim italic")]
        if category is Category.CRASH_NOTICE:
            return [
                Panel(
                    Text(message.content),
                    title=_title("⚠️ crash notice", message),
                    title_align="left",
                    border_style="red",
                )
            ]
        # Nudges, and a system prompt a debug view passes in.
        label = "↻ nudge" if category is Category.NUDGE else "system prompt"
        return [
            Panel(Text(message.content), title=Text(label), title_align="left", border_style=color)
        ]

    def _result(self, message: Message, color: str) -> Panel:
        tool = message.sender or "tool"
        title = f"❌ {tool} ({message.error_type or 'error'})" if message.is_error else f"✅ {tool}"
        content = message.content
        body = Text(content[: self.max_result_chars])
        if len(content) > self.max_result_chars:
            hidden = len(content) - self.max_result_chars
            body.append(f"\n… {hidden:,} more characters not shown", style="dim italic")
        return Panel(body, title=Text(title), title_align="left", border_style=color)

    def _reply(self, message: Message, *, streamed: bool) -> list[RenderableType]:
        out: list[RenderableType] = []
        metrics = format_turn_metrics(message.metadata.get("turn_metrics"))
        if metrics:
            out.append(Text(metrics, style="dim"))
        if not streamed:
            out.append(Markdown(message.content))
        if _interrupted(message):
            out.append(Text("(interrupted)", style="dim"))
        return out

    # --- streaming ---------------------------------------------------------------

    def _end_stream(self) -> None:
        """Finish the line a live stream left open."""
        if self._open_stream is not None:
            self._open_stream = None
            self.console.print()

    def _take_streamed(self, session_id: str, category: Category, message: Message) -> bool:
        """True when ``message``'s text was already printed live (and forget that text)."""
        kind = _STREAMED.get(category)
        if kind is None or message.turn_id is None:
            return False
        text = self._streamed.pop((session_id, message.turn_id, kind), None)
        if category is Category.REPLY:
            # The turn's reply closes it: nothing more will match its streams.
            self._streamed.pop((session_id, message.turn_id, DeltaKind.REASONING), None)
        return text is not None and text.strip() == message.content.strip()
