"""Chat platforms as adapters see them, and an in-process fake that records them.

A live or silent channel adapter talks to its platform through two calls,
``send`` and ``edit`` (``ChatPlatform``). ``FakePlatform`` implements them in
memory: it keeps every message it was sent, with the edits made to it, so a
test (or a demo) can read back what a Discord- or WeChat-like channel would
show. It is thread-safe, since adapters send from their own actor threads.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable
from typing import Protocol

import attrs

from runtime import AmberError

from ._errors import InvalidConfig

__all__ = [
    "ChatPlatform",
    "FakePlatform",
    "PlatformAction",
    "PlatformActionKind",
    "PlatformError",
    "PlatformMessage",
]


class PlatformError(AmberError, ConnectionError):
    """The chat platform refused or failed to send or edit a message."""


class ChatPlatform(Protocol):
    """What a channel adapter needs from a chat platform.

    ``send`` may also take a keyword ``idempotency_key`` (or ``**kwargs``): the chat
    adapters then pass one key per platform message they post, the same key each time
    they post it again (delivery is at-least-once: a reply sent just before a crash, or
    a send retried after a failure part-way, is sent again), so the platform client can
    drop the duplicate. A ``send(channel_id, text)`` without it is called without it.
    """

    def send(self, channel_id: str, text: str) -> str:
        """Post ``text`` on ``channel_id``; return the platform's id for the new message.

        Raises:
            PlatformError: (or any exception) the message was not posted.
        """
        ...

    def edit(self, message_id: str, text: str) -> None:
        """Replace the text of a message posted earlier.

        Raises:
            PlatformError: (or any exception) the message was not edited.
        """
        ...


@attrs.frozen(kw_only=True)
class PlatformMessage:
    """One message as the fake platform holds it."""

    id: str
    """The platform's id for it (``m1``, ``m2`` … in send order)."""
    channel_id: str
    """The channel it was posted on."""
    text: str
    """The text it was posted with."""
    edits: tuple[str, ...] = ()
    """The texts it was edited to, oldest first."""
    idempotency_key: str | None = None
    """The key the adapter sent it with (None: none)."""

    @property
    def current(self) -> str:
        """What it shows now: the last edit, or the text it was posted with."""
        return self.edits[-1] if self.edits else self.text


class PlatformActionKind(enum.StrEnum):
    """What an adapter did on the platform."""

    SEND = "send"
    """Posted a new message."""
    EDIT = "edit"
    """Edited a message in place."""


@attrs.frozen(kw_only=True)
class PlatformAction:
    """One call that reached the fake platform and succeeded."""

    kind: PlatformActionKind
    """Send or edit."""
    message_id: str
    """The platform message it made or changed."""
    channel_id: str
    """Its channel."""
    text: str
    """The text sent, or the text after the edit."""
    idempotency_key: str | None = None
    """The key a send was made with (None: none, or an edit)."""


FailWhen = Callable[[PlatformActionKind, str, str], bool]
"""A failure predicate: ``(kind, channel_id, text) -> True`` to make that call fail."""


class FakePlatform:
    """An in-process chat platform that records what adapters send.

    Args:
        name: a label for error messages (``discord``, ``wechat``).
        fail_when: optional predicate ``(kind, channel_id, text)``; a call it
            returns True for raises ``PlatformError`` and records nothing.
        dedupe: a send with an ``idempotency_key`` it has posted a message with
            posts nothing and returns that message's id (as a platform client that
            removes duplicates would).

    ``fail_next(n)`` makes the next ``n`` sends fail, for tests of what an
    adapter does when its platform is down.
    """

    def __init__(
        self, name: str = "fake", *, fail_when: FailWhen | None = None, dedupe: bool = False
    ) -> None:
        self.name = name
        self.dedupe = dedupe
        self._keys: dict[str, str] = {}  # idempotency key -> the message posted with it
        # Re-entrant, so a fail_when predicate may read the platform back.
        self._lock = threading.RLock()
        self._messages: dict[str, PlatformMessage] = {}
        self._actions: list[PlatformAction] = []
        self._fail_sends = 0
        self._fail_when = fail_when

    def send(self, channel_id: str, text: str, *, idempotency_key: str | None = None) -> str:
        """Post ``text`` on ``channel_id`` and return the new message's id.

        With ``dedupe``, a send with a key already posted returns that message's id
        and posts nothing.

        Raises:
            PlatformError: a failure was injected for this call.
        """
        with self._lock:
            if self._fail_sends > 0:
                self._fail_sends -= 1
                raise PlatformError(
                    f"{self.name} refused to send to channel {channel_id!r} (injected failure)."
                )
            self._check(PlatformActionKind.SEND, channel_id, text)
            if self.dedupe and idempotency_key in self._keys:
                return self._keys[idempotency_key]
            message_id = f"m{len(self._messages) + 1}"
            self._messages[message_id] = PlatformMessage(
                id=message_id, channel_id=channel_id, text=text, idempotency_key=idempotency_key
            )
            if idempotency_key is not None:
                self._keys.setdefault(idempotency_key, message_id)
            self._record(PlatformActionKind.SEND, message_id, channel_id, text, idempotency_key)
            return message_id

    def edit(self, message_id: str, text: str) -> None:
        """Edit the message ``message_id`` to show ``text``.

        Raises:
            PlatformError: no such message, or a failure was injected for this call.
        """
        with self._lock:
            message = self._messages.get(message_id)
            if message is None:
                raise PlatformError(
                    f"{self.name} has no message {message_id!r} to edit; pass an id that "
                    "send() returned."
                )
            self._check(PlatformActionKind.EDIT, message.channel_id, text)
            self._messages[message_id] = attrs.evolve(message, edits=(*message.edits, text))
            self._record(PlatformActionKind.EDIT, message_id, message.channel_id, text)

    def fail_next(self, count: int = 1) -> None:
        """Make the next ``count`` sends raise ``PlatformError``."""
        if count < 0:
            raise InvalidConfig(f"fail_next() takes a count >= 0 (got {count!r}).")
        with self._lock:
            self._fail_sends = count

    @property
    def sent(self) -> tuple[PlatformMessage, ...]:
        """Every message posted, in send order, as it is now."""
        with self._lock:
            return tuple(self._messages.values())

    @property
    def messages(self) -> dict[str, PlatformMessage]:
        """A copy of the messages posted, by id."""
        with self._lock:
            return dict(self._messages)

    @property
    def actions(self) -> tuple[PlatformAction, ...]:
        """Every send and edit that succeeded, in order."""
        with self._lock:
            return tuple(self._actions)

    def transcript(self, channel_id: str) -> list[str]:
        """What ``channel_id`` shows now: its messages' current texts, oldest first."""
        with self._lock:
            return [m.current for m in self._messages.values() if m.channel_id == channel_id]

    def _check(self, kind: PlatformActionKind, channel_id: str, text: str) -> None:
        if self._fail_when is not None and self._fail_when(kind, channel_id, text):
            raise PlatformError(
                f"{self.name} refused to {kind} on channel {channel_id!r} (injected failure)."
            )

    def _record(
        self,
        kind: PlatformActionKind,
        message_id: str,
        channel_id: str,
        text: str,
        idempotency_key: str | None = None,
    ) -> None:
        self._actions.append(
            PlatformAction(
                kind=kind,
                message_id=message_id,
                channel_id=channel_id,
                text=text,
                idempotency_key=idempotency_key,
            )
        )
