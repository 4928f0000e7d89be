"""``amber diff``: what changed between two states (of one session, or of a fork and its source)."""

from __future__ import annotations

from typing import Any

import attrs
import click
from rich.console import Console
from rich.text import Text

from runtime import StateDiff, Timeline, diff, to_data

from . import keep_to_exit
from ._app import (
    db_option,
    emit_json,
    json_option,
    open_store,
    parse_seq,
    resolve_seq_between,
    session_argument,
    stdout_console,
)
from ._hints import command_line
from ._render import diff_view
from ._travel import event_line, head_seq

__all__ = ["diff_command", "diff_data"]


def diff_data(delta: StateDiff) -> dict[str, Any]:
    """A ``StateDiff`` as JSON-ready data."""
    return {
        "before_seq": delta.before_seq,
        "after_seq": delta.after_seq,
        "added": [to_data(m) for m in delta.added],
        "removed": [to_data(m) for m in delta.removed],
        "changed": [
            {"message_id": c.message_id, "field": c.field, "before": c.before, "after": c.after}
            for c in delta.changed
        ],
        "turns": [
            {"turn_id": t.turn_id, "before": t.before, "after": t.after} for t in delta.turns
        ],
        "model_calls": [
            {"operation_id": c.operation_id, "before": c.before, "after": c.after}
            for c in delta.model_calls
        ],
    }


_EVENTS_SHOWN = 20
_FORK_FIELDS = frozenset({"session_id", "event_seq"})


@click.command("diff")
@click.argument("session", callback=session_argument)
@click.argument("a", callback=parse_seq)
@click.argument("b", callback=parse_seq, default="head")
@click.option(
    "--other",
    metavar="SESSION",
    help="Read B from this session instead (compare a fork with its source).",
)
@db_option()
@json_option
def diff_command(session: str, a: int, b: int, other: str | None, db: str, as_json: bool) -> None:
    """What changed in SESSION from seq A to seq B (default: the head).

    With --other, B is read from that session (a fork); the session_id and
    event_seq fields, which always differ in a fork, and the model-call audit
    rows, which a fork does not carry, are left out.

    Lists added messages, field changes (status, metadata keys …) and turn
    changes, then the events in between. Negative seqs count back from the
    head; put them after '--' (amber diff demo -- -2 -1).
    """
    with open_store(db) as store:
        last = head_seq(store, session, db)
        other_last = head_seq(store, other, db) if other is not None else last
        seq_a = resolve_seq_between(a, session, 0, last, option="A")
        seq_b = resolve_seq_between(b, other or session, 0, other_last, option="B")
        if other is None:
            # State A with the events printed after it, and state B: each from the stored
            # state nearest it, not every state between A and B (which may be far apart).
            shown = min(seq_b, seq_a + _EVENTS_SHOWN) if seq_a < seq_b else seq_a
            line = store.load_span(session, seq_a, shown)
            other_line = line if shown == seq_b else store.load_span(session, seq_b, seq_b)
        else:
            line = store.load_span(session, seq_a, seq_a)
            other_line = store.load_span(other, seq_b, seq_b)
    keep_to_exit(line, other_line)  # not freed when the command returns (console_main exits)
    delta = diff(line.at(seq_a), other_line.at(seq_b))
    if other is not None:
        # A fork's messages always differ from the source's in these two fields, and a
        # fork does not carry the source's model-call audit rows: leave both out.
        kept = tuple(c for c in delta.changed if c.field not in _FORK_FIELDS)
        delta = attrs.evolve(delta, changed=kept, model_calls=())
    if as_json:
        emit_json({"session_id": session, "other_session_id": other, **diff_data(delta)})
        return
    console = stdout_console()
    title = f"{session} seq {seq_a} → " + (f"{other} seq {seq_b}" if other else f"seq {seq_b}")
    console.print(Text(title, style="bold"))
    pair = (session, other) if other is not None else None
    console.print(diff_view(delta, sessions=pair), soft_wrap=True)
    if other is None and seq_a < seq_b:
        _events_between(console, line, seq_a, seq_b, db)


def _events_between(console: Console, line: Timeline, a: int, b: int, db: str) -> None:
    count = b - a
    console.print(Text(f"\n{count} event(s) in between:", style="bold"))
    width = len(str(b))
    shown = range(a + 1, min(b, a + _EVENTS_SHOWN) + 1)
    for seq in shown:
        console.print(
            event_line(line.event(seq), line.at(seq - 1), line.at(seq), width), soft_wrap=True
        )
    if count > _EVENTS_SHOWN:
        console.print(
            Text(
                f"… {count - _EVENTS_SHOWN} more: "
                + command_line(
                    "timeline",
                    line.session_id,
                    options=("--from", a + _EVENTS_SHOWN + 1, "--to", b, "--db", db),
                ),
                style="dim",
            )
        )
