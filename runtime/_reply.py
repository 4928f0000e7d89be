"""``Reply``: what a turn answered an input, as one value (``Runtime.ask`` returns it).

``reply_of(state, input_id)`` reads it from a state in which the input has
reached a final status: the turn that claimed it, how that turn ended (and,
for people, why), its reply text, every message it made, its metrics and its
model calls. It walks only the turn's own messages (from the end of the
session back to the turn's start), so its cost does not grow with history.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from ._audit import AuditRow
from ._category import Category, category_of
from ._errors import UnknownMessage
from ._events import TurnOutcome
from ._message import Message, Status
from ._reducer import INTERRUPTED_MARK
from ._state import SessionState

__all__ = ["FINAL_INPUT", "Reply", "reply_of"]

FINAL_INPUT = frozenset({Status.PROCESSED, Status.INTERRUPTED, Status.ERROR})
"""The statuses that end an input (the ones a ``Reply`` is made at)."""


@attrs.frozen(kw_only=True)
class Reply:
    """A turn's answer to an input."""

    session_id: str
    """The session."""
    input: Message
    """The input, as it ended (its status is the outcome)."""
    turn_id: str
    """The turn that claimed it."""
    outcome: TurnOutcome
    """``processed``, ``interrupted`` or ``error``."""
    text: str
    """The reply text (empty when the turn was interrupted or failed; see ``partial``)."""
    reason: str | None
    """Why the turn did not answer, for people: the crash notice the user was shown, or
    what interrupted it. None when it answered."""
    detail: str | None
    """Why, for developers (the turn's recorded reason: the model's error, the limit hit);
    the same is in the log and the model-call audit."""
    partial: str
    """Reply text streamed before an interrupt or failure cut it short."""
    messages: tuple[Message, ...]
    """Everything the turn made, in order (thoughts, tool calls and results, the reply or
    the crash notice)."""
    metrics: Mapping[str, Any]
    """The turn's metrics (tool calls, tokens, time …)."""
    model_calls: tuple[AuditRow, ...]
    """The turn's model calls (audit rows), in order."""
    seq: int
    """The seq of the state the reply was read from."""

    @property
    def ok(self) -> bool:
        """True when the turn answered (``processed``)."""
        return self.outcome is TurnOutcome.PROCESSED


def reply_of(state: SessionState, input_id: str) -> Reply:
    """The reply to input ``input_id``, read from ``state``.

    Raises:
        UnknownMessage: the session has no such message.
        ValueError: the input has not reached a final status yet.
    """
    message = state.message(input_id)
    if message.status not in FINAL_INPUT or message.turn_id is None:
        raise ValueError(
            f"Input {input_id!r} is {message.status}: it has no reply until its turn ends "
            "(processed, interrupted or error)."
        )
    turn = state.turn(message.turn_id)
    if turn is None:  # pragma: no cover - the reducer keeps every turn
        raise UnknownMessage(f"Session {state.session_id!r} has no turn {message.turn_id!r}.")
    # What the turn made comes after its inputs (a turn starts once its input is in).
    # Positions, not seqs: a fork's inherited messages and turns keep their source's seqs.
    messages, index = state.messages, state.index
    start = min((index[i] for i in turn.input_ids if i in index), default=index[input_id])
    made = [
        item
        for item in (messages[p] for p in range(start + 1, len(messages)))
        if item.turn_id == turn.id and not category_of(item).is_input
    ]
    outcome = TurnOutcome(turn.status.value)
    text = partial = ""
    notice: str | None = None
    for item in made:
        category = category_of(item)
        if category is Category.REPLY:
            if item.metadata.get(INTERRUPTED_MARK):
                partial = item.content
            else:
                text = item.content
        elif category is Category.CRASH_NOTICE:
            notice = item.content
    if outcome is TurnOutcome.PROCESSED:
        reason = None
    elif outcome is TurnOutcome.ERROR:
        reason = notice or "Something went wrong; please try again."
        text = ""
    else:
        reason = _interrupted(turn.reason)
        text = ""
    return Reply(
        session_id=state.session_id,
        input=message,
        turn_id=turn.id,
        outcome=outcome,
        text=text,
        reason=reason,
        detail=turn.reason,
        partial=partial,
        messages=tuple(made),
        metrics=dict(turn.metrics),
        model_calls=state.model_calls(turn.id),
        seq=state.seq,
    )


def _interrupted(reason: str | None) -> str:
    if reason is None:
        return "Interrupted."
    if reason.startswith("interrupted by msg_"):
        return "Interrupted by a newer message."
    return reason[0].upper() + reason[1:] + ("" if reason.endswith(".") else ".")
