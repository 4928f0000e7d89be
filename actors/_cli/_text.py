"""The pieces every CLI view is made of: statuses in color, times, safe one-line excerpts.

``join`` builds a line of styled pieces in one pass (a timeline prints one
per event); ``safe`` spells out control characters so that stored content
never drives the terminal.
"""

from __future__ import annotations

import typing
from datetime import UTC, datetime

import orjson
from rich.text import Span, Text

from runtime import (
    INTERRUPTED_MARK,
    Category,
    Message,
    SessionState,
    Status,
    canonical,
    category_of,
)
from runtime._article import article

from .._terminal import json_safe, safe

if typing.TYPE_CHECKING:
    from rich.json import JSON

__all__ = [
    "AUDIT_STYLES",
    "OUTCOME_STYLES",
    "STATUS_STYLES",
    "Part",
    "category_label",
    "compact",
    "duration_text",
    "excerpt",
    "in_call_order",
    "join",
    "json_safe",
    "json_text",
    "json_view",
    "label",
    "message_summary",
    "money",
    "safe",
    "status_text",
    "time_text",
]

STATUS_STYLES: dict[Status, str] = {
    Status.PENDING_AGENT: "yellow",
    Status.PROCESSING: "bold yellow",
    Status.PROCESSED: "green",
    Status.INTERRUPTED: "dark_orange",
    Status.ERROR: "bold red",
    Status.PENDING: "yellow",
    Status.RESPONDED: "cyan",
    Status.DELIVERED: "green",
}
"""The color of each status, everywhere the CLI prints one."""


OUTCOME_STYLES = {"processed": "green", "interrupted": "dark_orange", "error": "bold red"}
"""The color of each way a turn ends."""
AUDIT_STYLES = {
    "running": "yellow",
    "completed": "green",
    "failed": "bold red",
    "interrupted": "dark_orange",
    "abandoned": "dark_orange",
}
"""The color of each model-call audit status."""


_EXCERPT = 72


def label(category: Category) -> str:
    return category.name.lower().replace("_", " ")


def category_label(message: Message) -> str:
    """``user question``, ``tool call`` … (``rolled back`` messages keep theirs)."""
    return label(category_of(message))


def status_text(status: Status | str) -> Text:
    """A status in its color."""
    return Text(str(status), style=STATUS_STYLES.get(Status(status), ""))


def time_text(at: datetime | None, *, date: bool = False) -> str:
    """``12:50:02.125`` in UTC (with the date in front when ``date``)."""
    if at is None:
        return "-"
    utc = at.astimezone(UTC)
    stamp = utc.strftime("%H:%M:%S.") + f"{utc.microsecond // 1000:03d}"
    return f"{utc:%Y-%m-%d} {stamp}" if date else stamp


def excerpt(text: str, limit: int = _EXCERPT) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    line = safe(" ".join(text.split()))
    return line if len(line) <= limit else line[: limit - 1] + "…"


Part = str | tuple[str, str] | Text
"""A piece of a line: plain text, ``(text, style)``, or a styled ``Text``."""


def join(*parts: Part) -> Text:
    """One ``Text`` from pieces, like ``Text.assemble`` but in one pass.

    A timeline prints one line per event, so this is on the hot path; the
    pieces must already be safe (``excerpt``/``safe``).
    """
    plain: list[str] = []
    spans: list[Span] = []
    offset = 0
    for part in parts:
        if isinstance(part, Text):
            text = part.plain
            if part.style:
                spans.append(Span(offset, offset + len(text), part.style))
            spans.extend(span.move(offset) for span in part.spans)
        elif isinstance(part, tuple):
            text, style = part
            if style and text:
                spans.append(Span(offset, offset + len(text), style))
        else:
            text = part
        plain.append(text)
        offset += len(text)
    return Text("".join(plain), spans=spans)


def compact(value: object) -> str:
    """``value`` as compact JSON, a frozen map's keys sorted (as the provider views send
    them: its own order is its keys' hash order, which changes from process to process)."""
    return orjson.dumps(canonical(value), default=str).decode()


def message_summary(message: Message, limit: int = _EXCERPT) -> Text:
    """What a message says, on one line: text, ``tool(args)``, or a result's summary."""
    if message.tool_call is not None:
        call = message.tool_call
        return Text(excerpt(f"{call.name}({compact(call.arguments)})", limit), style="yellow")
    if message.tool_call_id is not None:
        summary = message.metadata.get("tool_result")
        shown = summary if isinstance(summary, str) and summary else message.content
        if message.is_error:
            label = f"❌ {message.error_type or 'error'}: "
            return Text(excerpt(label + shown, limit), style="red")
        return Text(excerpt("✅ " + shown, limit))
    text = Text(excerpt(message.content, limit) if message.content.strip() else "(empty)")
    if message.metadata.get(INTERRUPTED_MARK) is True:
        text.append(" (interrupted)", style="dark_orange")
    for attachment in message.attachments:
        text.append(f" 📎{attachment.name}", style="dim")
    return text


def duration_text(ms: float) -> str:
    """``0.4 ms``, ``12 ms``, ``1,204 ms``."""
    return f"{ms:.1f} ms" if ms < 10 else f"{ms:,.0f} ms"


def money(usd: float | None) -> str:
    """``$0.0123`` (four significant places below a cent); ``-`` when unknown."""
    if usd is None:
        return "-"
    if usd == 0:
        return "$0"
    if usd < 0.01:
        return f"${usd:.6f}".rstrip("0")
    return f"${usd:,.4f}".rstrip("0").rstrip(".")


def json_text(data: object) -> str:
    """``data`` as indented JSON (bytes shown by their size), its direction controls and
    C1 controls escaped (``json_safe``)."""
    return json_safe(orjson.dumps(data, option=orjson.OPT_INDENT_2, default=_bytes).decode())


def json_view(data: object) -> JSON:
    """``data`` as rich's highlighted JSON, written by ``json_text`` (rich's own ``JSON``
    writes direction controls raw)."""
    from rich.highlighter import JSONHighlighter
    from rich.json import JSON

    shown = JSON("null")
    shown.text = JSONHighlighter()(json_text(data))
    shown.text.no_wrap = True
    shown.text.overflow = None
    return shown


def _bytes(value: object) -> str:
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    raise TypeError(f"Cannot print {article(type(value).__name__)} as JSON.")


def in_call_order(state: SessionState, calls: typing.Mapping[str, str]) -> list[tuple[str, str]]:
    """A turn's ``open_calls`` or ``awaiting_approval`` (call id -> message id) in the order
    the calls were made (their messages' order): a map's own order is its hashes', which
    changes from one run to the next."""
    last = len(state.messages)
    return sorted(calls.items(), key=lambda item: state.index.get(item[1], last))
