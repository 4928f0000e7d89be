"""The session actor: the imperative shell around the turn machine (DESIGN §7).

One actor per live session is its single writer. Everything it is told (an
input, a chunk, a tool's result, a timer, a delivery) becomes a machine
input stamped with its time; ``runtime.step`` decides; the actor stores the
decision's events (durable before anything else happens), adopts the next
machine state and runs the commands: model calls and tool runs go to the
trio effects loop, announcements and deltas to the publisher, timers to the
loop. What a turn does is decided in ``runtime``; nothing here decides it.

Beside it: ``_session_sync`` (``StoreSync``: a step decided again on a reloaded
head when another process wrote to the session), ``_redelivery``
(``Redelivering``: failed sends tried again) and ``_session_effects`` (what the
effects loop tells the actor: a model's answer, its timers).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import pykka
import trio
from pykka import ThreadingFuture

from runtime import (
    Announce,
    ApprovalDecided,
    ApprovalGiven,
    CallModel,
    CancelRun,
    ClearTimer,
    Command,
    Decision,
    Delivered,
    Draft,
    Input,
    InputArrived,
    Interrupt,
    LeaseLost,
    Loaded,
    Message,
    MessageAdded,
    OutputPosted,
    Passivate,
    Resume,
    ResumeSoon,
    RunnerFailed,
    RunTool,
    SessionMachine,
    SessionState,
    SetTimer,
    Stopping,
    StreamDelta,
    TimerFired,
    ToolDone,
    Update,
    Warn,
    awaits_delivery,
    step,
)

from ._answers import STOPPED_ASK, AskInput, CancelAsk, ReplyWaiter
from ._asks import AskBook
from ._busy import busy_reasons
from ._damage import head_to_run, load_error
from ._effects import EffectHandle
from ._errors import EffectsStopped, InvalidConfig, RuntimeStopped
from ._inbox import Inbox
from ._redelivery import _REDELIVER, Redelivering, SendFailed, _Redelivery, describe_error
from ._services import Services
from ._session_effects import _model_effect, _tell, _Wake
from ._session_end import SessionEnd
from ._session_sync import StoreSync
from ._tool_actor import ToolRequest

__all__ = ["SendFailed", "SessionActor", "describe_error"]

log = logging.getLogger("amber.session")


class SessionActor(pykka.ThreadingActor, StoreSync, Redelivering, SessionEnd):
    """Owns one session: runs its turn machine, stores what it decides, runs its commands.

    Args:
        services: what the runtime shares with its sessions.
        session_id: the session.
    """

    use_daemon_thread = True  # a runtime never stopped must not keep the process alive
    actor_inbox: Inbox

    @staticmethod
    def _create_actor_inbox() -> Inbox:
        return Inbox()  # closed when the actor stops: a later put is refused, not lost

    def __init__(self, services: Services, session_id: str) -> None:
        super().__init__()
        self._svc = services
        self.session_id = session_id
        self._machine = SessionMachine.load(SessionState.empty(session_id))
        self._runs: dict[str, EffectHandle] = {}  # model run id or tool call id -> its effect
        self._timers: dict[str, tuple[int, EffectHandle]] = {}  # name -> (token, effect)
        self._token = 0
        self._waiters: list[tuple[bool, ThreadingFuture[SessionState]]] = []
        self._awaiting: set[str] = set()  # messages an adapter will report delivered
        self._asks = AskBook()  # the inputs sent with ask, by id
        self._redeliveries: dict[str, _Redelivery] = {}  # retry timer name -> failed send
        self._closed = False
        self._stopping = False  # shut down for a runtime stop: adapters' reports still apply
        self._halting = False  # a stop began: only tool results and delivery reports apply
        self._draining: ThreadingFuture[None] | None = None  # set once no drained run is left
        self._refused = False  # the store refused the stop's record (the lease was lost)

    # -- lifecycle -------------------------------------------------------------------------

    def on_start(self) -> None:
        """Load the head from the store, then recover what a dead runner left.

        If that fails (the store cannot be read, or cannot write what the load
        decides: a full disk), the actor stops at once and every call and ask
        already routed to it gets the error; the session's next call loads it again.
        On a shared store its lease is then given back, so another worker may run it.
        """
        sid = self.session_id
        timeout = self._svc.settings.store_timeout
        try:
            if self._svc.store.call(lambda s: sid in s).result(timeout):
                state = self._svc.store.call(lambda s: head_to_run(s, sid)).result(timeout)
                self._machine = SessionMachine.load(state)
            self._step(Loaded(**self._svc.stamp()))
        except Exception as exc:
            error = load_error(exc, self._svc.store.store)
            log.warning("session %s could not be loaded: %r", sid, error)
            log.debug("session %s: the load's failure", sid, exc_info=True)
            self._fail_load(error)

    def on_stop(self) -> None:
        """Take what was told behind the stop, which pykka would drop with the inbox: a
        person's input and a delivery report go to the session's next actor (as a closed
        actor's do), a send failure is logged (the adapters left the logging to the
        session).

        The inbox is closed as it is emptied: a message put after (its sender found the
        actor alive in the instant before the stop) is refused, and its sender goes on to
        the session's next actor (``Inbox``). A call queued is answered as pykka answers
        it (``ActorDeadError``), another message dropped as pykka drops it.
        """
        try:
            with contextlib.suppress(EffectsStopped):  # the effects loop may be gone already
                self._close()  # arms no retry: nothing would cancel it
        except Exception:  # logged once; the inbox is handed on all the same
            log.exception("session %s: closing the stopping actor failed", self.session_id)
        self._hand_on_inbox()

    def on_failure(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        """A told message's handling raised and pykka stopped the actor (without
        ``on_stop``; it logged the traceback): whoever waits on the session is told, what
        its inbox holds (and what is put after) goes on as on a stop, and the session's
        next message loads it again from the store."""
        log.error("session actor %s crashed; it is loaded again on its next message",
                  self.session_id)  # fmt: skip
        try:
            self._tell_gone(exc)
            self._svc.forget(self.session_id, self.actor_ref)
        finally:  # whatever raised, what the inbox holds is not lost
            self.on_stop()

    # -- asked through proxies ------------------------------------------------------------

    def state_now(self) -> SessionState:
        """The session's head state."""
        return self._machine.state

    def add_input(self, draft: Draft) -> Message:
        """Store an input (interrupting the running turn); a turn starts on the next step.

        Returns:
            The message as stored.

        Raises:
            RuntimeStopped: the runtime stops (nothing is stored).
        """
        self._refuse_if_halting("the input was not stored")
        return self._added(self._step(InputArrived(draft=draft, **self._svc.stamp())))

    def add_output(self, draft: Draft) -> Message:
        """Store a notification (or other output that needs no turn) for the user.

        Raises:
            RuntimeStopped: the runtime stops (nothing is stored).
        """
        self._refuse_if_halting("the notification was not stored")
        return self._added(self._step(OutputPosted(draft=draft, **self._svc.stamp())))

    def interrupt(self, reason: str = "interrupted by the user") -> bool:
        """Interrupt the running turn, if any; True if one was interrupted.

        Raises:
            RuntimeStopped: the runtime stops (the stop ends the turn).
        """
        self._refuse_if_halting("the turn was not interrupted; the stop ends it")
        if self._machine.run is None:
            return False
        self._step(Interrupt(reason=reason, **self._svc.stamp()))
        return True

    def when_idle(self, settled: bool = False) -> ThreadingFuture[SessionState]:
        """A future set (with the head) once no turn runs and no input waits.

        With ``settled=True`` it also waits until every message an adapter
        delivers has been reported delivered.
        """
        if self._stopping:
            raise RuntimeStopped("The runtime stopped before the session was idle.")
        if self._closed:  # it stops: the router asks the session's next actor
            raise pykka.ActorDeadError(f"Session actor {self.session_id!r} is closing.")
        future: ThreadingFuture[SessionState] = ThreadingFuture()
        self._waiters.append((settled, future))
        self._notify()
        return future

    def forget_waiter(self, future: ThreadingFuture[SessionState]) -> bool:
        """Drop a ``when_idle`` future its caller stopped waiting for (it timed out or was
        interrupted); True if it was still waiting, False if it was answered already.

        A waiter left behind would keep the session from passivating for good
        (``close_if_idle`` refuses while any waits)."""
        kept = [(settled, f) for settled, f in self._waiters if f is not future]
        dropped = len(kept) < len(self._waiters)
        self._waiters = kept
        return dropped

    def waiting_for(self, settled: bool = False) -> dict[str, str]:
        """What keeps ``when_idle(settled)`` from answering, in words (for ``IdleTimeout``):
        ``turn`` (a turn runs or waits to be recovered), ``inputs`` (inputs wait for a turn),
        ``delivery`` (output waits for an adapter's report)."""
        return busy_reasons(self._machine, self._awaiting, settled=settled)

    def is_idle(self) -> bool:
        """True when nothing runs: no turn, or one that only waits for approval."""
        return self._machine.is_quiet

    def decide(self, call_id: str, approved: bool, reason: str | None, by: str | None) -> bool:
        """Approve or deny a tool call waiting for approval; False if none waits by that id.

        Raises:
            InvalidConfig: the call approved is of a tool this runtime does not have (the
                session was loaded by a runtime other than its workers); nothing is stored.
            RuntimeStopped: the runtime stops: nothing is stored, no tool run starts.
        """
        self._refuse_if_halting("the decision was not stored; the call waits on")
        turn = self._machine.state.active_turn
        message_id = turn.awaiting_approval.get(call_id) if turn is not None else None
        if approved and message_id is not None:
            called = self._machine.state.message(message_id).tool_call
            if called is not None and called.name not in self._svc.tool_refs:
                raise InvalidConfig(
                    f"Tool call {call_id!r} of session {self.session_id!r} calls "
                    f"{called.name!r}, a tool this runtime does not have; approve it on a "
                    f"runtime made with that tool (tools=[...]), or deny it here."
                )
        stamp = self._svc.stamp()
        given = ApprovalGiven(call_id=call_id, approved=approved, reason=reason, by=by, **stamp)
        return any(isinstance(e, ApprovalDecided) for e in self._step(given).events)

    def _refuse_if_halting(self, what: str) -> None:
        """A call queued behind the stop's drain (its caller looked the actor up before the
        router closed) must not step: an input would interrupt the drained turn, an
        approval start a tool run during the stop."""
        if self._halting:
            raise RuntimeStopped(
                f"The runtime stopped while this call to session {self.session_id!r} waited "
                f"for it; {what}. Call again once a runtime runs the session."
            )

    def close_if_idle(self, seq: int) -> bool:
        """Agree to passivate if nothing happened since ``seq`` and nothing is pending (no
        ``when_idle`` caller, no ``ask`` caller waiting for a turn that waits for approval,
        no failed send waiting to be tried again)."""
        self._asks.drop_abandoned()
        if (
            self._machine.is_quiet
            and self._machine.state.seq == seq
            and not self._waiters
            and not self._asks
            and not self._retrying()
        ):
            self._close()
            return True
        return False

    def drain(self, skip: str | None = None) -> ThreadingFuture[None]:
        """Begin a runtime stop: the session takes no new work (timers, resumes), and the
        running turn's tool runs that cannot be cancelled (sync tools) run on while every
        other run is cancelled (``Stopping.draining``). Their results are stored as they
        come; then the turn gives its input back (at once, if none runs).

        ``skip``: a call not waited for (the sync tool that stops the runtime).

        Returns:
            A future set once no such run remains; ``shutdown`` ends the wait either way.
        """
        future: ThreadingFuture[None] = ThreadingFuture()
        self._halting, self._draining = True, future
        for _, handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        run, state = self._machine.run, self._machine.state
        if run is not None and not self._closed:
            drained = self._svc.drained_tools
            running = []
            for call_id in run.tools:
                called = state.message(state.tool_calls[call_id]).tool_call
                if called is not None and called.name in drained and call_id != skip:
                    running.append(call_id)
            if running:
                log.info(
                    "session %s: the stop waits for tool calls %s (sync tools, which cannot "
                    "be cancelled)", self.session_id, ", ".join(sorted(running)),
                )  # fmt: skip
            # Every other run is cancelled now (with nothing to wait for, the stop is recorded
            # now): run on through the drain, an async call's result would call the model.
            self._record_stop(Stopping(draining=frozenset(running), **self._svc.stamp()))
        self._check_drained()
        return future

    def _check_drained(self) -> None:
        future, run = self._draining, self._machine.run
        if future is not None and (run is None or run.stopping is None or not run.tools):
            self._draining = None
            future.set(None)

    def shutdown(self, *, lost: bool = False) -> None:
        """Stop for a runtime shutdown: a running turn gives its input back to pending.

        ``lost``: the session's lease was taken over (whoever stops it said so in the
        log): the store refuses the write, and the new owner recovers the turn.
        """
        self._record_stop(Stopping(**self._svc.stamp()), lost=lost)
        self._close()
        self._stopping = True
        self._fail_waiters(RuntimeStopped("The runtime stopped before the session was idle."))
        self._asks.fail_all(RuntimeStopped(STOPPED_ASK))

    def _record_stop(self, stopping: Stopping, *, lost: bool = False) -> None:
        if self._refused:  # the lease was lost: said once
            return
        try:
            self._step(stopping)
        except LeaseLost as exc:
            self._refused = True
            if not lost:  # found out here: one line, no traceback (it is no bug)
                log.warning("session %s: stopped without recording it here: %s",
                            self.session_id, exc)  # fmt: skip
        except Exception:
            log.exception("session %s: could not record the stopped turn", self.session_id)

    # -- told by effects, tools, adapters and timers ---------------------------------------

    def on_receive(self, message: Any) -> Any:
        """Step the machine with a told input.

        A failure here (a store that cannot write, say) must not leave a turn
        hanging: the turn is failed if possible; if even that fails, the actor
        stops and the session is reloaded from the store on its next message.
        """
        if self._closed and not (self._stopping and isinstance(message, Delivered)):
            # A runtime stop drains the adapters before the actor stops: a report of what
            # they sent meanwhile is stored here, or a restart would send it again.
            self._pass_on(message)
            return None  # a report for a session that has shut down or passivated
        if self._halting and not isinstance(message, ToolDone | Delivered):
            # A stop waits for tool runs: their results and delivery reports still apply,
            # no other work starts (a resume would start the next turn).
            if not self._pass_on(message):
                log.debug("session %s is stopping: %s dropped", self.session_id, message)
            return None
        if isinstance(message, AskInput):
            return self._ask(message)
        if isinstance(message, CancelAsk):
            return self._cancel_ask(message.waiter)
        if isinstance(message, SendFailed):
            return self._send_failed(message)
        if isinstance(message, _Wake):
            entry = self._timers.get(message.name)
            if entry is None or entry[0] != message.token:
                return None  # replaced or cleared before it fired
            del self._timers[message.name]
            if message.name.startswith(_REDELIVER):
                return self._redeliver(message.name)
            message = TimerFired(name=message.name, **self._svc.stamp())
        if not isinstance(message, Input):
            log.warning("session %s ignores an unknown message %r", self.session_id, message)
            return None
        try:
            self._step(message)
        except Exception as exc:
            log.exception("session %s failed handling %s", self.session_id, type(message).__name__)
            try:
                self._step(RunnerFailed(reason=f"{type(exc).__name__}: {exc}", **self._svc.stamp()))
            except Exception:
                log.exception("session %s cannot go on; it stops and reloads", self.session_id)
                self._give_up(exc)
                return None
            machine = self._machine
            if machine.run is None and machine.state.active_turn is None and machine.state.queued:
                # A turn could not start (its write failed) and nothing runs to fail: no
                # step would start it again, and the input would wait for ever.
                log.warning("session %s cannot start a turn; it stops and reloads", self.session_id)
                self._give_up(exc)
        return None

    # -- the shell ---------------------------------------------------------------------------

    def _decide(self, input: Input) -> Decision:
        decision = step(self._machine, self._svc.turn_settings, input)
        if decision.events:
            self._svc.store.append(decision.events).result(self._svc.settings.store_timeout)
        self._machine = decision.machine
        for command in decision.commands:
            self._run(command)
        if self._asks and decision.events:
            # After the announcements: a stream shows a call (ToolCallStarted) before it
            # says the call waits for a person (ApprovalNeeded).
            self._asks.decided(decision.events, self._machine.state)
        self._notify()
        if self._draining is not None:
            self._check_drained()
        return decision

    def _ask(self, ask: AskInput) -> None:
        try:
            message = self._added(self._step(InputArrived(draft=ask.draft, **self._svc.stamp())))
        except Exception as exc:
            ask.waiter.fail(exc)
            return
        self._asks.add(message.id, ask.waiter)
        ask.waiter.stored(message)
        if ask.waiter.cancelled:
            self._cancel_ask(ask.waiter)

    def _cancel_ask(self, waiter: ReplyWaiter) -> None:
        """The caller stopped waiting: interrupt the turn that claims its input (or the one
        that will), unless the input has its answer already."""
        message = waiter.message
        if message is None:
            waiter.cancelled = True  # interrupted once stored
            return
        if waiter.done or message.id not in self._asks:
            return
        reason = "interrupted: the caller stopped waiting for the answer"
        self._step(Interrupt(reason=reason, input_id=message.id, **self._svc.stamp()))

    def _added(self, decision: Decision) -> Message:
        event = decision.events[0]
        assert isinstance(event, MessageAdded)
        return self._machine.state.message(event.message.id)

    def _run(self, command: Command) -> None:
        svc = self._svc
        if isinstance(command, Announce):
            self._announce(command.update)
            if self._asks:
                self._asks.settle(command.update, self._machine.state)
        elif isinstance(command, StreamDelta):
            svc.publisher.delta(command.delta)
            if self._asks:
                self._asks.stream(command.delta)
        elif isinstance(command, CallModel):
            effect = _model_effect(svc.model, command.request, self.actor_ref, command.run_id, svc)
            name = f"model {self.session_id}/{command.run_id}"
            self._runs[command.run_id] = svc.effects.submit(effect, name=name)
        elif isinstance(command, RunTool):
            tool_run = svc.effects.handle(f"tool {command.name} {command.call_id}")
            self._runs[command.call_id] = tool_run
            request = ToolRequest(
                session_id=self.session_id,
                call_id=command.call_id,
                arguments=command.arguments,
                reply_to=self.actor_ref,
                handle=tool_run,
                stamp=svc.stamp,
            )
            svc.tool_refs[command.name].tell(request)
        elif isinstance(command, CancelRun):
            handle = self._runs.pop(command.run_id, None)
            if handle is not None:
                handle.cancel()
        elif isinstance(command, SetTimer):
            self._set_timer(command.name, command.seconds)
        elif isinstance(command, ClearTimer):
            entry = self._timers.pop(command.name, None)
            if entry is not None:
                entry[1].cancel()
        elif isinstance(command, ResumeSoon):
            self.actor_ref.tell(Resume(**svc.stamp()))
        elif isinstance(command, Passivate):
            if not self._closed:
                svc.passivate(self.session_id, self.actor_ref, command.seq)
        elif isinstance(command, Warn):
            log.warning("%s", command.text, extra={"amber_turn_id": command.turn_id})

    def _announce(self, update: Update) -> None:
        message = update.message
        if not awaits_delivery(message):
            self._awaiting.discard(message.id)
            if self._redeliveries:
                self._drop_redeliveries(message.id)
        elif update.is_new and self._svc.publisher.expects_delivery(message):
            self._awaiting.add(message.id)
        self._svc.publisher.publish(update)

    def _set_timer(self, name: str, seconds: float) -> None:
        old = self._timers.pop(name, None)
        if old is not None:
            old[1].cancel()
        self._token += 1
        wake = _Wake(name, self._token)
        ref = self.actor_ref

        async def sleep_then_tell() -> None:
            await trio.sleep(seconds)
            _tell(ref, wake)

        handle = self._svc.effects.submit(sleep_then_tell, name=f"timer {name} {self.session_id}")
        self._timers[name] = (self._token, handle)

    def _close(self) -> None:
        self._closed = True
        for _, handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        self._redeliveries.clear()

    def _fail_waiters(self, error: Exception) -> None:
        """Every ``when_idle`` caller gets ``error`` (the actor stops)."""
        waiters, self._waiters = self._waiters, []
        for _, future in waiters:
            future.set_exception((type(error), error, None))

    def _notify(self) -> None:
        if not self._waiters or not self._machine.is_quiet:
            return
        state = self._machine.state
        keep: list[tuple[bool, ThreadingFuture[SessionState]]] = []
        for settled, future in self._waiters:
            if settled and self._awaiting:
                keep.append((settled, future))
            else:
                future.set(state)
        self._waiters = keep
