"""Adapters: actors that show a session's messages on a channel and report delivery.

The gateway tells every adapter an ``Update`` when a message joins a session
or changes status, and a ``Delta`` for each live piece of a streaming model
message. An adapter serves one platform (its ``platform`` matches the
messages' ``chatbot_id``) and one ``ChannelKind``; the base class applies the
channel's visibility rule (``runtime.channel_rule``) and reports delivery
through the gateway exactly once per message it sends or absorbs.

Subclasses override ``render`` (and, for live output, ``on_delta``).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterable
from typing import Protocol

import pykka

from runtime import (
    Category,
    ChannelKind,
    Delta,
    Message,
    Presentation,
    Status,
    Update,
    Visibility,
    awaits_delivery,
    category_of,
    channel_rule,
)

__all__ = ["Adapter", "DeliverySink", "serves"]

from ._errors import InvalidConfig

_log = logging.getLogger("amber.adapters")


def _scope(name: str, value: Iterable[str] | None) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        raise InvalidConfig(
            f"{name} takes an iterable of ids, not a str (got {value!r}); write {name}=[{value!r}]."
        )
    scope = frozenset(value)
    for item in scope:
        if not isinstance(item, str) or not item:
            raise InvalidConfig(f"{name} holds non-empty strs (got {item!r}).")
    return scope


def serves(
    sessions: frozenset[str] | None,
    channels: frozenset[str] | None,
    session_id: str,
    channel_id: str,
) -> bool:
    """True when an adapter scoped to ``sessions`` and ``channels`` serves this session and
    channel (None: no limit)."""
    return (sessions is None or session_id in sessions) and (
        channels is None or channel_id in channels
    )


class DeliverySink(Protocol):
    """Where adapters report what they delivered (the gateway).

    A sink may also have ``failed(session_id, message_id, adapter, error)``: an adapter
    could not send ``message_id`` (its ``render`` raised ``error``, the exception), and
    ``adapter`` (its actor ref) may be told the message again later (the runtime's router
    retries it, see ``Settings.delivery_retries``). A sink that has it logs the failure
    (the runtime logs a warning line for a try it retries, and the traceback when it gives
    up); a sink without it is not told of failures, and the adapter logs them.
    """

    def delivered(self, session_id: str, message_id: str, expected: Status) -> None:
        """``message_id`` of ``session_id`` was sent or absorbed; it had status ``expected``."""
        ...


_HOOKS = ("wants", "on_update", "render", "changed", "on_delta", "deliver")
"""The methods an adapter calls in its own thread (a subclass may override them)."""


class Adapter(pykka.ThreadingActor):
    """Base of adapter actors: visibility rules and delivery reports.

    Args:
        platform: the ``chatbot_id`` of the messages it serves (``cli``,
            ``discord`` …); messages of other platforms are ignored.
        sessions: serve only these sessions (None: every session of the platform).
        channels: serve only these ``channel_id``s (None: every channel).

    ``kind`` (how its channel renders, a ``ChannelKind``) is fixed by each subclass.
    """

    kind: ChannelKind = ChannelKind.CLI
    """How the channel renders; see ``runtime.CHANNEL_RULES``."""
    use_daemon_thread = True
    """A runtime never stopped (a program that crashed) must not keep the process alive."""

    def __init__(
        self,
        *,
        platform: str,
        sessions: Iterable[str] | None = None,
        channels: Iterable[str] | None = None,
    ) -> None:
        super().__init__()
        for hook in _HOOKS:
            if inspect.iscoroutinefunction(getattr(type(self), hook)):
                raise InvalidConfig(
                    f"{type(self).__name__}.{hook} is an async method, but an adapter calls it "
                    "in its own thread, where its coroutine would never run. Make it a plain "
                    "method; to use an asyncio client there, run the coroutine on your loop "
                    "and wait: asyncio.run_coroutine_threadsafe(coro, loop).result()."
                )
        if not isinstance(platform, str) or not platform:
            raise InvalidConfig(
                f"platform must be a non-empty str naming the chatbot_id it serves "
                f"(got {platform!r})."
            )
        self.platform = platform
        self.sessions: frozenset[str] | None = _scope("sessions", sessions)
        """The sessions it serves (None: all of its platform)."""
        self.channels: frozenset[str] | None = _scope("channels", channels)
        """The channels it serves (None: all)."""
        self._sink: DeliverySink | None = None

    def attach(self, sink: DeliverySink) -> None:
        """Called by the gateway when the adapter is registered."""
        self._sink = sink

    def on_receive(self, message: object) -> None:
        """Dispatch the gateway's ``Update`` and ``Delta`` tells to ``on_update``/``on_delta``."""
        if isinstance(message, Update):
            self.on_update(message)
        elif isinstance(message, Delta):
            if not serves(self.sessions, self.channels, message.session_id, message.channel_id):
                return
            try:
                self.on_delta(message)
            except Exception:
                _log.exception(
                    "%s could not show a live delta of %s", type(self).__name__, message.session_id
                )

    def wants(self, message: Message) -> bool:
        """True when this adapter serves ``message`` (its platform, sessions and channels)."""
        return message.chatbot_id == self.platform and serves(
            self.sessions, self.channels, message.session_id, message.channel_id
        )

    def on_update(self, update: Update) -> None:
        """Handle one update: render or absorb new output, then report delivery."""
        message = update.message
        if not self.wants(message):
            return
        rule = channel_rule(self.kind, message)
        if rule.visibility is Visibility.HIDDEN:
            return
        if not update.is_new:
            if rule.visibility is Visibility.SHOWN:
                try:
                    self.changed(update, rule.presentation)
                except Exception:
                    _log.exception(
                        "%s could not show the change of message %r of session %r to %s.",
                        type(self).__name__,
                        message.id,
                        update.session_id,
                        message.status,
                    )
            return
        if rule.visibility is Visibility.SHOWN:
            try:
                self.render(update, rule.presentation)
            except Exception as exc:
                # The contract: a message that fails to render stays undelivered, and
                # the adapter goes on with the next update. A sink that retries the send
                # logs each try (a warning line while it retries, the traceback when it
                # gives up): a platform blip is not a wall of tracebacks.
                if not (awaits_delivery(message) and self._failed(message, exc)):
                    _log.exception(
                        "%s could not render message %r of session %r; it stays %s.",
                        type(self).__name__,
                        message.id,
                        update.session_id,
                        message.status,
                    )
                return
        if awaits_delivery(message):
            # Inputs (pending_agent) are shown but never delivered: the person posted them.
            # Nudges stay responded: nothing delivers them.
            self.deliver(message)

    def render(self, update: Update, presentation: Presentation) -> None:
        """Show a new message; the base class then reports output delivered.

        Inputs (``pending_agent``) come here too, so a channel can echo them;
        they are never reported delivered. Raise to leave output undelivered
        (it stays ``pending``/``responded``) and go on with the next update: the
        runtime tries it again (``Settings.delivery_retries``), logging a warning
        line on ``amber.session`` for each try it retries and the traceback when
        it gives up; what no sink retries is logged, with its traceback, on
        ``amber.adapters``.
        """
        raise NotImplementedError

    def changed(self, update: Update, presentation: Presentation) -> None:
        """A shown message changed status (a tool call interrupted, an input processed)."""

    def on_delta(self, delta: Delta) -> None:
        """A live piece of a streaming model message (default: ignored)."""

    def deliver(self, message: Message) -> None:
        """Report ``message`` delivered (status ``pending`` or ``responded`` now)."""
        if self._sink is None:
            raise InvalidConfig(
                f"{type(self).__name__} is not attached to a gateway; register it with the "
                "runtime (Runtime(adapters=[...])) before it delivers."
            )
        self._sink.delivered(message.session_id, message.id, message.status)

    def _failed(self, message: Message, error: Exception) -> bool:
        """Tell the sink (if it takes failures) that ``message`` was not sent: it may be
        told to this adapter again later. True when the sink took the failure (and so
        logs it); False when the adapter must log it."""
        failed = getattr(self._sink, "failed", None)
        if failed is None:
            return False
        try:
            failed(message.session_id, message.id, self.actor_ref, error)
        except Exception:
            _log.exception("%s could not report a failed send", type(self).__name__)
            return False
        return True

    @staticmethod
    def category(message: Message) -> Category:
        """The message's category (a shortcut for subclasses)."""
        return category_of(message)
