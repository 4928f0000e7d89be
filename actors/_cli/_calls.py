"""``amber show SESSION --call N``: the exact request a model call sent, rebuilt.

The call's audit row records what its request was built from (the state's
seq, the view options, the provider, the model, the parameters, the system
prompt and tool schemas by digest); ``rebuild_request`` rebuilds the payload
and checks it against the digest recorded when it was sent. The request is
printed as it went over the wire: method, path (under the SDK's base URL)
and JSON body. ``--view`` at a seq says which call, if any, was sent that
state's request (``call_note``).

An image the call sent is not in the Amber store: its bytes live in the
application's artifact store (``Settings.artifacts``), which the CLI does not
have. Such a request is rebuilt with a placeholder in place of each image's
bytes, its digest left unchecked, and a note says how to rebuild it exactly
(``rebuild_request(..., artifacts=...)`` in Python).
"""

from __future__ import annotations

from typing import Any

import click
from rich.console import Group, RenderableType
from rich.text import Text

from runtime import (
    AmberError,
    Attachment,
    AuditRow,
    MissingArtifact,
    ProjectionError,
    RebuiltRequest,
    SessionState,
    Timeline,
    find_call,
    rebuild_request,
    views_of,
)

from ._app import CliError, ExitCode, emit_json, stdout_console
from ._hints import command_line
from ._text import json_text, json_view, money
from ._viewdata import StandIn, stand_ins_replaced

__all__ = ["call_note", "call_number", "print_call", "rebuild_shown", "rebuilt_call"]


def call_number(call: str) -> int | str:
    """``--call``'s value as ``find_call`` takes it: a number (``3``, ``#3``) as an int,
    anything else (a source key, an operation id) as it is."""
    text = call.strip().lstrip("#")
    return int(text) if text.isascii() and text.isdigit() else call


def rebuild_shown(line: Timeline, row: AuditRow) -> tuple[RebuiltRequest, tuple[Attachment, ...]]:
    """``rebuild_request`` of ``row``, and the images it sent whose bytes stand in for the
    real ones (they live in the application's artifact store; see the module docstring).

    Raises:
        MissingArtifact: an image records a sha256, which stand-in bytes cannot match.
        ProjectionError: the request cannot be rebuilt.
    """
    try:
        return rebuild_request(line, row), ()
    except MissingArtifact:
        stand_in = StandIn()
        return rebuild_request(line, row, artifacts=stand_in), tuple(stand_in.seen)


def rebuilt_call(line: Timeline, call: str) -> tuple[RebuiltRequest, tuple[Attachment, ...]]:
    """Model call ``call`` of ``line`` rebuilt (``rebuild_shown``), or a CLI error that says
    why it cannot be.

    Raises:
        CliError: no such call (``NOT_FOUND``), or it cannot be rebuilt (``FAILED``).
    """
    try:
        row = find_call(line.head, call_number(call))
    except ProjectionError as exc:
        raise CliError(str(exc), ExitCode.NOT_FOUND) from None
    try:
        return rebuild_shown(line, row)
    except MissingArtifact as exc:
        raise CliError(
            f"Model call #{row.sequence} sent an image whose bytes are in the application's "
            f"artifact store, not in the Amber store, and that records a sha256 a placeholder "
            f"cannot match ({exc}). Rebuild the request in Python with the application's "
            f"store: {_python_hint(line.session_id, row.sequence)}",
            ExitCode.FAILED,
        ) from None
    except ProjectionError as exc:
        raise CliError(str(exc), ExitCode.FAILED) from None


def _python_hint(session_id: str, sequence: int) -> str:
    return (
        f"runtime.rebuild_request(store.load_timeline({session_id!r}), {sequence}, "
        "artifacts=<the application's ArtifactStore>), store being the Amber store "
        "(runtime.store.SQLiteStore(path) or PostgresStore(url))"
    )


def _wire(rebuilt: RebuiltRequest) -> tuple[dict[str, Any], str | None]:
    """The HTTP request, or the SDK arguments with a note when the wire form is unknown here."""
    from ..providers import wire_request

    try:
        return wire_request(rebuilt.record.provider, rebuilt.payload), None
    except (AmberError, ImportError) as exc:
        note = f"the SDK's arguments, not the HTTP body ({exc})"
        return {"method": None, "path": None, "body": rebuilt.payload}, note


def call_data(
    rebuilt: RebuiltRequest, images: tuple[Attachment, ...] = (), session_id: str = "SESSION"
) -> dict[str, Any]:
    """The rebuilt call as JSON-ready data (``images``: those whose bytes stood in, shown as
    placeholders; ``exact`` is then None, not checked; ``session_id`` names the session in
    the note that says how to rebuild it exactly)."""
    row, record = rebuilt.row, rebuilt.record
    wire, note = _wire(rebuilt)
    exact: bool | None = rebuilt.exact
    if images:
        wire = dict(wire, body=stand_ins_replaced(wire["body"], images))
        exact = None
        names = ", ".join(f"{i.name!r} (artifact {i.id!r})" for i in images)
        shown = (
            f"the request sent image(s) {names}, whose bytes are in the application's "
            "artifact store, not in the Amber store: each is a placeholder here and the "
            "digest is not checked. To rebuild the exact request, in Python: "
            + _python_hint(session_id, row.sequence)
        )
        note = shown if note is None else f"{note}; {shown}"
    return {
        "call": row.sequence,
        "operation_id": row.operation_id,
        "source_key": row.source_key,
        "status": str(row.status),
        "provider": record.provider,
        "model": record.model,
        "base_url": record.base_url,
        "view_seq": record.view_seq,
        "exact": exact,
        "digest": rebuilt.digest,
        "recorded_digest": record.payload_digest,
        "cost_usd": row.cost_usd,
        "retries": [
            {"attempt": r.attempt, "status": r.status, "error": r.error, "delay": r.delay}
            for r in row.retries
        ],
        "method": wire["method"],
        "path": wire["path"],
        "body": wire["body"],
        "note": note,
    }


def print_call(line: Timeline, call: str, *, as_json: bool) -> None:
    """Print model call ``call``'s request (see the module docstring)."""
    rebuilt, images = rebuilt_call(line, call)
    data = call_data(rebuilt, images, line.session_id)
    if as_json:
        emit_json(data)
        return
    console = stdout_console()
    row = rebuilt.row
    head = Text.assemble(
        (f"{line.session_id} model call #{row.sequence} ", "bold"),
        f"{row.operation_id} ({row.status}) · {data['provider']} {data['model']}",
    )
    if data["base_url"]:
        head.append(f" at {data['base_url']}")
    head.append(f"\nBuilt from the state at seq {data['view_seq']}")
    if row.cost_usd is not None:
        head.append(f" · cost {money(row.cost_usd)}")
    if row.retries:
        head.append(f" · {len(row.retries)} refused attempt(s) before it")
    check = (
        Text("\n? not checked: the images' bytes are not here (see below)", style="yellow")
        if data["exact"] is None
        else Text("\n✓ exact: the digest matches the one recorded when it was sent", style="green")
        if rebuilt.exact
        else Text(
            f"\n✗ not exact: rebuilt {rebuilt.digest}, sent {data['recorded_digest']} (the view "
            "or payload code changed since, or a custom token counter was used)",
            style="bold red",
        )
    )
    head.append_text(check)
    if data["note"]:
        head.append(f"\nShown: {data['note']}", style="dim")
    elif data["method"]:
        head.append(f"\n{data['method']} {data['path']}", style="dim")
    if not console.is_terminal:
        console.print(head)
        click.echo(json_text(data["body"]))
        return
    parts: list[RenderableType] = [head, json_view(data["body"])]
    console.print(Group(*parts))


def call_note(head: SessionState, seq: int, db: str) -> Text:
    """Which model call, if any, was sent the request of the state at ``seq`` (and the
    command that prints it, naming the store ``db``)."""
    rows = views_of(head, seq)
    if rows:
        numbers = ", ".join(f"#{row.sequence}" for row in rows)
        return Text(
            f"Model call {numbers} was sent this state's view; "
            + command_line(
                "show", head.session_id, options=("--call", rows[0].sequence, "--db", db)
            )
            + " prints that exact request (with its system prompt, tools and parameters). "
            "Below: the view rebuilt with today's code, without them.",
            style="dim",
        )
    later = _next_call(head, seq)
    hint = (
        f" The next call, #{later.sequence}, was built from seq {later.request.view_seq}."
        if later is not None and later.request is not None
        else ""
    )
    return Text(
        f"No model call was sent the view of seq {seq}; below is what a call at this seq would "
        f"have been sent (no system prompt, no tools).{hint}",
        style="dim",
    )


def _next_call(head: SessionState, seq: int) -> AuditRow | None:
    for row in head.model_calls():
        if row.request is not None and row.request.view_seq > seq:
            return row
    return None
