"""What each page shows, as plain values the templates lay out.

Pure functions of a ``Timeline`` (or a state) and the request's choices.
They build only what the screen shows: a window of timeline rows around the
chosen seq, a window of messages around what changed, the last rows of a
long projection. Lines that the CLI also prints come from the CLI's own
functions (``describe_event``, ``diff_view``, ``message_summary``) so both
read the same.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Sequence
from typing import Any

import attrs
import orjson
from markupsafe import Markup

from runtime import (
    AGENT_SENDER,
    AuditRow,
    Event,
    ImagePart,
    Message,
    ReasoningPart,
    SessionState,
    StateDiff,
    TextPart,
    Timeline,
    ToolResultPart,
    ToolUsePart,
    TurnEnded,
    TurnStarted,
    added_seq,
    canonical,
    diff,
    session_history,
)
from runtime._article import counted

from .._cli._render import describe_event, diff_view, is_error_event
from .._cli._text import category_label, excerpt, message_summary, safe
from .._cli._viewdata import image_label, view_data
from .._cli._viewdata import model_view as shown_view
from ._html import rich_html, rich_lines

__all__ = [
    "MESSAGES",
    "ROWS",
    "KindIndex",
    "MessageRow",
    "Pane",
    "Row",
    "Rows",
    "StatePane",
    "filtered_rows",
    "jump",
    "message_rows",
    "page_of",
    "paged",
    "pretty_json",
    "span_of",
    "state_pane",
    "timeline_rows",
    "view_pane",
]

ROWS = 41
"""Timeline rows on a page (the chosen seq in the middle)."""
MESSAGES = 40
"""Messages on a page."""
_CALLS = 25
"""Model calls listed beside a state."""
_VIEW_ITEMS = 40
"""Entries of a projection shown before "show all"."""


@attrs.frozen(kw_only=True)
class Row:
    """One timeline row: an event and what it changed."""

    seq: int
    time: str
    kind: str
    html: Markup
    plain: str
    """The line as plain text (the row's tooltip: the pane cuts long lines)."""
    error: bool


@attrs.frozen(kw_only=True)
class Rows:
    """The timeline rows a page shows."""

    rows: tuple[Row, ...]
    """In seq order."""
    earlier: int | None
    """The ``from`` of the page of rows before these, if any."""
    later: int | None
    """The ``from`` of the page after, if any."""
    matching: int
    """How many events match the filter in the whole session (None-filter: every event)."""
    loading_before: int
    """Rows not shown because the whole log is still loading (they come on the next page)."""


def _row(timeline: Timeline, seq: int) -> Row:
    event = timeline.event(seq)
    before, after = timeline.at(seq - 1), timeline.at(seq)
    utc = event.at
    text = describe_event(event, before, after)
    return Row(
        seq=seq,
        time=utc.strftime("%H:%M:%S.") + f"{utc.microsecond // 1000:03d}",
        kind=event.kind,
        html=rich_html(text),
        plain=text.plain,
        error=is_error_event(event),
    )


@attrs.define(eq=False)
class KindIndex:
    """The seqs of each event kind in a timeline, kept up to date as the timeline grows."""

    base: SessionState
    """The base of the timeline it indexes (a new base: a new index)."""
    upto: int
    """The last seq indexed."""
    seqs: dict[str, list[int]] = attrs.field(factory=dict)
    """Event kind -> its seqs, ascending."""

    @classmethod
    def of(cls, timeline: Timeline) -> KindIndex:
        """An index of ``timeline``."""
        return cls(base=timeline.base, upto=timeline.first_seq).extended(timeline)

    def fits(self, timeline: Timeline) -> bool:
        """True if this index can be brought up to ``timeline`` (same base, not ahead)."""
        return timeline.base is self.base and self.upto <= timeline.last_seq

    def extended(self, timeline: Timeline) -> KindIndex:
        """This index with the events after ``upto`` added (in place; the caller locks)."""
        if timeline.last_seq <= self.upto:
            return self
        events = timeline.events()
        offset = timeline.first_seq + 1
        for event in events[self.upto + 1 - offset :]:
            self.seqs.setdefault(event.kind, []).append(event.seq)
        self.upto = timeline.last_seq
        return self


_NEAR = 1_000
"""A page's rows and state this many seqs apart or fewer are read in one span."""


def span_of(seq: int, start: int | None, head: int) -> tuple[int, int]:
    """The first and last seq of the states a page at ``seq`` reads for its rows, around
    ``seq`` or from ``start`` (as ``timeline_rows`` picks them, unfiltered) in a session
    whose last seq is ``head``: from the state before the first row to the last row, and
    to ``seq`` and the state before it (for its diff) unless they are far from the rows
    (``from=``: then the state is read alone)."""
    if start is None:
        low = max(0, min(max(seq, 1) - 1 - ROWS // 2, head - ROWS))
    else:
        low = min(max(start, 1) - 1, max(0, head - ROWS))
    high = min(head, low + ROWS)
    if low - _NEAR <= seq <= high + _NEAR:
        return min(low, max(seq - 1, 0)), max(high, seq)
    return low, high


def timeline_rows(
    timeline: Timeline,
    seq: int,
    kinds: Sequence[str],
    start: int | None,
    index: KindIndex | None = None,
    *,
    head: int | None = None,
) -> Rows:
    """A page of rows: around ``seq``, or from ``start``; only ``kinds`` if given.

    ``index``: the timeline's ``KindIndex``, if the caller keeps one. ``head``: the
    session's last seq when ``timeline`` is a span of it (no ``kinds``), holding the
    states ``span_of`` names.
    """
    first = timeline.first_seq + 1 if head is None else 1
    last = timeline.last_seq if head is None else head
    seqs: Sequence[int] = range(first, last + 1)
    if kinds:
        if index is None or index.base is not timeline.base or index.upto < last:
            index = KindIndex.of(timeline)  # the caller's does not cover this timeline
        # Another request may have extended the index past this timeline: cut at its end.
        lists = [index.seqs.get(kind, []) for kind in kinds]
        seqs = list(heapq.merge(*(seq[: bisect.bisect_right(seq, last)] for seq in lists)))
    shown, earlier, later = page_of(
        seqs, max(seq, first) if start is None else start, centred=start is None
    )
    loading = first - 1 if head is None and timeline.first_seq > 0 else 0
    if earlier is None and loading:
        earlier = max(1, first - ROWS)
    return Rows(
        rows=tuple(_row(timeline, s) for s in shown),
        earlier=earlier,
        later=later,
        matching=len(seqs) + (loading if not kinds else 0),
        loading_before=loading,
    )


def page_of(
    seqs: Sequence[int], pivot: int, *, centred: bool
) -> tuple[list[int], int | None, int | None]:
    """The seqs a page of rows shows out of ``seqs`` (ascending) and the ``from`` of the
    pages before and after it: around ``pivot`` (``centred``: the page's seq in the
    middle) or from it (a ``from``), ``ROWS`` of them while there are."""
    middle = bisect.bisect_left(seqs, pivot)
    low = max(0, min(middle - (ROWS // 2 if centred else 0), len(seqs) - ROWS))
    high = min(len(seqs), low + ROWS)
    earlier = seqs[max(0, low - ROWS)] if low > 0 else None
    later = seqs[high] if high < len(seqs) else None
    return [seqs[i] for i in range(low, high)], earlier, later


def paged(
    before: Sequence[int], after: Sequence[int], *, centred: bool
) -> tuple[list[int], int | None, int | None]:
    """The seqs a page of filtered rows shows and the ``from`` of the pages before and after
    it, from the matching seqs nearest its pivot (the page's seq, or its ``from``):
    ``before``, the last up to ``2 * ROWS`` of them before the pivot, and ``after``, the
    first up to ``ROWS + 1`` from it on, both ascending. ``centred``: the page is around
    its seq (no ``from``). The same as ``page_of`` over every matching seq."""
    window = [*before, *after]
    back = max(ROWS // 2 if centred else 0, ROWS - len(after))
    low = max(0, len(before) - back)
    high = min(len(window), low + ROWS)
    earlier = window[max(0, low - ROWS)] if low > 0 else None
    later = window[high] if high < len(window) else None
    return window[low:high], earlier, later


def filtered_rows(
    lines: Sequence[Timeline],
    shown: Sequence[int],
    earlier: int | None,
    later: int | None,
    *,
    matching: int,
) -> Rows:
    """The filtered rows ``paged`` picked, each read from the first of ``lines`` that holds
    its seq and the state before it; ``matching``: how many events match in the session."""

    def line(seq: int) -> Timeline:
        return next(t for t in lines if t.first_seq <= seq - 1 and seq <= t.last_seq)

    return Rows(
        rows=tuple(_row(line(s), s) for s in shown),
        earlier=earlier,
        later=later,
        matching=matching,
        loading_before=0,
    )


def jump(timeline: Timeline, seq: int, to: str) -> int | None:
    """The seq a jump lands on from ``seq``, or None when there is none.

    ``next-turn``/``prev-turn``: the next or previous turn start or end;
    ``next-error``/``prev-error``: the next or previous failed turn, failed
    model call or tool error (wrapping around, as ``amber inspect``'s ``e``).
    """
    first, last = timeline.first_seq + 1, timeline.last_seq
    if to in ("next-turn", "prev-turn"):
        steps = range(seq + 1, last + 1) if to == "next-turn" else range(seq - 1, first - 1, -1)
        for s in steps:
            if isinstance(timeline.event(s), TurnStarted | TurnEnded):
                return s
        return None
    order: list[int]
    if to == "next-error":
        order = [*range(seq + 1, last + 1), *range(first, seq + 1)]
    else:
        order = [*range(seq - 1, first - 1, -1), *range(last, seq - 1, -1)]
    for s in order:
        if is_error_event(timeline.event(s)):
            return s
    return None


@attrs.frozen(kw_only=True)
class MessageRow:
    """One message in a table, with the mark of what the event did to it."""

    id: str
    seq: int | None
    category: str
    status: str
    active: bool
    mark: str
    """``+`` added by the event, ``~`` changed by it, or empty."""
    html: Markup


def message_rows(
    messages: Sequence[Message], state: SessionState, delta: StateDiff | None = None
) -> list[MessageRow]:
    """Rows for ``messages`` of ``state``, marked with what ``delta`` added or changed; a
    row's seq is the seq of ``state``'s session that added the message (``added_seq``)."""
    added = {m.id for m in delta.added} if delta is not None else set()
    changed = {c.message_id for c in delta.changed} if delta is not None else set()
    rows = []
    for message in messages:
        summary = rich_html(message_summary(message, 240))
        if message.sender and message.sender != AGENT_SENDER and message.tool_call is None:
            summary = Markup('<span class="d">{}: </span>').format(safe(message.sender)) + summary
        rows.append(
            MessageRow(
                id=message.id,
                seq=added_seq(state, message),
                category=category_label(message),
                status=str(message.status),
                active=message.active,
                mark="+" if message.id in added else "~" if message.id in changed else "",
                html=summary,
            )
        )
    return rows


@attrs.frozen(kw_only=True)
class StatePane:
    """The state at a seq: its event, what changed from the seq before, its messages."""

    state: SessionState
    event: Event | None
    event_html: Markup | None
    changes: tuple[Markup, ...]
    """The diff from the previous seq, one line each (as ``amber diff`` prints it)."""
    changed: bool
    messages: tuple[MessageRow, ...]
    offset: int
    """Position of the first message shown."""
    total: int
    """Messages in the state."""
    calls: tuple[AuditRow, ...]
    """The last model calls at this seq."""
    calls_total: int


def state_pane(timeline: Timeline, seq: int, offset: int | None) -> StatePane:
    """The state pane at ``seq``; messages from ``offset``, or around what changed."""
    state = timeline.at(seq)
    event = timeline.event(seq) if seq > 0 else None
    before = timeline.at(seq - 1) if event is not None else state
    delta = diff(before, state)
    lines = rich_lines(diff_view(delta))[1:]  # the first line is the title; the page has its own
    messages = state.messages
    total = len(messages)
    if offset is None:
        touched = [m.id for m in delta.added] + [c.message_id for c in delta.changed]
        positions = [state.index[i] for i in touched if i in state.index]
        anchor = min(positions) if positions else total
        offset = max(0, min(anchor - MESSAGES // 4, total - MESSAGES))
    offset = max(0, min(offset, max(0, total - 1)))
    shown = [messages[i] for i in range(offset, min(total, offset + MESSAGES))]
    calls = state.model_calls()
    return StatePane(
        state=state,
        event=event,
        event_html=None if event is None else rich_html(describe_event(event, before, state)),
        changes=tuple(lines),
        changed=bool(delta),
        messages=tuple(message_rows(shown, state, delta)),
        offset=offset,
        total=total,
        calls=calls[-_CALLS:],
        calls_total=len(calls),
    )


@attrs.frozen(kw_only=True)
class Pane:
    """The pane beside the state: a projection of it, or its model calls."""

    view: str
    title: str
    note: str
    """What the projection is and is not (rebuilt from the past state …)."""
    rows: tuple[Any, ...]
    """``MessageRow``s (history), ``(role, source, parts html)`` (clean), or audit rows."""
    json: str | None
    """The provider request as indented JSON (provider views)."""
    shown: int
    total: int


_REBUILT = (
    "Rebuilt from the state at seq {seq} with today's code: no system prompt, no tools, no "
    "artifacts. The exact request a model call was sent is on its call page (amber show "
    "--call)."
)


def view_pane(view: str, state: SessionState, *, show_all: bool) -> Pane:
    """``view`` of ``state``: the last entries, or every one with ``show_all``."""
    limit = None if show_all else _VIEW_ITEMS
    if view == "calls":
        calls = state.model_calls()
        return Pane(
            view=view,
            title=f"Model calls at seq {state.seq}",
            note="The model-call audit: every call, how long, what it cost, what it said.",
            rows=tuple(calls[-limit:] if limit else calls),
            json=None,
            shown=min(len(calls), limit or len(calls)),
            total=len(calls),
        )
    if view == "history":
        history = session_history(state)
        shown = history[-limit:] if limit else history
        return Pane(
            view=view,
            title=f"session_history: {counted(len(history), 'message')}, phased",
            note="Every active message, each turn in phased order.",
            rows=tuple(message_rows(shown, state)),
            json=None,
            shown=len(shown),
            total=len(history),
        )
    if view == "clean":
        model_view = shown_view(state)
        items = model_view.messages[-limit:] if limit else model_view.messages
        return Pane(
            view=view,
            title=f"clean_history: {counted(len(model_view), 'message')}"
            + (", truncated" if model_view.truncated else ""),
            note="The model's view: what was dropped, synthesized or cut. "
            + _REBUILT.format(seq=state.seq),
            rows=tuple(
                (m.role.value, _source(m.source_id, m.event_seq), _parts(m.parts)) for m in items
            ),
            json=None,
            shown=len(items),
            total=len(model_view),
        )
    data = view_data(view, state)
    items_key, entries = _entries(data)
    total = len(entries)
    if limit is not None and total > limit:
        kept = entries[-limit:]
        data = kept if items_key is None else {**data, items_key: kept}
    return Pane(
        view=view,
        title=f"{view} request view",
        note=_REBUILT.format(seq=state.seq),
        rows=(),
        json=pretty_json(data),
        shown=min(total, limit or total),
        total=total,
    )


def _entries(data: Any) -> tuple[str | None, list[Any]]:
    """The list of messages in a provider request, and the key that holds it."""
    if isinstance(data, list):
        return None, data
    if isinstance(data, dict):
        for key in ("messages", "contents", "input"):
            if isinstance(data.get(key), list):
                return key, data[key]
    return None, []


def _source(source_id: str | None, event_seq: int | None) -> str:
    return "(made by the view)" if source_id is None else f"{source_id} @{event_seq}"


def _parts(parts: Sequence[object]) -> Markup:
    out = []
    for part in parts:
        if isinstance(part, TextPart):
            out.append(Markup("<span>{}</span>").format(excerpt(part.text, 400)))
        elif isinstance(part, ReasoningPart):
            out.append(Markup('<span class="c-cyan">💭 {}</span>').format(excerpt(part.text, 400)))
        elif isinstance(part, ToolUsePart):
            text = f"🛠️ {part.name}({part.arguments_json()}) [{part.call_id}]"
            out.append(Markup('<span class="c-yellow">{}</span>').format(excerpt(text, 400)))
        elif isinstance(part, ToolResultPart):
            flags = [f for f, on in (("error", part.is_error), ("synthesized", part.synthesized),
                                     ("excerpt", part.excerpted)) if on]  # fmt: skip
            head = f"[{part.call_id}{' ' + ', '.join(flags) if flags else ''}] "
            css = "c-red" if part.is_error else "c-magenta"
            out.append(
                Markup('<span class="{}">{}</span>').format(css, head + excerpt(part.text, 400))
            )
        elif isinstance(part, ImagePart):
            out.append(
                Markup('<span class="d">🖼 {}</span>').format(
                    image_label(part.attachment, part.data)
                )
            )
        else:
            out.append(Markup("<span>{}</span>").format(repr(part)))
    return Markup("<br>").join(out)


def pretty_json(data: object) -> str:
    """``data`` as indented JSON (bytes as their length, pyrsistent values thawed, a frozen
    map's keys sorted: its own order changes from process to process)."""
    return orjson.dumps(
        canonical(data), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=_bytes
    ).decode()


def _bytes(value: object) -> str:
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return str(value)
