"""The gateway: fans a session's output out to adapters and subscribers (DESIGN §7).

Session actors hand it every new or changed message (``Update``) and every
live delta: it tells them to the adapters of the message's platform and to
subscribers. It does not route input (``Runtime`` validates it and hands it
to the router) and it does not route deliveries back: adapters report to
the ``DeliverySink`` the gateway attaches them to (the router).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import attrs
import pykka

from runtime import (
    ChannelKind,
    Delta,
    Message,
    Update,
    Visibility,
    awaits_delivery,
    channel_rule,
)

from ._adapter import DeliverySink, serves
from ._errors import InvalidConfig

__all__ = ["Gateway", "Subscription"]

log = logging.getLogger("amber.gateway")


@attrs.define(eq=False)
class _AdapterEntry:
    ref: pykka.ActorRef[Any]
    platform: str
    kind: ChannelKind
    sessions: frozenset[str] | None = None
    channels: frozenset[str] | None = None

    def serves(self, platform: str, session_id: str, channel_id: str) -> bool:
        return platform == self.platform and serves(
            self.sessions, self.channels, session_id, channel_id
        )


class _Subscriber(pykka.ThreadingActor):
    """Runs a subscriber's callbacks in its own thread, so they never slow a session."""

    use_daemon_thread = True  # a runtime never stopped must not keep the process alive

    def __init__(
        self,
        on_update: Callable[[Update], object] | None,
        on_delta: Callable[[Delta], object] | None,
    ) -> None:
        super().__init__()
        self._on_update = on_update
        self._on_delta = on_delta

    def on_receive(self, message: Any) -> None:
        callback: Any = self._on_update if isinstance(message, Update) else self._on_delta
        if callback is None:
            return
        try:
            callback(message)
        except Exception:
            log.exception("a subscriber's callback failed on %r", message)


@attrs.define(eq=False)
class Subscription:
    """A subscriber's registration; ``close()`` (or leaving the ``with``) ends it."""

    _gateway: Gateway
    _ref: pykka.ActorRef[Any]
    session_id: str | None
    """Only this session's (None: every session)."""
    updates: bool
    """Whether it takes updates (it has ``on_update``)."""
    deltas: bool
    """Whether it takes live deltas (it has ``on_delta``)."""

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
    """Fans output out to adapters and subscribers.

    Made by the ``Runtime``; reach it as ``runtime.gateway``.

    Args:
        sink: where adapters report deliveries (the runtime's router).
    """

    def __init__(self, sink: DeliverySink) -> None:
        self._sink = sink
        self._lock = threading.Lock()
        self._adapters: tuple[_AdapterEntry, ...] = ()
        self._subscribers: tuple[Subscription, ...] = ()

    # -- adapters ----------------------------------------------------------------

    def register(self, ref: pykka.ActorRef[Any]) -> None:
        """Add a started adapter actor (an ``Adapter`` subclass)."""
        proxy = ref.proxy()
        platform = proxy.platform.get(timeout=10)
        kind = ChannelKind(proxy.kind.get(timeout=10))
        sessions = getattr(proxy, "sessions", None)
        channels = getattr(proxy, "channels", None)
        entry = _AdapterEntry(
            ref,
            platform,
            kind,
            sessions.get(timeout=10) if sessions is not None else None,
            channels.get(timeout=10) if channels is not None else None,
        )
        proxy.attach(self.sink_for(ref)).get(timeout=10)
        with self._lock:
            self._adapters = (*self._adapters, entry)

    def sink_for(self, ref: pykka.ActorRef[Any]) -> DeliverySink:
        """The sink adapter ``ref`` reports its deliveries to (the router's, by default)."""
        return self._sink

    @property
    def adapters(self) -> list[pykka.ActorRef[Any]]:
        """The registered adapter actors."""
        return [entry.ref for entry in self._adapters]

    def drain(self, timeout: float) -> None:
        """Return once every adapter has handled what it was told before the call (and so
        made its delivery reports), or after ``timeout`` seconds; a slow adapter is logged."""
        deadline = time.monotonic() + timeout
        barriers: list[tuple[pykka.ActorRef[Any], Any]] = []
        for entry in self._adapters:
            try:
                # A proxy's attribute read is a message like any other: it is answered after
                # every Update and Delta queued before it.
                barriers.append((entry.ref, entry.ref.proxy().platform))
            except pykka.ActorDeadError:
                continue
        for ref, future in barriers:
            try:
                future.get(timeout=max(0.0, deadline - time.monotonic()))
            except pykka.ActorDeadError:
                continue
            except pykka.Timeout:
                log.warning(
                    "adapter %s was still sending after %s s when the runtime stopped; what it "
                    "delivers from now on is not recorded and will be sent again after a restart",
                    ref,
                    timeout,
                )

    def expects_delivery(self, message: Message) -> bool:
        """True when a registered adapter will report ``message`` delivered."""
        if not awaits_delivery(message):
            return False
        for entry in self._adapters:
            if (
                entry.serves(message.chatbot_id, message.session_id, message.channel_id)
                and channel_rule(entry.kind, message).visibility is not Visibility.HIDDEN
            ):
                return True
        return False

    def publish(self, update: Update) -> None:
        """Fan ``update`` out to its platform's adapters and to subscribers."""
        message = update.message
        for entry in self._adapters:
            if entry.serves(message.chatbot_id, message.session_id, message.channel_id):
                _tell(entry.ref, update)
        for sub in self._subscribers:
            if sub.updates and (sub.session_id is None or sub.session_id == update.session_id):
                _tell(sub._ref, update)

    def delta(self, delta: Delta) -> None:
        """Fan a live delta out to its platform's adapters and delta subscribers."""
        for entry in self._adapters:
            if entry.serves(delta.chatbot_id, delta.session_id, delta.channel_id):
                _tell(entry.ref, delta)
        for sub in self._subscribers:
            if sub.deltas and (sub.session_id is None or sub.session_id == delta.session_id):
                _tell(sub._ref, delta)

    # -- subscribers ----------------------------------------------------------------

    def subscribe(
        self,
        on_update: Callable[[Update], object] | None = None,
        *,
        on_delta: Callable[[Delta], object] | None = None,
        session_id: str | None = None,
    ) -> Subscription:
        """Call ``on_update`` with every ``Update`` and ``on_delta`` with every live ``Delta``.

        The callbacks run in a thread of their own, in order, so a slow one never
        holds up a session. Returns a ``Subscription`` to ``close()``.

        Raises:
            InvalidConfig: neither callback given, or one is not callable or is async.
        """
        for name, callback in (("on_update", on_update), ("on_delta", on_delta)):
            if callback is not None and not callable(callback):
                raise InvalidConfig(f"subscribe() takes a callable {name}; got {callback!r}.")
            if callback is not None and _is_async(callback):
                label = getattr(callback, "__name__", None) or type(callback).__name__
                raise InvalidConfig(
                    f"subscribe() calls {name} in a thread of the runtime's, where the "
                    f"coroutine of an async function would never run (got the async function "
                    f"{label!r}). Pass a plain function that hands the item to your loop: "
                    "loop.call_soon_threadsafe(queue.put_nowait, item) (asyncio) or "
                    "token.run_sync_soon(send.send_nowait, item) (trio)."
                )
        if on_update is None and on_delta is None:
            raise InvalidConfig(
                "subscribe() needs on_update (new and changed messages), on_delta (live "
                "pieces of streaming model messages), or both."
            )
        ref = _Subscriber.start(on_update, on_delta)
        sub = Subscription(self, ref, session_id, on_update is not None, on_delta is not None)
        with self._lock:
            self._subscribers = (*self._subscribers, sub)
        return sub

    def close_subscriptions(self) -> None:
        """Close every subscription (the runtime stops)."""
        for sub in self._subscribers:
            sub.close()

    def _unsubscribe(self, sub: Subscription) -> None:
        with self._lock:
            self._subscribers = tuple(s for s in self._subscribers if s is not sub)


def _is_async(callback: Callable[..., object]) -> bool:
    """An ``async def`` function, a partial of one, or an object whose ``__call__`` is one."""
    return inspect.iscoroutinefunction(callback) or inspect.iscoroutinefunction(
        type(callback).__call__
    )


def _tell(ref: pykka.ActorRef[Any], message: Any) -> None:
    try:
        ref.tell(message)
    except pykka.ActorDeadError:
        log.debug("dropped %r for a stopped actor", type(message).__name__)
