"""Invariants 4 and 10 of DESIGN §11 for model-call audit rows."""

from __future__ import annotations

from .._audit import AuditStatus
from .._state import SessionState
from ._violation import InvariantViolation, fail

__all__ = ["check_audit"]


def _fail(number: int, name: str, seq: int, detail: str) -> InvariantViolation:
    return fail(number, name, seq, detail)


def check_audit(state: SessionState, previous: SessionState | None = None) -> None:
    """Invariants 4 and 10 on one state (and, given the state before, on the change).

    - 4: no audit row of an ended turn is ``running``.
    - 10: operation ids are unique per turn and role, sequences are 1, 2, 3 …
      in start order, durations are never negative, and a finished row never
      changes again.
    """
    rows = state.model_calls()
    seen: set[tuple[str, str, str]] = set()
    active = state.active_turn_id
    for position, row in enumerate(rows, start=1):
        if row.sequence != position:
            raise _fail(
                10, "audit sequence strict", state.seq,
                f"row {row.operation_id!r} has sequence {row.sequence}, expected {position}",
            )  # fmt: skip
        key = (row.turn_id, row.role, row.operation_id)
        if key in seen:
            raise _fail(
                10, "operation ids unique per turn and role", state.seq,
                f"operation {row.operation_id!r} appears twice in turn {row.turn_id!r}",
            )  # fmt: skip
        seen.add(key)
        if row.duration_ms is not None and row.duration_ms < 0:
            raise _fail(
                10, "durations are not negative", state.seq,
                f"row {row.operation_id!r} lasted {row.duration_ms} ms",
            )  # fmt: skip
        if row.status is AuditStatus.RUNNING and row.turn_id != active:
            raise _fail(
                4, "nothing of an ended turn is running", state.seq,
                f"audit row {row.operation_id!r} of turn {row.turn_id!r} is still running",
            )  # fmt: skip
    if previous is None:
        return
    for row in previous.model_calls():
        if row.status is AuditStatus.RUNNING:
            continue
        now = state.audit.get(row.source_key)
        if now != row:
            raise _fail(
                10, "finished rows never change", state.seq,
                f"row {row.operation_id!r} was {row.status} at seq {previous.seq} and changed",
            )  # fmt: skip
