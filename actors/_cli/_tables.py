"""A state on a terminal: its header, one line per message, the turns, one message in full.

Shared by ``amber show`` and ``amber inspect``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import orjson
from rich.text import Text

from runtime import (
    AGENT_SENDER,
    Event,
    Message,
    SessionState,
    added_seq,
    canonical,
    inherited,
)
from runtime._article import counted

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table

    from runtime import AuditRow, StateDiff, Turn

# rich.table (and the fractions and decimal it imports) is imported by the functions that make
# a table: the lines of `amber show` are Texts.

from ._text import (
    AUDIT_STYLES,
    OUTCOME_STYLES,
    STATUS_STYLES,
    category_label,
    duration_text,
    excerpt,
    in_call_order,
    join,
    json_safe,
    message_summary,
    money,
    safe,
    status_text,
    time_text,
)

__all__ = [
    "message_detail",
    "message_lines",
    "message_table",
    "model_call_lines",
    "shown_seq",
    "state_header",
    "turn_lines",
]


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
            opened = ", ".join(call for call, _ in in_call_order(state, turn.open_calls))
            line.append(f"; open calls: {opened}")
        line.append(")")
        if turn.awaiting_approval:
            waiting = in_call_order(state, turn.awaiting_approval)
            line.append("\nAwaiting approval: ", style="magenta")
            line.append(", ".join(call for call, _ in waiting), style="bold magenta")
    counts = ", ".join(f"{n} {status}" for status, n in state.status_counts().items())
    line.append(
        f"\n{counted(len(state), 'message')}" + (f": {counts}" if counts else ""), style="dim"
    )
    calls = state.model_calls()
    if calls:
        from runtime import session_cost  # the price tables: only for a state with model calls

        cost = session_cost(calls)
        spent = money(cost.usd) if cost.priced else "cost unknown"
        if cost.priced and not cost.complete:
            spent += f" ({cost.unpriced} call(s) unpriced)"
        line.append(f" · {counted(len(calls), 'model call')}, {spent}", style="dim")
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


def shown_seq(message: Message, state: SessionState | None) -> str:
    """The seq column of ``message``: the seq of ``state``'s session that added it (1 for a
    message a fork inherited, whose ``event_seq`` is its source's), or as stored without a
    state."""
    seq = message.event_seq if state is None else added_seq(state, message)
    return "" if seq is None else str(seq)


def message_lines(
    messages: Iterable[Message],
    *,
    changes: StateDiff | None = None,
    title: str | None = None,
    state: SessionState | None = None,
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
        seq = shown_seq(message, state)
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


def message_table(
    messages: Iterable[Message], *, title: str | None = None, state: SessionState | None = None
) -> Table:
    """Every message with its whole content (``--full``): a table whose content column wraps."""
    from rich.table import Table

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
            shown_seq(message, state),
            safe(message.id),
            category_label(message),
            status,
            content,
        )
    return table


def _event_seq(message: Message, state: SessionState | None) -> str:
    if state is None or not inherited(state, message):
        return str(message.event_seq)
    return (
        f"{added_seq(state, message)} (inherited with the fork: seq {message.event_seq} "
        f"of session {message.session_id})"
    )


def message_detail(message: Message, state: SessionState | None = None) -> RenderableType:
    """Every field of one message, its content in full; given the ``state`` it is shown in,
    the seq of a message the session inherited with its fork says where it came from."""
    from rich.table import Table

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
        ("event seq", Text(_event_seq(message, state))),
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
    # canonical: a frozen map's keys sorted (its own order is its keys' hash order, which
    # changes from process to process).
    return json_safe(
        orjson.dumps(canonical(value), option=orjson.OPT_INDENT_2, default=str).decode()
    )


def turn_lines(state: SessionState, turns: Iterable[Turn] | None = None) -> Sequence[Text]:
    """One line per turn (``turns``, default: every turn of ``state``): id, status, seqs,
    duration, reason."""
    lines = []
    for turn in state.turn_list() if turns is None else turns:
        status = str(turn.status)
        line = Text.assemble((turn.id, "bold"), " ", (status, OUTCOME_STYLES.get(status, "yellow")))
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


def model_call_lines(state: SessionState, rows: Iterable[AuditRow] | None = None) -> list[Text]:
    """One line per model call (``rows``, default: the audit rows of ``state``, seed 003):
    number, id, status, time, cost."""
    lines = []
    for row in state.model_calls() if rows is None else rows:
        status = str(row.status)
        end = f"{row.ended_seq}" if row.ended_seq is not None else "…"
        rest = f"  seq {row.started_seq}→{end}  {row.turn_id}"
        if row.duration_ms is not None:
            rest += f"  {duration_text(row.duration_ms)}"
        if row.usage is not None:
            rest += f"  {row.usage.input_tokens:,}/{row.usage.output_tokens:,} tokens"
        if row.cost_usd is not None:
            rest += f"  {money(row.cost_usd)}"
        if row.retries:
            rest += f"  {len(row.retries)} retr{'y' if len(row.retries) == 1 else 'ies'}"
        if row.error:
            rest += f"  ({excerpt(row.error, 60)})"
        elif row.stop_reason:
            rest += f"  {safe(row.stop_reason)}"
        line = join(
            (f"#{row.sequence} {safe(row.operation_id)} ", "bold"),
            (status, AUDIT_STYLES.get(status, "")),
            (rest, "dim"),
        )
        line.no_wrap = True
        lines.append(line)
    return lines
