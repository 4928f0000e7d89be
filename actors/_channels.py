"""Reference chat-channel adapters: a live-render one and a silent one.

``LiveChannelAdapter`` draws a turn the way seed 000 §6.1 shows it on
Discord: a 💭 line for a thought, a ``⏳ 🛠️ tool(args)`` line for a tool call
that is edited in place to ✅ or ❌ when its result arrives (⏹ when the turn
is interrupted first), then the reply with a header of turn metrics.

``SilentChannelAdapter`` is the WeChat-like channel: no in-place edits, so
thoughts and tool traffic are absorbed (reported delivered, never sent), and
only replies, notifications and crash notices are posted, split into chunks
the platform accepts. A reply an interrupt cut short is absorbed too (a sent
message cannot be recalled; the turn that follows answers every input).

Both send through a ``ChatPlatform`` (``FakePlatform`` in tests), keyed by
each message's ``channel_id``. Which messages reach ``render`` is the
``Adapter`` base class's business (``runtime.channel_rule``).
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterable
from typing import Any

from runtime import (
    INTERRUPTED_MARK,
    Category,
    ChannelKind,
    Message,
    Presentation,
    Status,
    Update,
    canonical,
)
from runtime._article import article, type_named

from ._adapter import Adapter
from ._errors import InvalidConfig
from ._metrics import format_turn_metrics
from ._platform import ChatPlatform

__all__ = [
    "LiveChannelAdapter",
    "SilentChannelAdapter",
    "clip",
    "format_turn_metrics",
    "split_text",
]

_TEXT_OUT = frozenset({Category.REPLY, Category.NOTIFICATION, Category.CRASH_NOTICE})
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_MAX_OPEN_CALLS = 4096
"""Status lines remembered per adapter; older ones can no longer be edited."""


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, ending in ``…`` when cut."""
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + "…"


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _pack(units: list[str], separator: str, limit: int) -> list[str]:
    """Join ``units`` with ``separator`` greedily into chunks of at most ``limit``."""
    chunks: list[str] = []
    current = ""
    for unit in units:
        joined = f"{current}{separator}{unit}" if current else unit
        if len(joined) <= limit:
            current = joined
        else:
            if current:
                chunks.append(current)
            current = unit
    if current:
        chunks.append(current)
    return chunks


def _split_paragraph(paragraph: str, limit: int) -> list[str]:
    """A paragraph longer than ``limit`` split on line breaks; a long line cut hard."""
    units: list[str] = []
    for line in paragraph.split("\n"):
        units.extend(line[i : i + limit] for i in range(0, len(line), limit))
    return _pack([u for u in units if u.strip()], "\n", limit)


def split_text(text: str, limit: int = 2000) -> list[str]:
    """Split ``text`` into chunks of at most ``limit`` characters for a chat platform.

    Paragraphs (blank-line separated) are kept whole when they fit, else split
    on line breaks, and a line longer than ``limit`` is cut hard. Blank lines
    and trailing spaces around paragraphs are dropped (indentation is kept);
    whitespace-only text gives no chunks.

    Raises:
        ValueError: ``limit`` is less than 1.
    """
    if limit < 1:
        raise InvalidConfig(f"split_text() needs a limit of at least 1 character (got {limit!r}).")
    units: list[str] = []
    for paragraph in _PARAGRAPH_BREAK.split(text):
        paragraph = paragraph.strip("\n").rstrip()
        if not paragraph.strip():
            continue
        if len(paragraph) <= limit:
            units.append(paragraph)
        else:
            units.extend(_split_paragraph(paragraph, limit))
    return _pack(units, "\n\n", limit)


def _interrupted(message: Message) -> bool:
    return message.metadata.get(INTERRUPTED_MARK) is True


def _outbound_text(message: Message, header: str = "") -> str:
    text = message.content.strip()
    if header:
        text = f"{header}\n{text}" if text else header
    if _interrupted(message):
        text = f"{text}\n(interrupted)" if text else "(interrupted)"
    return text


def _tool_label(message: Message, limit: int) -> str:
    call = message.tool_call
    assert call is not None
    arguments = json.dumps(canonical(call.arguments), ensure_ascii=False, separators=(",", ":"))
    return f"🛠️ {call.name}({clip(arguments, limit)})"


def _check_limit(max_chars: object) -> int:
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
        raise InvalidConfig(
            f"max_chars must be a positive int, the platform's message size limit "
            f"(got {max_chars!r})."
        )
    return max_chars


_SIGNATURES = {"send": "send(channel_id, text) -> message id", "edit": "edit(message_id, text)"}


def _check_client(adapter: type[_ChatAdapter], client: object) -> ChatPlatform:
    """``client`` if it has every method ``adapter`` calls (else a message that fails in
    ``render`` stays pending for good: refuse it when the adapter starts)."""
    needs = adapter.needs
    for name in needs:
        if not callable(getattr(client, name, None)):
            methods = " and ".join(_SIGNATURES[n] for n in needs)
            methods = f"{methods} methods" if len(needs) > 1 else f"{article(methods)} method"
            raise InvalidConfig(
                f"{adapter.__name__} needs a client with {methods} (a ChatPlatform); got "
                f"{client!r} that is {type_named(client)}, which has no {name} method."
            )
        if inspect.iscoroutinefunction(getattr(client, name)):
            raise InvalidConfig(
                f"{adapter.__name__} calls the client's {name} in its own thread, where the "
                f"coroutine of an async method would never run (got "
                f"{type(client).__name__}.{name}, an async method). Give it a plain method "
                "that runs the coroutine on your loop and waits: "
                "asyncio.run_coroutine_threadsafe(coro, loop).result()."
            )
    return client  # type: ignore[return-value]


def _takes_key(send: object) -> bool:
    """True when ``send`` accepts the keyword ``idempotency_key`` (by name, or ``**kwargs``)."""
    try:
        parameters = inspect.signature(send).parameters.values()  # type: ignore[arg-type]
    except (TypeError, ValueError):  # a builtin without a signature: call it plainly
        return False
    for parameter in parameters:
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            return True
        if parameter.name == "idempotency_key" and parameter.kind in (
            inspect.Parameter.KEYWORD_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        ):
            return True
    return False


def _message_key(session_id: str, message_id: str) -> str:
    """The idempotency key of a message posted for ``session_id``: ``session/id``. A message
    id is unique within its session only (a fork's inherited messages keep their source's
    ids, and two sessions' tags may collide), so the key names the session too."""
    return f"{session_id}/{message_id}"


def _chunk_key(session_id: str, message_id: str, index: int, count: int) -> str:
    """The idempotency key of chunk ``index`` (from 0) of ``count`` posted for a message:
    ``session/id`` when it is posted whole, else ``session/id/1``, ``session/id/2`` …"""
    key = _message_key(session_id, message_id)
    return key if count == 1 else f"{key}/{index + 1}"


class _ChatAdapter(Adapter):
    """What both reference chat adapters share: a platform client and chunked sends."""

    def __init__(
        self,
        client: ChatPlatform,
        *,
        platform: str,
        max_chars: int,
        sessions: Iterable[str] | None = None,
        channels: Iterable[str] | None = None,
    ) -> None:
        super().__init__(platform=platform, sessions=sessions, channels=channels)
        self.client = _check_client(type(self), client)
        self.max_chars = _check_limit(max_chars)
        self._keyed = _takes_key(self.client.send)

    needs: tuple[str, ...] = ("send",)
    """The client methods it calls (checked when it is made)."""

    def post(self, channel_id: str, text: str, key: str) -> str:
        """Post ``text`` on ``channel_id`` with idempotency key ``key`` (if the client's
        ``send`` takes one); return the platform's message id."""
        if self._keyed:
            send: Any = self.client.send
            return str(send(channel_id, text, idempotency_key=key))
        return self.client.send(channel_id, text)

    def send_text(self, session_id: str, message: Message, text: str) -> list[str]:
        """Post ``text`` on ``message``'s channel in chunks for ``session_id`` (the session
        delivering it); return their platform ids.

        A failure part-way leaves the chunks already posted; the message stays
        undelivered, so a retry posts the whole text again (with the same keys: see
        ``_chunk_key``).
        """
        chunks = split_text(text, self.max_chars)
        return [
            self.post(
                message.channel_id, chunk, _chunk_key(session_id, message.id, index, len(chunks))
            )
            for index, chunk in enumerate(chunks)
        ]


class LiveChannelAdapter(_ChatAdapter):
    """A Discord-like channel: live status lines for thoughts and tools, edited in place.

    Args:
        client: the chat platform it posts to (a ``FakePlatform`` in tests).
        platform: the ``chatbot_id`` it serves (default ``discord``).
        max_chars: the platform's message size; longer replies are split.
        label_chars: how much of a thought or of a call's arguments a status
            line shows.
    """

    kind = ChannelKind.LIVE
    needs = ("send", "edit")

    def __init__(
        self,
        client: ChatPlatform,
        *,
        platform: str = "discord",
        max_chars: int = 2000,
        label_chars: int = 120,
        sessions: Iterable[str] | None = None,
        channels: Iterable[str] | None = None,
    ) -> None:
        super().__init__(
            client, platform=platform, max_chars=max_chars, sessions=sessions, channels=channels
        )
        self.label_chars = _check_limit(label_chars)
        # (session_id, tool_call_id) -> (platform message id, label after the status emoji)
        self._lines: dict[tuple[str, str], tuple[str, str]] = {}

    def render(self, update: Update, presentation: Presentation) -> None:
        """Post a thought or tool line, edit a call's line for its result, or post text."""
        message = update.message
        category = self.category(message)
        if category is Category.THOUGHT:
            line = f"💭 {clip(_first_line(message.content), self.label_chars)}"
            self.post(
                message.channel_id,
                line + (" (interrupted)" if _interrupted(message) else ""),
                _message_key(update.session_id, message.id),
            )
        elif category is Category.TOOL_CALL:
            label = _tool_label(message, self.label_chars)
            key = _message_key(update.session_id, message.id)
            line_id = self.post(message.channel_id, f"⏳ {label}", key)
            self._remember(update.session_id, message, line_id, label)
        elif category is Category.TOOL_RESULT:
            self._settle(update.session_id, message)
        elif category in _TEXT_OUT:
            header = ""
            if category is Category.REPLY:
                metrics = format_turn_metrics(message.metadata.get("turn_metrics"))
                header = f"⏱ {metrics}" if metrics else ""
            self.send_text(update.session_id, message, _outbound_text(message, header))
        # Inputs: the person posted them on the channel already.

    def changed(self, update: Update, presentation: Presentation) -> None:
        """Edit the line of a tool call its turn left unanswered to ⏹."""
        message = update.message
        if message.tool_call is None or message.status is not Status.INTERRUPTED:
            return
        line = self._lines.pop((update.session_id, message.tool_call.id), None)
        if line is None:
            # The call was drawn before this adapter started (a runner that stopped or died,
            # its turn recovered here): post the outcome instead, as a result does.
            label = _tool_label(message, self.label_chars)
            key = f"{_message_key(update.session_id, message.id)}/interrupted"
            self.post(message.channel_id, f"⏹ {label} (interrupted)", key)
        else:
            line_id, label = line
            self.client.edit(line_id, f"⏹ {label} (interrupted)")

    def _remember(self, session_id: str, call: Message, line_id: str, label: str) -> None:
        assert call.tool_call is not None
        if len(self._lines) >= _MAX_OPEN_CALLS:
            # A call whose turn errored never gets a result or an interrupt: forget the oldest.
            del self._lines[next(iter(self._lines))]
        self._lines[(session_id, call.tool_call.id)] = (line_id, label)

    def _settle(self, session_id: str, result: Message) -> None:
        key = (session_id, result.tool_call_id or "")
        line = self._lines.get(key)
        label = line[1] if line is not None else f"🛠️ {result.sender}"
        text = f"❌ {label} ({result.error_type or 'error'})" if result.is_error else f"✅ {label}"
        if line is None:
            # The call was drawn before this adapter started: post the outcome instead.
            self.post(result.channel_id, text, _message_key(session_id, result.id))
        else:
            self.client.edit(line[0], text)
            del self._lines[key]


class SilentChannelAdapter(_ChatAdapter):
    """A WeChat-like channel: only replies, notifications and crash notices are posted.

    Thoughts, tool calls and tool results never reach ``render``: the channel
    rule absorbs them, so the base class reports them delivered unsent. A reply
    an interrupt cut short (``metadata["interrupted"]``) is reported delivered
    unsent as well, unless ``send_interrupted``: the platform cannot edit or
    recall it, and the turn that interrupted it answers all the inputs.

    Args:
        client: the chat platform it posts to (a ``FakePlatform`` in tests).
        platform: the ``chatbot_id`` it serves (default ``wechat``).
        max_chars: the platform's message size; longer text is split on
            paragraph boundaries.
        send_interrupted: post a cut-short reply too, ending in an
            ``(interrupted)`` line (default False). Worth it when turns are
            stopped with ``Runtime.interrupt()`` and no new turn follows, so
            the person sees what the agent had said.
    """

    kind = ChannelKind.SILENT

    def __init__(
        self,
        client: ChatPlatform,
        *,
        platform: str = "wechat",
        max_chars: int = 2000,
        send_interrupted: bool = False,
        sessions: Iterable[str] | None = None,
        channels: Iterable[str] | None = None,
    ) -> None:
        super().__init__(
            client, platform=platform, max_chars=max_chars, sessions=sessions, channels=channels
        )
        if not isinstance(send_interrupted, bool):
            raise InvalidConfig(
                f"SilentChannelAdapter's send_interrupted must be True or False (got "
                f"{send_interrupted!r}); True posts a reply an interrupt cut short, marked "
                "(interrupted)."
            )
        self.send_interrupted = send_interrupted

    def render(self, update: Update, presentation: Presentation) -> None:
        """Post outbound text in chunks; inputs are not echoed, nor (by default) a reply
        an interrupt cut short."""
        message = update.message
        if self.category(message) not in _TEXT_OUT:
            return
        if _interrupted(message) and not self.send_interrupted:
            return  # delivered unsent, like a thought: the next turn answers
        self.send_text(update.session_id, message, _outbound_text(message))
