"""``Inbox``: a session actor's inbox, which refuses what is put in it once the actor stopped.

pykka checks that an actor is alive, then puts the message in its inbox
(``ActorRef.tell``, ``ActorRef.ask``). An actor that stopped in the instant between
had already emptied its inbox (``SessionActor.on_stop`` hands what was queued to the
session's next actor): the message landed where nobody takes from again. An ``ask``
told there was never stored nor answered (its caller waited out its timeout), a call
never answered (its caller waited ``ask_timeout``, then got ``pykka.Timeout``).

A closed inbox refuses the put instead, as pykka refuses a message to a dead actor:
a tell raises ``ActorDeadError`` (the router tells the session's next actor), a call is
answered with it (the router calls the next actor), and a stop is answered as pykka
answers one queued behind a stop. Each message is taken by exactly one of the two: the
actor (queued before the close) or its sender (refused after it).
"""

from __future__ import annotations

import queue
from typing import TYPE_CHECKING, Any

import pykka
from pykka import messages

if TYPE_CHECKING:
    from pykka._envelope import Envelope

__all__ = ["Inbox", "answer_dead"]


class _Closed(Exception):
    """Raised under the inbox's lock by a put after the close (handled by ``put``)."""


class Inbox(queue.Queue["Envelope[Any]"]):
    """A session actor's inbox (made by pykka through ``_create_actor_inbox``)."""

    def __init__(self) -> None:
        super().__init__()
        self._closed_by: str | None = None  # who stopped, for the error of a refused put

    def close(self, owner: str) -> list[Envelope[Any]]:
        """Refuse every put from now on; returns what was queued (for the actor to hand on
        or answer: nothing is left in the inbox). ``owner`` names the actor in the errors."""
        with self.mutex:
            self._closed_by = owner
            queued = list(self.queue)
            self.queue.clear()
        return queued

    def put(self, item: Envelope[Any], block: bool = True, timeout: float | None = None) -> None:
        """Queue ``item``, unless the inbox is closed.

        Raises:
            pykka.ActorDeadError: the inbox is closed and ``item`` is a tell (a call is
                answered with the error instead, as pykka answers one to a dead actor).
        """
        try:
            super().put(item, block, timeout)
        except _Closed:
            owner = self._closed_by or "The actor"
            if item.reply_to is None:
                raise pykka.ActorDeadError(f"{owner} stopped.") from None
            answer_dead(item, owner)

    def _put(self, item: Envelope[Any]) -> None:
        if self._closed_by is not None:
            raise _Closed
        super()._put(item)


def answer_dead(envelope: Envelope[Any], owner: str) -> None:
    """Answer a call left in a stopped actor's inbox as pykka does when it stops: a stop
    with None (stopped), any other call with ``ActorDeadError``."""
    reply_to = envelope.reply_to
    if reply_to is None:
        return
    if isinstance(envelope.message, messages._ActorStop):
        reply_to.set(None)
        return
    dead = pykka.ActorDeadError(f"{owner} stopped before handling the message.")
    reply_to.set_exception((pykka.ActorDeadError, dead, None))
