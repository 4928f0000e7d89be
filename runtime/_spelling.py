"""What every provider view shares: the view of its source, the system prompt, and the
spelling of a cached view's prefix, reused from one model call to the next (DESIGN §6)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ._artifacts import ArtifactStore
from ._category import Category, category_of
from ._clean import DEFAULT_MAX_RESULT_CHARS, clean_history
from ._errors import ProjectionError
from ._message import Message
from ._state import SessionState
from ._view import ModelView, ViewMessage, ViewPrefix
from ._window import Window

__all__ = ["Body", "source_view", "spelled", "system_text"]


def source_view(
    name: str,
    source: SessionState | ModelView,
    window: Window | None,
    artifacts: ArtifactStore | None,
    max_result_chars: int | None,
) -> ModelView:
    if isinstance(source, ModelView):
        if (
            window is not None
            or artifacts is not None
            or max_result_chars != DEFAULT_MAX_RESULT_CHARS
        ):
            raise ProjectionError(
                f"{name}() got a ModelView and view options; window, artifacts and "
                "max_result_chars apply when the view is built, so pass them to clean_history() "
                "or pass the state instead of the view."
            )
        return source
    if not isinstance(source, SessionState):
        raise TypeError(
            f"{name}() takes a SessionState or a ModelView (got {source!r} that is a "
            f"{type(source).__name__!r}); pass timeline.head or timeline.at(seq)."
        )
    return clean_history(
        source, window=window, artifacts=artifacts, max_result_chars=max_result_chars
    )


def system_text(name: str, system: str | Message | None) -> str | None:
    if system is None:
        return None
    if isinstance(system, Message):
        if category_of(system) is not Category.SYSTEM_PROMPT:
            raise TypeError(
                f"{name}(system=...) takes the system prompt as a str or a system prompt "
                f"Message (got message {system.id!r}, a {category_of(system).label})."
            )
        system = system.content
    if not isinstance(system, str):
        raise TypeError(
            f"{name}(system=...) takes a str, a system prompt Message or None (got "
            f"{system!r} that is a {type(system).__name__!r})."
        )
    return system if system.strip() else None


Body = Callable[[Sequence[ViewMessage]], list[dict[str, Any]]]
"""Spells view messages as a provider's list (no system prompt, no final touches)."""


def joined(
    head: list[dict[str, Any]], tail: list[dict[str, Any]], merge: bool
) -> list[dict[str, Any]]:
    """``head`` then ``tail`` as one list, merging the entries where they meet if ``merge``
    and they have one role (what ``_merge`` does within one spelling); ``head``'s entries
    are not changed."""
    if merge and head and tail and head[-1]["role"] == tail[0]["role"]:
        last, first = head[-1], tail[0]
        key = next(k for k in last if k != "role")
        return [*head[:-1], {**last, key: last[key] + first[key]}, *tail[1:]]
    return head + tail


def extends(messages: Sequence[ViewMessage], count: int) -> bool:
    """Whether spelling ``messages[:count]`` and ``messages[count:]`` apart and joining them
    gives the spelling of all of them: no run of one role crosses ``count``."""
    return 0 < count < len(messages) and messages[count - 1].role is not messages[count].role


def prefix_spelled(prefix: ViewPrefix, key: str, body: Body, merge: bool) -> list[dict[str, Any]]:
    found = prefix.spelled.get(key)
    if found is None:
        parent = prefix.parent
        done = None if parent is None else parent.spelled.get(key)
        count = 0 if parent is None else len(parent.messages)
        if done is not None and extends(prefix.messages, count):
            found = joined(done, body(prefix.messages[count:]), merge)
        else:
            found = body(prefix.messages)
        prefix.spelled[key] = found
    return found


def spelled(view: ModelView, key: str, body: Body, merge: bool) -> list[dict[str, Any]]:
    """``body(view.messages)``, reusing what was spelled of the view's prefix (a new list;
    entries of the prefix are shared with it)."""
    prefix = view.prefix
    messages = view.messages
    if prefix is None:
        return body(messages)
    count = len(prefix.messages)
    if count == len(messages):
        return list(prefix_spelled(prefix, key, body, merge))
    if not extends(messages, count):
        return body(messages)
    return joined(prefix_spelled(prefix, key, body, merge), body(messages[count:]), merge)
