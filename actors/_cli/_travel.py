"""The read-only time-travel commands: ``sessions``, ``timeline``, ``show``.

They open the store without writing to it (a missing file is an error, never
a new store) and read past states from the log, so they are safe to run
beside a live runtime writing the same file.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

from runtime import (
    EVENT_TYPES,
    STATUS_ORDER,
    AmberError,
    Event,
    SessionState,
    Timeline,
    TurnEnded,
    added_seq,
    to_data,
)
from runtime._article import counted
from runtime.store import SessionInfo, SqlStore, Store

from . import keep_to_exit
from ._app import (
    CliError,
    ExitCode,
    db_option,
    emit_json,
    json_option,
    no_gc,
    open_store,
    parse_seq,
    plain_stdout,
    report,
    require_session,
    resolve_seq_between,
    session_argument,
    stdout_console,
    text_console,
    translate,
)
from ._hints import command_line, quoted
from ._viewdata import PROVIDERS, VIEWS, view_data

if TYPE_CHECKING:
    from rich.text import Text

    from runtime import SessionCost

# rich and the renderers (``_render``, ``_text``, ``_views``) are imported where they print:
# ``amber show --json`` loads none of them.

__all__ = ["event_line", "load_timeline", "sessions", "show", "timeline"]


_KIND_WIDTH = max(len(kind) for kind in EVENT_TYPES)


def load_timeline(store: Store, session_id: str, db: str) -> Timeline:
    """Every state of the session, replayed from its log (``NOT_FOUND`` if it is not there)."""
    require_session(store, session_id, db)
    return store.load_timeline(session_id)


def _ago(at: datetime, now: datetime) -> str:
    """``12 s ago``, ``4 min ago``, ``3 h ago``; the UTC date and time after a day."""
    seconds = max(0, int((now - at).total_seconds()))
    if seconds >= 86_400:
        return f"{at.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
    for unit, size in (("h", 3_600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"


def info_data(info: SessionInfo) -> dict[str, Any]:
    """A ``SessionInfo`` as JSON-ready data."""
    return {
        "session_id": info.session_id,
        "seq": info.seq,
        "created_at": info.created_at,
        "updated_at": info.updated_at,
        "messages": info.messages,
        # In the lifecycle's order: the map's own is its hashes', which change every run.
        "counts": {str(s): info.counts[s] for s in STATUS_ORDER if s in info.counts},
        "active_turn_id": info.active_turn_id,
        "active_turn_started_at": info.active_turn_started_at,
        "snapshot_seq": info.snapshot_seq,
    }


@click.command()
@db_option()
@json_option
@click.pass_context
def sessions(ctx: click.Context, db: str, as_json: bool) -> None:
    """List the stored sessions, most recently active first.

    One row per session: events, messages (by status), the turn running at
    its last event, when it was last active (UTC), and what its model calls
    cost (as recorded in their audit rows). A session whose summary or log
    is damaged is marked, its error printed on stderr, and the command exits
    4 once the sound ones are listed.
    """
    from .._damage import sessions_and_damage  # not ._recover's planner of recoveries

    with open_store(db) as store:
        infos, damaged = sessions_and_damage(store)
        heads = {info.session_id: _session_head(store, info) for info in infos}
    costs = {session: cost for session, (cost, _) in heads.items()}
    waiting = {session for session, (_, waits) in heads.items() if waits}
    if as_json:
        emit_json(
            [
                {
                    **info_data(info),
                    "cost_usd": _cost_data(costs[info.session_id]),
                    "waits_for_approval": info.session_id in waiting,
                }
                for info in infos
            ]
        )
    else:
        _print_sessions(infos, costs, waiting, [error.session_id or "?" for error in damaged], db)
    for error in damaged:
        report(translate(error, db))
    if damaged:
        ctx.exit(ExitCode.BAD_STORE)


def _print_sessions(
    infos: list[SessionInfo],
    costs: dict[str, SessionCost | None],
    waiting: set[str],
    damaged: list[str],
    db: str,
) -> None:
    from rich.table import Table
    from rich.text import Text

    from ._plain import print_table
    from ._text import safe, status_text

    console = stdout_console()
    if not infos and not damaged:
        console.print(f"No sessions in {db}; 'amber demo' stores one.")
        return
    # Piped: a session a line, however long (grep finds whole rows); on a terminal the
    # statuses wrap within its width.
    piped = not console.is_terminal
    now = datetime.now(UTC)
    table = Table(box=None, pad_edge=False, header_style="bold")
    for name in ("session", "events", "messages", "active turn", "last active", "cost"):
        table.add_column(name, no_wrap=True)
    table.add_column("statuses", ratio=None if piped else 1, no_wrap=piped)
    for info in infos:
        statuses = Text()
        for status in STATUS_ORDER:
            if not (n := info.counts.get(status, 0)):
                continue
            if statuses:
                statuses.append(" · ")
            statuses.append(f"{n} ")
            statuses.append_text(status_text(status))
        table.add_row(
            info.session_id,
            str(info.seq),
            str(info.messages),
            _turn_text(info, info.session_id in waiting),
            _ago(info.updated_at, now),
            _cost_text(costs[info.session_id]),
            statuses,
        )
    for session_id in damaged:  # its error follows on stderr
        dash = Text("-", style="dim")
        mark = Text("damaged: its rows cannot be read (the error is on stderr)", style="bold red")
        table.add_row(Text(safe(session_id), style="bold red"), *[dash] * 5, mark)
    print_table(console, table)  # piped: plain lines, a session a line
    count = f"{len(infos)} session(s) in {db}"
    if damaged:
        count = f"{len(infos)} sound and {len(damaged)} damaged session(s) in {db}"
    console.print(Text(count, style="dim"))


def _turn_text(info: SessionInfo, waits: bool) -> Text:
    """The active turn column: the turn, and whether it only waits for a person (no
    orphan: ``amber recover`` leaves it alone)."""
    from rich.text import Text

    if info.active_turn_id is None:
        return Text("-", style="dim")
    text = Text(info.active_turn_id, style="bold yellow")
    if waits:
        text.append(" (waits for approval)", style="yellow")
    return text


def _session_head(store: Any, info: SessionInfo) -> tuple[SessionCost | None, bool]:
    """The session's cost from its audit rows, and whether its active turn only waits for
    a person to approve tool calls: as its summary row holds them; from its head (loaded
    from the snapshot) for a row that does not (an older Amber's, left unfilled)."""
    if info.cost is not None:
        return info.cost, info.waits_for_approval
    from runtime import session_cost

    try:
        head = store.load_state(info.session_id)
    except AmberError:
        return None, False  # a damaged session is reported by the commands that read it
    return session_cost(head.model_calls()), head.waits_for_approval


def _cost_data(cost: SessionCost | None) -> float | None:
    return None if cost is None or not cost.priced else round(cost.usd, 9)


def _cost_text(cost: SessionCost | None) -> Text:
    from rich.text import Text

    from ._text import money

    if cost is None or not cost.priced:
        return Text("-", style="dim")
    return Text(money(cost.usd) + ("+" if not cost.complete else ""))


def event_line(event: Event, before: SessionState, after: SessionState, width: int) -> Text:
    """The timeline's line of ``event``: seq, time, kind, what changed."""
    from ._render import describe_event
    from ._text import join, time_text

    return join(
        (f"{event.seq:>{width}}", "bold"),
        "  ",
        (time_text(event.at), "dim"),
        "  ",
        (f"{event.kind:<{_KIND_WIDTH}}", "cyan"),
        "  ",
        describe_event(event, before, after),
    )


def event_entries(timeline: Timeline) -> list[tuple[Event, SessionState, SessionState]]:
    """``(event, state before, state after)`` for every event of the timeline."""
    before = timeline.base
    out = []
    for event, after in timeline.entries:
        out.append((event, before, after))
        before = after
    return out


@click.command()
@click.argument("session", callback=session_argument)
@click.option(
    "--from", "from_seq", metavar="SEQ", callback=parse_seq, help="First seq to list (default: 1)."
)
@click.option(
    "--to", "to_seq", metavar="SEQ", callback=parse_seq, help="Last seq to list (default: head)."
)
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    type=click.Choice(list(EVENT_TYPES)),
    help="Only events of this kind (repeat for several).",
)
@click.option(
    "--message", "message_id", metavar="ID", help="Only events that added or changed this message."
)
@db_option()
@json_option
def timeline(
    session: str,
    from_seq: int | None,
    to_seq: int | None,
    kinds: tuple[str, ...],
    message_id: str | None,
    db: str,
    as_json: bool,
) -> None:
    """One line per event: seq, time (UTC), kind, what changed.

    Seqs may be negative to count back from the head (--from -10: the last ten).
    """
    from rich.text import Text

    from ._render import describe_event, touched_ids
    from ._text import time_text

    with open_store(db) as store:
        last = head_seq(store, session, db)
        info = store.session(session)
        low = (
            resolve_seq_between(from_seq, session, 0, last, option="--from")
            if from_seq is not None
            else 1
        )
        high = (
            resolve_seq_between(to_seq, session, 0, last, option="--to")
            if to_seq is not None
            else last
        )
        if high < 1:  # --to 0 (or -N back to it): the state before the first event
            raise CliError(
                f"--to {to_seq} is seq 0, the empty state before the first event: no event "
                f"lies up to it. Pass --to between 1 and {last} (session {session!r} holds "
                f"seq 1 to {last}), or a negative number to count back from the head.",
                ExitCode.USAGE,
            )
        if low > high:
            raise CliError(
                f"--to {to_seq} is seq {high}, before --from {from_seq} (seq {low}): no event "
                f"lies between. Pass --from at or before --to (session {session!r} holds seq "
                f"1 to {last}).",
                ExitCode.USAGE,
            )
        if message_id is not None:
            _require_message(store, session, last, message_id, db)
        # Streamed: each line is printed when its event is read, from the nearest stored state.
        # The walk is closed before the store is, also when the reader goes (a closed pipe,
        # Ctrl-C): else its transaction ends later, on a closed connection.
        walked = store.walk(session, max(low, 1), max(high, low, 1))
        with contextlib.closing(walked):
            picked = (
                (event, before, after)
                for event, before, after in walked
                if event.seq <= high
                and (not kinds or event.kind in kinds)
                and (message_id is None or message_id in touched_ids(event, before, after))
            )
            if as_json:
                emit_json(
                    [
                        {
                            "seq": event.seq,
                            "at": event.at,
                            "kind": event.kind,
                            "summary": describe_event(event, before, after).plain,
                            "event": to_data(event),
                        }
                        for event, before, after in picked
                    ]
                )
                return
            span = f"{time_text(info.created_at, date=True)} → {time_text(info.updated_at)} UTC"
            header = Text.assemble((session, "bold"), f": {counted(last, 'event')}", f", {span}")
            # Piped (grep, less, a file): plain lines, much faster than styling each one,
            # written a few hundred at a time (the first ones at once), without rich's console.
            console = None if plain_stdout() else stdout_console()
            if console is None:
                click.echo(header.plain)
            else:
                console.print(header, soft_wrap=True)
            width = len(str(last))
            shown = 0
            piped: list[str] = []
            try:
                for event, before, after in picked:
                    text = event_line(event, before, after, width)
                    shown += 1
                    if console is not None and console.is_terminal:
                        console.print(text)
                        continue
                    piped.append(text.plain + "\n")
                    if shown == 1 or len(piped) >= 500:
                        click.echo("".join(piped), nl=False)
                        piped.clear()
            except AmberError:  # a damaged event: the lines before it, then its error
                click.echo("".join(piped), nl=False)
                raise
            click.echo("".join(piped), nl=False)
    if not shown:
        if console is None:
            click.echo("(no event matches)")
        else:
            console.print(Text("(no event matches)", style="dim"))


def _require_message(store: SqlStore, session_id: str, last: int, message_id: str, db: str) -> None:
    """``NOT_FOUND`` if the session's head has no message ``message_id`` (a message, once
    added, stays in every later state: rolled back, it is only inactive)."""
    if store.load_span(session_id, last, last, lazy=True).head.get(message_id) is None:
        show = command_line("show", session_id, options=("--db", db))
        raise CliError(
            f"Session {session_id!r} has no message {message_id!r}. Pass --message with the id "
            f"of one of its messages; {quoted(show)} lists them.",
            ExitCode.NOT_FOUND,
        )


def head_seq(store: Store, session_id: str, db: str) -> int:
    """The session's last seq (``NOT_FOUND`` if it is not there)."""
    require_session(store, session_id, db)
    return store.session(session_id).seq


@click.command()
@click.argument("session", callback=session_argument)
@click.option(
    "--at",
    "at_seq",
    metavar="SEQ",
    callback=parse_seq,
    default="head",
    show_default=True,
    help="The seq to show (0: before the first event; -1 or head: the latest).",
)
@click.option(
    "--view",
    type=click.Choice(VIEWS),
    default="state",
    show_default=True,
    help="What to print: the state, or a projection of it as it was then (with --message: "
    "what that projection holds of the message).",
)
@click.option(
    "--message", "message_id", metavar="ID", help="Print one message in full (every field)."
)
@click.option(
    "--call",
    "call",
    metavar="N",
    help="Print the exact request model call N sent (its number, source key or operation id).",
)
@click.option("--full", is_flag=True, help="Print whole contents instead of one-line excerpts.")
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="Print every message, turn and model call (default: the last 100 of a list over 200, "
    "and the messages the event touched).",
)
@db_option()
@json_option
@no_gc()  # one command, then exit: no collection walks the state it loads (~30 ms at 45,000)
def show(
    session: str,
    at_seq: int,
    view: str,
    message_id: str | None,
    call: str | None,
    full: bool,
    show_all: bool,
    db: str,
    as_json: bool,
) -> None:
    """The state of SESSION at a seq, or a projection of it.

    The messages with their status, the active turn and the turns; of a list
    over 200 (messages, turns, model calls) the last 100, and the messages the
    event touched, unless --all. --json prints the whole state.
    --call N prints the exact request model call N sent, rebuilt from its
    audit row (checked against the digest recorded then).
    --view openai|openai-responses|anthropic|gemini prints the provider view of
    the state at --at, rebuilt with today's code (and says which model call, if
    any, was sent that state's request); history the phased session_history;
    clean the model's view (clean_history). --message ID with --view clean or a
    provider view prints what that view holds of the message.
    """
    if call is not None:
        _call_alone("at_seq", "view", "message_id")
    if message_id is not None and view == "history":
        raise CliError(
            "--message ID takes no --view history (got both): the history view lists the "
            "stored messages as they are, and --message prints that one in full. Pass "
            "--message alone, or with --view clean or a provider view (openai, "
            "openai-responses, anthropic, gemini) to print what the model's view holds of it.",
            ExitCode.USAGE,
        )
    with open_store(db) as store:
        if call is not None:
            from ._calls import print_call  # the request builders: only for --call

            print_call(load_timeline(store, session, db), call, as_json=as_json)
            return
        # Only the state asked for, from the nearest stored one (not the whole log).
        last = head_seq(store, session, db)
        seq = resolve_seq_between(at_seq, session, 0, last)
        event = store.event(session, seq) if seq > 0 else None  # one row
        # A turn_ended line names the turn as it was before: then from the state before it
        # (one load, rather than the stored state at seq and then the one before).
        printed = not as_json and message_id is None
        first = seq - 1 if printed and isinstance(event, TurnEnded) else seq
        # The text state view and --message read a few messages of a long state: decode
        # only those (lazy). --json, the other views and diff read every one.
        lazy = message_id is not None or (printed and view == "state")
        line = store.load_span(session, first, seq, lazy=lazy)
        keep_to_exit(line)  # not freed when the command returns: console_main exits at once
        state = line.at(seq)
        before = line.at(seq - 1) if line.first_seq < seq else state
        head: SessionState | None = line.head if line.last_seq == last else None
        if head is None and message_id is not None:
            head = store.load_span(session, last, last, lazy=True).head
        elif head is None and view in PROVIDERS:
            head = store.load_state(session)
        keep_to_exit(head)
    if message_id is not None:
        assert head is not None
        _show_message(head, state, message_id, as_json, view=view, db=db)
        return
    if as_json:
        with no_gc():
            data = view_data(view, state)
            if view == "state":
                data = {"event": None if event is None else to_data(event), "state": data}
            keep_to_exit(data)  # ~1,000,000 objects late in a long session
            emit_json(data)
        return
    from ._render import describe_event, touched_ids
    from ._views import print_view

    window = None
    if not show_all:
        window = frozenset(() if event is None else touched_ids(event, before, state))
    console = text_console()  # piped: rich's console is not even imported
    print_view(
        console,
        view,
        state,
        last_seq=last,
        event=event,
        event_line=None if event is None else describe_event(event, before, state),
        full=full,
        head=head,
        window=window,
        db=db,
    )


def _call_alone(*names: str) -> None:
    """``USAGE`` if an option that ``--call`` does not read was given (even at its default):
    the request a call sent is one, whatever the seq or view; the option would be ignored."""
    from click.core import ParameterSource

    ctx = click.get_current_context()
    for name in names:
        if ctx.get_parameter_source(name) in (ParameterSource.DEFAULT, None):
            continue
        option = {"at_seq": "--at", "view": "--view", "message_id": "--message"}[name]
        raise CliError(
            f"--call N prints the request model call N sent and takes no {option} (got "
            f"{option} with --call): that request is the one the call sent, built from the "
            f"state it records. Pass --call without {option} (--json and --db apply), or "
            f"leave --call out to use {option}.",
            ExitCode.USAGE,
        )


def _show_message(
    head: SessionState, state: SessionState, message_id: str, as_json: bool, *, view: str, db: str
) -> None:
    """Message ``message_id`` of ``state`` in full, or (``view`` clean or a provider's) what
    that view of ``state`` holds of it."""
    message = state.get(message_id)
    if message is None:
        later = head.get(message_id)
        added = None if later is None else added_seq(head, later)
        at = () if state.seq == head.seq else ("--at", state.seq)
        listed = command_line("show", state.session_id, options=(*at, "--db", db))
        hint = (
            f"it is added at seq {added}; pass --at {added} or later."
            if added is not None
            else f"{quoted(listed)} lists the messages."
        )
        raise CliError(
            f"Session {state.session_id!r} has no message {message_id!r} at seq {state.seq}; "
            + hint,
            ExitCode.NOT_FOUND,
        )
    if view != "state":
        from ._viewdata import message_view, message_view_data

        part = message_view(state, message_id)
        if as_json:
            emit_json(message_view_data(view, part))
            return
        from ._views import print_message_view

        print_message_view(text_console(), view, part, message, head=head, db=db)
        return
    if as_json:
        emit_json(to_data(message))
        return
    from ._plain import print_table
    from ._tables import message_detail

    print_table(stdout_console(), message_detail(message, state))
