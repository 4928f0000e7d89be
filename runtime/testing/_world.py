"""``Simulation``: the turn machine run on simulated time, with every interleaving reachable.

A simulation holds what a real runtime holds, without threads: a store, one
``SessionMachine`` per live session, and the work in flight as *sources* of
completions (a model call's chunks and end, a tool's result, a timer, a
delivery report, a self-told ``Resume``, a passivation request). Each source
delivers in its own order, as an actor's mailbox would receive it; which
source delivers next is chosen by ``choose(n)`` among the candidates sorted
by when they are due, so ``choose = lambda n: 0`` is the natural order and
any other choice is an interleaving a loaded machine could produce (a slow
model, a tool that finishes first, a delivery that lands after the next
input, a stale chunk of a cancelled run). Time jumps to what is chosen, so
a 300 s timeout costs nothing.

After every input the machine takes, the session's new events are checked
(invariants 1 to 4, 8 and 10 through ``TimelineChecker``; the machine's head
against the replay of the stored log, invariant 5, which also catches a part
that changed the head in place), every model request's views are
checked (invariant 7), and the adapters' reports against the delivery
contract. ``settle`` runs until nothing is in flight; ``check_liveness``
then checks invariant 9 and that nothing is left running. A crash drops
everything but the store; the restart rebuilds each session from its stored
events alone and recovers it (``Loaded``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import attrs

from .. import (
    ApprovalDecided,
    ApprovalGiven,
    AuditStatus,
    Category,
    Draft,
    Interrupt,
    InvalidArgument,
    Message,
    MessageAdded,
    OutputPosted,
    Stopping,
    UserInput,
)
from .._article import type_named
from .._storable import shown
from ._invariants import check_settled
from ._plans import TurnPlan
from ._simshell import EPOCH, SimShell, _Key
from ._violation import InvariantViolation, fail

__all__ = ["EPOCH", "Simulation"]


class Simulation(SimShell):
    """A runtime without threads: sessions, parts and the store, on simulated time.

    Args:
        model: answers model calls (``respond(request) -> Response``).
        tools: the tools (``FakeTool``s, or real tools bridged by ``actors.testing``).
        adapters: the adapters (``FakeChannel``s, or bridged real ones).
        settings: the turn machine's settings; its ``tools`` are filled from ``tools``.
        store: where events are stored (a fresh ``MemoryStore`` by default).
        choose: picks the next completion: ``choose(n)`` returns 0 … n-1 (0: the
            earliest due); the default is the natural order.
        freeze_time: stamp every input at ``EPOCH`` and monotonic 0 (what a
            runtime with a frozen clock sees), whatever the simulated time.
        check_views: check invariant 7 on every model request's state.
        isolate: store (and check) copies of the events made through JSON, as a
            durable store would keep them.
        max_events: completions ``settle`` takes before it calls it a livelock.
    """

    # -- what a person or the embedding program does --------------------------------------

    def send(
        self,
        session_id: str,
        text: str | UserInput,
        *,
        plan: TurnPlan | None = None,
        plan_key: str | None = None,
        channel: str = "sim",
        sender: str = "user",
    ) -> Message:
        """A person's message (validated as ``Runtime.send`` does); returns it as stored.

        Raises:
            InvalidInput: it breaks a rule; nothing was stored.
        """
        if isinstance(text, str):
            user_input = UserInput(text=text, sender=sender, chatbot_id=channel)
        elif isinstance(text, UserInput):
            user_input = text
        else:
            raise InvalidArgument(
                "Simulation.send() takes the text (a str) or a UserInput; got "
                f"{shown(text)} that is {type_named(text)}."
            )
        metadata = self._plan("send", plan, plan_key)
        if metadata:
            user_input = attrs.evolve(
                user_input, metadata={**dict(user_input.metadata), **metadata}
            )
        checked = user_input.to_message(id="msg_check", session_id=session_id, created_at=EPOCH)
        return self._arrive(session_id, Draft.of(checked))

    def post(
        self,
        session_id: str,
        category: Category,
        content: str,
        *,
        channel: str = "sim",
        plan: TurnPlan | None = None,
    ) -> Message:
        """A cron prompt, compaction request or alert (a turn), or a notification (none).

        Raises:
            InvalidArgument: ``category`` is not one of those, or ``plan`` is not
                a ``TurnPlan`` the model can follow; nothing was stored.
        """
        if not isinstance(category, Category):
            raise InvalidArgument(
                "Simulation.post() takes a Category (like Category.CRON_PROMPT); got "
                f"{shown(category)} that is {type_named(category)}."
            )
        if not (category.is_input or category is Category.NOTIFICATION):  # as Runtime.post
            raise InvalidArgument(
                "Simulation.post() takes cron prompts, compaction requests, background alerts "
                f"and notifications; a {category.label} is made by a turn, not posted."
            )
        draft = Draft(
            category=category,
            content=content,
            chatbot_id=channel,
            metadata=self._plan("post", plan),
        )
        if category is Category.NOTIFICATION:
            decision = self._step(session_id, OutputPosted(draft=draft, **self._stamp()))
            event = decision.events[0]
            assert isinstance(event, MessageAdded)
            return self.machines[session_id].state.message(event.message.id)
        return self._arrive(session_id, draft)

    def interrupt(self, session_id: str, reason: str = "interrupted by the user") -> bool:
        """Interrupt the session's running turn; True if there was one."""
        machine = self.machines.get(session_id)
        if machine is None or machine.run is None:
            return False
        self._step(session_id, Interrupt(reason=reason, **self._stamp()))
        return True

    def approvals(self, session_id: str) -> list[str]:
        """The tool calls of ``session_id`` waiting for approval now."""
        turn = self.head(session_id).active_turn
        return sorted(turn.awaiting_approval) if turn is not None else []

    def decide(
        self, session_id: str, call_id: str, approved: bool, reason: str | None = None
    ) -> bool:
        """A person approves or denies a waiting call; False if it does not wait."""
        stamp = self._stamp()
        given = ApprovalGiven(call_id=call_id, approved=approved, reason=reason, by="tester",
                              **stamp)  # fmt: skip
        decision = self._step(session_id, given)
        return any(isinstance(e, ApprovalDecided) for e in decision.events)

    def crash(self) -> None:
        """The process dies: everything but the store is lost; then a new runner starts."""
        self.machines.clear()
        self._sources.clear()
        self.running_tools.clear()
        self._restart()

    def stop(self, *, drain: bool = False) -> None:
        """A clean stop (running turns give their input back), then a new runner starts.

        With ``drain`` (what ``Runtime.stop`` does) the running calls of tools that cannot
        be cancelled (a tool whose ``cancellable`` is False or missing: a sync tool) go on,
        and each result on its way comes in before the turn gives its input back; a call
        that never returns is cut when the drain ends. The calls of cancellable tools (an
        async tool's) are cut at once, results on their way or not; a turn with no call
        to wait for gives its input back at once.
        """
        for session_id in sorted(self.machines):
            if drain:
                running = self._undrainable(session_id)
                results = sorted(k for k in self._sources if k[:2] == ("tool", session_id))
                self._step(session_id, Stopping(draining=running, **self._stamp()))
                for key in results:
                    while key[2] in running and key in self._sources:
                        self._deliver(key)
            self._step(session_id, Stopping(**self._stamp()))
        self.crash()

    def _undrainable(self, session_id: str) -> set[str]:
        """The session's running tool calls a stop waits for: those of tools that cannot be
        cancelled (as ``SessionActor.drain`` picks them)."""
        machine = self.machines[session_id]
        run, state = machine.run, machine.state
        running: set[str] = set()
        for call_id in run.tools if run is not None else ():
            called = state.message(state.tool_calls[call_id]).tool_call
            tool = self.tools.get(called.name) if called is not None else None
            if tool is not None and not getattr(tool, "cancellable", False):
                running.add(call_id)
        return running

    # -- time ------------------------------------------------------------------------------

    def pending(self) -> list[tuple[float, _Key]]:
        """What can happen next, in the order ``choose`` indexes it: (due, source)."""
        return [(due, key) for due, _, key in self._candidates()]

    def run(self, choices: Iterable[int]) -> int:
        """Deliver one completion per choice (each taken modulo the candidates); returns how
        many were delivered (fewer when nothing is left)."""
        done = 0
        for choice in choices:
            candidates = self._candidates()
            if not candidates:
                break
            self._deliver(candidates[choice % len(candidates)][2])
            done += 1
        return done

    def run_until(self, done: Callable[[Simulation], bool]) -> None:
        """Deliver completions (``choose`` picking) until ``done(self)`` holds.

        Raises:
            InvariantViolation: a check failed, or it never held while
                anything was in flight (a scenario that waits for the impossible).
        """
        for _ in range(self.max_events):
            if done(self):
                return
            candidates = self._candidates()
            if not candidates:
                break
            self._deliver(candidates[self.choose(len(candidates)) % len(candidates)][2])
        if not done(self):
            raise InvariantViolation(
                "The simulation ran out of completions before the condition it waited for "
                "held; the scenario waits for something that cannot happen.",
                name="a scenario's wait can end",
            )

    def settle(self, *, interrupt_stuck: bool = False) -> None:
        """Deliver completions (``choose`` picking) until nothing is in flight.

        With ``interrupt_stuck``, a turn left waiting on a tool that never
        returns, or for an approval no one gives, is interrupted (a person
        giving up), and the run goes on.

        Raises:
            InvariantViolation: a check failed, or it did not settle within
                ``max_events`` completions (a livelock).
        """
        for _ in range(self.max_events):
            candidates = self._candidates()
            if not candidates:
                stuck = self._stuck() if interrupt_stuck else []
                if stuck:
                    for session_id in stuck:
                        self._machine(session_id)  # a passivated one waiting for approval
                        self.interrupt(session_id, "interrupted: the user gave up waiting")
                    continue
                return
            self._deliver(candidates[self.choose(len(candidates)) % len(candidates)][2])
        raise InvariantViolation(
            f"Invariant 9 (every accepted user message reaches a final status) broken: the "
            f"simulation did not settle after {self.max_events} completions (a livelock); still "
            f"in flight: {sorted(self._sources)[:5]}",
            invariant=9, name="every accepted user message reaches a final status",
        )  # fmt: skip

    def wait(self, session_id: str, until: Callable[[Simulation], bool] | None = None) -> None:
        """Deliver the completions of one session (``choose`` picking among them) until none
        is left: a person waits for the answer while the other sessions' work waits.

        Args:
            session_id: the session.
            until: stop as soon as it holds, even with completions left (say, once the
                session's turn runs tool calls).

        Raises:
            InvariantViolation: a check failed, or it did not settle within
                ``max_events`` completions (a livelock).
        """
        for _ in range(self.max_events):
            mine = [c for c in self._candidates() if self._sources[c[2]].session_id == session_id]
            if not mine or (until is not None and until(self)):
                return
            self._deliver(mine[self.choose(len(mine)) % len(mine)][2])
        raise InvariantViolation(
            f"Invariant 9 (every accepted user message reaches a final status) broken: session "
            f"{session_id!r} did not settle after {self.max_events} completions (a livelock)",
            invariant=9, name="every accepted user message reaches a final status",
            session_id=session_id,
        )  # fmt: skip

    def _stuck(self) -> list[str]:
        """Sessions whose turn waits with nothing in flight (live, or stored and passivated)."""
        stuck = {s for s, m in self.machines.items() if m.run is not None}
        for session_id in self.accepted:
            if session_id not in self.machines and self.head(session_id).active_turn is not None:
                stuck.add(session_id)
        return sorted(stuck)

    def check_hangs(self) -> None:
        """No turn waits on a tool call that never returns.

        Such a turn can only end when someone interrupts it, so the example cut
        short here would fail ``check_liveness``: the check holds at any step,
        and finds a hang when it starts, whatever happens to the turn later.

        Raises:
            InvariantViolation: invariant 9, naming the call, its arguments, the
                turn and its input.
        """
        for (session_id, call_id), (name, _) in sorted(self.running_tools.items()):
            state = self.head(session_id)
            turn = state.active_turn
            if turn is None or call_id not in turn.open_calls:
                continue
            call = state.message(turn.open_calls[call_id]).tool_call
            arguments = dict(call.arguments) if call is not None else {}
            inputs = ", ".join(repr(i) for i in turn.input_ids) or "none"
            raise fail(
                9, "every accepted user message reaches a final status", state.seq,
                f"tool {name!r} never returns (call {call_id!r} with {arguments!r}), so turn "
                f"{turn.id!r} and its input {inputs} can only end when someone interrupts it",
                session_id=session_id, message_id=turn.input_ids[0] if turn.input_ids else None,
            )  # fmt: skip

    def check_liveness(self, sessions: Iterable[str] | None = None) -> None:
        """After ``settle`` (or ``wait`` for ``sessions``): every accepted input final, nothing
        running, outputs delivered.

        A turn waiting on a tool call that never returns is named first (``check_hangs``).

        Args:
            sessions: the sessions to check (default: every session that accepted input).

        Raises:
            InvariantViolation: naming what is left.
        """
        self.check_hangs()
        for session_id in sorted(self.accepted if sessions is None else set(sessions)):
            if session_id not in self.accepted:
                continue
            state = self.head(session_id)
            running = [
                f"tool {name!r} running for {self.now - start:.1f} s (simulated)"
                for (sid, _), (name, start) in sorted(self.running_tools.items())
                if sid == session_id
            ]
            try:
                check_settled(state, self.accepted[session_id])
            except InvariantViolation as exc:
                detail = exc.detail + (f"; {'; '.join(running)}" if running else "")
                raise InvariantViolation(
                    str(exc) + (f"; {'; '.join(running)}" if running else ""),
                    invariant=9, name=exc.name, seq=exc.seq, detail=detail,
                    session_id=session_id, message_id=exc.message_id,
                ) from None  # fmt: skip
            open_rows = [r.operation_id for r in state.audit.values()
                         if r.status is AuditStatus.RUNNING]  # fmt: skip
            if state.active_turn is not None or open_rows:
                raise InvariantViolation(
                    f"Invariant 4 (after a turn ends nothing of it is processing or running) "
                    f"broken at seq {state.seq}: the session settled with turn "
                    f"{state.active_turn_id!r} active and audit rows {open_rows} running",
                    invariant=4, name="after a turn ends nothing of it runs", seq=state.seq,
                    session_id=session_id,
                )  # fmt: skip
            self._check_delivered(state)
