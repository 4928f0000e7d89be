"""``amber show --view``: a past state, or a projection of it as it was then.

``state`` is the stored state itself; ``history`` is ``session_history``
(phased order); ``clean`` is ``clean_history`` (the model's view); ``openai``,
``openai-responses``, ``anthropic`` and ``gemini`` are the provider views
built from it. The projections are rebuilt from the past state with today's
code, with no system prompt and no artifact store (a current-turn image is
reported as missing); a note says which model call, if any, was sent that
state's request, whose exact payload ``--call`` prints.
"""

from __future__ import annotations

import typing
from collections.abc import Sequence

import click
from rich.text import Text

from runtime import Event, Message, SessionState
from runtime._article import counted

from ._text import excerpt, json_text, json_view
from ._viewdata import PROVIDERS, VIEWS, image_label, message_view_data, view_data
from ._viewdata import model_view as shown_view

if typing.TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.table import Table

    from runtime import ModelView, Turn, ViewMessage

    from ._plain import PlainConsole

# The projections (clean_history, the providers' payloads) and the tables are imported
# where they are used: ``amber show --json`` prints the state without loading them.

__all__ = [
    "PROVIDERS",
    "VIEWS",
    "json_text",
    "json_view",
    "print_message_view",
    "print_parts",
    "print_view",
    "view_data",
    "view_parts",
    "window_messages",
    "window_turns",
]


def print_view(
    console: Console | PlainConsole,
    view: str,
    state: SessionState,
    *,
    last_seq: int,
    event: Event | None,
    event_line: Text | None,
    full: bool = False,
    head: SessionState | None = None,
    window: frozenset[str] | None = None,
    db: str,
) -> None:
    """Print ``view`` of ``state`` for people, under the state's header and event (and, for a
    provider view, which model call of ``head`` was sent that state's request, and the
    command that prints it, naming the store ``db``).

    ``window``: for the state view, show only the last ``WINDOW_LAST`` messages, turns and
    model calls of a list longer than ``WINDOW_OVER`` (and the messages with these ids, the
    ones the event touched), with a line saying how many are left out; None: every one.
    """
    from ._tables import state_header

    console.print(state_header(state, last_seq=last_seq, event=event))
    if event_line is not None:
        console.print(Text.assemble(("Event: ", "bold"), event_line))
    console.print()
    if view in PROVIDERS and head is not None:
        from ._calls import call_note

        console.print(call_note(head, state.seq, db))
    if view in PROVIDERS and not console.is_terminal:
        # Plain, unwrapped JSON that can be copied as it is.
        console.print(Text(f"{view} request view (no system prompt):", style="bold"))
        click.echo(json_text(view_data(view, state)))
        return
    print_parts(console, view_parts(view, state, full=full, window=window), cut=not full)


def print_message_view(
    console: Console | PlainConsole,
    view: str,
    part: ModelView,
    message: Message,
    *,
    head: SessionState,
    db: str,
) -> None:
    """Print what ``view`` (clean or a provider's) holds of ``message``: ``part``, the view
    of its state that ``message_view`` made of it (for a provider view, under the note of
    the model call sent that state's view, as ``print_view`` prints it)."""
    from runtime import category_of

    seq = part.seq
    if not part.messages:
        console.print(
            Text(
                f"Message {message.id!r} (a {category_of(message).label}, {message.status}) is "
                f"not in the model's view at seq {seq}: clean_history leaves it out (--view "
                "clean without --message lists what the view holds).",
            )
        )
        return
    sources = sorted(
        {source for m in part.messages for source in (m.source_id, *m.source_ids) if source}
        - {message.id}
    )
    if view in PROVIDERS:
        from ._calls import call_note

        console.print(call_note(head, seq, db))
        title = (
            f"{view} request view of message {message.id} at seq {seq} (no system prompt; "
            "spelled alone, not merged with its neighbours):"
        )
    else:
        title = f"clean_history of message {message.id} at seq {seq}:"
    if sources:
        console.print(
            Text(
                f"The view message holding it is also made from {', '.join(sources)} (the "
                "same model response).",
                style="dim",
            )
        )
    console.print(Text(title, style="bold"))
    if view not in PROVIDERS:
        print_parts(console, [_model_view_table(part.messages, full=True)], cut=False)
    elif console.is_terminal:
        console.print(json_view(message_view_data(view, part)))
    else:
        click.echo(json_text(message_view_data(view, part)))  # plain JSON, copied as it is


def print_parts(
    console: Console | PlainConsole, parts: list[RenderableType], *, cut: bool = True
) -> None:
    """Print renderables; one-line texts go out plain (and fast) when stdout is not a terminal,
    and tables as plain lines the width of their rows (``print_table``).

    Not on a terminal, a one-line text is whole unless ``cut`` and the user set a width
    (``$COLUMNS``: ``set_width``); then it is cut to that width, ending in an ellipsis.
    """
    from ._plain import print_table, set_width

    if console.is_terminal:
        from rich.console import Group

        console.print(Group(*parts))
        return
    out: list[str] = []
    width = set_width() if cut else None  # once, not for each line
    for part in parts:
        if isinstance(part, Text) and part.no_wrap:
            if width is not None:
                part = part.copy()
                part.truncate(width, overflow="ellipsis")
            out.append(part.plain + "\n")
        else:
            if out:
                click.echo("".join(out), nl=False)
                out.clear()
            print_table(console, part)  # a table: plain, unwrapped lines
    click.echo("".join(out), nl=False)


def view_parts(
    view: str,
    state: SessionState,
    *,
    full: bool = False,
    window: frozenset[str] | None = None,
) -> list[RenderableType]:
    """``view`` of ``state`` as renderables: message lines, tables, or the request as JSON.

    ``window``: as ``print_view``'s; the history and clean views print the last
    ``WINDOW_LAST`` messages of more than ``WINDOW_OVER`` (a window of None: every one).
    """
    if view == "state":
        from ._tables import model_call_lines, turn_lines

        parts: list[RenderableType] = []
        if len(state):
            messages, left_out = window_messages(state, window)
            if left_out:
                touched = len(messages) > WINDOW_LAST  # earlier ones the event touched
                parts.append(_left_out(left_out, len(state), "messages", touched=touched))
            parts += _messages(messages, full=full, state=state)
        turns, left_out = window_turns(state, window)
        if turns:
            parts.append(Text("\nTurns:", style="bold"))
            if left_out:
                parts.append(_left_out(left_out, left_out + len(turns), "turns"))
            parts.extend(turn_lines(state, turns))
        calls, left_out = _window(state.model_calls(), window)
        if calls:
            parts.append(Text("\nModel calls:", style="bold"))
            if left_out:
                parts.append(_left_out(left_out, left_out + len(calls), "model calls"))
            parts.extend(model_call_lines(state, calls))
        return parts
    if view == "history":
        from runtime import session_history

        history = session_history(state)
        title = f"session_history: {counted(len(history), 'message')}, phased"
        shown, left_out = _window(history, window)
        if not left_out:
            return _messages(history, full=full, title=title, state=state)
        note = _left_out(left_out, len(history), "messages")
        if full:
            return [note, *_messages(shown, full=True, title=title, state=state)]
        return [Text(title, style="bold"), note, *_messages(shown, full=False, state=state)]
    if view == "clean":
        model_view = shown_view(state)
        truncated = ", truncated" if model_view.truncated else ""
        rows, left_out = _window(model_view.messages, window)
        clean: list[RenderableType] = [
            Text(f"clean_history: {counted(len(model_view), 'message')}{truncated}", style="bold")
        ]
        if left_out:
            clean.append(_left_out(left_out, len(model_view), "messages"))
        clean.append(_model_view_table(rows, full=full))
        return clean
    return [
        Text(f"{view} request view (no system prompt):", style="bold"),
        json_view(view_data(view, state)),
    ]


WINDOW_OVER = 200
"""``show`` prints every item of a list up to this long (more: the last ``WINDOW_LAST``)."""
WINDOW_LAST = 100
"""How many of the last items ``show`` prints of a longer list (as the TUI does)."""

_T = typing.TypeVar("_T")


def _window(items: Sequence[_T], window: frozenset[str] | None) -> tuple[Sequence[_T], int]:
    """The items to print and how many are left out (the earlier ones)."""
    if window is None or len(items) <= WINDOW_OVER:
        return items, 0
    return items[-WINDOW_LAST:], len(items) - WINDOW_LAST


def window_turns(state: SessionState, window: frozenset[str] | None) -> tuple[list[Turn], int]:
    """The turns to print (``turn_list``'s, of more than ``WINDOW_OVER``: its last
    ``WINDOW_LAST``) and how many are left out; every turn with a window of None. The last
    ones are picked without sorting every turn (``SessionState.last_turns``)."""
    total = len(state.turns) + (state.active_turn is not None)
    if window is None or total <= WINDOW_OVER:
        return state.turn_list(), 0
    return state.last_turns(WINDOW_LAST), total - WINDOW_LAST


def window_messages(
    state: SessionState, window: frozenset[str] | None
) -> tuple[Sequence[Message], int]:
    """The messages to print of a state of more than ``WINDOW_OVER`` (the last
    ``WINDOW_LAST`` and those in ``window``, in state order) and how many are left out; every
    message with a window of None. Only those are looked at: a state of 50,000 messages
    prints at once. ``amber show`` and ``amber inspect`` print these.

    When more than ``WINDOW_LAST`` of the messages in ``window`` come before the last ones
    (a fork's first event brings every message; a long rollback), none of them is added:
    the window would be most of the state again."""
    messages = state.messages
    count = len(messages)
    if window is None or count <= WINDOW_OVER:
        return messages, 0
    last = count - WINDOW_LAST
    earlier = sorted(
        position
        for position in (state.index.get(mid) for mid in window)
        if position is not None and position < last
    )
    if len(earlier) > WINDOW_LAST:
        earlier = []
    shown = [messages[position] for position in earlier]
    shown += [messages[position] for position in range(last, count)]
    return shown, count - len(shown)


def _left_out(count: int, total: int, what: str, *, touched: bool = False) -> Text:
    also = ", and those the event touched" if touched else ""
    return Text(
        f"({count:,} earlier {what} of {total:,} not shown: the last {WINDOW_LAST}{also}; "
        "--all prints every one)",
        style="dim",
    )


def _messages(
    messages: Sequence[Message], *, full: bool, state: SessionState, title: str | None = None
) -> list[RenderableType]:
    from ._tables import message_lines, message_table

    if full:
        return [message_table(messages, title=title, state=state)]
    return list(message_lines(messages, title=title, state=state))


def _part_text(part: object, full: bool) -> Text:
    from runtime import ImagePart, ReasoningPart, TextPart, ToolResultPart, ToolUsePart

    limit = 10_000_000 if full else 160
    if isinstance(part, TextPart):
        return Text(excerpt(part.text, limit) if not full else part.text)
    if isinstance(part, ReasoningPart):
        return Text("💭 " + (part.text if full else excerpt(part.text, limit)), style="cyan")
    if isinstance(part, ToolUsePart):
        text = f"🛠️ {part.name}({part.arguments_json()}) [{part.call_id}]"
        return Text(text if full else excerpt(text, limit), style="yellow")
    if isinstance(part, ToolResultPart):
        flags = [f for f, on in (("error", part.is_error), ("synthesized", part.synthesized),
                                 ("excerpt", part.excerpted)) if on]  # fmt: skip
        head = f"[{part.call_id}{' ' + ', '.join(flags) if flags else ''}] "
        body = part.text if full else excerpt(part.text, limit)
        return Text(head + body, style="red" if part.is_error else "magenta")
    if isinstance(part, ImagePart):
        return Text(f"🖼 {image_label(part.attachment, part.data)}", style="dim")
    return Text(repr(part))


def _model_view_table(messages: Sequence[ViewMessage], *, full: bool) -> Table:
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("role", no_wrap=True)
    table.add_column("from", no_wrap=True, style="dim")
    table.add_column("parts", overflow="fold")
    for message in messages:
        table.add_row(message.role.value, _source(message), _parts(message, full))
    return table


def _source(message: ViewMessage) -> str:
    if message.source_id is None:
        return "(made by the view)"
    return f"{message.source_id} @{message.event_seq}"


def _parts(message: ViewMessage, full: bool) -> Text:
    out = Text()
    for index, part in enumerate(message.parts):
        if index:
            out.append("\n")
        out.append_text(_part_text(part, full))
    return out
