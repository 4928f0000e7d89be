"""What an event changed, on one line, and what changed between two states.

Shared by ``amber timeline``, ``amber diff`` and ``amber inspect``. Pure
functions of values from ``runtime``; nothing prints.
"""

from __future__ import annotations

import typing

from rich.text import Text

from runtime import (
    ApprovalDecided,
    ApprovalRequested,
    AuditRow,
    BranchImported,
    Category,
    Event,
    MessageAdded,
    MetadataUpdated,
    ModelCallFinished,
    ModelCallStarted,
    OrphanRecovered,
    RolledBack,
    SessionState,
    Status,
    StatusChanged,
    TurnEnded,
    TurnStarted,
    category_of,
    reports_error,
    thaw,
)
from runtime._article import counted
from runtime._decisions import DECISION_KEY, stored_decision

from .._metrics import format_turn_metrics
from ._text import (
    AUDIT_STYLES,
    OUTCOME_STYLES,
    category_label,
    compact,
    duration_text,
    excerpt,
    join,
    label,
    message_summary,
    safe,
    status_text,
)

if typing.TYPE_CHECKING:
    from rich.console import RenderableType

    from runtime import StateDiff, ToolCall, Turn

__all__ = ["describe_event", "diff_view", "is_error_event", "touched_ids"]


def is_error_event(event: Event) -> bool:
    """A turn that ended in error, a failed model call, or a tool result that is an error
    (``runtime.reports_error``)."""
    return reports_error(event)


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
            if event.notice is not None:
                ids.add(event.notice.id)
        return ids
    if isinstance(event, BranchImported):
        return {m.id for m in event.messages}
    if isinstance(event, ApprovalRequested | ApprovalDecided):
        message_id = before.tool_calls.get(event.call_id)
        return {message_id} if message_id is not None else set()
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
            f" {label(category)}{sender}: ",
            message_summary(message),
        )
    if isinstance(event, StatusChanged):
        changed = after.get(event.message_id)
        kind = category_label(changed) if changed is not None else "message"
        return join(
            (event.message_id, "bold"),
            f" {kind}: ",
            status_text(event.expected),
            " → ",
            status_text(event.status),
        )
    if isinstance(event, MetadataUpdated):
        asked = _stored_decision(event, after)
        if asked is not None:
            return asked
        keys = ", ".join(f"{k}={compact(v)}" for k, v in sorted(event.metadata.items()))
        return join((event.message_id, "bold"), f" metadata: {excerpt(keys, 60)}")
    if isinstance(event, TurnStarted):
        turn = after.active_turn
        claimed = ", ".join(turn.input_ids) if turn is not None else "nothing"
        return join(("▶ ", "cyan"), (event.turn_id, "bold"), f" starts, claims {claimed}")
    if isinstance(event, TurnEnded):
        return _describe_turn_end(event, before, after)
    if isinstance(event, ModelCallStarted):
        model = f", {safe(event.model)}" if event.model else ""
        return join(
            ("◆ ", "blue"),
            (f"model call #{event.sequence} {safe(event.operation_id)}", "bold"),
            f" starts ({event.turn_id}{model})",
        )
    if isinstance(event, ModelCallFinished):
        return _describe_call_end(event, after)
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
            _calls_interrupted(event, turn),
        )
    if isinstance(event, BranchImported):
        return join(
            ("⑂ ", "cyan"),
            f"forked from {event.source_session_id} at seq {event.source_seq}: ",
            f"{counted(len(event.messages), 'message')}, {counted(len(event.turns), 'turn')}",
        )
    if isinstance(event, ApprovalRequested):
        call = _call_name(after, event.call_id)
        return join(("⏸ ", "magenta"), (event.call_id, "bold"), f" {call} waits for approval")
    if isinstance(event, ApprovalDecided):
        call = _call_name(after, event.call_id)
        verdict = ("approved", "green") if event.approved else ("denied", "red")
        who = f" by {safe(event.by)}" if event.by else ""
        why = f" ({excerpt(event.reason, 80)})" if event.reason else ""
        return join(("✔ " if event.approved else "✘ ", verdict[1]), (event.call_id, "bold"),
                    f" {call} ", verdict, f"{who}{why}")  # fmt: skip
    if isinstance(event, RolledBack):
        gone = len(touched_ids(event, before, after))
        reason = f" ({excerpt(event.reason, 80)})" if event.reason else ""
        return Text(
            f"⟲ rolled back to seq {event.to_seq}: {counted(gone, 'message')} inactive{reason}"
        )
    return Text(event.kind)


def _finished_row(event: ModelCallFinished, after: SessionState) -> AuditRow | None:
    if event.source_key is not None:
        return after.audit.get(event.source_key)
    return next(
        (
            row
            for row in after.audit.values()
            if row.operation_id == event.operation_id and row.ended_seq == event.seq
        ),
        None,
    )


def _stored_decision(event: MetadataUpdated, after: SessionState) -> Text | None:
    """The line of a decision stored for the session's owner by another process."""
    if set(event.metadata) != {DECISION_KEY}:
        return None
    message = after.get(event.message_id)
    call = message.tool_call if message is not None else None
    decision = stored_decision(message) if message is not None else None
    if call is None or decision is None:
        return None
    approved, reason, by = decision
    verdict = ("approved", "green") if approved else ("denied", "red")
    who = f" by {safe(by)}" if by else ""
    why = f" ({excerpt(reason, 80)})" if reason else ""
    return join(("⋯ ", verdict[1]), (safe(call.id), "bold"), f" {_call_text(call)} ", verdict,
                f"{who}{why}, stored for the session's owner to take")  # fmt: skip


def _call_name(state: SessionState, call_id: str) -> str:
    message = state.get(state.tool_calls.get(call_id, ""))
    call = message.tool_call if message is not None else None
    return _call_text(call) if call is not None else "tool call"


def _call_text(call: ToolCall) -> str:
    """``name(arguments)``, as the call's own line shows it (an excerpt)."""
    return excerpt(f"{call.name}({compact(call.arguments)})")


def _describe_call_end(event: ModelCallFinished, after: SessionState) -> Text:
    row = _finished_row(event, after)
    number = f"#{row.sequence} " if row is not None else ""
    status = str(event.status)
    rest = ""
    if event.duration_ms is not None:
        rest += f" in {duration_text(event.duration_ms)}"
    if event.usage is not None:
        rest += f" · {event.usage.input_tokens:,} in / {event.usage.output_tokens:,} out tokens"
    if event.error:
        rest += f": {excerpt(event.error, 80)}"
    elif event.tool_calls:
        rest += " → " + ", ".join(safe(call.name) for call in event.tool_calls)
    elif event.content:
        rest += f" → {excerpt(event.content, 60)}"
    return join(
        ("◆ ", "blue"),
        (f"model call {number}{safe(event.operation_id)}", "bold"),
        " ",
        (status, AUDIT_STYLES.get(status, "")),
        rest,
    )


def _closed_calls(before: SessionState, after: SessionState) -> str:
    """``, closes model call run_7 (interrupted)`` when a turn's end closed running calls."""
    closed = []
    for key in before.audit_running:
        row = after.audit.get(key)
        if row is not None and row.status.is_terminal:
            closed.append(f"{safe(row.operation_id)} ({row.status})")
    return f", closes model call {', '.join(closed)}" if closed else ""


def _calls_interrupted(event: OrphanRecovered, turn: Turn | None) -> str:
    if not event.calls_interrupted or turn is None or not turn.open_calls:
        return ""
    return f", {len(turn.open_calls)} unanswered call(s) interrupted"


def _describe_turn_end(event: TurnEnded, before: SessionState, after: SessionState) -> Text:
    turn = before.active_turn
    outcome = str(event.outcome)
    style = OUTCOME_STYLES.get(outcome, "")
    rest = f" ({excerpt(event.reason, 60)})" if event.reason else ""
    if turn is not None:
        inputs = len(turn.input_ids)
        rest += f"; {inputs} input{'s' * (inputs != 1)} → {outcome}"
        if outcome == "interrupted" and turn.open_calls:
            rest += f", {len(turn.open_calls)} unanswered call(s) interrupted"
    if event.partial:
        rest += f", partial output kept: {', '.join(m.id for m in event.partial)}"
    if event.notice is not None:
        rest += f", crash notice {event.notice.id}"
    rest += _closed_calls(before, after)
    data = thaw(event.metrics)
    assert isinstance(data, dict)
    # "4 turns" beside a turn reads as the turn's own count: it is the session's fourth.
    number = data.pop("session_turns", None)
    metrics = format_turn_metrics(data)
    if isinstance(number, int) and not isinstance(number, bool):
        metrics = " · ".join(part for part in (f"turn {number} of the session", metrics) if part)
    return join(
        ("■ ", style),
        (event.turn_id, "bold"),
        " ends ",
        (outcome, style),
        rest,
        (f" · {metrics}" if metrics else "", "dim"),
    )


def diff_view(delta: StateDiff, *, sessions: tuple[str, str] | None = None) -> RenderableType:
    """A ``StateDiff`` as lines: added and removed messages, field changes, turns.

    ``sessions``: the two sessions' ids when they differ (``diff --other``), to name them.
    """
    if sessions is None:
        title = f"From seq {delta.before_seq} to seq {delta.after_seq}:"
    else:
        title = f"From {sessions[0]} seq {delta.before_seq} to {sessions[1]} seq {delta.after_seq}:"
    lines: list[Text] = [Text(title, style="bold")]
    if not delta:
        lines.append(Text("  no change to messages, turns or model calls", style="dim"))
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
    for call in delta.model_calls:
        lines.append(
            join(
                ("  ◆ ", "blue"),
                (safe(call.operation_id), "bold"),
                f" model call: {call.before or '(none)'} → {call.after or '(none)'}",
            )
        )
    from rich.console import Group

    return Group(*lines)


def _value(value: object) -> str:
    if isinstance(value, str):
        return excerpt(repr(value), 60)
    return excerpt(compact(value), 60)
