"""``InvariantViolation``: the one error every check raises, and the names of DESIGN §11."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from .._errors import AmberError

__all__ = ["INVARIANTS", "InvariantViolation", "fail"]

INVARIANTS: Mapping[int, str] = MappingProxyType(
    {
        1: "every status change follows the lifecycle; terminal statuses never change",
        2: "at most one active turn; an input is processing iff its turn is active",
        3: "every tool result answers exactly one tool call of the same turn",
        4: "after a turn ends nothing of it is processing (or audit-running)",
        5: "event seq is gapless and increasing; replaying the log reproduces every state",
        6: "past states never change",
        7: "every provider view is valid for its API; every tool call in it is answered",
        8: "session_history keeps the phased order inside each turn",
        9: "every accepted user message reaches a final status",
        10: "audit: operation ids unique per turn and role, sequence strict, durations >= 0",
    }
)
"""DESIGN §11, by number: what each invariant says."""


class InvariantViolation(AmberError, AssertionError):
    """A DESIGN §11 invariant (or a kit contract) does not hold.

    The message reads ``Invariant N (what broke) broken at seq S: detail``;
    the same facts are attributes, for tests that assert on them.
    """

    def __init__(
        self,
        message: str,
        *,
        invariant: int | None = None,
        name: str = "",
        seq: int | None = None,
        detail: str = "",
        session_id: str | None = None,
        message_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.invariant = invariant
        """The number in DESIGN §11 (None for a contract of the kit)."""
        self.name = name
        """The rule that broke, in words."""
        self.seq = seq
        """The seq of the state or event at fault."""
        self.detail = detail
        """What was found."""
        self.session_id = session_id
        """The session, when the check knows it."""
        self.message_id = message_id
        """The message at fault, when there is one."""


def fail(
    number: int,
    name: str,
    seq: int,
    detail: str,
    *,
    session_id: str | None = None,
    message_id: str | None = None,
) -> InvariantViolation:
    """Build the violation of invariant ``number`` (the caller raises it)."""
    return InvariantViolation(
        f"Invariant {number} ({name}) broken at seq {seq}: {detail}",
        invariant=number,
        name=name,
        seq=seq,
        detail=detail,
        session_id=session_id,
        message_id=message_id,
    )
