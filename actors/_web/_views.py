"""The viewer's request handlers, one per page, and the route table.

Each handler reads its parameters (``_params``), asks the ``Source`` for
what it needs (no handler opens a store), builds the page's values
(``_pages``, ``_stats``, ``_charts``) and renders a template. A bad
parameter, an unknown session, message or call, or an error of the CLI's
checks becomes an error page with its HTTP status (``_app``).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from runtime import (
    EVENT_TYPES,
    AmberError,
    AuditRow,
    Event,
    SessionState,
    Timeline,
    added_seq,
    inherited,
)

from .._cli._app import ExitCode
from .._cli._render import touched_ids
from .._cli._views import PROVIDERS
from ._charts import Bar, Series, area_chart, bar_chart
from ._html import duration, money, number
from ._pages import (
    ROWS,
    KindIndex,
    filtered_rows,
    jump,
    message_rows,
    paged,
    pretty_json,
    span_of,
    state_pane,
    timeline_rows,
    view_pane,
)
from ._params import (
    WebError,
    one,
    parse_form,
    parse_index,
    parse_kinds,
    parse_seq,
    parse_session_id,
    parse_view,
    resolve,
)
from ._request import check_origin, query, read_body, require, url
from ._source import Source
from ._stats import call_cost, turn_stats

__all__ = ["ROUTES"]

Page = Callable[..., Response]

_SORTS: dict[str, Callable[[Any], Any]] = {
    "session": lambda r: r.info.session_id,
    "events": lambda r: r.info.seq,
    "turns": lambda r: r.totals.turns,
    "messages": lambda r: r.info.messages,
    "tokens": lambda r: r.totals.tokens,
    "cost": lambda r: r.totals.cost or 0.0,
    "active": lambda r: r.info.updated_at,
    "state": lambda r: (r.info.active_turn_id is not None, r.pending, r.forked_from is not None),
}
_TURNS_PER_CHART = 120


def sessions_page(request: Request, *, source: Source, page: Page, **_: Any) -> Response:
    """``/``: every session, sortable (``?sort=turns&order=asc``)."""
    q = query(request)
    sort = one(q, "sort") or "active"
    if sort not in _SORTS:
        raise WebError(400, f"Cannot sort by {sort!r}; pass sort= one of {', '.join(_SORTS)}.")
    order = one(q, "order") or ("asc" if sort == "session" else "desc")
    if order not in ("asc", "desc"):
        raise WebError(400, f"order must be 'asc' or 'desc' (got {order!r}).")
    listed, damaged = source.sessions()
    rows = sorted(listed, key=_SORTS[sort], reverse=order == "desc")
    context = {"rows": rows, "damaged": damaged, "sort": sort, "order": order}
    return page(request, "sessions.html", context)


def session_page(request: Request, *, source: Source, page: Page, **_: Any) -> Response:
    """``/session?s=ID&at=SEQ``: the timeline, the state at a seq, and a view beside it."""
    q = query(request)
    session_id = require(request)
    at = parse_seq(one(q, "at"))
    view = parse_view(one(q, "view"))
    kinds = parse_kinds(q.get("kind", []))
    start = parse_index(one(q, "from"), name="from")
    offset = parse_index(one(q, "msgs"), name="msgs")
    show_all = one(q, "all") == "1"

    def window(head: int) -> tuple[int, int, int]:
        seq = resolve(at, head, session_id)
        if kinds:  # the filtered rows are read apart (below)
            return seq, max(seq - 1, 0), seq
        return (seq, *span_of(seq, start, head))

    # Only the states the page shows.
    loaded = source.span(session_id, window)
    timeline = loaded.timeline
    seq = resolve(at, loaded.last_seq, session_id)
    found = None
    if kinds and not loaded.complete:
        pivot = max(seq, 1) if start is None else start
        found = source.kinds(
            session_id, kinds, pivot, loaded.last_seq, before=2 * ROWS, after=ROWS + 1
        )
        if found is None:  # a store that cannot read the kind column: read every event
            loaded = source.span(session_id, window, whole=True)
            timeline = loaded.timeline
    line = timeline  # the states of the state pane: seq and the one before it
    if not timeline.first_seq <= max(seq - 1, 0) <= seq <= timeline.last_seq:
        line = source.span(session_id, lambda _: (seq, max(seq - 1, 0), seq)).timeline
    pane = state_pane(line, seq, offset)
    side = view_pane(view, pane.state, show_all=show_all)
    index = None
    counts: dict[str, int] = {}
    if found is not None:
        shown, earlier, later = paged(found.before, found.after, centred=start is None)
        rows = filtered_rows(
            source.lines(session_id, shown, timeline),
            shown,
            earlier,
            later,
            matching=sum(found.counts.get(kind, 0) for kind in kinds),
        )
        counts = found.counts
    else:
        if loaded.complete:
            index = _kind_index(session_id, timeline)
            counts = {kind: len(seqs) for kind, seqs in index.seqs.items()}
        rows = timeline_rows(timeline, seq, kinds, start, index, head=loaded.head_seq)
    context = {
        "sid": session_id,
        "loaded": loaded,
        "timeline": timeline,
        "seq": seq,
        "last": loaded.last_seq,
        "view": view,
        "kinds": kinds,
        "all_kinds": list(EVENT_TYPES),
        "kind_counts": counts,
        "rows": rows,
        "pane": pane,
        "side": side,
        "show_all": show_all,
        "providers": PROVIDERS,
        "note": one(q, "note"),
        "fork_id": source.fork_id(session_id, seq),
    }
    return page(request, "session.html", context)


_INDEXES: OrderedDict[str, KindIndex] = OrderedDict()
_INDEXES_KEPT = 16
_INDEX_LOCK = threading.Lock()


def _kind_index(session_id: str, timeline: Timeline) -> KindIndex:
    """The kind index of a session's timeline, kept between requests (a few sessions)."""
    with _INDEX_LOCK:
        index = _INDEXES.get(session_id)
        if index is None or not index.fits(timeline):
            index = KindIndex.of(timeline)
        else:
            index.extended(timeline)
        _INDEXES[session_id] = index
        _INDEXES.move_to_end(session_id)
        while len(_INDEXES) > _INDEXES_KEPT:
            _INDEXES.popitem(last=False)
        return index


def jump_page(request: Request, *, source: Source, **_: Any) -> Response:
    """``/jump?s=ID&from=SEQ&to=next-turn``: a redirect to the seq the jump lands on."""
    q = query(request)
    session_id = require(request)
    to = one(q, "to") or ""
    if to not in ("next-turn", "prev-turn", "next-error", "prev-error"):
        raise WebError(
            400, f"Unknown jump {to!r}; pass to= next-turn, prev-turn, next-error or prev-error."
        )
    timeline = source.timeline(session_id).timeline
    seq = resolve(parse_seq(one(q, "from")), timeline.last_seq, session_id, name="from")
    target = jump(timeline, seq, to)
    keep = {"view": one(q, "view"), "kind": q.get("kind", [])}
    note = None
    if target is None:
        target = seq
        note = "no-error" if to.endswith("error") else "no-turn"
    return RedirectResponse(
        url("/session", s=session_id, at=target, note=note, **keep), status_code=303
    )


def message_page(request: Request, *, source: Source, page: Page, **_: Any) -> Response:
    """``/message?s=ID&id=MSG&at=SEQ``: one message in full, and the events that touched it."""
    q = query(request)
    session_id = require(request)
    message_id = require(request, "id")
    at = parse_seq(one(q, "at"))
    found = source.message_history(
        session_id, message_id, lambda last: resolve(at, last, session_id)
    )
    if found is None:  # a short session (or a store that cannot search): every event
        timeline = source.timeline(session_id).timeline
        state = timeline.at(resolve(at, timeline.last_seq, session_id))
        head = timeline.head
    else:
        state, head = found.state, found.head
    seq = state.seq
    message = state.get(message_id)
    if message is None:
        later = head.get(message_id)
        added = None if later is None else added_seq(head, later)
        hint = (
            f"it is added at seq {added}; pass at={added} or later."
            if added is not None
            else "the session page lists its messages."
        )
        raise WebError(
            404,
            f"Session {session_id!r} has no message {message_id!r} at seq {seq}; {hint}",
            code=ExitCode.NOT_FOUND,
        )
    if found is None:
        events = [
            (event.seq, event.kind)
            for event, before, after in _entries(timeline)
            if message_id in touched_ids(event, before, after)
        ]
    else:
        events = found.events
    context = {
        "sid": session_id,
        "seq": seq,
        "last": head.seq,
        "message": message,
        "row": message_rows([message], state)[0],
        "inherited": inherited(state, message),
        "metadata": pretty_json(message.metadata) if message.metadata else None,
        "arguments": pretty_json(message.tool_call.arguments) if message.tool_call else None,
        "events": events,
    }
    return page(request, "message.html", context)


def _entries(timeline: Timeline) -> Iterator[tuple[Event, SessionState, SessionState]]:
    before = timeline.base
    for event, after in timeline.entries:
        yield event, before, after
        before = after


def _provider_for(model: str | None) -> str:
    name = (model or "").lower()
    if "claude" in name or "anthropic" in name:
        return "anthropic"
    if "gemini" in name:
        return "gemini"
    return "openai"


def call_page(request: Request, *, source: Source, page: Page, **_: Any) -> Response:
    """``/call?s=ID&id=CALL``: one model call, its request as rebuilt, its response.

    ``CALL`` as ``amber show --call`` takes it: its number (``3`` or ``#3``), source key
    or operation id."""
    q = query(request)
    session_id = require(request)
    operation_id = require(request, "id")
    loaded = source.timeline(session_id, need=-1)
    head = loaded.timeline.head
    from .._cli._calls import call_number

    number = call_number(operation_id)
    row = head.audit.get(operation_id) or next(  # a number, source key or operation id
        (r for r in head.model_calls() if number in (r.operation_id, r.sequence)), None
    )
    if row is None:
        calls = loaded.timeline.head.model_calls()
        hint = (
            f"it has {len(calls)} (#1 {calls[0].operation_id} … #{len(calls)} "
            f"{calls[-1].operation_id}); pass id= its number, source key or operation id (the "
            "session page lists them)."
            if calls
            else "it has none."
        )
        raise WebError(
            404,
            f"Session {session_id!r} has no model call {operation_id!r}; {hint}",
            code=ExitCode.NOT_FOUND,
        )
    provider = one(q, "provider") or _provider_for(row.model)
    if provider not in PROVIDERS:
        raise WebError(
            400, f"Unknown provider {provider!r}; pass provider= one of {', '.join(PROVIDERS)}."
        )
    asked_at = max(0, row.started_seq - 1)
    exact, missing = _exact_request(source, session_id, row)
    timeline = source.timeline(session_id, need=asked_at).timeline
    request_view = (
        view_pane(provider, timeline.at(asked_at), show_all=one(q, "all") == "1")
        if exact is None
        else None  # shown only when the exact request is not
    )
    tool_calls = [(call, _pretty_arguments(call.arguments_json)) for call in row.tool_calls]
    context = {
        "sid": session_id,
        "row": row,
        "cost": call_cost(row),
        "provider": provider,
        "providers": PROVIDERS,
        "asked_at": asked_at,
        "request_view": request_view,
        "exact": exact,
        "missing": missing,
        "tool_calls": tool_calls,
        "last": timeline.last_seq,
    }
    return page(request, "call.html", context)


def _exact_request(source: Source, session_id: str, row: AuditRow) -> tuple[Any, str]:
    """The call's request rebuilt from its audit row (``amber show --call``), or why not."""
    if row.request is None:
        return None, (
            "this call's model did not report what it sent (a scripted model), so no exact "
            "request is recorded."
        )
    from .._cli._calls import call_data, rebuild_shown

    timeline = source.timeline(session_id, need=row.request.view_seq).timeline
    try:
        data = call_data(*rebuild_shown(timeline, row), session_id)
    except AmberError as exc:
        return None, f"its exact request cannot be rebuilt here ({exc})."
    return {**data, "json": pretty_json(data["body"])}, ""


def _pretty_arguments(text: str) -> str:
    try:
        return pretty_json(orjson.loads(text))
    except orjson.JSONDecodeError:
        return text  # malformed JSON as the model wrote it


_SERIES = {
    "latency": (
        Series(name="model", css="s-model"),
        Series(name="tools", css="s-tool"),
        Series(name="other", css="s-other"),
    ),
    "tokens": (Series(name="input", css="s-in"), Series(name="output", css="s-out")),
    "cost": (Series(name="cost", css="s-cost"),),
}


def charts_page(request: Request, *, source: Source, page: Page, **_: Any) -> Response:
    """``/charts?s=ID``: latency (model, tools, rest), tokens, cost per turn; statuses by seq."""
    q = query(request)
    session_id = require(request)
    start = parse_index(one(q, "turns"), name="turns")
    head, series = source.charted(session_id)
    stats = turn_stats(head)
    total = len(stats)
    if start is None:
        start = max(0, total - _TURNS_PER_CHART)
    start = min(start, max(0, total - 1))
    shown = stats[start : start + _TURNS_PER_CHART]

    def href(seq: int) -> str:
        return url("/session", s=session_id, at=seq)

    def bars(values: Callable[[Any], tuple[float, ...]]) -> list[Bar]:
        return [
            Bar(
                label=t.turn_id,
                values=values(t),
                href=href(t.started_seq if t.started_seq <= head.seq else 0),
                note=f"{t.status} · seq {t.started_seq}→{t.ended_seq or '…'}",
            )
            for t in shown
        ]

    latency = bar_chart(
        bars(lambda t: (t.model_ms, t.tool_ms, t.other_ms)),
        _SERIES["latency"],
        fmt=duration,
        title="Latency per turn",
    )
    tokens = bar_chart(
        bars(lambda t: (float(t.tokens_in), float(t.tokens_out))),
        _SERIES["tokens"],
        fmt=number,
        title="Tokens per turn",
    )
    has_cost = any(t.cost is not None for t in stats)
    cost = (
        bar_chart(
            bars(lambda t: (t.cost or 0.0,)), _SERIES["cost"], fmt=money, title="Cost per turn"
        )
        if has_cost
        else None
    )
    statuses = area_chart(
        series.seqs,
        [(Series(name=str(s), css=f"st-{s}"), v) for s, v in series.counts.items()],
        href=href,
        title="Messages by status over seqs",
        tip=lambda i: (
            f"seq {series.seqs[i]}: "
            + ", ".join(f"{v[i]} {s}" for s, v in series.counts.items() if v[i])
        ),
    )
    context = {
        "sid": session_id,
        "last": head.seq,
        "stats": shown,
        "start": start,
        "total": total,
        "per_page": _TURNS_PER_CHART,
        "latency": latency,
        "tokens": tokens,
        "cost": cost,
        "statuses": statuses,
        "status_names": [str(s) for s in series.counts],
        "stored": series.stored,
        "series": _SERIES,
    }
    return page(request, "charts.html", context)


def verify_page(request: Request, *, source: Source, page: Page, **_: Any) -> Response:
    """``/verify?s=ID``: ``amber replay --verify`` for the session."""
    session_id = require(request)
    seq, checks = source.verify(session_id)
    return page(request, "verify.html", {"sid": session_id, "events": seq, "checks": checks})


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def export_page(request: Request, *, source: Source, **_: Any) -> Response:
    """``/export?s=ID``: the session's JSON (``amber export``), as a download."""
    session_id = require(request)
    body = source.export(session_id)
    name = (_UNSAFE.sub("_", session_id).strip("._") or "session") + ".json"
    return Response(
        body,
        media_type="application/json",
        headers={"content-disposition": f'attachment; filename="{name}"'},
    )


async def fork_action(request: Request, *, source: Source, token: str, **_: Any) -> Response:
    """``POST /fork`` (``s``, ``at``, ``as``, ``token``): ``amber fork``, then the new session."""
    body = await read_body(request)
    form = parse_form(body, request.headers.get("content-type"), ("s", "at", "as", "token"))
    check_origin(request, form.get("token"), token)
    session_id = form.get("s") or ""
    if not session_id:
        raise WebError(400, "The fork form needs a session id (s).")
    if "at" not in form or not form["at"].strip():
        raise WebError(400, "The fork form needs a seq (at): the seq to fork from.")
    at = parse_seq(form["at"])
    # As ``amber fork --as`` takes it: an empty field is no name (the free default id);
    # anything else is checked as typed (spaces kept; a newline or only spaces refused).
    new_id = parse_session_id(form["as"]) if form.get("as") else None
    forked = await run_in_threadpool(source.fork, session_id, at, new_id)
    return RedirectResponse(url("/session", s=forked.session_id, note="forked"), status_code=303)


ROUTES: list[tuple[str, Callable[..., Any], tuple[str, ...]]] = [
    ("/", sessions_page, ("GET",)),
    ("/session", session_page, ("GET",)),
    ("/jump", jump_page, ("GET",)),
    ("/message", message_page, ("GET",)),
    ("/call", call_page, ("GET",)),
    ("/charts", charts_page, ("GET",)),
    ("/verify", verify_page, ("GET",)),
    ("/export", export_page, ("GET",)),
    ("/fork", fork_action, ("POST",)),
]
"""``(path, handler, methods)`` of every page and action."""
