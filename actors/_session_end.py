"""How a session actor ends when it cannot go on: its load failed (``_fail_load``), a
write failed so that even the turn could not be failed (``_give_up``), or a told
message's handling raised (``SessionActor.on_failure``); and what becomes of its inbox
when it stops (``_hand_on_inbox``).

Whoever waits on the session is told, and what its inbox holds is not lost: a person's
input and a delivery report go to the session's next actor, a call is answered. The
session's next message loads it again from the store.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import pykka
from pykka.messages import ProxyCall, ProxyGetAttr

from runtime import Delivered

from ._answers import AskInput
from ._errors import SessionGone
from ._inbox import Inbox, answer_dead
from ._redelivery import SendFailed

if TYPE_CHECKING:
    import threading

    from ._asks import AskBook
    from ._services import Services

__all__ = ["SessionEnd"]

log = logging.getLogger("amber.session")


class SessionEnd:
    """The ends of a session actor that cannot go on (mixed into ``SessionActor``)."""

    session_id: str
    _svc: Services
    _asks: AskBook
    _draining: pykka.ThreadingFuture[None] | None
    actor_inbox: Inbox
    actor_stopped: threading.Event

    @property
    def actor_ref(self) -> pykka.ActorRef[Any]:
        raise NotImplementedError

    def _close(self) -> None:
        raise NotImplementedError

    def _fail_waiters(self, error: Exception) -> None:
        raise NotImplementedError

    def _send_failed(self, failed: SendFailed) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def _fail_load(self, exc: Exception) -> None:
        """Stop without taking a message (pykka would drop the told ones, leaving an
        ``ask`` waiting for ever): what waits in the inbox is failed with ``exc``."""
        try:
            self._close()
            # First out of the router's table (the next call loads the session again):
            # that waits for the router to have made this actor's proxy, which a stopped
            # actor refuses.
            self._svc.forget(self.session_id, self.actor_ref)
        except Exception:  # logged once; the inbox is emptied all the same
            log.exception("session %s: the actor whose load failed could not be closed",
                          self.session_id)  # fmt: skip
        pykka.ActorRegistry.unregister(self.actor_ref)
        self.actor_stopped.set()  # from now on a tell or call raises ActorDeadError
        for envelope in self.actor_inbox.close(f"Session actor {self.session_id!r}"):
            message, reply_to = envelope.message, envelope.reply_to
            if isinstance(message, AskInput):
                message.waiter.fail(exc)
            elif isinstance(message, Delivered):
                log.warning(
                    "session %s: the delivery of %s could not be recorded (%s)",
                    self.session_id, message.message_id, exc,
                )  # fmt: skip
            elif isinstance(message, SendFailed):
                self._send_failed(message)  # closed: logged (the adapter left it to us)
            if reply_to is None:
                continue
            if isinstance(message, ProxyCall | ProxyGetAttr):
                reply_to.set_exception((type(exc), exc, exc.__traceback__))
            else:  # a stop: answered as pykka answers it for a stopped actor
                dead = pykka.ActorDeadError(f"Session actor {self.session_id!r} stopped.")
                reply_to.set_exception((pykka.ActorDeadError, dead, None))
        # After the callers are told (giving the lease back is a store call, which may
        # wait as long as the failed load did).
        self._svc.load_failed(self.session_id, exc)

    def _pass_on(self, message: object) -> bool:
        """What a closed actor does with a told message that must not be lost: a person's
        input or a delivery report goes to the session's next actor, a send failure is
        logged (no retry is armed on a closed actor). False for any other message."""
        if isinstance(message, AskInput | Delivered):
            self._svc.reroute(self.session_id, message)
        elif isinstance(message, SendFailed):
            self._send_failed(message)
        else:
            return False
        return True

    def _give_up(self, exc: Exception) -> None:
        """Stop after a failure the session cannot go on from: whoever waits on it is told,
        and its next call loads it again from the store."""
        self._tell_gone(exc)
        self._close()
        self._svc.forget(self.session_id, self.actor_ref)
        self.stop()

    def _tell_gone(self, exc: BaseException | None) -> None:
        """Every ask and ``when_idle`` caller gets ``SessionGone`` quoting ``exc``; a
        stop's drain no longer waits for the session."""
        gone = SessionGone(f"Session {self.session_id!r} failed: {str(exc).rstrip('.')}.")
        self._asks.fail_all(gone)
        self._fail_waiters(gone)
        draining, self._draining = self._draining, None
        if draining is not None:  # a stop waits for its drain: nothing is left to wait for
            draining.set(None)

    def _hand_on_inbox(self) -> None:
        """Close the inbox, emptying it: a call queued is answered as pykka answers it
        (``ActorDeadError``, a stop with None), a message that must not be lost passed on
        (``_pass_on``), another dropped as pykka drops it. A put after is refused."""
        owner = f"Session actor {self.session_id!r}"
        for envelope in self.actor_inbox.close(owner):
            try:
                if envelope.reply_to is not None or not self._pass_on(envelope.message):
                    answer_dead(envelope, owner)
            except Exception as exc:  # the rest are handed on all the same
                log.exception("session %s: a message left in the stopped actor's inbox "
                              "could not be handed on", self.session_id)  # fmt: skip
                if isinstance(envelope.message, AskInput):  # its caller need not wait
                    envelope.message.waiter.fail(exc)
