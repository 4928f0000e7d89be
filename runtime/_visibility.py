"""Channel visibility: what each kind of channel shows of each message category.

Seed 000 §5.3 as data an adapter consults before it sends (or absorbs) a
message. Three kinds of channel:

- **CLI**: a terminal shows everything, intermediates in colored panels
  (thought cyan, tool call yellow, tool result magenta).
- **Live** (Discord, Google Chat): thoughts and tool calls become a status
  line (or a collapsed card) the adapter edits in place; a tool result does
  not post anything new, it edits its call's line to ✅ or ❌.
- **Silent** (WeChat-like, no in-place edits): intermediates are absorbed,
  marked delivered without being sent.

Where seed 000 contradicts itself (its category table hides background alerts
and nudges from users, its channel table shows "system interaction logs" on
every channel but WeChat) this table follows DESIGN §6: the CLI shows
everything, the other channels hide alerts and nudges. Inputs are ``shown``
because the person posted them on the channel; adapters never send or
deliver them. The system prompt is never stored, so no adapter receives one;
the CLI may print it in a debug view.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType

import attrs

from ._article import type_named
from ._category import Category, category_of
from ._errors import ProjectionError
from ._message import Message

__all__ = [
    "CHANNEL_RULES",
    "ChannelKind",
    "ChannelRule",
    "Presentation",
    "Visibility",
    "channel_rule",
    "visibility",
]


class ChannelKind(enum.StrEnum):
    """How a channel can render messages."""

    CLI = "cli"
    """A terminal: everything, intermediates in colored panels."""
    LIVE = "live"
    """A chat that edits messages in place (Discord, Google Chat): live status lines."""
    SILENT = "silent"
    """A chat without in-place edits (WeChat): only inputs and final text."""


class Visibility(enum.StrEnum):
    """Whether a channel shows a message."""

    SHOWN = "shown"
    """Displayed; an adapter that sends an outbound message marks it delivered."""
    HIDDEN = "hidden"
    """Never displayed, and the adapter leaves its status alone."""
    ABSORBED = "absorbed"
    """Not displayed, but the adapter marks it delivered as if it had been."""


class Presentation(enum.StrEnum):
    """How a shown message is drawn."""

    MESSAGE = "message"
    """An ordinary chat message (rich text in a terminal)."""
    PANEL = "panel"
    """A colored terminal panel (``ChannelRule.color``)."""
    STATUS_LINE = "status_line"
    """A live line or collapsed card the adapter edits in place (⏳ while running)."""
    STATUS_EDIT = "status_edit"
    """Nothing new: edits the status line of the tool call it answers (✅ or ❌)."""
    NONE = "none"
    """Not drawn (hidden or absorbed)."""


@attrs.frozen(kw_only=True)
class ChannelRule:
    """What one kind of channel does with one category of message."""

    visibility: Visibility
    """Shown, hidden or absorbed."""
    presentation: Presentation
    """How it is drawn when shown."""
    color: str | None = None
    """Panel color, for ``Presentation.PANEL``."""


def _rule(
    visibility: Visibility, presentation: Presentation, color: str | None = None
) -> ChannelRule:
    return ChannelRule(visibility=visibility, presentation=presentation, color=color)


_MESSAGE = _rule(Visibility.SHOWN, Presentation.MESSAGE)
_HIDDEN = _rule(Visibility.HIDDEN, Presentation.NONE)
_ABSORBED = _rule(Visibility.ABSORBED, Presentation.NONE)
_INPUTS_AND_TEXT = {
    Category.USER_QUESTION: _MESSAGE,
    Category.CRON_PROMPT: _MESSAGE,
    Category.COMPACTION_REQUEST: _MESSAGE,
    Category.REPLY: _MESSAGE,
    Category.NOTIFICATION: _MESSAGE,
    Category.CRASH_NOTICE: _MESSAGE,
}

CHANNEL_RULES: Mapping[ChannelKind, Mapping[Category, ChannelRule]] = MappingProxyType(
    {
        ChannelKind.CLI: MappingProxyType(
            {
                **_INPUTS_AND_TEXT,
                Category.THOUGHT: _rule(Visibility.SHOWN, Presentation.PANEL, "cyan"),
                Category.TOOL_CALL: _rule(Visibility.SHOWN, Presentation.PANEL, "yellow"),
                Category.TOOL_RESULT: _rule(Visibility.SHOWN, Presentation.PANEL, "magenta"),
                Category.BACKGROUND_ALERT: _rule(Visibility.SHOWN, Presentation.PANEL, "dim"),
                Category.NUDGE: _rule(Visibility.SHOWN, Presentation.PANEL, "dim"),
                Category.SYSTEM_PROMPT: _rule(Visibility.SHOWN, Presentation.PANEL, "dim"),
            }
        ),
        ChannelKind.LIVE: MappingProxyType(
            {
                **_INPUTS_AND_TEXT,
                Category.THOUGHT: _rule(Visibility.SHOWN, Presentation.STATUS_LINE),
                Category.TOOL_CALL: _rule(Visibility.SHOWN, Presentation.STATUS_LINE),
                Category.TOOL_RESULT: _rule(Visibility.SHOWN, Presentation.STATUS_EDIT),
                Category.BACKGROUND_ALERT: _HIDDEN,
                Category.NUDGE: _HIDDEN,
                Category.SYSTEM_PROMPT: _HIDDEN,
            }
        ),
        ChannelKind.SILENT: MappingProxyType(
            {
                **_INPUTS_AND_TEXT,
                Category.THOUGHT: _ABSORBED,
                Category.TOOL_CALL: _ABSORBED,
                Category.TOOL_RESULT: _ABSORBED,
                Category.BACKGROUND_ALERT: _HIDDEN,
                Category.NUDGE: _HIDDEN,
                Category.SYSTEM_PROMPT: _HIDDEN,
            }
        ),
    }
)
"""The rule for every (channel kind, category) pair."""


def channel_rule(kind: ChannelKind | str, what: Category | Message) -> ChannelRule:
    """The rule a channel of ``kind`` applies to a message (or a category).

    Raises:
        ProjectionError: ``kind`` is not a channel kind.
        TypeError: ``what`` is neither a ``Category`` nor a ``Message``.
    """
    try:
        channel = ChannelKind(kind)
    except ValueError:
        allowed = ", ".join(repr(k.value) for k in ChannelKind)
        raise ProjectionError(
            f"Channel kind must be one of {allowed} (got {kind!r}); a Discord-like channel that "
            "edits messages in place is 'live', a WeChat-like one is 'silent'."
        ) from None
    if isinstance(what, Message):
        what = category_of(what)
    if not isinstance(what, Category):
        raise TypeError(
            f"channel_rule() takes a Category or a Message (got {what!r} that is "
            f"{type_named(what)})."
        )
    return CHANNEL_RULES[channel][what]


def visibility(kind: ChannelKind | str, what: Category | Message) -> Visibility:
    """Whether a channel of ``kind`` shows, hides or absorbs a message (or a category).

    Raises:
        ProjectionError: ``kind`` is not a channel kind.
        TypeError: ``what`` is neither a ``Category`` nor a ``Message``.
    """
    return channel_rule(kind, what).visibility
