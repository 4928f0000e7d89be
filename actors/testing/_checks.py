"""The ``LifecycleMachine``'s checks: what a real runtime stored, at quiet points, and liveness.

After every step the machine reads the events the runtime stored and runs
DESIGN §11 on every new state; what it finds while turns run is raised at
the next quiet point (a wait, a settle, teardown), so a failure replays at
the same step. Quiet points are events: a session's actor says it is idle,
adapters answer in mailbox order, the ledger of running calls empties. The
timeouts only name a hang; a passing run never waits them out.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, NoReturn

import hypothesis.errors
import pykka
from hypothesis.control import current_build_context

from runtime import Event, MessageAdded, SessionState, awaits_delivery, category_of
from runtime.store import Store
from runtime.testing import (
    FINAL_INPUT_STATUSES,
    DeliveryLedger,
    InvariantViolation,
    TimelineChecker,
    check_provider_views,
    check_settled,
    failure_path,
    inspect_commands,
    save_sessions,
)

from .._settings import Settings
from ._instrument import CallLedger

if TYPE_CHECKING:
    from ._observe import ObservedRuntime

__all__ = ["MachineChecks"]


class MachineChecks:
    """The checks of ``LifecycleMachine`` (a mixin: the machine sets these attributes)."""

    sessions: ClassVar[Sequence[str]]
    runtime_settings: ClassVar[Settings]
    wait_timeout: ClassVar[float]
    cancel_grace: ClassVar[float]
    stop_timeout: ClassVar[float]
    check_views: ClassVar[str]
    compare_heads: ClassVar[str]
    failures_dir: ClassVar[str | None]
    runtime: ObservedRuntime
    calls: CallLedger
    deliveries: DeliveryLedger
    accepted: dict[str, list[str]]
    violation: InvariantViolation | None
    _store: Store
    _checkers: dict[str, TimelineChecker]
    _touched: set[str]
    _dirty: set[str]
    _busy: set[str]
    _crashes: _CrashLog

    def _observe(self) -> None:
        if self.violation is not None:
            return
        try:
            self.check_now()
        except InvariantViolation as exc:
            self.violation = exc

    def _quiescent(self, session: str | None = None) -> None:
        """At a quiet point: let adapters finish, check everything, raise what was found."""
        for ref in self.runtime.gateway.adapters:
            with contextlib.suppress(pykka.ActorDeadError):
                ref.proxy().platform.get(timeout=self.wait_timeout)  # a barrier: mailbox order
        if session is not None:
            self._dirty.add(session)
        self._observe()
        if self.violation is not None:
            _raise(self.violation)
        if session is not None:
            self._check_views(session)

    def check_now(self) -> None:
        """Check every session now (what the invariant runs after each step)."""
        problems = self.calls.problems
        if problems:
            record = problems[0]
            raise InvariantViolation(
                f"Contract (a tool answers every call with a result or an error) broken by "
                f"call {record.number} of {record.what} with {record.arguments!r}: "
                f"{record.problem}",
                name="a tool answers every call with a result or an error",
                detail=record.problem or "",
            )
        dirty, self._dirty = self._dirty, set()
        sessions = [s for s in self.sessions if s in dirty or s in self._busy]
        if not sessions:
            return
        replayed: dict[str, SessionState] = {}
        fresh = self._fetch(sessions)
        for session in sessions:
            checker = self._checkers[session]
            self._check_inputs_accepted(session, fresh[session])
            head = replayed[session] = checker.feed(fresh[session])
            if self._may_change(head):
                self._busy.add(session)
            else:
                self._busy.discard(session)
            if self.compare_heads == "every":
                self._compare_head(session)
            if self.check_views == "every":
                self._check_views(session, idle=False)
        self.deliveries.check(replayed)

    def _may_change(self, head: SessionState) -> bool:
        """True while the session can change without a step: a turn, input or delivery pends."""
        if head.active_turn is not None or head.queued:
            return True
        gateway = self.runtime.gateway
        return any(gateway.expects_delivery(m) for m in head if m.active)

    def _compare_head(self, session: str) -> None:
        """Invariant 5 at the runtime: its head of ``session`` equals the replay of the log."""
        checker = self._checkers[session]
        head = self.runtime.state(session)
        while head.seq > checker.seq:  # the actor applied events we have not fetched yet
            more = self._fetch([session])[session]
            self._check_inputs_accepted(session, more)
            checker.feed(more)
        checker.compare(head, who="the runtime")

    def _fetch(self, sessions: Sequence[str]) -> dict[str, list[Event]]:
        seqs = {s: self._checkers[s].seq for s in sessions}
        return self.runtime.call_store(
            lambda store: {
                s: store.events(s, after=seqs[s]) if s in store else [] for s in sessions
            }
        )

    def _check_inputs_accepted(self, session: str, events: Sequence[Event]) -> None:
        accepted = set(self.accepted[session])
        for event in events:
            if (
                isinstance(event, MessageAdded)
                and category_of(event.message).is_input
                and event.message.id not in accepted
            ):
                detail = (
                    f"input {event.message.id!r} ({event.message.content[:40]!r}) is stored, but "
                    "the runtime never returned it as accepted (a refused input left a trace?)"
                )
                raise InvariantViolation(
                    f"Contract (refused input is never stored) broken at seq {event.seq}: {detail}",
                    name="refused input is never stored", seq=event.seq, detail=detail,
                    session_id=session, message_id=event.message.id,
                )  # fmt: skip

    def _check_views(self, session: str, *, idle: bool = True) -> None:
        if idle and self.compare_heads != "never":
            self._compare_head(session)
        if self.check_views == "never" or (self.check_views == "idle" and not idle):
            return
        settings = self.runtime_settings
        check_provider_views(
            self._checkers[session].timeline.head,
            system=settings.system_prompt,
            window=settings.window,
            artifacts=settings.artifacts,
            max_result_chars=settings.max_result_chars,
        )

    def _known(self, session: str) -> bool:
        return session in self._touched

    def _dead(self, session: str) -> InvariantViolation:
        """The session's actor died: say so, with the exception that killed it."""
        self._observe()
        if self.violation is not None:
            return self.violation
        why = self._crashes.last or "see the 'pykka' and 'amber.session' logs"
        detail = (
            f"the session actor of {session!r} died ({why}), so its inputs can never reach a "
            "final status; an exception escaped the actor (a runtime bug, or a part that broke "
            "its contract in a way the runtime does not survive)"
        )
        return InvariantViolation(
            f"Invariant 9 (every accepted user message reaches a final status) broken in "
            f"session {session!r}: {detail}",
            invariant=9, name="every accepted user message reaches a final status",
            detail=detail, session_id=session,
        )  # fmt: skip

    def _wait_idle(self, session: str, *, settled: bool) -> SessionState:
        self._observe()
        if self.violation is not None:  # no need to wait for what is broken already
            _raise(self.violation)
        dead = False
        try:
            return self.runtime.wait_idle(session, timeout=self.wait_timeout, settled=settled)
        except pykka.ActorDeadError:
            dead = True
        except TimeoutError:
            pass
        # Raised out here, with no exception context, so that Hypothesis sees one failure
        # however the stuck session showed itself (a timeout, or a dead actor).
        self._observe()  # a violation seen on the way is the likelier cause
        if self.violation is None and (dead or self._crashes.last is not None):
            _raise(self._dead(session))
        return _raise(self.violation or self._stuck(session, settled))

    def _stuck(self, session: str, settled: bool) -> InvariantViolation:
        state = self.runtime.state(session)
        running = (
            "; ".join(
                f"call {r.number} of {r.what} running for {time.monotonic() - r.started:.1f} s"
                for r in self.calls.running()
            )
            or "no tool or model call running"
        )
        turn = state.active_turn
        if turn is not None or state.queued:
            what = (
                f"turn {turn.id!r} is still active (open tool calls {sorted(turn.open_calls)})"
                if turn is not None
                else f"inputs {sorted(state.queued)} wait and no turn runs"
            )
            waiting = [
                m.id
                for m in state
                if m.id in self.accepted[session] and m.status not in FINAL_INPUT_STATUSES
            ]
            detail = (
                f"after {self.wait_timeout} s of waiting, {what}; inputs not final: {waiting}; "
                f"{running}"
            )
            number, name = 9, "every accepted user message reaches a final status"
        else:
            waiting = [f"{m.id} ({m.chatbot_id}, {m.status})" for m in state if awaits_delivery(m)]
            detail = (
                f"after {self.wait_timeout} s, outputs {waiting} are still not reported "
                "delivered by the adapters of their platforms"
            )
            number, name = 0, "adapters report every output they show or absorb delivered"
        head = f"Invariant {number} ({name})" if number else f"Contract ({name})"
        return InvariantViolation(
            f"{head} broken at seq {state.seq}: {detail}",
            invariant=number or None, name=name, seq=state.seq, detail=detail, session_id=session,
        )  # fmt: skip

    def teardown(self) -> None:
        """Check liveness (unless a step failed), stop the runtime, save a failing example."""
        failure = sys.exc_info()[1]
        failed = isinstance(failure, Exception) and not isinstance(
            failure, hypothesis.errors.UnsatisfiedAssumption
        )
        try:
            if not failed:
                try:
                    self._liveness()
                except Exception as exc:
                    self._stop()
                    self._save_failure(exc)
                    raise
            self._stop()
            if failed:
                assert failure is not None
                self._save_failure(failure)
        finally:
            logging.getLogger("pykka").removeHandler(self._crashes)
            self._discard_store()

    def _discard_store(self) -> None:
        """Close the example's store for good (the machine knows which kind it made)."""

    def _liveness(self) -> None:
        self._dirty |= self._touched
        for session in self.sessions:
            if not self._known(session):
                continue
            state = self._wait_idle(session, settled=True)
            check_settled(state, self.accepted[session])
        self._quiescent()
        for session in self.sessions:
            if self._known(session):
                self._check_views(session)
                checker = self._checkers[session]
                checker.past.check(checker.timeline)
        left = self.calls.wait_quiet(self.cancel_grace)
        if left:
            record = left[0]
            raise InvariantViolation(
                "Contract (a call ends once its turn is over, cancelled or not) broken: "
                f"call {record.number} of {record.what} with {record.arguments!r} is still "
                f"running {self.cancel_grace} s after every turn ended; a tool must return, "
                "raise or let trio.Cancelled through when its turn is interrupted",
                name="a call ends once its turn is over",
            )

    def _stop(self) -> None:
        self.runtime.stop(timeout=self.stop_timeout)

    def _save_failure(self, failure: BaseException) -> None:
        try:
            final = current_build_context().is_final
        except hypothesis.errors.InvalidArgument:
            final = True
        if not final:
            return
        sessions = [s for s in self.sessions if s in self._store]
        if not sessions:
            return
        path = failure_path(_test_name(type(self)), self.failures_dir)
        saved = save_sessions(self._store, sessions, path)
        lines = [f"Amber saved the sessions of this example in {path}; time-travel with:"]
        lines += [f"    {command}" for command in inspect_commands(saved, path)]
        failure.add_note("\n".join(lines))


def _raise(violation: BaseException) -> NoReturn:
    """Raise ``violation`` from one place with no context (one failure for Hypothesis)."""
    violation.__context__ = None
    violation.__cause__ = None
    raise violation


class _CrashLog(logging.Handler):
    """Remembers the last exception that killed an actor (pykka logs it)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.last: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            self.last = f"{type(error).__name__}: {error}"


def _test_name(machine: type) -> str:
    current = os.environ.get("PYTEST_CURRENT_TEST", "")
    if current:
        node = current.split(" ")[0]
        parts = [p for p in node.split("::")[1:] if p != "runTest"]
        if parts:
            return "-".join(parts)
    return machine.__name__
