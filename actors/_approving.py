"""Human approval of tool calls: ``approve``, ``deny`` and ``pending_approvals``.

A mixin of ``Runtime``. A tool made with ``tool(approval=True)`` does not run
when the model calls it: its call is recorded, ``ApprovalRequested`` says it
waits, and the turn waits with nothing in flight (no thread blocked; the
session may be passivated and the runtime restarted meanwhile). ``approve``
runs it; ``deny`` gives the model an error result saying it was denied and
why; a new message interrupts the turn as usual; ``Settings.approval_timeout``
denies a call no one answered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from runtime import InvalidInput, Message, SessionState

from ._drafts import session_id_of
from ._errors import NotAwaitingApproval, OwnedElsewhere

if TYPE_CHECKING:
    from ._router import Router
    from ._settings import Settings

__all__ = ["Approving"]


class Approving:
    """``approve``, ``deny`` and ``pending_approvals`` (mixed into ``Runtime``)."""

    router: Router
    settings: Settings

    def state(self, session_id: str) -> SessionState:
        raise NotImplementedError

    def approve(self, session_id: str, call_id: str, *, by: str | None = None) -> None:
        """Let a tool call that waits for approval run.

        Raises:
            InvalidInput: ``call_id`` is not a non-empty str, or ``by`` not a str or None.
            NotAwaitingApproval: no call of that id waits (it was decided, or its
                turn ended).
            OwnedElsewhere: another worker runs the session (PostgreSQL); decide there.
            InvalidConfig: the call is of a tool this runtime does not have.
        """
        _check_decision("approve", call_id, None, by)
        self._decide(session_id, call_id, True, None, by)

    def deny(
        self, session_id: str, call_id: str, reason: str | None = None, *, by: str | None = None
    ) -> None:
        """Refuse a tool call that waits for approval: the model gets an error result saying
        it was denied (and ``reason``), and goes on.

        Raises:
            InvalidInput: ``call_id`` is not a non-empty str, or ``reason`` or ``by``
                not a str or None.
            NotAwaitingApproval: no call of that id waits.
            OwnedElsewhere: another worker runs the session (PostgreSQL); decide there.
        """
        _check_decision("deny", call_id, reason, by)
        self._decide(session_id, call_id, False, reason, by)

    def pending_approvals(self, session_id: str) -> list[Message]:
        """The tool-call messages of ``session_id`` that wait for approval now."""
        state = self.state(session_id)
        turn = state.active_turn
        if turn is None:
            return []
        return [state.message(message_id) for message_id in turn.awaiting_approval.values()]

    def _decide(
        self, session_id: str, call_id: str, approved: bool, reason: str | None, by: str | None
    ) -> None:
        session_id = session_id_of(session_id, stored=True)  # a call to decide is stored
        try:
            decided: bool = self.router.call(
                session_id, lambda p: p.decide(call_id, approved, reason, by),
                timeout=self.settings.ask_timeout,
            )  # fmt: skip
        except OwnedElsewhere:
            raise OwnedElsewhere(
                f"Session {session_id!r} is run by another worker (it holds the session's "
                f"lease), so tool call {call_id!r} cannot be decided here: a decision is "
                "taken by the runtime that runs the session. Call approve/deny in that "
                "process, or once the session passivates (Settings.passivate_after; a turn "
                "waiting for approval lets it) and its lease is given back, from a runtime "
                "with the same tools and model (it then runs the rest of the turn). `amber "
                "worker` takes no decisions: see docs/scaling.md, 'Approvals with workers'."
            ) from None
        if not decided:
            raise NotAwaitingApproval(
                f"No tool call {call_id!r} waits for approval in session {session_id!r}; it was "
                "decided already, or its turn ended (Runtime.pending_approvals lists those that "
                "wait)."
            )


def _check_decision(verb: str, call_id: object, reason: object, by: object) -> None:
    """Refuse a decision's arguments of the wrong type before the session is asked."""
    if not isinstance(call_id, str) or not call_id:
        raise InvalidInput(
            f"{verb}() takes the tool call's id as a str (got {call_id!r} that is a "
            f"{type(call_id).__name__!r}): the id of a call that waits, like "
            "rt.pending_approvals(session)[0].tool_call.id, or ApprovalNeeded.call_id."
        )
    if reason is not None and not isinstance(reason, str):
        raise InvalidInput(
            f"{verb}() takes a reason that is a str or None (got {reason!r} that is a "
            f"{type(reason).__name__!r}); the model reads it in the denial."
        )
    if by is not None and not isinstance(by, str):
        raise InvalidInput(
            f"{verb}() takes by= as a str or None (got {by!r} that is a {type(by).__name__!r}); "
            "it names who decided, for the record."
        )
