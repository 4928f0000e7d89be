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

__all__ = ["PROVIDERS", "VIEWS", "view_data"]

VIEWS = ("state", "history", "clean", "openai", "openai-responses", "anthropic", "gemini")
"""What ``--view`` takes."""
PROVIDERS = ("openai", "openai-responses", "anthropic", "gemini")
"""The views that are provider requests (JSON)."""


def view_data(view: str, state: SessionState) -> Any:
    """The view of ``state`` as JSON-ready data."""
    if view == "state":
        return to_data(state)
    from runtime import (
        clean_history,
        session_history,
        to_anthropic,
        to_gemini,
        to_openai,
        to_openai_responses,
    )

    if view == "history":
        return [to_data(m) for m in session_history(state)]
    if view == "clean":
        return _model_view_data(clean_history(state))
    if view == "openai":
        return to_openai(state)
    if view == "openai-responses":
        return to_openai_responses(state, reasoning=True)
    if view == "anthropic":
        return to_anthropic(state)
    if view == "gemini":
        return to_gemini(state)
    raise InvalidConfig(f"unknown view {view!r}; expected one of {VIEWS}")


def _model_view_data(view: ModelView) -> dict[str, Any]:
    return {
        "session_id": view.session_id,
        "seq": view.seq,
        "messages": [attrs.asdict(message, recurse=True) for message in view.messages],
        "truncated": view.truncated,
        "tokens": view.tokens,
        "prefix": None if view.prefix is None else attrs.asdict(view.prefix, recurse=True),
    }
