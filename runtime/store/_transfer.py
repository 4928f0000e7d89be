"""Exporting a session as JSON and reading such an export back.

An export is the session's whole event log, which is all a session is; the
states (and snapshots) are rebuilt from it on import::

    {"format": "amber.session", "version": 1, "session_id": "s1", "seq": 3,
     "events": [{"kind": "message_added", "session_id": "s1", "seq": 1, ...}, ...]}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from .._codec import from_data, to_data
from .._errors import DecodeError
from .._events import Event

__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "export_data", "parse_export", "read_export"]

EXPORT_FORMAT = "amber.session"
"""The ``format`` tag of a session export."""
EXPORT_VERSION = 1
"""The export layout this Amber writes (and the newest it reads)."""
_KEYS = frozenset({"format", "version", "session_id", "seq", "events"})


def export_data(session_id: str, events: Sequence[Event]) -> dict[str, Any]:
    """A session's export: its id, its last seq and its events as plain data."""
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "session_id": session_id,
        "seq": len(events),
        "events": [_exported(event) for event in events],
    }


def _exported(event: Event) -> dict[str, Any]:
    """``to_data(event)`` without fields newer than the export format that hold their
    default: an Amber from before them reads the export (its decoder refuses unknown keys)."""
    data: dict[str, Any] = to_data(event)
    kind = data.get("kind")
    if kind == "turn_ended" and data.get("notice", 0) is None:
        del data["notice"]  # TurnEnded.notice: only a failed turn's end of this Amber has one
    elif kind == "orphan_recovered" and data.get("calls_interrupted") is False:
        del data["calls_interrupted"]  # OrphanRecovered.calls_interrupted: False before it
    return data


def _fail(problem: str) -> DecodeError:
    return DecodeError(
        f"Cannot import session: {problem}. Pass what export_session() returned "
        "(a dict, or its JSON text)."
    )


def parse_export(data: Mapping[str, Any] | str | bytes) -> tuple[str, list[Event]]:
    """Read an export back: its session id and its events, checked.

    Raises:
        DecodeError: not an export, a newer export version, an event that
            does not decode, or events that are not the session's seq 1 to n
            in order. The message names the event by position and seq.
    """
    try:
        return read_export(data)
    except DecodeError as exc:
        raise _fail(str(exc)) from None


def read_export(data: Mapping[str, Any] | str | bytes) -> tuple[str, list[Event]]:
    """``parse_export`` for a caller that words the error itself (``amber import`` names
    the file): the ``DecodeError``'s message is only what is wrong (``seq is '3' but the
    export holds 46 events``)."""
    if isinstance(data, (str, bytes)):
        try:
            data = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise DecodeError(f"the text is not JSON ({exc})") from None
    if not isinstance(data, Mapping):
        raise DecodeError(f"expected an object, got {type(data).__name__} {data!r:.60}")
    if data.get("format") != EXPORT_FORMAT:
        raise DecodeError(f"expected format {EXPORT_FORMAT!r}, got {data.get('format')!r}")
    version = data.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise DecodeError(f"expected an integer version, got {version!r}")
    if version > EXPORT_VERSION:
        raise DecodeError(
            f"the export has version {version}, newer than this Amber reads ({EXPORT_VERSION}); "
            "upgrade amber to import it"
        )
    keys = set(data)
    if keys != _KEYS:
        missing, extra = sorted(_KEYS - keys), sorted(keys - _KEYS)
        raise DecodeError(f"expected the keys {sorted(_KEYS)} (missing {missing}, unknown {extra})")
    session_id, seq, raw_events = data["session_id"], data["seq"], data["events"]
    if not isinstance(session_id, str) or not session_id:
        raise DecodeError(f"expected a non-empty session_id, got {session_id!r}")
    if not isinstance(raw_events, list) or not raw_events:
        raise DecodeError(f"expected a non-empty list of events, got {raw_events!r:.60}")
    if isinstance(seq, bool) or seq != len(raw_events):
        raise DecodeError(f"seq is {seq!r} but the export holds {len(raw_events)} events")
    events: list[Event] = []
    for position, raw in enumerate(raw_events):
        try:
            event = from_data(raw, Event)
        except DecodeError as exc:
            raise DecodeError(
                f"event [{position}] (seq {position + 1}) does not decode: {str(exc).rstrip('.')}"
            ) from None
        if event.session_id != session_id or event.seq != position + 1:
            raise DecodeError(
                f"event [{position}] should be session {session_id!r} seq {position + 1}, "
                f"but it is session {event.session_id!r} seq {event.seq}"
            )
        events.append(event)
    return session_id, events
