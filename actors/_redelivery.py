"""Trying a failed send again: an adapter that could not send a session's message
reports ``SendFailed``; the session actor tells it the message again after a backoff.

A mixin of ``SessionActor``. Each retry is a shell timer (``_REDELIVER`` names it:
the turn machine never sees it), armed ``Settings.delivery_retries`` times with
``Settings.delivery_delay`` between tries; then the message is left undelivered
until the session is next loaded, which announces it again. A message delivered
meanwhile (by another adapter, say) drops its retries; a closed actor arms none
and logs the failure instead.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import attrs
import pykka

from runtime import SessionMachine, Update, awaits_delivery
from runtime._state import as_own

from ._session_effects import _tell

if TYPE_CHECKING:
    from ._effects import EffectHandle
    from ._services import Services

__all__ = ["Redelivering", "SendFailed", "describe_error"]

log = logging.getLogger("amber.session")


@attrs.frozen
class SendFailed:
    """An adapter could not send one of this session's messages (told by the router)."""

    message_id: str
    """The message it failed to send."""
    adapter: pykka.ActorRef[Any]
    """The adapter: told the message again when it is retried."""
    error: Exception
    """What the adapter's ``render`` raised, for the log (its traceback when given up)."""


def describe_error(error: BaseException) -> str:
    """One line for the log: the exception's type and message."""
    return f"{type(error).__name__}: {error}"


@attrs.define
class _Redelivery:
    """A message one adapter failed to send, and how often it has failed."""

    message_id: str
    adapter: pykka.ActorRef[Any]
    failures: int


_REDELIVER = "redeliver "
"""The name prefix of the timers that try a failed send again (shell timers: the turn
machine never sees them)."""


class Redelivering:
    """``retrying`` and the retries of failed sends (mixed into ``SessionActor``)."""

    session_id: str
    _svc: Services
    _machine: SessionMachine
    _timers: dict[str, tuple[int, EffectHandle]]
    _redeliveries: dict[str, _Redelivery]
    _closed: bool

    def _set_timer(self, name: str, seconds: float) -> None:
        raise NotImplementedError

    def retrying(self) -> list[str]:
        """Ids of the messages a failed send of which waits to be tried again, sorted."""
        return sorted({self._redeliveries[name].message_id for name in self._retrying()})

    def _retrying(self) -> list[str]:
        return [name for name in self._timers if name.startswith(_REDELIVER)]

    def _send_failed(self, failed: SendFailed) -> None:
        """An adapter could not send a message: tell it the message again after a backoff
        (``Settings.delivery_retries`` times), then leave it undelivered until the session
        is next loaded, which announces it again. A closed actor (stopped, passivated) arms
        no retry: nothing would cancel it."""
        what = (self.session_id, failed.adapter.actor_class.__name__, failed.message_id)
        if self._closed:
            log.error(
                "session %s: %s could not send message %s (%s); the session has stopped, so "
                "it is sent again when the session is next loaded (its next input, or a "
                "restart)",
                *what, describe_error(failed.error), exc_info=failed.error,
            )  # fmt: skip
            return
        state = self._machine.state
        if failed.message_id not in state or not awaits_delivery(state.message(failed.message_id)):
            log.debug("session %s: %s could not send message %s, delivered meanwhile", *what)
            return  # delivered meanwhile (by another adapter, say)
        name = f"{_REDELIVER}{failed.message_id} {failed.adapter.actor_urn}"
        entry = self._redeliveries.get(name)
        failures = 1 if entry is None else entry.failures + 1
        settings = self._svc.settings
        tries = settings.delivery_retries + 1
        if failures >= tries:
            self._redeliveries.pop(name, None)
            log.error(
                "session %s: %s could not send message %s, try %d of %d (%s); it is not tried "
                "again until the session is next loaded (its next input, or a restart)",
                *what, failures, tries, describe_error(failed.error), exc_info=failed.error,
            )  # fmt: skip
            return
        self._redeliveries[name] = _Redelivery(failed.message_id, failed.adapter, failures)
        delay = settings.delivery_delay(failures)
        # One line, no traceback: a platform blip a retry gets past is not an error.
        log.warning(
            "session %s: %s could not send message %s, try %d of %d (%s); trying again in %g s",
            *what, failures, tries, describe_error(failed.error), delay,
        )  # fmt: skip
        self._set_timer(name, delay)

    def _redeliver(self, name: str) -> None:
        """A retry timer fired: tell the adapter that failed the message again, if it still
        waits to be delivered."""
        entry = self._redeliveries.get(name)
        state = self._machine.state
        if entry is None or entry.message_id not in state:
            return
        message = state.message(entry.message_id)
        if not awaits_delivery(message):
            del self._redeliveries[name]
            return
        update = Update(session_id=self.session_id, seq=state.seq, message=as_own(state, message))
        _tell(entry.adapter, update)

    def _drop_redeliveries(self, message_id: str) -> None:
        """``message_id`` was delivered: no retry of it is left."""
        for name, entry in list(self._redeliveries.items()):
            if entry.message_id == message_id:
                del self._redeliveries[name]
                timer = self._timers.pop(name, None)
                if timer is not None:
                    timer[1].cancel()
