"""What ``amber show --view`` prints as JSON: the view names and ``view_data``.

Apart from ``_views`` (which prints the views for people, with rich) so that
``amber show --json`` loads neither rich nor the tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from runtime import SessionState, to_data

from .._errors import InvalidConfig

if TYPE_CHECKING:
    from runtime import ModelView

__all__ = ["PROVIDERS", "VIEWS", "message_view", "message_view_data", "view_data"]

VIEWS = ("state", "history", "clean", "openai", "openai-responses", "anthropic", "gemini")
"""What ``--view`` takes."""
PROVIDERS = ("openai", "openai-responses", "anthropic", "gemini")
"""The views that are provider requests (JSON)."""


def view_data(view: str, state: SessionState) -> Any:
    """The view of ``state`` as JSON-ready data."""
    if view == "state":
        return to_data(state)
    from runtime import clean_history, session_history

    if view == "history":
        return [to_data(m) for m in session_history(state)]
    if view == "clean":
        return _model_view_data(clean_history(state))
    return _provider_data(view, state)


def _provider_data(view: str, source: SessionState | ModelView) -> Any:
    """The provider view ``view`` of a state or of a model's view built already."""
    from runtime import to_anthropic, to_gemini, to_openai, to_openai_responses

    if view == "openai":
        return to_openai(source)
    if view == "openai-responses":
        return to_openai_responses(source, reasoning=True)
    if view == "anthropic":
        return to_anthropic(source)
    if view == "gemini":
        return to_gemini(source)
    raise InvalidConfig(f"unknown view {view!r}; expected one of {VIEWS}")


def message_view(state: SessionState, message_id: str) -> ModelView:
    """What the model's view of ``state`` (``clean_history``) holds of message
    ``message_id``, as a view of its own: the view messages made from it (with the other
    stored messages of the same model response, which make one view message) and the
    results the view made up for its tool call; empty when the view leaves it out.

    Spelled for a provider, it is that message's part of the request, spelled alone (in the
    whole request Anthropic and Gemini merge it with neighbours of the same role)."""
    from runtime import ModelView, ToolResultPart, ViewRole, clean_history

    message = state.get(message_id)
    call_id = None if message is None or message.tool_call is None else message.tool_call.id
    picked = []
    for view_message in clean_history(state).messages:
        source = view_message.source_id
        if source == message_id or message_id in view_message.source_ids:
            picked.append(view_message)
        elif source is None and call_id is not None and view_message.role is ViewRole.TOOL:
            result = view_message.parts[0]
            if isinstance(result, ToolResultPart) and result.call_id == call_id:
                picked.append(view_message)  # the result synthesized for its call
    return ModelView(session_id=state.session_id, seq=state.seq, messages=tuple(picked))


def message_view_data(view: str, part: ModelView) -> Any:
    """``view`` (``clean`` or a provider's) of ``part`` (``message_view``'s) as JSON-ready
    data."""
    if view == "clean":
        return _model_view_data(part)
    return _provider_data(view, part)


def _model_view_data(view: ModelView) -> dict[str, Any]:
    return {
        "session_id": view.session_id,
        "seq": view.seq,
        "messages": [attrs.asdict(message, recurse=True) for message in view.messages],
        "truncated": view.truncated,
        "tokens": view.tokens,
        "prefix": None if view.prefix is None else attrs.asdict(view.prefix, recurse=True),
    }
