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
from rich.text import Text

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


def category_label(message: Message) -> str:
    """``user question``, ``tool call`` … (``rolled back`` messages keep theirs)."""
    return category_of(message).name.lower().replace("_", " ")


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
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


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
        line = Text.assemble(("+ ", "green"), (message.id, "bold"), " ", category_label(message))
        if message.sender and category_of(message) is Category.USER_QUESTION:
            line.append(f" from {message.sender}")
        line.append(": ")
        line.append_text(message_summary(message))
        return line
    if isinstance(event, StatusChanged):
        changed = after.get(event.message_id)
        label = category_label(changed) if changed is not None else "message"
        return Text.assemble(
            (event.message_id, "bold"),
            f" {label}: ",
            status_text(event.expected),
            " → ",
            status_text(event.status),
        )
    if isinstance(event, MetadataUpdated):
        keys = ", ".join(f"{k}={_compact(v)}" for k, v in event.metadata.items())
        return Text.assemble((event.message_id, "bold"), f" metadata: {excerpt(keys, 60)}")
    if isinstance(event, TurnStarted):
        turn = after.active_turn
        claimed = ", ".join(turn.input_ids) if turn is not None else "nothing"
        return Text.assemble(("▶ ", "cyan"), (event.turn_id, "bold"), f" starts, claims {claimed}")
    if isinstance(event, TurnEnded):
        return _describe_turn_end(event, before)
    if isinstance(event, OrphanRecovered):
        turn = before.active_turn
        inputs = ", ".join(turn.input_ids) if turn is not None else "-"
        return Text.assemble(
            ("↺ ", "yellow"),
            (event.turn_id, "bold"),
            " recovered",
            f" ({event.reason})" if event.reason else "",
            f"; {inputs} back to ",
            status_text(Status.PENDING_AGENT),
        )
    if isinstance(event, BranchImported):
        return Text.assemble(
            ("⑂ ", "cyan"),
            f"forked from {event.source_session_id} at seq {event.source_seq}: ",
            f"{len(event.messages)} messages, {len(event.turns)} turns",
        )
    if isinstance(event, RolledBack):
        gone = len(touched_ids(event, before, after))
        reason = f" ({event.reason})" if event.reason else ""
        return Text(f"⟲ rolled back to seq {event.to_seq}: {gone} messages inactive{reason}")
    return Text(event.kind)


def _describe_turn_end(event: TurnEnded, before: SessionState) -> Text:
    turn = before.active_turn
    outcome = str(event.outcome)
    line = Text.assemble(
        ("■ ", _OUTCOME_STYLES.get(outcome, "")),
        (event.turn_id, "bold"),
        " ends ",
        (outcome, _OUTCOME_STYLES.get(outcome, "")),
    )
    if event.reason:
        line.append(f" ({excerpt(event.reason, 60)})")
    if turn is not None:
        line.append(f"; {len(turn.input_ids)} input{'s' * (len(turn.input_ids) != 1)} → {outcome}")
        if outcome == "interrupted" and turn.open_calls:
            line.append(f", {len(turn.open_calls)} unanswered call(s) interrupted")
    if event.partial:
        line.append(f", partial output kept: {', '.join(m.id for m in event.partial)}")
    metrics = format_turn_metrics(thaw(event.metrics))
    if metrics:
        line.append(f" · {metrics}", style="dim")
    return line


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


def message_table(
    messages: Iterable[Message],
    *,
    changes: StateDiff | None = None,
    full: bool = False,
    title: str | None = None,
) -> Table:
    """One row per message; rows ``changes`` added or changed are marked and highlighted."""
    added = {m.id for m in changes.added} if changes else set()
    changed: dict[str, list[str]] = {}
    for change in changes.changed if changes else ():
        changed.setdefault(change.message_id, []).append(change.field)
    table = Table(title=title, title_justify="left", box=None, pad_edge=False, header_style="bold")
    table.add_column("", width=1, no_wrap=True)
    table.add_column("seq", justify="right", no_wrap=True, style="dim")
    table.add_column("id", no_wrap=True)
    table.add_column("category", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("content", overflow="fold", ratio=1)
    for message in messages:
        mark, style = "", ""
        if message.id in added:
            mark, style = "+", "on dark_green"
        elif message.id in changed:
            mark, style = "~", "on grey23"
        status = status_text(message.status)
        if not message.active:
            status.append(" (rolled back)", style="dim")
        content = Text(message.content) if full else message_summary(message, 200)
        if message.sender and message.sender != AGENT_SENDER and not message.tool_call:
            content = Text.assemble((f"{message.sender}: ", "dim"), content)
        if not full:
            # Cut to the column's width rather than squeezing the other columns.
            content.no_wrap, content.overflow = True, "ellipsis"
        table.add_row(
            Text(mark, style="bold green" if mark == "+" else "bold yellow"),
            str(message.event_seq if message.event_seq is not None else ""),
            message.id,
            category_label(message),
            status,
            content,
            style=style,
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
    rows.append(("content", Text(message.content or "(empty)")))
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
        lines.append(line)
    return lines
