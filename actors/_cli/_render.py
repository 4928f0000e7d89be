"""How sessions look on a terminal: one-line events, message rows, states and diffs.

Shared by the time-travel commands and ``amber inspect``. Everything here is
a pure function of values from ``runtime`` and returns ``rich`` text or
tables; nothing prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

import orjson
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Span, Text

from runtime import (
    AGENT_SENDER,
    INTERRUPTED_MARK,
    BranchImported,
    Category,
    Event,
    Message,
    MessageAdded,
    MetadataUpdated,
    OrphanRecovered,
    RolledBack,
    SessionState,
    StateDiff,
    Status,
    StatusChanged,
    TurnEnded,
    TurnStarted,
    category_of,
    thaw,
)

from .._channels import format_turn_metrics

__all__ = [
    "STATUS_STYLES",
    "category_label",
    "describe_event",
    "diff_view",
    "excerpt",
    "message_detail",
    "message_lines",
    "message_table",
    "state_header",
    "status_text",
    "time_text",
    "touched_ids",
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
_OUTCOME_STYLES = {"processed": "green", "interrupted": "dark_orange", "error": "bold red"}
_EXCERPT = 72


def _label(category: Category) -> str:
    return category.name.lower().replace("_", " ")


def category_label(message: Message) -> str:
    """``user question``, ``tool call`` … (``rolled back`` messages keep theirs)."""
    return _label(category_of(message))


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


# Control characters from stored content (a tool's ANSI colors, a stray escape) are
# shown as \x1b and never sent to the terminal, where they could rewrite the screen.
_CONTROL = str.maketrans(
    {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if c not in (0x09, 0x0A)}
)


def safe(text: str) -> str:
    """``text`` with control characters (but tabs and newlines) spelled out as ``\\xNN``."""
    return text.translate(_CONTROL)


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


def _compact(value: object) -> str:
    return orjson.dumps(thaw(value), default=str).decode()


def message_summary(message: Message, limit: int = _EXCERPT) -> Text:
    """What a message says, on one line: text, ``tool(args)``, or a result's summary."""
    if message.tool_call is not None:
        call = message.tool_call
        return Text(excerpt(f"{call.name}({_compact(call.arguments)})", limit), style="yellow")
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


def touched_ids(event: Event, before: SessionState, after: SessionState) -> set[str]:
    """Ids of the messages an event added or changed (for ``timeline --message``)."""
    if isinstance(event, MessageAdded):
        return {event.message.id}
    if isinstance(event, StatusChanged | MetadataUpdated):
        return {event.message_id}
    if isinstance(event, TurnStarted):
        turn = after.active_turn
        return set(turn.input_ids) if turn is not None else set()
    if isinstance(event, TurnEnded | OrphanRecovered):
        turn = before.active_turn
        if turn is None:
            return set()
        ids = set(turn.input_ids) | set(turn.open_calls.values())
        if isinstance(event, TurnEnded):
            ids |= {m.id for m in event.partial}
        return ids
    if isinstance(event, BranchImported):
        return {m.id for m in event.messages}
    if isinstance(event, RolledBack):
        return {m.id for m in after.messages if not m.active and before.get(m.id) is not None}
    return set()


def describe_event(event: Event, before: SessionState, after: SessionState) -> Text:
    """What an event changed, on one line (``before``/``after``: the states around it)."""
    if isinstance(event, MessageAdded):
        message = after.get(event.message.id) or event.message
        category = category_of(message)
        sender = f" from {safe(message.sender)}" if category is Category.USER_QUESTION else ""
        return join(
            ("+ ", "green"),
            (safe(message.id), "bold"),
            f" {_label(category)}{sender}: ",
            message_summary(message),
        )
    if isinstance(event, StatusChanged):
        changed = after.get(event.message_id)
        label = category_label(changed) if changed is not None else "message"
        return join(
            (event.message_id, "bold"),
            f" {label}: ",
            status_text(event.expected),
            " → ",
            status_text(event.status),
        )
    if isinstance(event, MetadataUpdated):
        keys = ", ".join(f"{k}={_compact(v)}" for k, v in event.metadata.items())
        return join((event.message_id, "bold"), f" metadata: {excerpt(keys, 60)}")
    if isinstance(event, TurnStarted):
        turn = after.active_turn
        claimed = ", ".join(turn.input_ids) if turn is not None else "nothing"
        return join(("▶ ", "cyan"), (event.turn_id, "bold"), f" starts, claims {claimed}")
    if isinstance(event, TurnEnded):
        return _describe_turn_end(event, before)
    if isinstance(event, OrphanRecovered):
        turn = before.active_turn
        inputs = ", ".join(turn.input_ids) if turn is not None else "-"
        return join(
            ("↺ ", "yellow"),
            (event.turn_id, "bold"),
            " recovered",
            f" ({excerpt(event.reason, 80)})" if event.reason else "",
            f"; {inputs} back to ",
            status_text(Status.PENDING_AGENT),
        )
    if isinstance(event, BranchImported):
        return join(
            ("⑂ ", "cyan"),
            f"forked from {event.source_session_id} at seq {event.source_seq}: ",
            f"{len(event.messages)} messages, {len(event.turns)} turns",
        )
    if isinstance(event, RolledBack):
        gone = len(touched_ids(event, before, after))
        reason = f" ({excerpt(event.reason, 80)})" if event.reason else ""
        return Text(f"⟲ rolled back to seq {event.to_seq}: {gone} messages inactive{reason}")
    return Text(event.kind)


def _describe_turn_end(event: TurnEnded, before: SessionState) -> Text:
    turn = before.active_turn
    outcome = str(event.outcome)
    style = _OUTCOME_STYLES.get(outcome, "")
    rest = f" ({excerpt(event.reason, 60)})" if event.reason else ""
    if turn is not None:
        inputs = len(turn.input_ids)
        rest += f"; {inputs} input{'s' * (inputs != 1)} → {outcome}"
        if outcome == "interrupted" and turn.open_calls:
            rest += f", {len(turn.open_calls)} unanswered call(s) interrupted"
    if event.partial:
        rest += f", partial output kept: {', '.join(m.id for m in event.partial)}"
    metrics = format_turn_metrics(thaw(event.metrics))
    return join(
        ("■ ", style),
        (event.turn_id, "bold"),
        " ends ",
        (outcome, style),
        rest,
        (f" · {metrics}" if metrics else "", "dim"),
    )


def state_header(state: SessionState, *, last_seq: int, event: Event | None) -> Text:
    """``demo at seq 12 of 33 · 12:50:02.125 UTC · turn_started`` and the active turn."""
    line = Text.assemble((state.session_id, "bold"), f" at seq {state.seq} of {last_seq}")
    if state.updated_at is not None:
        line.append(f" · {time_text(state.updated_at, date=True)} UTC")
    if event is not None:
        line.append(f" · {event.kind}")
    turn = state.active_turn
    if turn is None:
        line.append("\nActive turn: none", style="dim")
    else:
        line.append("\nActive turn: ")
        line.append(turn.id, style="bold yellow")
        line.append(f" (since seq {turn.started_seq}, claims {', '.join(turn.input_ids)}")
        if turn.open_calls:
            line.append(f"; open calls: {', '.join(turn.open_calls)}")
        line.append(")")
    counts = ", ".join(f"{n} {status}" for status, n in state.status_counts().items())
    line.append(f"\n{len(state)} messages" + (f": {counts}" if counts else ""), style="dim")
    return line


def _marks(changes: StateDiff | None) -> tuple[set[str], set[str]]:
    if changes is None:
        return set(), set()
    return {m.id for m in changes.added}, {c.message_id for c in changes.changed}


def _content(message: Message, limit: int) -> Text:
    content = message_summary(message, limit)
    if message.sender and message.sender != AGENT_SENDER and message.tool_call is None:
        return join((f"{safe(message.sender)}: ", "dim"), content)
    return content


def message_lines(
    messages: Iterable[Message], *, changes: StateDiff | None = None, title: str | None = None
) -> list[Text]:
    """One line per message (seq, id, category, status, content), as aligned columns.

    Rows ``changes`` added are marked ``+`` on green, rows it changed ``~``.
    Each line is cut to the width it is drawn in (``no_wrap``, ellipsis).
    Built by hand rather than as a ``rich`` table: a table lays out every
    row (milliseconds each), which a state of thousands of messages cannot
    afford.
    """
    added, changed = _marks(changes)
    rows = []
    for message in messages:
        status = str(message.status) + ("" if message.active else " (rolled back)")
        seq = "" if message.event_seq is None else str(message.event_seq)
        rows.append((message, seq, safe(message.id), category_label(message), status))
    w_seq = max([3, *(len(r[1]) for r in rows)])
    w_id = max([2, *(len(r[2]) for r in rows)])
    w_cat = max([8, *(len(r[3]) for r in rows)])
    w_status = max([6, *(len(r[4]) for r in rows)])
    lines: list[Text] = []
    if title:
        lines.append(Text(title, style="bold"))
    header = f"  {'seq':>{w_seq}}  {'id':<{w_id}}  {'category':<{w_cat}}  {'status':<{w_status}}"
    lines.append(Text(header + "  content", style="bold", no_wrap=True, overflow="ellipsis"))
    for message, seq, ident, category, status in rows:
        mark = "+" if message.id in added else "~" if message.id in changed else " "
        line = join(
            (mark, "bold green" if mark == "+" else "bold yellow"),
            " ",
            (f"{seq:>{w_seq}}", "dim"),
            f"  {ident:<{w_id}}  {category:<{w_cat}}  ",
            (f"{status:<{w_status}}", STATUS_STYLES.get(message.status, "")),
            "  ",
            _content(message, 200),
        )
        if mark != " ":
            line.stylize_before("on dark_green" if mark == "+" else "on grey23")
        line.no_wrap, line.overflow = True, "ellipsis"
        lines.append(line)
    return lines


def message_table(messages: Iterable[Message], *, title: str | None = None) -> Table:
    """Every message with its whole content (``--full``): a table whose content column wraps."""
    table = Table(title=title, title_justify="left", box=None, pad_edge=False, header_style="bold")
    table.add_column("seq", justify="right", no_wrap=True, style="dim")
    table.add_column("id", no_wrap=True)
    table.add_column("category", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("content", overflow="fold", ratio=1)
    for message in messages:
        status = status_text(message.status)
        if not message.active:
            status.append(" (rolled back)", style="dim")
        content = Text(safe(message.content) or "(empty)")
        if message.sender and message.sender != AGENT_SENDER and message.tool_call is None:
            content = join((f"{safe(message.sender)}: ", "dim"), content)
        table.add_row(
            str(message.event_seq if message.event_seq is not None else ""),
            safe(message.id),
            category_label(message),
            status,
            content,
        )
    return table


def diff_view(delta: StateDiff) -> RenderableType:
    """A ``StateDiff`` as lines: added and removed messages, field changes, turns."""
    lines: list[Text] = [
        Text(f"From seq {delta.before_seq} to seq {delta.after_seq}:", style="bold")
    ]
    if not delta:
        lines.append(Text("  no change to messages or turns", style="dim"))
    for message in delta.added:
        lines.append(
            Text.assemble(
                ("  + ", "green"),
                (message.id, "bold"),
                f" {category_label(message)} ",
                status_text(message.status),
                ": ",
                message_summary(message),
            )
        )
    for message in delta.removed:
        lines.append(
            Text.assemble(("  - ", "red"), (message.id, "bold"), f" {category_label(message)}")
        )
    for change in delta.changed:
        if change.field == "status":
            before, after = status_text(str(change.before)), status_text(str(change.after))
        else:
            before, after = Text(_value(change.before)), Text(_value(change.after))
        lines.append(
            Text.assemble(
                ("  ~ ", "yellow"),
                (change.message_id, "bold"),
                f" {change.field}: ",
                before,
                " → ",
                after,
            )
        )
    for turn in delta.turns:
        lines.append(
            Text.assemble(
                ("  ▶ ", "cyan"),
                (turn.turn_id, "bold"),
                f" turn: {turn.before or '(none)'} → {turn.after or '(none)'}",
            )
        )
    return Group(*lines)


def _value(value: object) -> str:
    if isinstance(value, str):
        return excerpt(repr(value), 60)
    return excerpt(_compact(value), 60)


def message_detail(message: Message) -> RenderableType:
    """Every field of one message, its content in full."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    rows: list[tuple[str, RenderableType]] = [
        ("id", Text(message.id)),
        ("category", Text(category_label(message))),
        ("status", status_text(message.status)),
        ("role/type", Text(f"{message.role}/{message.type}")),
        ("sender", Text(message.sender or "-")),
        ("turn", Text(message.turn_id or "-")),
        ("parent", Text(message.parent_id or "-")),
        ("event seq", Text(str(message.event_seq))),
        ("created", Text(f"{time_text(message.created_at, date=True)} UTC")),
        ("channel", Text(f"{message.chatbot_id or '-'} / {message.channel_id or '-'}")),
    ]
    if not message.active:
        rows.append(("active", Text("no (rolled back)", style="dim")))
    if message.tool_call is not None:
        call = message.tool_call
        rows.append(("tool call", Text(f"{call.name} (id {call.id})")))
        rows.append(("arguments", Text(_pretty(call.arguments))))
    if message.tool_call_id is not None:
        rows.append(("answers", Text(message.tool_call_id)))
        if message.is_error:
            rows.append(("error", Text(message.error_type or "error", style="red")))
    if message.attachments:
        names = ", ".join(f"{a.name} ({a.media_type}, {a.size} bytes)" for a in message.attachments)
        rows.append(("attachments", Text(names)))
    if message.metadata:
        rows.append(("metadata", Text(_pretty(message.metadata))))
    rows.append(("content", Text(safe(message.content) or "(empty)")))
    for label, value in rows:
        table.add_row(label, value)
    return table


def _pretty(value: object) -> str:
    return orjson.dumps(thaw(value), option=orjson.OPT_INDENT_2, default=str).decode()


def turn_lines(state: SessionState) -> Sequence[Text]:
    """One line per turn: id, status, seqs, duration, reason."""
    lines = []
    for turn in state.turn_list():
        status = str(turn.status)
        line = Text.assemble(
            (turn.id, "bold"), " ", (status, _OUTCOME_STYLES.get(status, "yellow"))
        )
        end = f"{turn.ended_seq}" if turn.ended_seq is not None else "…"
        line.append(f"  seq {turn.started_seq}→{end}", style="dim")
        if turn.duration_ms is not None:
            line.append(f"  {turn.duration_ms / 1000:.1f} s", style="dim")
        line.append(f"  inputs {', '.join(turn.input_ids)}")
        if turn.reason:
            line.append(f"  ({excerpt(turn.reason, 60)})", style="dim")
        line.no_wrap = True
        lines.append(line)
    return lines
