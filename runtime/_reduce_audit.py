"""The reducer's model-call audit events: a call started, finished, closed with its turn."""

from __future__ import annotations

from typing import Any

from ._audit import AUDIT_CLOSED_BY, AuditRow, AuditStatus, operation_key
from ._errors import (
    AuditConflict,
    TurnConflict,
)
from ._events import (
    ModelCallFinished,
    ModelCallStarted,
    OrphanRecovered,
    TurnEnded,
)
from ._replace import replace
from ._state import SessionState

__all__ = ["close_audit", "model_call_finished", "model_call_started"]


def close_audit(
    state: SessionState, event: TurnEnded | OrphanRecovered, how: str
) -> dict[str, Any]:
    """Close the turn's running audit rows (seed 003's terminal reconcile)."""
    if not state.audit_running:
        return {}
    status = AUDIT_CLOSED_BY[how]
    audit = state.audit
    vector = state.audit_rows.evolver()
    why = {
        "error": "its turn ended with an error",
        "interrupted": "its turn was interrupted",
        "processed": "its turn ended without the call finishing",
        "recovered": "its turn's runner died",
    }[how]
    for key in state.audit_running:
        row = audit[key]
        closed = replace(
            row, status=status, finished_at=event.at, ended_seq=event.seq, error=event.reason or why
        )
        audit = audit.set(key, closed)
        if 0 <= closed.sequence - 1 < len(vector):  # sequences are positions (state checks)
            vector[closed.sequence - 1] = closed
    return {"audit": audit, "audit_running": (), "audit_rows": vector.persistent()}


def model_call_started(state: SessionState, event: ModelCallStarted) -> SessionState:
    turn = state.active_turn
    if turn is None or turn.id != event.turn_id:
        where = f"turn {turn.id!r} is active" if turn else "no turn is active"
        raise TurnConflict(
            f"ModelCallStarted seq {event.seq} names turn {event.turn_id!r} but {where}; a model "
            "call starts inside its running turn."
        )
    row = state.audit.get(event.source_key)
    if row is not None:
        if (row.operation_id, row.sequence, row.turn_id, row.role) == (
            event.operation_id,
            event.sequence,
            event.turn_id,
            event.role,
        ):
            return replace(state, seq=event.seq, updated_at=event.at)  # a replayed start
        raise AuditConflict(
            f"ModelCallStarted seq {event.seq} starts call {event.source_key!r} as operation "
            f"{event.operation_id!r} #{event.sequence}, but that call already started as "
            f"operation {row.operation_id!r} #{row.sequence}; one call has one operation id and "
            "one sequence."
        )
    op_key = operation_key(event.turn_id, event.role, event.operation_id)
    other_key = state.audit_ops.get(op_key)
    if other_key is not None:
        raise AuditConflict(
            f"ModelCallStarted seq {event.seq}: operation {event.operation_id!r} is already call "
            f"{other_key!r} of turn {event.turn_id!r} ({event.role}); operation ids are unique "
            "per turn and role."
        )
    expected = len(state.audit) + 1
    if event.sequence != expected:
        raise AuditConflict(
            f"ModelCallStarted seq {event.seq} has sequence {event.sequence} but the session's "
            f"next model call is #{expected}; sequences are strict and gapless."
        )
    row = AuditRow(
        operation_id=event.operation_id,
        source_key=event.source_key,
        turn_id=event.turn_id,
        role=event.role,
        sequence=event.sequence,
        status=AuditStatus.RUNNING,
        started_at=event.at if event.started_at is None else event.started_at,
        started_seq=event.seq,
        model=event.model,
        request=event.request,
    )
    return replace(
        state,
        seq=event.seq,
        updated_at=event.at,
        audit=state.audit.set(row.source_key, row),
        audit_ops=state.audit_ops.set(op_key, row.source_key),
        audit_running=(*state.audit_running, row.source_key),
        audit_rows=state.audit_rows.append(row),
    )


def _finished_row(state: SessionState, event: ModelCallFinished) -> AuditRow:
    """The row a finish names: by source key, else the active turn's row with its operation id."""
    if event.source_key is not None:
        row = state.audit.get(event.source_key)
        if row is None:
            raise AuditConflict(
                f"ModelCallFinished seq {event.seq} finishes call {event.source_key!r}, which "
                f"session {state.session_id!r} never started; start it with ModelCallStarted."
            )
        if row.operation_id != event.operation_id:
            raise AuditConflict(
                f"ModelCallFinished seq {event.seq} finishes call {event.source_key!r} as "
                f"operation {event.operation_id!r}, but it started as {row.operation_id!r}."
            )
        return row
    running = [
        state.audit[key]
        for key in state.audit_running
        if state.audit[key].operation_id == event.operation_id
    ]
    if not running:
        # A replayed finish of a row that is done: it belongs to the active turn.
        turn = state.active_turn_id
        running = [
            row
            for row in state.audit.values()
            if row.turn_id == turn and row.operation_id == event.operation_id
        ]
    if not running:
        raise AuditConflict(
            f"ModelCallFinished seq {event.seq} finishes operation {event.operation_id!r}, which "
            f"no call of the active turn of session {state.session_id!r} started; start it with "
            "ModelCallStarted."
        )
    if len(running) > 1:
        raise AuditConflict(
            f"ModelCallFinished seq {event.seq} finishes operation {event.operation_id!r}, which "
            f"calls {sorted(r.source_key for r in running)} share (in different roles); name the "
            "call with source_key."
        )
    return running[0]


def model_call_finished(state: SessionState, event: ModelCallFinished) -> SessionState:
    row = _finished_row(state, event)
    fields = {
        "status": event.status,
        "duration_ms": event.duration_ms,
        "usage": event.usage,
        "content": event.content,
        "reasoning": event.reasoning,
        "tool_calls": event.tool_calls,
        "stop_reason": event.stop_reason,
        "error": event.error,
        "response_model": event.response_model,
        "retries": event.retries,
        "cost_usd": event.cost_usd,
    }
    if row.status is not AuditStatus.RUNNING:
        if all(getattr(row, name) == value for name, value in fields.items()):
            return replace(state, seq=event.seq, updated_at=event.at)  # a replayed finish
        raise AuditConflict(
            f"ModelCallFinished seq {event.seq} finishes operation {event.operation_id!r} as "
            f"{event.status}, but it is {row.status} already (since seq {row.ended_seq}); a "
            "finished model call never changes."
        )
    done = replace(row, finished_at=event.at, ended_seq=event.seq, **fields)
    return replace(
        state,
        seq=event.seq,
        updated_at=event.at,
        audit=state.audit.set(row.source_key, done),
        audit_running=tuple(k for k in state.audit_running if k != row.source_key),
        audit_rows=(
            state.audit_rows.set(done.sequence - 1, done)
            if 0 <= done.sequence - 1 < len(state.audit_rows)
            else state.audit_rows
        ),
    )
