"""Human approval of tool calls: ``approve``, ``deny`` and ``pending_approvals``.

A mixin of ``Runtime``. A tool made with ``tool(approval=True)`` does not run
when the model calls it: its call is recorded, ``ApprovalRequested`` says it
waits, and the turn waits with nothing in flight (no thread blocked; the
session may be passivated and the runtime restarted meanwhile). ``approve``
runs it; ``deny`` gives the model an error result saying it was denied and
why; a new message interrupts the turn as usual; ``Settings.approval_timeout``
denies a call no one answered.

On a shared store (PostgreSQL workers), a runtime that does not run the session
(another worker holds its lease, or this runtime lacks the tool to run) stores
the decision for the session's owner instead (``LeaseKeeper.store_decision``):
the owner, or the worker that picks the session up, takes it and goes on with
the turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime import InvalidInput, Message, SessionState, UnknownSession
from runtime._article import type_named

from ._drafts import session_id_of
from ._errors import NotAwaitingApproval, OwnedElsewhere

if TYPE_CHECKING:
    from ._leasing import LeaseKeeper
    from ._router import Router
    from ._settings import Settings

__all__ = ["Approving", "calls_waiting"]


class Approving:
    """``approve``, ``deny`` and ``pending_approvals`` (mixed into ``Runtime``)."""

    router: Router
    settings: Settings
    _keeper: LeaseKeeper | None
    _tool_refs: dict[str, Any]

    def state(self, session_id: str) -> SessionState:
        raise NotImplementedError

    def approve(self, session_id: str, call_id: str, *, by: str | None = None) -> None:
        """Let a tool call that waits for approval run.

        On a shared store, if another worker runs the session, or this runtime does not
        have the tool, the decision is stored for the worker that runs the session, which
        runs the tool and goes on with the turn.

        Raises:
            InvalidInput: ``session_id`` is not a session id, ``call_id`` not a non-empty
                str, or ``by`` not a str or None.
            UnknownSession: the store has no such session.
            NotAwaitingApproval: no call of that id waits (it was decided, or its
                turn ended), or a decision on it is stored already for its worker.
            InvalidConfig: the call is of a tool this runtime does not have, and the
                store is not shared (no other runtime could run it).
        """
        _check_decision("approve", call_id, None, by)
        self._decide(session_id, call_id, True, None, by)

    def deny(
        self, session_id: str, call_id: str, reason: str | None = None, *, by: str | None = None
    ) -> None:
        """Refuse a tool call that waits for approval: the model gets an error result saying
        it was denied (and ``reason``), and goes on.

        On a shared store, if another worker runs the session, or this runtime does not
        have the tool (it is no worker of the session: it would go on with the turn with
        other tools), the denial is stored for the worker that runs the session, which
        answers the call and goes on with the turn.

        Raises:
            InvalidInput: ``session_id`` is not a session id, ``call_id`` not a non-empty
                str, or ``reason`` or ``by`` not a str or None.
            UnknownSession: the store has no such session.
            NotAwaitingApproval: no call of that id waits, or a decision on it is stored
                already for its worker.
        """
        _check_decision("deny", call_id, reason, by)
        self._decide(session_id, call_id, False, reason, by)

    def pending_approvals(self, session_id: str) -> list[Message]:
        """The tool-call messages of ``session_id`` that wait for approval now, in the order
        the model made the calls.

        Raises:
            InvalidInput: ``session_id`` is not a session id.
            UnknownSession: the store has no such session.
        """
        return [message for _, message in calls_waiting(self.state(session_id))]

    def _decide(
        self, session_id: str, call_id: str, approved: bool, reason: str | None, by: str | None
    ) -> None:
        session_id = session_id_of(session_id, stored=True)  # a call to decide is stored
        if self.router.live(session_id) is None:
            self.state(session_id)  # UnknownSession, before an actor is made for it
        keeper = self._keeper
        # Shared store: decide here only if this runtime may run the session and has the
        # tool (it would go on with the turn); else the worker that runs the session takes
        # the decision stored for it.
        if (
            keeper is not None
            and self.router.live(session_id) is None
            and (
                not getattr(self, "run_sessions", True)  # a front end: the workers decide
                or not self._can_run(session_id, call_id)
                or not keeper.ensure(session_id)
            )
        ):
            keeper.store_decision(session_id, call_id, approved, reason, by)
            return
        try:
            decided: bool = self.router.call(
                session_id, lambda p: p.decide(call_id, approved, reason, by),
                timeout=self.settings.ask_timeout,
            )  # fmt: skip
        except OwnedElsewhere:
            if keeper is None:
                raise
            # Taken over between the claim and the call: its new owner takes it.
            keeper.store_decision(session_id, call_id, approved, reason, by)
            return
        if not decided:
            raise NotAwaitingApproval(
                f"No tool call {call_id!r} waits for approval in session {session_id!r}; it was "
                "decided already, or its turn ended (Runtime.pending_approvals lists those that "
                "wait)."
            )

    def _can_run(self, session_id: str, call_id: str) -> bool:
        """False if ``call_id`` waits in the session and calls a tool this runtime lacks."""
        try:
            state = self.state(session_id)
        except UnknownSession:
            return True  # nothing waits: the session says so when asked
        turn = state.active_turn
        message_id = turn.awaiting_approval.get(call_id) if turn is not None else None
        if message_id is None:
            return True  # nothing waits: the session says so when asked
        called = state.message(message_id).tool_call
        return called is None or called.name in self._tool_refs


def calls_waiting(state: SessionState) -> list[tuple[str, Message]]:
    """The calls of ``state``'s turn that wait for approval (call id, tool-call message), in
    the order the model made them (the turn's map of them keeps none)."""
    turn = state.active_turn
    if turn is None:
        return []
    index = state.index
    waiting = sorted(turn.awaiting_approval.items(), key=lambda item: index[item[1]])
    return [(call_id, state.message(message_id)) for call_id, message_id in waiting]


def _check_decision(verb: str, call_id: object, reason: object, by: object) -> None:
    """Refuse a decision's arguments of the wrong type before the session is asked."""
    if not isinstance(call_id, str) or not call_id:
        got = "the empty str ''" if call_id == "" else f"{call_id!r} that is {type_named(call_id)}"
        raise InvalidInput(
            f"{verb}() takes the tool call's id as a non-empty str (got {got}): the id of a "
            "call that waits, like "
            "rt.pending_approvals(session)[0].tool_call.id, or ApprovalNeeded.call_id."
        )
    if reason is not None and not isinstance(reason, str):
        raise InvalidInput(
            f"{verb}() takes a reason that is a str or None (got {reason!r} that is "
            f"{type_named(reason)}); the model reads it in the denial."
        )
    if by is not None and not isinstance(by, str):
        raise InvalidInput(
            f"{verb}() takes by= as a str or None (got {by!r} that is {type_named(by)}); "
            "it names who decided, for the record."
        )
