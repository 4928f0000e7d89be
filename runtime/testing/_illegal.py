"""Events a session must refuse: ``illegal_events`` and ``mixed_session_events``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import attrs
from hypothesis import strategies as st

from .._article import article
from .._category import Category, category_of, new_message
from .._errors import EventRejected
from .._events import (
    Event,
    MessageAdded,
    MetadataUpdated,
    OrphanRecovered,
    RolledBack,
    StatusChanged,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
)
from .._lifecycle import TRANSITIONS
from .._message import Status, ToolCall
from .._reducer import apply
from .._state import SessionState
from ._strategies import EPOCH, session_events

__all__ = ["IllegalEvent", "illegal_events", "mixed_session_events"]


@attrs.frozen(kw_only=True)
class IllegalEvent:
    """An event the reducer (and so every store) must refuse, and why."""

    event: Event
    """The event."""
    kind: str
    """What makes it illegal (``seq_gap``, ``status_conflict``, ``illegal_transition`` …)."""
    error: type[EventRejected]
    """The ``EventRejected`` subclass ``apply`` raises for it."""


def _candidates(state: SessionState, draw: st.DrawFn) -> list[tuple[str, Event]]:
    sid = state.session_id
    at = (state.updated_at or EPOCH) + timedelta(seconds=1)
    nxt: dict[str, Any] = {"session_id": sid, "seq": state.seq + 1, "at": at}
    turn = state.active_turn
    fresh = f"msg_illegal_{state.seq + 1}"
    question = new_message(
        Category.USER_QUESTION, id=fresh, session_id=sid, created_at=at, content="hi",
        sender="Chii",
    )  # fmt: skip
    out: list[tuple[str, Event]] = [
        ("seq_gap", TurnStarted(session_id=sid, seq=state.seq + 2, at=at, turn_id="t_gap")),
        ("foreign", MessageAdded(**{**nxt, "session_id": sid + "_other"}, message=question)),
        ("unknown_message", StatusChanged(
            **nxt, message_id="msg_nobody", expected=Status.PENDING, status=Status.DELIVERED
        )),
        ("unknown_message", MetadataUpdated(**nxt, message_id="msg_nobody", metadata={"a": 1})),
        ("wrong_initial_status", MessageAdded(
            **nxt, message=attrs.evolve(question, status=Status.PROCESSED)
        )),
        ("output_outside_its_turn", MessageAdded(**nxt, message=new_message(
            Category.THOUGHT, id=fresh, session_id=sid, created_at=at, content="hm",
            turn_id="turn_elsewhere",
        ))),
        ("unmatched_tool_result", MessageAdded(**nxt, message=new_message(
            Category.TOOL_RESULT, id=fresh, session_id=sid, created_at=at, content="42",
            sender="sh", tool_call_id="call_nobody", turn_id=turn.id if turn else None,
        ))),
    ]  # fmt: skip
    if state.seq > 0:
        out.append(("seq_repeat", attrs.evolve(out[0][1], seq=state.seq)))
    if state.messages:
        message = draw(st.sampled_from(list(state.messages)))
        out.append(("duplicate_message", MessageAdded(**nxt, message=attrs.evolve(
            question, id=message.id
        ))))  # fmt: skip
        wrong = draw(st.sampled_from([s for s in Status if s is not message.status]))
        out.append(("status_conflict", StatusChanged(
            **nxt, message_id=message.id, expected=wrong, status=Status.DELIVERED
        )))  # fmt: skip
        category = category_of(message)
        illegal = [
            s for s in Status
            if (rule := TRANSITIONS.get((message.status, s))) is None
            or category not in rule.categories or s is not Status.DELIVERED
        ]  # fmt: skip
        out.append(("illegal_transition", StatusChanged(
            **nxt, message_id=message.id, expected=message.status,
            status=draw(st.sampled_from(illegal)),
        )))  # fmt: skip
        out.append(("reserved_metadata", MetadataUpdated(
            **nxt, message_id=message.id, metadata={"is_cronjob": True}
        )))  # fmt: skip
    if turn is not None:
        out += [
            ("turn_conflict", TurnStarted(**nxt, turn_id=turn.id + "_again")),
            ("rollback_during_turn", RolledBack(**nxt, to_seq=0)),
            ("turn_conflict", TurnEnded(
                **nxt, turn_id=turn.id + "_other", outcome=TurnOutcome.ERROR
            )),
            ("notice_on_processed_turn", TurnEnded(
                **nxt, turn_id=turn.id, outcome=TurnOutcome.PROCESSED,
                notice=new_message(
                    Category.CRASH_NOTICE, id=fresh, session_id=sid, created_at=at,
                    content="The model call failed.", turn_id=turn.id,
                ),
            )),
        ]  # fmt: skip
        if turn.open_calls:
            out.append(("processed_with_open_calls", TurnEnded(
                **nxt, turn_id=turn.id, outcome=TurnOutcome.PROCESSED
            )))  # fmt: skip
            call_id = next(iter(turn.open_calls))
            out.append(("duplicate_tool_call_id", MessageAdded(**nxt, message=new_message(
                Category.TOOL_CALL, id=fresh, session_id=sid, created_at=at,
                tool_call=ToolCall(id=call_id, name="sh"), turn_id=turn.id,
            ))))  # fmt: skip
    else:
        out.append(("turn_conflict", OrphanRecovered(**nxt, turn_id="turn_nobody")))
        if not state.queued:
            out.append(("turn_without_input", TurnStarted(**nxt, turn_id="turn_idle")))
        out.append(("rollback_forward", RolledBack(**nxt, to_seq=state.seq + 5)))
    for call_id in list(state.tool_results)[:1]:
        out.append(("answered_twice", MessageAdded(**nxt, message=new_message(
            Category.TOOL_RESULT, id=fresh, session_id=sid, created_at=at, content="again",
            sender="sh", tool_call_id=call_id, turn_id=turn.id if turn else None,
        ))))  # fmt: skip
    return out


@st.composite
def illegal_events(draw: st.DrawFn, state: SessionState) -> IllegalEvent:
    """An event that ``apply(state, event)`` must refuse (and every store with it).

    Kinds: seq gaps and repeats, foreign sessions, unknown and duplicate
    messages, status conflicts (a stale ``expected``), illegal transitions,
    reserved metadata, output outside its turn, unmatched or repeated tool
    results, reused tool call ids, a second turn, a turn ending processed with
    open calls or with a crash notice, a rollback during a turn or forward. Each is checked against
    the reducer when drawn; ``error`` is the ``EventRejected`` it raises.
    """
    kind, event = draw(st.sampled_from(_candidates(state, draw)))
    try:
        apply(state, event)
    except EventRejected as exc:
        return IllegalEvent(event=event, kind=kind, error=type(exc))
    raise AssertionError(  # the kit's own bug: a candidate the reducer accepts
        f"illegal_events() drew {article(kind)} event the reducer accepts: {event!r}"
    )


@st.composite
def mixed_session_events(
    draw: st.DrawFn, session_id: str = "s", max_steps: int = 40, *, rich: bool = False
) -> list[Event | IllegalEvent]:
    """A legal session (as ``session_events``) with illegal events mixed in.

    The ``Event`` items, applied in order, make the legal session; each
    ``IllegalEvent`` must be refused where it stands (by ``apply``, a store's
    ``append``, a consumer of your own), leaving the state as it was.
    """
    legal = draw(session_events(session_id, max_steps, rich=rich))
    state = SessionState.empty(session_id)
    out: list[Event | IllegalEvent] = []
    for event in legal:
        if draw(st.integers(min_value=0, max_value=3)) == 0:
            out.append(draw(illegal_events(state)))
        state = apply(state, event)
        out.append(event)
    if draw(st.booleans()):
        out.append(draw(illegal_events(state)))
    return out
