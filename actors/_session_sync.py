"""A session actor in step with its store: each step decided, stored, and decided again
on a reloaded head when another process wrote to the session (DESIGN §10).

A mixin of ``SessionActor``. On a shared store, a front end or another worker may
store input (or an approval's decision) for the session's owner; the owner's next
append then fails with ``SeqConflict``. ``_step`` reloads the head and decides the
input again on it (up to ``_RELOADS`` times); ``resync`` does the same when told
that the store is ahead. A write of metadata alone (a stored decision) is adopted
without a reload (``_adopt``), so a running turn goes on. A tool's result whose write
met the conflict answers its call before the reload recovers the turn
(``Loaded.results``), so a call that ran is not marked as one that may have run; a
result that comes once no turn waits for it is logged, not recorded. A stop's record
that met the conflict is decided again on the reloaded head (the turn given back as in
any stop); a decision adopted during a stop's drain is left stored for the next start.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import attrs
import pykka

from runtime import (
    ApprovalGiven,
    Decision,
    Delivered,
    Input,
    Loaded,
    MetadataUpdated,
    SeqConflict,
    SessionMachine,
    Stopping,
    ToolDone,
    apply,
)
from runtime._approval import takes_decision
from runtime._decisions import stored_decision

if TYPE_CHECKING:
    from ._effects import EffectHandle
    from ._redelivery import _Redelivery
    from ._services import Services

__all__ = ["StoreSync"]

log = logging.getLogger("amber.session")

_RELOADS = 5
"""Reloads after a ``SeqConflict`` before one step gives up (each means another process
wrote to the session meanwhile)."""


class StoreSync:
    """``resync`` and the step that reloads on a ``SeqConflict`` (mixed into ``SessionActor``)."""

    session_id: str
    _svc: Services
    _machine: SessionMachine
    _runs: dict[str, EffectHandle]
    _timers: dict[str, tuple[int, EffectHandle]]
    _redeliveries: dict[str, _Redelivery]
    _closed: bool
    _stopping: bool

    def _decide(self, input: Input) -> Decision:
        raise NotImplementedError

    def resync(self) -> bool:
        """Adopt what another process stored for the session (input for this owner): if
        the store is ahead of this actor, reload the session (a running turn is recovered
        and answered again with the new input, as a local input interrupts it). True if
        it was reloaded (or, when only metadata changed, adopted: see ``_adopt``)."""
        if self._closed:
            return False
        sid = self.session_id
        stored = self._svc.store.call(lambda s: s.session(sid).seq if sid in s else 0)
        if stored.result(self._svc.settings.store_timeout) <= self._machine.state.seq:
            return False
        for _ in range(_RELOADS):
            try:
                if self._adopt():
                    return True
                break
            except SeqConflict:  # written again meanwhile: adopt that too, or reload
                continue
        self._step(Loaded(**self._svc.stamp()), reload=True)
        return True

    def _step(self, input: Input, *, reload: bool = False) -> Decision:
        """Decide, store (durable), adopt, run the commands.

        A ``SeqConflict`` means another process wrote to the session (input stored for
        this owner, DESIGN §10): the session is reloaded from the store here and
        ``input`` decided again on the head it holds. ``reload`` reloads it first.
        """
        if self._closed and not (
            isinstance(input, Stopping) or (self._stopping and isinstance(input, Delivered))
        ):
            raise pykka.ActorDeadError(f"Session actor {self.session_id!r} is closing.")
        if isinstance(input, ToolDone):
            self._say_if_dropped(input)
        held = self._held(input)  # before a reload forgets the run it answers
        draining = self._drained(held)  # and the runs a stop waits for
        if draining is None and isinstance(input, Stopping) and self._machine.run is not None:
            draining = ()  # a stop with none to wait for: a reload gives the turn back now
        for reloads in range(_RELOADS):
            try:
                return self._reload_and_decide(
                    input, reload=reload or reloads > 0, held=held, draining=draining
                )
            except SeqConflict:
                log.info("session %s was written by another process; reloading it", self.session_id)
        return self._reload_and_decide(input, reload=True, held=held, draining=draining)

    def _reload_and_decide(
        self,
        input: Input,
        *,
        reload: bool,
        held: tuple[tuple[ToolDone, float], ...],
        draining: tuple[tuple[str, float], ...] | None,
    ) -> Decision:
        if reload and not (isinstance(input, Loaded | Stopping)) and self._adopt():
            return self._decide(input)  # only metadata changed: what runs goes on
        if reload:
            # Stopping of a turn that runs here: the reload waits on for the runs the stop
            # drains (none: the turn is given back at once); no turn starts, no model is
            # called. With no turn running here, the head is only adopted.
            resume = draining is not None or not isinstance(input, Stopping)
            loaded = self._reload(resume=resume, held=held, draining=draining)
            if isinstance(input, Loaded) and loaded is not None:
                return loaded  # the reload stepped it
        return self._decide(input)

    def _adopt(self) -> bool:
        """Adopt what another process stored without a reload, if it is only metadata (a
        decision stored for this owner, ``store_decision``): a running turn goes on, and
        the decisions are taken as if given here. False (nothing adopted) if anything
        else was stored, or no turn runs here: the session is reloaded then."""
        machine = self._machine
        if machine.run is None:
            return False
        sid, seq = self.session_id, machine.state.seq
        events = self._svc.store.call(lambda s: s.events(sid, after=seq))
        new = events.result(self._svc.settings.store_timeout)
        if not new or not all(type(event) is MetadataUpdated for event in new):
            return False
        state = machine.state
        for event in new:
            state = apply(state, event)
        self._machine = attrs.evolve(machine, state=state)
        turn = state.active_turn
        given: list[ApprovalGiven] = []
        for call_id, message_id in sorted(
            (turn.awaiting_approval if turn is not None else {}).items(),
            key=lambda item: state.index[item[1]],
        ):
            message = state.message(message_id)
            decided = stored_decision(message)
            if decided is not None and takes_decision(
                self._svc.turn_settings, message, approved=decided[0]
            ):
                approved, reason, by = decided
                given.append(ApprovalGiven(
                    call_id=call_id, approved=approved, reason=reason, by=by, **self._svc.stamp()
                ))  # fmt: skip
        if given and machine.run.stopping is not None:
            # A stop drains the turn: ``decide`` takes no decision, the calls wait on.
            log.info("session %s: %d decision(s) stored from elsewhere left for the next "
                     "start (a stop is draining the turn; the calls wait on)", sid,
                     len(given))  # fmt: skip
            return True
        log.info("session %s: adopted %d metadata change(s) from elsewhere", sid, len(new))
        for approval in given:
            self._decide(approval)
        return True

    def _say_if_dropped(self, done: ToolDone) -> None:
        """Log a result that no turn here waits for (its turn ended or was given back while
        the tool ran: the call is marked may-have-run), which is not recorded."""
        run, state = self._machine.run, self._machine.state
        if run is not None and done.call_id in run.tools:
            return
        message_id = state.tool_calls.get(done.call_id)
        called = state.message(message_id).tool_call if message_id is not None else None
        if called is None or done.call_id in state.tool_results:
            return  # not a call of this session's, or reported twice
        log.warning(
            "session %s: tool call %s (%s) ended after its turn stopped waiting for it; its "
            "result is not recorded: %.200r", self.session_id, done.call_id, called.name,
            done.outcome.content,
        )  # fmt: skip

    def _held(self, input: Input) -> tuple[tuple[ToolDone, float], ...]:
        """``input`` with the start of its run, if it is the result of a tool run of the
        turn that runs here (it answers its call before a reload recovers the turn)."""
        run = self._machine.run
        if isinstance(input, ToolDone) and run is not None and input.call_id in run.tools:
            return ((input, run.tools[input.call_id]),)
        return ()

    def _drained(
        self, held: tuple[tuple[ToolDone, float], ...]
    ) -> tuple[tuple[str, float], ...] | None:
        """The runs a stop waits for (``Stopping.draining``) but those ``held`` answers, each
        with its start; None if no stop waits."""
        run = self._machine.run
        if run is None or run.stopping is None:
            return None
        answered = {done.call_id for done, _ in held}
        return tuple(item for item in sorted(run.tools.items()) if item[0] not in answered)

    def _reload(
        self,
        *,
        resume: bool = True,
        held: tuple[tuple[ToolDone, float], ...] = (),
        draining: tuple[tuple[str, float], ...] | None = None,
    ) -> Decision | None:
        """Adopt the head the store holds, as a new actor would: what ran here is cancelled
        and (with ``resume``) ``Loaded`` recovers the turn it left (this runner's own: at
        once), after recording the results ``held`` (``Loaded.results``). ``draining``: the
        runs a stop waits for, which run on, and the turn waits on for them
        (``Loaded.draining``)."""
        kept = {call_id for call_id, _ in draining or ()}
        for run_id, handle in list(self._runs.items()):
            if run_id not in kept:
                handle.cancel()
                del self._runs[run_id]
        for _, handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        self._redeliveries.clear()  # a resumed load announces undelivered output again
        sid = self.session_id
        state = self._svc.store.call(lambda s: s.load_state(sid))
        cancelled = self._machine.cancelled  # callers who gave up stay given up
        self._machine = SessionMachine.load(state.result(self._svc.settings.store_timeout))
        loaded = Loaded(  # written elsewhere
            foreign_write=True,
            results=held,
            draining=draining,
            cancelled=cancelled,
            **self._svc.stamp(),
        )
        return self._decide(loaded) if resume else None
