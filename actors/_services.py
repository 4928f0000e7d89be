"""``Services``: what a runtime shares with its session actors, and the ``Publisher`` they tell.

Session actors reach the rest of the runtime only through these: the store
thread, the effects loop, the tool actors, the publisher (the gateway, seen
through a narrow protocol so that nothing here imports it), the model, the
settings, the clocks, and callbacks into the router.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

import attrs
import pykka

from runtime import Delta, Message, TurnSettings, Update

from ._effects import Effects
from ._ids import Clock
from ._model import Model
from ._settings import Settings
from ._storage import StoreThread

__all__ = ["Monotonic", "Publisher", "Services"]

Monotonic = Callable[[], float]
"""Returns monotonic seconds (``time.monotonic`` by default)."""


class Publisher(Protocol):
    """Where session actors send what adapters and subscribers see (the gateway)."""

    def publish(self, update: Update) -> None:
        """A message joined a session or changed status."""
        ...

    def delta(self, delta: Delta) -> None:
        """A live piece of a streaming model message."""
        ...

    def expects_delivery(self, message: Message) -> bool:
        """True when a registered adapter will report ``message`` delivered."""
        ...


@attrs.define(eq=False, kw_only=True)
class Services:
    """The store thread, effects loop, publisher, model, tools and settings of a runtime."""

    store: StoreThread
    effects: Effects
    publisher: Publisher
    model: Model
    tool_refs: dict[str, pykka.ActorRef[Any]]
    drained_tools: frozenset[str] = frozenset()
    """Tools whose runs a runtime stop waits for (they cannot be cancelled: sync tools)."""
    settings: Settings
    turn_settings: TurnSettings
    clock: Clock
    monotonic: Monotonic = time.monotonic
    passivate: Callable[[str, pykka.ActorRef[Any], int], None]
    """Called by an idle session actor: ``(session_id, its ref, its seq)``."""
    forget: Callable[[str, pykka.ActorRef[Any]], None]
    """Called by a session actor that stops on its own: ``(session_id, its ref)``."""
    load_failed: Callable[[str, Exception], None]
    """Called by a session actor whose load failed, once its callers were told: the
    router gives the session's lease back (a shared store), unless it is live again."""
    reroute: Callable[[str, Any], None]
    """Called by a closed session actor with a message that must not be lost (an ask, a
    delivery report): the router tells it to the session's next actor."""

    def stamp(self) -> dict[str, Any]:
        """``at`` and ``mono`` for an input that happens now."""
        return {"at": self.clock(), "mono": self.monotonic()}
