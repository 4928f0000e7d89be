"""``amber inspect``: step through a session's states in a terminal UI (Textual).

The timeline is on the left, one row per state (seq 0 is the empty state
before the first event). The right side shows the state at the cursor: the
event that made it, what changed from the previous state (added rows in
green, changed rows marked ``~``), the active turn and every message. ``v``
and ``V`` cycle the right side through the projections of that state
(history, the model's view, the provider requests), forward and back.

Keys: up/down or k/j step one state, PageUp/PageDown a page, Home/End (g/G)
the ends, ``[``/``]`` the previous/next turn boundary, ``e`` the next error
(a failed turn or a tool error), ``v``/``V`` the next/previous view, ``o``
opens one message whole (the ones the event touched first), ``w`` widens
the timeline to the whole screen (its change column in full), left/right
(h/l) scroll it sideways, ``q`` quits. Scrollbars keep a gutter of their
own, so they never cover text.
"""

from __future__ import annotations

from typing import ClassVar

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Header, OptionList, Static
from textual.widgets.option_list import Option

from runtime import (
    AmberError,
    Event,
    Message,
    SessionState,
    Timeline,
    TurnEnded,
    TurnStarted,
    diff,
)

from ._cli._render import describe_event, diff_view
from ._cli._render import is_error_event as _is_error
from ._cli._tables import message_detail, message_lines, state_header
from ._cli._text import category_label, message_summary, time_text
from ._cli._views import VIEWS, view_parts, window_messages

__all__ = ["InspectApp", "MessageScreen", "PickMessage", "is_error_event"]


def is_error_event(event: Event, state: SessionState) -> bool:
    """A turn that ended in error, a failed model call, or a tool result that is an error."""
    del state  # kept for callers; the event alone tells
    return _is_error(event)


class MessageScreen(ModalScreen[None]):
    """One message whole: every field, its metadata and all of its content."""

    DEFAULT_CSS = """
    MessageScreen { align: center middle; }
    #message { width: 90%; height: 90%; border: round $accent; padding: 0 1;
               scrollbar-gutter: stable; background: $surface; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,o", "dismiss", "Close"),
    ]

    def __init__(self, message: Message, state: SessionState | None = None) -> None:
        super().__init__()
        self.message = message
        """The message shown."""
        self.state = state
        """The state it is shown in."""

    def compose(self) -> ComposeResult:
        """The message's fields in a scrollable box."""
        with VerticalScroll(id="message") as box:
            box.border_title = f"{self.message.id} · Esc closes"
            yield Static(message_detail(self.message, self.state), id="detail")


class PickMessage(ModalScreen[str | None]):
    """Choose a message of the state to open (the ones the event touched first)."""

    DEFAULT_CSS = """
    PickMessage { align: center middle; }
    #pick { width: 90%; height: 80%; border: round $accent; scrollbar-gutter: stable; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "dismiss(None)", "Close")]

    def __init__(self, messages: list[Message], touched: set[str]) -> None:
        super().__init__()
        self.messages = messages
        self.touched = touched

    def compose(self) -> ComposeResult:
        """The messages, one line each, newest first after the touched ones."""
        first = [m for m in self.messages if m.id in self.touched]
        rest = [m for m in reversed(self.messages) if m.id not in self.touched]
        options = []
        for message in first + rest:
            mark = "~ " if message.id in self.touched else "  "
            line = Text.assemble(
                mark, (message.id, "bold"), f" {category_label(message)}: "
            ) + message_summary(message, 100)
            options.append(Option(line, id=message.id))
        picker = OptionList(*options, id="pick")
        picker.border_title = "Open which message? Enter opens, Esc closes"
        yield picker

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """Enter: open the highlighted message."""
        self.dismiss(event.option.id)


class InspectApp(App[None]):
    """Step through the states of one session (see the module docstring)."""

    TITLE = "amber inspect"
    CSS = """
    #timeline { width: 45%; scrollbar-gutter: stable; }
    #pane { width: 1fr; padding: 0 1; scrollbar-gutter: stable; }
    Horizontal.-wide #timeline { width: 100%; }
    Horizontal.-wide #pane { display: none; }
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
        Binding("v", "cycle_view(1)", "View"),
        Binding("V", "cycle_view(-1)", "Prev view", show=False),
        Binding("o", "open_message", "Open message"),
        Binding("w", "toggle_wide", "Wide"),
        Binding("h", "scroll_timeline(-8)", "Left", show=False),
        Binding("l", "scroll_timeline(8)", "Right", show=False),
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
        messages, hidden = window_messages(state, frozenset(changed))
        parts.append(Text())
        if messages:
            parts.extend(message_lines(messages, changes=delta, title="Messages", state=state))
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

    def action_cycle_view(self, step: int = 1) -> None:
        """Show the next (``step`` 1) or previous (-1) view of the state at the cursor."""
        self.view = VIEWS[(VIEWS.index(self.view) + step) % len(VIEWS)]
        self.show(self.seq)

    def action_toggle_wide(self) -> None:
        """Give the timeline the whole screen (its change column in full), or give it back."""
        self.query_one(Horizontal).toggle_class("-wide")

    def action_scroll_timeline(self, columns: int) -> None:
        """Scroll the timeline sideways by ``columns``."""
        table = self.query_one("#timeline", DataTable)
        table.scroll_to(x=table.scroll_x + columns, animate=False)

    def action_open_message(self) -> None:
        """Pick a message of the state at the cursor and open it whole."""
        line = self.timeline
        state = line.at(self.seq)
        if not len(state):
            self.notify("No messages at this seq.")
            return
        before = line.at(self.seq - 1) if self.seq > line.first_seq else state
        delta = diff(before, state)
        touched = {m.id for m in delta.added} | {c.message_id for c in delta.changed}

        def opened(message_id: str | None) -> None:
            if message_id is not None:
                self.push_screen(MessageScreen(state.message(message_id), state))

        self.push_screen(PickMessage(list(state.messages), touched), opened)
