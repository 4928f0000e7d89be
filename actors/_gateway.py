"""The gateway: the broker between adapters and session actors (DESIGN §7).

Adapters hand it user input: it is validated (``InvalidInput`` goes back to
the adapter and nothing is stored), turned into a message and routed to the
session's actor. Session actors hand it every new or changed message and
every live delta: it fans them out to the adapters of the message's platform
and to subscribers. Adapters report deliveries to it; it routes them back.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import pykka

from runtime import (
    Category,
    ChannelKind,
    Delta,
    Message,
    Status,
    Update,
    UserInput,
    Visibility,
    awaits_delivery,
    channel_rule,
    new_message,
)

if TYPE_CHECKING:
    from ._runtime import Runtime

__all__ = ["Gateway", "Subscription"]

log = logging.getLogger("amber.gateway")


@attrs.define(eq=False)
class _AdapterEntry:
    ref: pykka.ActorRef[Any]
    platform: str
    kind: ChannelKind


class _Subscriber(pykka.ThreadingActor):
    """Runs a subscriber's callback in its own thread, so it never slows a session."""

    def __init__(self, callback: Callable[[Update | Delta], object]) -> None:
        super().__init__()
        self._callback = callback

    def on_receive(self, message: Any) -> None:
        try:
            self._callback(message)
        except Exception:
            log.exception("a subscriber's callback failed on %r", message)


@attrs.define(eq=False)
class Subscription:
    """A subscriber's registration; ``close()`` (or leaving the ``with``) ends it."""

    _gateway: Gateway
    _ref: pykka.ActorRef[Any]
    session_id: str | None
    """Only this session's updates (None: every session)."""
    deltas: bool
    """Whether live deltas are passed too."""

    def close(self) -> None:
        """Stop receiving; pending callbacks still run first."""
        self._gateway._unsubscribe(self)
        with contextlib.suppress(pykka.ActorDeadError):
            self._ref.stop(block=False)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()


class Gateway:
    """Routes input to session actors and fans output out to adapters and subscribers.

    Made by the ``Runtime``; reach it as ``runtime.gateway``.
    """

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._lock = threading.Lock()
        self._adapters: tuple[_AdapterEntry, ...] = ()
        self._subscribers: tuple[Subscription, ...] = ()

    # -- adapters ----------------------------------------------------------------

    def register(self, ref: pykka.ActorRef[Any]) -> None:
        """Add a started adapter actor (an ``Adapter`` subclass)."""
        proxy = ref.proxy()
        platform = proxy.platform.get(timeout=10)
        kind = ChannelKind(proxy.kind.get(timeout=10))
        proxy.attach(self).get(timeout=10)
        with self._lock:
            self._adapters = (*self._adapters, _AdapterEntry(ref, platform, kind))

    @property
    def adapters(self) -> list[pykka.ActorRef[Any]]:
        """The registered adapter actors."""
        return [entry.ref for entry in self._adapters]

    def expects_delivery(self, message: Message) -> bool:
        """True when a registered adapter will report ``message`` delivered."""
        if not awaits_delivery(message):
            return False
        for entry in self._adapters:
            if (
                entry.platform == message.chatbot_id
                and channel_rule(entry.kind, message).visibility is not Visibility.HIDDEN
            ):
                return True
        return False

    def publish(self, update: Update) -> None:
        """Fan ``update`` out to its platform's adapters and to subscribers."""
        platform = update.message.chatbot_id
        for entry in self._adapters:
            if entry.platform == platform:
                _tell(entry.ref, update)
        for sub in self._subscribers:
            if sub.session_id is None or sub.session_id == update.session_id:
                _tell(sub._ref, update)

    def delta(self, delta: Delta) -> None:
        """Fan a live delta out to its platform's adapters and delta subscribers."""
        for entry in self._adapters:
            if entry.platform == delta.chatbot_id:
                _tell(entry.ref, delta)
        for sub in self._subscribers:
            if sub.deltas and (sub.session_id is None or sub.session_id == delta.session_id):
                _tell(sub._ref, delta)

    def delivered(self, session_id: str, message_id: str, expected: Status) -> None:
        """An adapter sent or absorbed ``message_id`` (it had status ``expected``)."""
        self._runtime._deliver(session_id, message_id, expected)

    # -- subscribers ----------------------------------------------------------------

    def subscribe(
        self,
        callback: Callable[[Update | Delta], object],
        *,
        session_id: str | None = None,
        deltas: bool = False,
    ) -> Subscription:
        """Call ``callback`` with every ``Update`` (and ``Delta`` if ``deltas``).

        The callback runs in a thread of its own, in order, so a slow one never
        holds up a session. Returns a ``Subscription`` to ``close()``.
        """
        if not callable(callback):
            raise TypeError(f"subscribe() takes a callable; got {callback!r}.")
        ref = _Subscriber.start(callback)
        sub = Subscription(self, ref, session_id, deltas)
        with self._lock:
            self._subscribers = (*self._subscribers, sub)
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        with self._lock:
            self._subscribers = tuple(s for s in self._subscribers if s is not sub)

    # -- input -------------------------------------------------------------------------

    def submit(self, session_id: str, user_input: UserInput | str, **fields: Any) -> Message:
        """Validate a person's input and hand it to the session; returns the stored message.

        ``user_input`` is a ``UserInput`` or plain text (``fields`` then fill
        the other ``UserInput`` fields: ``sender``, ``chatbot_id`` …).

        Raises:
            InvalidInput: the input breaks a rule; nothing was stored.
        """
        if isinstance(user_input, str):
            user_input = UserInput(text=user_input, **fields)
        elif fields:
            raise TypeError(
                "submit() takes extra fields only with plain text; put them in the UserInput."
            )
        if not isinstance(user_input, UserInput):
            raise TypeError(
                f"submit() takes a UserInput or a str (got {user_input!r} that is a "
                f"{type(user_input).__name__!r})."
            )
        runtime = self._runtime
        message = user_input.to_message(
            id=runtime.ids("msg"),
            session_id=_session_id(session_id),
            created_at=runtime.clock(),
            limits=runtime.settings.input_limits,
        )
        return runtime._add_input(message)

    def post(
        self,
        session_id: str,
        category: Category,
        content: str,
        **fields: Any,
    ) -> Message:
        """Post a cron prompt, compaction request or background alert (starts a turn),
        or a notification (delivered to the user, never sent to the model).

        Raises:
            ValueError: ``category`` cannot be posted from outside a turn.
        """
        runtime = self._runtime
        session_id = _session_id(session_id)
        if category is Category.NOTIFICATION:
            added: Message = runtime._session_call(
                session_id, lambda p: p.add_output(category, content, **fields)
            )
            return added
        if not category.is_input:
            allowed = "cron prompts, compaction requests, background alerts and notifications"
            raise ValueError(
                f"post() takes {allowed}; a {category.label} is made by a turn, not posted."
            )
        message = new_message(
            category,
            id=runtime.ids("msg"),
            session_id=session_id,
            created_at=runtime.clock(),
            content=content,
            **fields,
        )
        return runtime._add_input(message)


def _session_id(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError(f"session_id must be a non-empty str (got {value!r}).")
    return value


def _tell(ref: pykka.ActorRef[Any], message: Any) -> None:
    try:
        ref.tell(message)
    except pykka.ActorDeadError:
        log.debug("dropped %r for a stopped actor", type(message).__name__)
