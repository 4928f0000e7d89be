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
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Header, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from runtime import (
    AmberError,
    Event,
    InvalidArgument,
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
from ._inspect_source import InspectSource, TimelineSource

__all__ = [
    "MARKS_PER_BATCH",
    "WINDOW",
    "InspectApp",
    "MessageScreen",
    "PickMessage",
    "TimelineTable",
    "is_error_event",
]

WINDOW = 500
"""How many timeline rows the table holds at once (Textual's table redraws in time that
grows with its rows: a window keeps a session of 100,000 events as quick as one of 1,000)."""

MARKS_PER_BATCH = 2_000
"""How many events' marks a stored session's reader hands the app at a time."""

_TURN = 1
_ERROR = 2

Row = tuple[Text | str, ...]


def is_error_event(event: Event, state: SessionState | None = None) -> bool:
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


class TimelineTable(DataTable[Text | str]):
    """The timeline: a window of at most ``WINDOW`` rows of the session's states.

    Its cursor keys move the app's cursor (``InspectApp.action_step``), which
    moves the window when the cursor leaves it.
    """

    def action_cursor_up(self) -> None:
        """One state back."""
        self._step(-1)

    def action_cursor_down(self) -> None:
        """One state on."""
        self._step(1)

    def action_page_up(self) -> None:
        """A page back."""
        self._step(-self._page())

    def action_page_down(self) -> None:
        """A page on."""
        self._step(self._page())

    def action_scroll_top(self) -> None:
        """The empty state (the table's first row may be a later one: it is a window)."""
        self._end(0)

    def action_scroll_bottom(self) -> None:
        """The head."""
        self._end(1)

    def _end(self, last: int) -> None:
        app = self.app
        if isinstance(app, InspectApp):
            app.action_go_to_end(last)

    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def _step(self, delta: int) -> None:
        app = self.app
        if isinstance(app, InspectApp):
            app.action_step(delta)


class InspectApp(App[None]):
    """Step through the states of one session (see the module docstring).

    ``source`` is a timeline in memory or a ``StoredSession`` read lazily. The
    table holds a window of ``window`` rows around the cursor, built when the
    cursor enters it (a walk from the nearest snapshot); the marks that the
    turn and error jumps follow come from the events alone, read on a worker
    thread for a stored session while the app is drawn.
    """

    TITLE = "amber inspect"
    CSS = """
    #timeline { width: 45%; height: 100%; scrollbar-gutter: stable; }
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

    def __init__(
        self,
        source: InspectSource | Timeline,
        *,
        seq: int | None = None,
        db: str = "",
        window: int = WINDOW,
    ) -> None:
        super().__init__()
        if isinstance(source, Timeline):
            source = TimelineSource(source)
        if window < 1:
            raise InvalidArgument(f"Expected a window of at least 1 row, got {window}.")
        self.source: InspectSource = source
        """Where the states come from."""
        self.seq = source.last_seq if seq is None else seq
        """The seq at the cursor."""
        self.view = "state"
        """What the right side shows: one of ``VIEWS``."""
        self.db = db
        self.window = window
        """How many rows the table holds at once."""
        self.loading = source.streams
        """Whether the marks (turn boundaries, errors) are still being read."""
        self._marks = bytearray(1)  # per seq from first_seq: _TURN | _ERROR
        self._offset = 0  # the index (seq - first_seq) of the table's top row
        self._shown = False  # whether the pane shows ``seq`` yet
        self._refills = 0  # the table's refills whose row-0 highlight has not come yet
        self._damaged: int | None = None  # the first damaged seq the rows met
        self._beyond: int | None = None  # a seq shown past the damaged row (no row of its own)

    def compose(self) -> ComposeResult:
        """Header, the timeline table and the state pane, footer."""
        yield Header()
        with Horizontal():
            yield TimelineTable(id="timeline", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="pane"):
                yield Static(id="state")
        yield Footer()

    def on_mount(self) -> None:
        """Draw the state at the starting seq at once; then its window of rows (after the
        first paint) and the marks (on a worker thread for a stored session)."""
        table = self.query_one("#timeline", DataTable)
        table.add_columns("seq", "time", "what changed")
        table.focus()
        self._subtitle()
        self.show(max(self.source.first_seq, min(self.source.last_seq, self.seq)))
        self.call_after_refresh(self._go, self.seq)
        if self.source.streams:
            self._read_marks()
        else:
            self.add_marks(list(self.source.flags()), done=True)

    def _subtitle(self) -> None:
        source = self.source
        total = source.last_seq - source.first_seq
        loading = f" · reading the marks: {len(self._marks) - 1:,} of {total:,} events"
        self.sub_title = (
            f"{source.session_id} · {source.last_seq} events"
            + (loading if self.loading else "")
            + (f" · {self.db}" if self.db else "")
        )

    @work(thread=True, exclusive=True, group="marks")
    def _read_marks(self) -> None:
        worker = get_current_worker()
        batch: list[tuple[str, bool]] = []
        flags = self.source.flags()
        try:
            try:
                for flag in flags:
                    batch.append(flag)
                    if len(batch) >= MARKS_PER_BATCH:
                        if worker.is_cancelled:
                            return
                        self.call_from_thread(self.add_marks, batch)
                        batch = []
            except AmberError as exc:
                self.call_from_thread(self.add_marks, batch, error=exc)
                return
            if not worker.is_cancelled:
                self.call_from_thread(self.add_marks, batch, done=True)
        except RuntimeError:  # the app stopped meanwhile (call_from_thread: not running)
            return
        finally:
            close = getattr(flags, "close", None)
            if close is not None:
                close()  # here, on this thread: a stored session closes its store

    def add_marks(
        self,
        flags: list[tuple[str, bool]],
        *,
        done: bool = False,
        error: AmberError | None = None,
    ) -> None:
        """Take the next events' marks (turn boundary, error) from their kinds and error
        flags (``InspectSource.flags``); ``done`` after the last, ``error`` if reading
        stopped at a damaged row."""
        self._marks.extend(_mark(kind, failed) for kind, failed in flags)
        if done or error is not None:
            self.loading = False
        if error is not None:
            reached = self.source.first_seq + len(self._marks) - 1
            self.notify(
                f"The turn and error jumps stop at seq {reached}: {error}",
                title=type(error).__name__,
                severity="error",
                timeout=30,
            )
        self._subtitle()

    # --- showing a state ------------------------------------------------------------

    def on_data_table_row_highlighted(self, message: DataTable.RowHighlighted) -> None:
        """The cursor moved: show the state under it."""
        table = message.data_table
        if not table.is_attached:
            return  # the app closed meanwhile: its widgets are gone, nothing to show
        if self._refills and message.cursor_row == 0:
            self._refills -= 1  # the table's own note that its first row came: not a move
            return
        if message.cursor_row != table.cursor_row:
            return  # an earlier move, overtaken (the window moved since)
        if self._beyond is not None and message.cursor_row == table.row_count - 1:
            return  # the damaged row, where ``_go`` put the cursor for a seq past it
        self._beyond = None
        seq = self.source.first_seq + self._offset + message.cursor_row
        if seq != self.seq or not self._shown:
            self.show(seq)

    def show(self, seq: int) -> None:
        """Draw the state at ``seq`` in the right pane."""
        self.seq = seq
        self._shown = True
        self.query_one("#state", Static).update(self.render_state(seq))
        self.title = f"amber inspect · seq {seq} of {self.source.last_seq} · {self.view}"

    def render_state(self, seq: int) -> RenderableType:
        """The right pane's content for ``seq`` in the current view (a state that cannot be
        read, from a damaged store, is shown as the error)."""
        try:
            return self._render_state(seq)
        except AmberError as exc:
            return Text(f"seq {seq}: {type(exc).__name__}: {exc}", style="red")

    def _render_state(self, seq: int) -> RenderableType:
        line = self.source
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
            # At a fork's first state the event added every message: not "unchanged" ones.
            touched = len(changed - {m.id for m in messages})
            note = (
                f"({hidden} earlier unchanged messages not shown)"
                if not touched
                else f"({hidden} earlier messages not shown, {touched} of them added or "
                "changed by this event)"
            )
            parts.append(Text(note, style="dim"))
        return Group(*parts)

    def _projection(self, state: SessionState) -> RenderableType:
        try:
            return Group(*view_parts(self.view, state))
        except AmberError as exc:  # a view that cannot be built is shown, not fatal
            return Text(f"{type(exc).__name__}: {exc}", style="red")

    # --- moving -----------------------------------------------------------------------

    def _here(self) -> int:
        """The seq the cursor was last sent to: the table's cursor moves at once, the pane
        when its message comes (keys pressed faster than that must not be lost)."""
        if self._beyond is not None:
            return self._beyond
        table = self.query_one("#timeline", DataTable)
        if table.row_count:
            return self.source.first_seq + self._offset + table.cursor_row
        return self.seq

    def _go(self, seq: int) -> None:
        """Put the cursor on ``seq``, moving the table's window to it if it is outside (a
        seq past a damaged row is shown in the pane, the cursor on the damaged row)."""
        line = self.source
        seq = max(line.first_seq, min(line.last_seq, seq))
        index = seq - line.first_seq
        table = self.query_one("#timeline", DataTable)
        past_damage = self._damaged is not None and seq > self._damaged
        in_window = self._offset <= index < self._offset + table.row_count
        if not in_window and not (past_damage and self._holds_damage()):
            self._move_window(index)
        row = min(index - self._offset, table.row_count - 1)
        self._beyond = seq if row != index - self._offset else None
        if row >= 0 and table.cursor_row != row:
            table.move_cursor(row=row)  # its highlight comes later: the pane is drawn now
        if seq != self.seq or not self._shown:
            self.show(seq)

    def _holds_damage(self) -> bool:
        """Whether the table's last row is the damaged row's."""
        table = self.query_one("#timeline", DataTable)
        last = self.source.first_seq + self._offset + table.row_count - 1
        return table.row_count > 0 and last == self._damaged

    def _move_window(self, index: int) -> None:
        """Refill the table with the rows around ``index``; at a damaged row the window
        ends with a row that names it (and the notice is given once)."""
        line = self.source
        table = self.query_one("#timeline", DataTable)
        total = line.last_seq - line.first_seq + 1
        offset = max(0, min(index - self.window // 2, total - self.window))
        if self._damaged is not None:  # keep the damaged row in sight when it is near
            offset = max(0, min(offset, self._damaged - line.first_seq))
        first = line.first_seq + offset
        last = min(line.last_seq, first + self.window - 1)
        rows: list[Row] = []
        if first == line.first_seq:
            label = "(empty: before the first event)" if first == 0 else "(the first state kept)"
            rows.append((str(first), "", Text(label, style="dim")))
        try:
            for event, before, after in line.entries(max(first, line.first_seq + 1), last):
                rows.append(_row(event, before, after))
        except AmberError as exc:
            damaged = first + len(rows)
            rows.append((Text(str(damaged), style="bold red"), "", Text(
                f"(damaged: {type(exc).__name__}; the rows stop here)", style="bold red"
            )))  # fmt: skip
            if self._damaged != damaged:
                self._damaged = damaged
                self.notify(
                    f"The timeline stops at seq {damaged - 1}: {exc}",
                    title=type(exc).__name__,
                    severity="error",
                    timeout=30,
                )
        scroll_x = table.scroll_x
        self._offset = offset
        table.clear()
        table.add_rows(rows)
        self._refills += bool(rows)  # the table posts a highlight of row 0 when it has one
        if scroll_x:
            self.call_after_refresh(table.scroll_to, x=scroll_x, animate=False)

    def action_step(self, delta: int) -> None:
        """Move the cursor by ``delta`` states."""
        self._go(self._here() + delta)

    def action_go_to_end(self, last: int) -> None:
        """Move the cursor to the empty state (0) or the head (1)."""
        self._go(self.source.last_seq if last else self.source.first_seq)

    def _find(self, seqs: range, mark: int) -> int | None:
        first = self.source.first_seq
        for seq in seqs:
            index = seq - first
            if index >= len(self._marks):
                return None
            if self._marks[index] & mark:
                return seq
        return None

    def _still_reading(self) -> bool:
        if self.loading:
            self.notify(
                f"Still reading the timeline's marks ({len(self._marks) - 1:,} of "
                f"{self.source.last_seq - self.source.first_seq:,} events): the jump looks "
                "only at those read so far; try again in a moment."
            )
        return self.loading

    def action_turn(self, direction: int) -> None:
        """Jump to the previous/next turn start or end."""
        line = self.source
        here = self._here()
        read = line.first_seq + len(self._marks) - 1  # the last seq whose marks are read
        seqs = (
            range(here + 1, line.last_seq + 1)
            if direction > 0
            else range(min(here - 1, read), line.first_seq, -1)
        )
        found = self._find(seqs, _TURN)
        if found is not None:
            self._go(found)
        elif not self._still_reading():
            self.bell()

    def action_next_error(self) -> None:
        """Jump to the next failed turn or tool error after the cursor (wrapping around)."""
        line = self.source
        here = self._here()
        found = self._find(range(here + 1, line.last_seq + 1), _ERROR)
        if found is None and not self.loading:
            found = self._find(range(line.first_seq + 1, here + 1), _ERROR)
        if found is not None:
            self._go(found)
        elif not self._still_reading():
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
        line = self.source
        try:
            state = line.at(self.seq)
            before = line.at(self.seq - 1) if self.seq > line.first_seq else state
        except AmberError as exc:
            self.notify(str(exc), title=type(exc).__name__, severity="error")
            return
        if not len(state):
            self.notify("No messages at this seq.")
            return
        delta = diff(before, state)
        touched = {m.id for m in delta.added} | {c.message_id for c in delta.changed}

        def opened(message_id: str | None) -> None:
            if message_id is not None:
                self.push_screen(MessageScreen(state.message(message_id), state))

        self.push_screen(PickMessage(list(state.messages), touched), opened)


_TURN_KINDS = frozenset((TurnStarted.kind, TurnEnded.kind))


def _mark(kind: str, error: bool) -> int:
    """An event's marks from its kind and error flag: a turn boundary, an error."""
    return (_TURN if kind in _TURN_KINDS else 0) | (_ERROR if error else 0)


def _row(event: Event, before: SessionState, after: SessionState) -> Row:
    """The timeline's row for ``event``."""
    return (
        Text(str(event.seq), style="bold red" if _is_error(event) else ""),
        time_text(event.at),
        describe_event(event, before, after),
    )
