"""``amber inspect``: step through a session's states in a terminal UI (Textual).

The timeline is on the left, one row per state (seq 0 is the empty state
before the first event). The right side shows the state at the cursor: the
event that made it, what changed from the previous state (added rows in
green, changed rows marked ``~``), the active turn and every message. ``v``
cycles the right side through the projections of that state (history, the
model's view, the provider requests).

Keys: up/down or k/j step one state, PageUp/PageDown a page, Home/End (g/G)
the ends, ``[``/``]`` the previous/next turn boundary, ``e`` the next error
(a failed turn or a tool error), ``v`` the next view, ``q`` quits.
"""

from __future__ import annotations

from typing import ClassVar

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Footer, Header, Static

from runtime import (
    AmberError,
    Event,
    ModelCallFinished,
    SessionState,
    Timeline,
    TurnEnded,
    TurnStarted,
    diff,
)

from ._cli._render import describe_event, diff_view
from ._cli._tables import message_lines, state_header
from ._cli._text import time_text
from ._cli._views import VIEWS, view_parts

__all__ = ["InspectApp", "is_error_event"]

_MAX_ROWS = 200
"""States with more messages show the last ones and those that changed."""


def is_error_event(event: Event, state: SessionState) -> bool:
    """A turn that ended in error, a failed model call, or a tool result that is an error."""
    if isinstance(event, TurnEnded):
        return str(event.outcome) == "error"
    if isinstance(event, ModelCallFinished):
        return str(event.status) == "failed"
    message = getattr(event, "message", None)
    return bool(message is not None and getattr(message, "is_error", False))


class InspectApp(App[None]):
    """Step through the states of one session (see the module docstring)."""

    TITLE = "amber inspect"
    CSS = """
    #timeline { width: 45%; }
    #pane { width: 1fr; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("j", "step(1)", "Next", show=False),
        Binding("k", "step(-1)", "Previous", show=False),
        Binding("home,g", "go_to_end(0)", "First", show=False, priority=True),
        Binding("end,G", "go_to_end(1)", "Last", show=False, priority=True),
        Binding("[", "turn(-1)", "Prev turn"),
        Binding("]", "turn(1)", "Next turn"),
        Binding("e", "next_error", "Next error"),
        Binding("v", "cycle_view", "View"),
    ]

    def __init__(self, timeline: Timeline, *, seq: int | None = None, db: str = "") -> None:
        super().__init__()
        self.timeline = timeline
        self.seq = timeline.last_seq if seq is None else seq
        """The seq at the cursor."""
        self.view = "state"
        """What the right side shows: one of ``VIEWS``."""
        self.db = db

    def compose(self) -> ComposeResult:
        """Header, the timeline table and the state pane, footer."""
        yield Header()
        with Horizontal():
            table: DataTable[Text | str] = DataTable(
                id="timeline", cursor_type="row", zebra_stripes=True
            )
            yield table
            with VerticalScroll(id="pane"):
                yield Static(id="state")
        yield Footer()

    def on_mount(self) -> None:
        """Fill the timeline and put the cursor on the starting seq."""
        line = self.timeline
        self.sub_title = f"{line.session_id} · {line.last_seq} events" + (
            f" · {self.db}" if self.db else ""
        )
        table = self.query_one("#timeline", DataTable)
        table.add_columns("seq", "time", "what changed")
        rows: list[tuple[Text | str, ...]] = [
            ("0", "", Text("(empty: before the first event)", style="dim"))
        ]
        before = line.base
        for event, after in line.entries:
            style = "bold red" if is_error_event(event, after) else ""
            rows.append(
                (
                    Text(str(event.seq), style=style),
                    time_text(event.at),
                    describe_event(event, before, after),
                )
            )
            before = after
        table.add_rows(rows)
        table.focus()
        table.move_cursor(row=self.seq - line.first_seq)
        self.show(self.seq)

    # --- showing a state ------------------------------------------------------------

    def on_data_table_row_highlighted(self, message: DataTable.RowHighlighted) -> None:
        """The cursor moved: show the state under it."""
        self.show(self.timeline.first_seq + message.cursor_row)

    def show(self, seq: int) -> None:
        """Draw the state at ``seq`` in the right pane."""
        self.seq = seq
        self.query_one("#state", Static).update(self.render_state(seq))
        self.title = f"amber inspect · seq {seq} of {self.timeline.last_seq} · {self.view}"

    def render_state(self, seq: int) -> RenderableType:
        """The right pane's content for ``seq`` in the current view."""
        line = self.timeline
        state = line.at(seq)
        event = line.event(seq) if seq > line.first_seq else None
        before = line.at(seq - 1) if event is not None else state
        parts: list[RenderableType] = [state_header(state, last_seq=line.last_seq, event=event)]
        if event is not None:
            parts.append(Text.assemble(("Event: ", "bold"), describe_event(event, before, state)))
        if self.view != "state":
            parts.append(Text(f"\nView: {self.view} (v for the next)", style="bold"))
            parts.append(self._projection(state))
            return Group(*parts)
        delta = diff(before, state)
        parts.append(Text())
        parts.append(diff_view(delta))
        changed = {m.id for m in delta.added} | {c.message_id for c in delta.changed}
        messages = list(state.messages)
        hidden = 0
        if len(messages) > _MAX_ROWS:
            keep = messages[-_MAX_ROWS // 2 :]
            kept = {m.id for m in keep}
            early = [m for m in messages[: -_MAX_ROWS // 2] if m.id in changed]
            hidden = len(messages) - len(keep) - len(early)
            messages = early + keep
            del kept
        parts.append(Text())
        if messages:
            parts.extend(message_lines(messages, changes=delta, title="Messages"))
        if hidden:
            parts.append(Text(f"({hidden} earlier unchanged messages not shown)", style="dim"))
        return Group(*parts)

    def _projection(self, state: SessionState) -> RenderableType:
        try:
            return Group(*view_parts(self.view, state))
        except AmberError as exc:  # a view that cannot be built is shown, not fatal
            return Text(f"{type(exc).__name__}: {exc}", style="red")

    # --- actions --------------------------------------------------------------------

    def _go(self, seq: int) -> None:
        line = self.timeline
        seq = max(line.first_seq, min(line.last_seq, seq))
        self.query_one("#timeline", DataTable).move_cursor(row=seq - line.first_seq)

    def action_step(self, delta: int) -> None:
        """Move the cursor by ``delta`` states."""
        self._go(self.seq + delta)

    def action_go_to_end(self, last: int) -> None:
        """Move the cursor to the empty state (0) or the head (1)."""
        self._go(self.timeline.last_seq if last else self.timeline.first_seq)

    def action_turn(self, direction: int) -> None:
        """Jump to the previous/next turn start or end."""
        line = self.timeline
        seqs = (
            range(self.seq + 1, line.last_seq + 1)
            if direction > 0
            else range(self.seq - 1, line.first_seq, -1)
        )
        for seq in seqs:
            if isinstance(line.event(seq), TurnStarted | TurnEnded):
                self._go(seq)
                return
        self.bell()

    def action_next_error(self) -> None:
        """Jump to the next failed turn or tool error after the cursor (wrapping around)."""
        line = self.timeline
        order = [*range(self.seq + 1, line.last_seq + 1), *range(line.first_seq + 1, self.seq + 1)]
        for seq in order:
            if is_error_event(line.event(seq), line.at(seq)):
                self._go(seq)
                return
        self.notify("No errors in this session.")

    def action_cycle_view(self) -> None:
        """Show the next view of the state at the cursor."""
        self.view = VIEWS[(VIEWS.index(self.view) + 1) % len(VIEWS)]
        self.show(self.seq)
