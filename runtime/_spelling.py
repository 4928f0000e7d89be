"""What every provider view shares: the view of its source, the system prompt, and the
spelling of a cached view's prefix, reused from one model call to the next (DESIGN §6)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ._article import type_named
from ._artifacts import ArtifactStore
from ._category import Category, category_of
from ._clean import DEFAULT_MAX_RESULT_CHARS, clean_history
from ._compact import first_role, prefix_last_role
from ._compact_spell import spell
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
            f"{name}() takes a SessionState or a ModelView (got {source!r} that is "
            f"{type_named(source)}); pass timeline.head or timeline.at(seq)."
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
            f"{system!r} that is {type_named(system)})."
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


def prefix_spelled(prefix: ViewPrefix, key: str, body: Body, merge: bool) -> list[dict[str, Any]]:
    found = prefix.spelled.get(key)
    if found is None:
        limit = prefix.max_result_chars
        parent = prefix.parent
        done = None if parent is None else parent.spelled.get(key)
        if parent is not None and done is not None:
            own = prefix.own()
            last = prefix_last_role(parent)
            first = first_role(own)
            if first is None:
                found = done
            elif last is not None and last is not first:  # no run of one role crosses
                found = joined(done, spell(own, limit, False, key, body), merge)
        if found is None:
            found = spell(prefix.segments, limit, prefix.note, key, body)
        prefix.spelled[key] = found
    return found


def spelled(view: ModelView, key: str, body: Body, merge: bool) -> list[dict[str, Any]]:
    """``body(view.messages)``, reusing what was spelled of the view's prefix (a new list;
    entries of the prefix are shared with it)."""
    prefix = view.prefix
    if prefix is None:
        return body(view.messages)
    head = prefix_spelled(prefix, key, body, merge)
    tail = view.tail()
    if not tail:
        return list(head)
    last = prefix_last_role(prefix)
    if last is None or last is tail[0].role:  # a run of one role crosses the prefix's end
        segments = (*prefix.segments, tail)
        return spell(segments, prefix.max_result_chars, prefix.note, key, body)
    return joined(head, body(tail), merge)
