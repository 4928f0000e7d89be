"""Exact request replay: the payload a model call sent, rebuilt from its audit row (pure).

A provider model reports what it sent (``RequestSent``); the turn machine
stores that with what it built the request from (``RequestRecord``: the
seq of the view's state, the view options, the system prompt and the tool
schemas by digest). ``rebuild_request`` walks back: the state at
``view_seq``, ``clean_history`` with the recorded options, the system prompt
and tools from the session's rows, ``build_payload`` — then compares the
digest with the one recorded, so a rebuilt request is either the one sent
or says that it is not (``RebuiltRequest.exact``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs
import orjson

from ._article import type_named
from ._artifacts import ArtifactStore
from ._audit import AuditRow
from ._clean import clean_history
from ._errors import ProjectionError, SeqOutOfRange
from ._json import thaw
from ._payloads import EARLIER_BUILDERS, PAYLOAD_BUILDERS, PayloadBuilder
from ._request import RequestRecord, digest, tools_json, tools_text
from ._state import SessionState
from ._view import ModelView
from ._window import Window, approx_tokens

__all__ = [
    "RebuiltRequest",
    "find_call",
    "rebuild_request",
    "request_blobs",
    "request_record",
    "stored_digests",
    "views_of",
    "window_json",
]


def window_json(window: Window | None) -> dict[str, Any] | None:
    """A ``Window``'s budgets as JSON (its token counter by name), or None for no window."""
    if window is None:
        return None
    counter = window.count_tokens
    name = (
        "approx_tokens"
        if counter is approx_tokens
        else f"{getattr(counter, '__module__', '?')}.{getattr(counter, '__qualname__', '?')}"
    )
    return {
        "max_tokens": window.max_tokens,
        "max_messages": window.max_messages,
        "message_tokens": window.message_tokens,
        "image_tokens": window.image_tokens,
        "count_tokens": name,
    }


def request_record(
    *,
    view: ModelView,
    window: Window | None,
    max_result_chars: int | None,
    system: str | None,
    tools: Iterable[Any],
    provider: str,
    model: str,
    params: Mapping[str, Any],
    payload_digest: str,
    base_url: str | None = None,
    known_digests: frozenset[str] | set[str] = frozenset(),
) -> RequestRecord:
    """The record of one request, its system prompt and tools inline unless already known.

    Args:
        view: the view the request was built from.
        window, max_result_chars: the options it was built with.
        system, tools: the system prompt and tool specs sent.
        provider, model, params, payload_digest, base_url: what the model
            reported (``RequestSent``).
        known_digests: digests the session has stored already (they are not
            stored again).
    """
    schemas = tools_json(tools)
    text = tools_text(tools) if schemas else None
    system_digest = digest(system) if system is not None else None
    tools_digest = digest(text) if text is not None else None
    return RequestRecord(
        provider=provider,
        model=model,
        view_seq=view.seq,
        payload_digest=payload_digest,
        params=params,
        system_digest=system_digest,
        tools_digest=tools_digest,
        window=window_json(window) or {},
        max_result_chars=max_result_chars,
        base_url=base_url,
        system=system if system_digest is not None and system_digest not in known_digests else None,
        tools=text if tools_digest is not None and tools_digest not in known_digests else None,
    )


def stored_digests(rows: Iterable[AuditRow]) -> set[str]:
    """Digests of the system prompts and tool schemas ``rows`` store inline."""
    return set(request_blobs(rows))


def request_blobs(rows: Iterable[AuditRow]) -> dict[str, Any]:
    """Digest -> the system prompt or tool schemas stored inline in ``rows``."""
    blobs: dict[str, Any] = {}
    for row in rows:
        record = row.request
        if record is None:
            continue
        if record.system is not None and record.system_digest is not None:
            blobs.setdefault(record.system_digest, record.system)
        if record.tools is not None and record.tools_digest is not None:
            blobs.setdefault(record.tools_digest, orjson.loads(record.tools))
    return blobs


@attrs.frozen(kw_only=True)
class RebuiltRequest:
    """A model call's request, rebuilt."""

    row: AuditRow
    """The call's audit row."""
    record: RequestRecord
    """What the request was built from."""
    view: ModelView
    """The model's view it was built from."""
    system: str | None
    """The system prompt."""
    tools: tuple[Mapping[str, Any], ...]
    """The tool schemas (``tools_json``)."""
    payload: dict[str, Any]
    """The SDK arguments, as the model passed them."""
    digest: str
    """The digest of ``payload``."""

    @property
    def exact(self) -> bool:
        """True when ``payload`` is the one sent (its digest is the recorded one)."""
        return self.digest == self.record.payload_digest


def find_call(state: SessionState, call: int | str) -> AuditRow:
    """The audit row of model call ``call``: its sequence number (1, 2 …), source key or
    operation id.

    Raises:
        ProjectionError: no such call (the message lists what there is).
        TypeError: ``call`` is neither an int nor a str (a bool is not a number here, as
            in ``Timeline.at``: ``True == 1`` would pick call #1).
    """
    if isinstance(call, bool) or not isinstance(call, int | str):
        raise TypeError(
            "call must be an int (its number), a str (its source key or operation id) or an "
            f"AuditRow (got {call!r} that is {type_named(call)})."
        )
    rows = state.model_calls()
    for row in rows:
        if call == row.sequence or call in (row.source_key, row.operation_id):
            return row
    if not rows:
        raise ProjectionError(f"Session {state.session_id!r} has no model call yet.")
    raise ProjectionError(
        f"Session {state.session_id!r} has no model call {call!r}; its calls are #1 to "
        f"#{len(rows)} (or name one by its source key or operation id)."
    )


def _window(record: RequestRecord, window: Window | None) -> Window | None:
    recorded = record.window
    if not recorded:
        return None
    data = thaw(recorded)
    assert isinstance(data, dict)
    if window is not None:
        return window
    if data.get("count_tokens") != "approx_tokens":
        raise ProjectionError(
            f"Model call {record.model!r} at seq {record.view_seq} counted tokens with "
            f"{data.get('count_tokens')!r}; pass the same Window (window=...) to rebuild it."
        )
    return Window(
        max_tokens=data.get("max_tokens"),
        max_messages=data.get("max_messages"),
        message_tokens=data.get("message_tokens", 4),
        image_tokens=data.get("image_tokens", 1_600),
    )


def rebuild_request(
    states: Any,
    call: int | str | AuditRow,
    *,
    artifacts: ArtifactStore | None = None,
    window: Window | None = None,
    builders: Mapping[str, PayloadBuilder] | None = None,
) -> RebuiltRequest:
    """The exact payload model call ``call`` sent, rebuilt from the session's states.

    Args:
        states: a ``Timeline`` (or anything with ``head`` and ``at(seq)``)
            holding the state the call's view was built from.
        call: the call's sequence number, source key, operation id, or row (a bool
            is refused: TypeError, as ``Timeline.at`` refuses it).
        artifacts: where current-turn images are read from, if the view had any.
        window: the ``Window`` the view was built with, needed only when it
            used a custom token counter.
        builders: payload builders for custom providers, by name (Amber's
            own are used for ``openai``, ``openai-responses``, ``anthropic``
            and ``gemini``; a request recorded before a change of one of them
            is rebuilt as it was spelled then, where the change is known:
            ``EARLIER_BUILDERS``).

    Raises:
        ProjectionError: the call recorded no request (a model that does not
            report one, like ``ScriptedModel``), its state is not in
            ``states`` (a timeline loaded from a later snapshot), its system
            prompt or tools are not stored, or no builder knows its provider.
        MissingArtifact: a current-turn image cannot be loaded.
        TypeError: ``call`` is not an int, a str or an ``AuditRow``.
    """
    head: SessionState = states.head
    row = call if isinstance(call, AuditRow) else find_call(head, call)
    record = row.request
    if record is None:
        raise ProjectionError(
            f"Model call #{row.sequence} ({row.operation_id}) recorded no request: its model "
            f"({row.model or 'unknown'}) does not report what it sent, so it cannot be rebuilt."
        )
    try:
        state = states.at(record.view_seq)
    except SeqOutOfRange:
        raise ProjectionError(
            f"Model call #{row.sequence} was built from seq {record.view_seq}, which these "
            "states do not hold (a timeline loaded from a later snapshot); load the whole log."
        ) from None
    blobs = request_blobs(head.audit.values())
    system = _blob(blobs, record.system_digest, "system prompt", row)
    tools = _blob(blobs, record.tools_digest, "tool schemas", row) or []
    view = clean_history(
        state,
        window=_window(record, window),
        artifacts=artifacts,
        max_result_chars=record.max_result_chars,
    )
    known = dict(PAYLOAD_BUILDERS)
    known.update(builders or {})
    builder = known.get(record.provider)
    if builder is None:
        raise ProjectionError(
            f"Model call #{row.sequence} went to provider {record.provider!r}, which no payload "
            f"builder knows (known: {sorted(known)}); pass builders={{{record.provider!r}: ...}}."
        )
    params = thaw(record.params)
    payload = builder(view, model=record.model, system=system, tools=tools, params=params)
    if digest(payload) != record.payload_digest and record.provider not in (builders or {}):
        for earlier in EARLIER_BUILDERS.get(record.provider, ()):
            spelled = earlier(view, model=record.model, system=system, tools=tools, params=params)
            if digest(spelled) == record.payload_digest:
                payload = spelled  # recorded before a change of the builder: as it was sent
                break
    return RebuiltRequest(
        row=row,
        record=record,
        view=view,
        system=system,
        tools=tuple(tools),
        payload=payload,
        digest=digest(payload),
    )


def _blob(blobs: dict[str, Any], key: str | None, what: str, row: AuditRow) -> Any:
    if key is None:
        return None
    if key not in blobs:
        raise ProjectionError(
            f"Model call #{row.sequence} used the {what} {key}, which no model call of the "
            "session stored; the row that first used it is missing (a truncated log?)."
        )
    return blobs[key]


def views_of(state: SessionState, seq: int) -> tuple[AuditRow, ...]:
    """The model calls whose request was built from the state at ``seq``."""
    return tuple(
        row
        for row in state.model_calls()
        if row.request is not None and row.request.view_seq == seq
    )
