"""UI segments: one turn's output in the order it happened, for display (seed 001).

``session_history`` sorts a turn into phases; a streaming UI wants the
opposite: the interleaving as the user saw it stream (reasoning, text, a tool
call, its result, more reasoning, the reply). ``ui_segments`` reads a turn's
output in stored order and groups runs of one kind into segments. It is a
display projection: the messages are not changed, and segments are not a
stored format.

A tool call's segment carries the state of the call (running, done, failed,
interrupted), so a live channel can draw ⏳ and edit it to ✅ or ❌; the
result follows as its own segment. Inputs and nudges are not turn output a
user sees, so they are left out.
"""

from __future__ import annotations

import enum

import attrs

from ._article import type_named
from ._category import Category, category_of
from ._errors import UnknownTurn
from ._history import blocks_newest_first, order_key
from ._message import Message, Status
from ._reducer import INTERRUPTED_MARK
from ._state import SessionState
from ._turn import Turn
from ._view import arguments_json

__all__ = ["Segment", "SegmentKind", "ToolState", "ui_segments"]


class SegmentKind(enum.StrEnum):
    """What a segment shows."""

    REASONING = "reasoning"
    """The model's thoughts (one or more thought messages in a row)."""
    TEXT = "text"
    """Reply text (one or more replies in a row)."""
    TOOL_CALL = "tool_call"
    """One tool call."""
    TOOL_RESULT = "tool_result"
    """One tool result."""
    NOTICE = "notice"
    """A crash notice or a notification posted during the turn."""


class ToolState(enum.StrEnum):
    """Where a tool call is, as a UI draws it."""

    RUNNING = "running"
    """No result yet and the turn is running (⏳)."""
    DONE = "done"
    """Its result came back (✅)."""
    FAILED = "failed"
    """Its result reports an error (❌)."""
    INTERRUPTED = "interrupted"
    """Its turn ended without a result (⏹)."""


@attrs.frozen(kw_only=True)
class Segment:
    """One run of one kind of output in a turn."""

    kind: SegmentKind
    """What it shows."""
    message_ids: tuple[str, ...]
    """The messages it groups, in order."""
    text: str
    """Their text, joined by blank lines (a tool call without text shows ``name({args})``)."""
    tool_call_id: str | None = None
    """For tool calls and results: the call."""
    tool_name: str | None = None
    """For tool calls and results: the tool."""
    tool_state: ToolState | None = None
    """For tool calls: where the call is."""
    interrupted: bool = False
    """True when any of its messages was cut short by an interrupt."""
    is_error: bool = False
    """True for a failed tool result or a crash notice."""


_GROUPED = {Category.THOUGHT: SegmentKind.REASONING, Category.REPLY: SegmentKind.TEXT}
_SKIPPED = frozenset({Category.NUDGE})


def _anchor(state: SessionState, turn: Turn) -> int:
    positions = [state.index[i] for i in turn.input_ids if i in state.index]
    return min(positions) if positions else 0


def _turn_output(state: SessionState, turn: Turn) -> list[Message]:
    """The turn's active output in stored order, walking only the turn's stretch.

    Turns' outputs never interleave, so the walk starts at the turn's first
    input and stops at the first output of another turn once it has seen one
    of this turn's, or at the output of a turn that ran later.
    """
    own: list[Message] = []
    seen = False
    messages = state.messages
    anchor = _anchor(state, turn)
    for position in range(anchor, len(messages)):
        message = messages[position]
        turn_id = message.turn_id
        if turn_id is None or category_of(message).is_input:
            continue
        if turn_id == turn.id:
            seen = True
            if message.active:
                own.append(message)
            continue
        if seen:
            break
        other = state.turn(turn_id)
        if other is not None:
            # Ranked by where it started only when both turns anchor at the same input.
            other_anchor = _anchor(state, other)
            if other_anchor > anchor or (
                other_anchor == anchor and order_key(state, other) > order_key(state, turn)
            ):
                break
    return own


def _tool_state(state: SessionState, turn: Turn, call: Message) -> ToolState:
    assert call.tool_call is not None
    result_id = state.tool_results.get(call.tool_call.id)
    result = state.get(result_id) if result_id is not None else None
    if result is not None and result.active:
        return ToolState.FAILED if result.is_error else ToolState.DONE
    if turn.is_active and call.status is not Status.INTERRUPTED:
        return ToolState.RUNNING
    return ToolState.INTERRUPTED


def ui_segments(state: SessionState, turn_id: str | None = None) -> tuple[Segment, ...]:
    """The display segments of one turn, in the order its output happened.

    Args:
        state: the session state.
        turn_id: the turn; by default the active turn, or else the latest.
            A session with no turn yet has no segments.

    Raises:
        UnknownTurn: the session has no turn ``turn_id``.
        TypeError: ``state`` is not a ``SessionState``.
    """
    if not isinstance(state, SessionState):
        raise TypeError(
            f"ui_segments() takes a SessionState (got {state!r} that is "
            f"{type_named(state)}); pass timeline.head or timeline.at(seq)."
        )
    if turn_id is None:
        turn_id = state.active_turn_id or next(
            (b.turn_id for b in blocks_newest_first(state) if b.turn_id is not None), None
        )
        if turn_id is None:
            return ()
    turn = state.turn(turn_id)
    if turn is None:
        raise UnknownTurn(
            f"Session {state.session_id!r} has no turn {turn_id!r} at seq {state.seq}; "
            "pass the id of one of its turns, or None for the latest."
        )
    segments: list[Segment] = []
    for message in _turn_output(state, turn):
        category = category_of(message)
        if category in _SKIPPED:
            continue
        interrupted = message.metadata.get(INTERRUPTED_MARK) is True
        kind = _GROUPED.get(category)
        if kind is not None:
            last = segments[-1] if segments else None
            if last is not None and last.kind is kind:
                segments[-1] = attrs.evolve(
                    last,
                    message_ids=(*last.message_ids, message.id),
                    text=f"{last.text}\n\n{message.content}" if last.text else message.content,
                    interrupted=last.interrupted or interrupted,
                )
            else:
                segments.append(
                    Segment(
                        kind=kind,
                        message_ids=(message.id,),
                        text=message.content,
                        interrupted=interrupted,
                    )
                )
        elif category is Category.TOOL_CALL:
            call = message.tool_call
            assert call is not None
            text = message.content or f"{call.name}({arguments_json(call.arguments)})"
            segments.append(
                Segment(
                    kind=SegmentKind.TOOL_CALL,
                    message_ids=(message.id,),
                    text=text,
                    tool_call_id=call.id,
                    tool_name=call.name,
                    tool_state=_tool_state(state, turn, message),
                )
            )
        elif category is Category.TOOL_RESULT:
            call_message = state.get(state.tool_calls.get(message.tool_call_id or "", ""))
            name = call_message.tool_call.name if call_message and call_message.tool_call else None
            segments.append(
                Segment(
                    kind=SegmentKind.TOOL_RESULT,
                    message_ids=(message.id,),
                    text=message.content,
                    tool_call_id=message.tool_call_id,
                    tool_name=name or message.sender or None,
                    is_error=message.is_error,
                )
            )
        else:
            segments.append(
                Segment(
                    kind=SegmentKind.NOTICE,
                    message_ids=(message.id,),
                    text=message.content,
                    is_error=category is Category.CRASH_NOTICE,
                    interrupted=interrupted,
                )
            )
    return tuple(segments)
