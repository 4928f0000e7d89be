"""``amber import``: store a session from the file that ``amber export`` wrote.

The file is read and checked whole before a store is opened; an import that fails
leaves no store file it made behind.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

import click
import orjson

from runtime import DecodeError, EventRejected, InvalidEvent, SessionState
from runtime._article import counted
from runtime.store import is_postgres_url
from runtime.store._transfer import EXPORT_FORMAT, read_export

from ._app import (
    CliError,
    ExitCode,
    db_option,
    emit_json,
    json_option,
    open_store,
    session_id_option,
    stdout_console,
)
from ._hints import command_line, quoted

__all__ = ["import_command"]


def _renamed(data: dict[str, Any], new_id: str) -> dict[str, Any]:
    """An export moved to session ``new_id``: every event, and every message the session
    added itself; a fork's messages of other sessions keep their ``session_id`` and
    ``event_seq`` (their provenance), and its source stays the session it was forked from.
    Every mention of the exported session's own id becomes ``new_id``, and only those.

    An export without a ``session_id`` (null, or left out by hand) is taken to be the
    session its first event names."""
    old_id = data.get("session_id")
    if not isinstance(old_id, str):
        first = data["events"][0] if data["events"] else None
        old_id = first.get("session_id") if isinstance(first, dict) else None

    def moved(message: Any) -> Any:
        if isinstance(message, dict) and message.get("session_id") == old_id:
            return {**message, "session_id": new_id}
        return message

    events = []
    for event in data["events"]:
        if isinstance(event, dict):
            event = {**event, "session_id": new_id}
            if "source_session_id" in event and event["source_session_id"] == old_id:
                event["source_session_id"] = new_id
            for key in ("message", "notice"):
                if key in event:
                    event[key] = moved(event[key])
            for key in ("messages", "partial"):
                if isinstance(event.get(key), list):
                    event[key] = [moved(m) for m in event[key]]
        events.append(event)
    return {**data, "session_id": new_id, "events": events}


def _source(data: dict[str, Any]) -> tuple[str, int] | None:
    """The session and seq an imported fork started from (its first event), if it is one."""
    first = data["events"][0] if data.get("events") else None
    if isinstance(first, dict) and first.get("kind") == "branch_imported":
        return str(first["source_session_id"]), int(first["source_seq"])
    return None


def _not_export_shape(data: Any) -> str | None:
    """Why ``data`` (a file's JSON) is not an export at all, or None if it looks like one
    (its events are then checked one by one)."""
    if not isinstance(data, dict):
        kinds = {list: "an array", str: "a string", bool: "true or false", type(None): "null"}
        return f"it holds {kinds.get(type(data), 'a number')}, not a JSON object"
    if data.get("format") != EXPORT_FORMAT:
        return f"its format is {data.get('format')!r}, not {EXPORT_FORMAT!r}"
    if not isinstance(data.get("events"), list):
        return "it has no list of events"
    return None


def _name(file: Path) -> str:
    return "standard input" if str(file) == "-" else repr(str(file))


def _not_an_export(file: Path, what: str) -> CliError:
    """The error of a file that is not an export: it says how to make one."""
    how = command_line("export", "SESSION", options=("-o", "FILE", "--db", "STORE"))
    return CliError(
        f"{_name(file)} is not an Amber export: {what}. Make one with {quoted(how)} (the store "
        "that holds the session), then import that file.",
        ExitCode.BAD_STORE,
    )


def _damaged(file: Path, what: str) -> CliError:
    """The error of an export that was changed after ``amber export`` wrote it."""
    how = command_line("export", "SESSION", options=("-o", "FILE", "--db", "STORE"))
    return CliError(
        f"{_name(file)} is not a valid Amber export: {what.rstrip('.')}. It was changed after "
        f"'amber export' wrote it: undo the edit, or export the session again with "
        f"{quoted(how)}. Nothing was imported.",
        ExitCode.BAD_STORE,
    )


def _read(file: Path) -> dict[str, Any]:
    """The JSON of ``file`` (``-``: standard input) if it looks like an export."""
    if str(file) == "-":
        raw = sys.stdin.buffer.read()
    elif not file.is_file():
        raise CliError(
            f"No file {str(file)!r} to import; pass an export's path.", ExitCode.NOT_FOUND
        )
    else:
        raw = file.read_bytes()
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise _not_an_export(file, f"it is not JSON ({exc})") from None
    if (what := _not_export_shape(data)) is not None:
        raise _not_an_export(file, what)
    assert isinstance(data, dict)
    return data


def _made_by_us(db: str) -> list[Path]:
    """The files of the SQLite store ``db`` if it does not exist yet (an import that
    fails removes them), else none."""
    if is_postgres_url(db) or Path(db).exists():
        return []
    return [Path(db + suffix) for suffix in ("", "-wal", "-shm", "-journal")]


@click.command("import")
@click.argument("file", type=click.Path(allow_dash=True, path_type=Path))
@click.option(
    "--as",
    "new_id",
    metavar="NEW",
    callback=session_id_option,
    help="Import under this session id instead.",
)
@db_option(create=True)
@json_option
def import_command(file: Path, new_id: str | None, db: str, as_json: bool) -> None:
    """Store a session from an export file (FILE, or - for stdin).

    FILE is what 'amber export' wrote.
    The events are decoded strictly and applied again before anything is
    stored; the store is created if it does not exist (and removed again if the
    import fails).
    """
    data = _read(file)
    if new_id is not None:
        data = _renamed(data, new_id)
    elif not isinstance(data.get("session_id"), str):
        said = "missing" if "session_id" not in data else orjson.dumps(data["session_id"]).decode()
        raise CliError(
            f'{_name(file)} names no session (its "session_id" is {said}); pass --as NEW to '
            "import it as session NEW.",
            ExitCode.USAGE,
        )
    try:
        read_export(data)
    except DecodeError as exc:
        raise _damaged(file, str(exc)) from None
    created = _made_by_us(db)
    try:
        head = _store(data, file, db)
    except BaseException:
        for path in created:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        raise
    source = _source(data)
    if as_json:
        fork = {} if source is None else {"source_session_id": source[0], "source_seq": source[1]}
        emit_json({"session_id": head.session_id, "seq": head.seq, "messages": len(head), **fork})
        return
    what = "" if source is None else f"; a fork of {source[0]} at seq {source[1]}"
    held = f"{counted(head.seq, 'event')}, {counted(len(head), 'message')}"
    stdout_console().print(f"Imported {head.session_id} ({held}) into {db}{what}.")


def _store(data: dict[str, Any], file: Path, db: str) -> SessionState:
    """Import the checked export ``data`` into the store ``db``; its head."""
    with open_store(db, create=True) as store:
        session = data["session_id"]
        if session in store:
            raise CliError(
                f"The store {db!r} already has a session {session!r}; pass --as NEW to import it "
                "under another id.",
                ExitCode.CONFLICT,
            )
        try:
            return store.import_session(data)
        except (EventRejected, InvalidEvent) as exc:
            raise _damaged(file, f"its events do not apply in order: {exc}") from None
