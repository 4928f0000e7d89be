"""The invariants of DESIGN §11 as reusable checks.

Each check raises ``InvariantViolation`` (an ``AssertionError``) whose message
names the invariant, the seq and the message at fault. ``check_invariants``
runs every check that applies to a timeline.
"""

from __future__ import annotations

from .._category import category_of
from .._diff import diff
from .._lifecycle import TRANSITIONS, is_terminal
from .._message import MessageType, Status
from .._state import SessionState
from .._timeline import Timeline, replay
from .._turn import TurnStatus

__all__ = [
    "InvariantViolation",
    "check_invariants",
    "check_lifecycle",
    "check_replay",
    "check_seq",
    "check_single_turn",
    "check_tool_pairing",
]


class InvariantViolation(AssertionError):
    """A DESIGN §11 invariant does not hold."""


def _fail(number: int, name: str, seq: int, detail: str) -> InvariantViolation:
    return InvariantViolation(f"Invariant {number} ({name}) broken at seq {seq}: {detail}")


def check_lifecycle(before: SessionState, after: SessionState) -> None:
    """Invariant 1: every status change between two consecutive states is legal."""
    for change in diff(before, after).status_changes:
        message = after.message(change.message_id)
        category = category_of(message)
        old, new = change.before, change.after
        assert isinstance(old, Status)
        assert isinstance(new, Status)
        if is_terminal(category, old):
            raise _fail(
                1, "terminal statuses never change", after.seq,
                f"message {message.id!r} ({category.label}) left terminal {old} for {new}",
            )  # fmt: skip
        rule = TRANSITIONS.get((old, new))
        if rule is None or category not in rule.categories:
            raise _fail(
                1, "status changes follow the lifecycle", after.seq,
                f"message {message.id!r} ({category.label}) went {old} -> {new}",
            )  # fmt: skip


def check_single_turn(state: SessionState) -> None:
    """Invariant 2: at most one active turn; an input is processing iff its turn is active."""
    active = [t.id for t in state.turn_list() if t.status is TurnStatus.ACTIVE]
    if len(active) > 1:
        raise _fail(2, "one active turn", state.seq, f"turns {sorted(active)} are all active")
    if state.active_turn_id != (active[0] if active else None):
        raise _fail(2, "one active turn", state.seq, "active_turn disagrees with the turns")
    claimed = set(state.active_turn.input_ids) if state.active_turn else set()
    for message in state.messages:
        processing = message.status is Status.PROCESSING
        if processing != (message.id in claimed):
            raise _fail(
                2, "processing iff its turn is active", state.seq,
                f"message {message.id!r} is {message.status} and "
                + ("not " if message.id not in claimed else "")
                + "claimed by the active turn",
            )  # fmt: skip


def check_tool_pairing(state: SessionState) -> None:
    """Invariant 3: every tool result answers exactly one tool call of the same turn."""
    answered: dict[str, str] = {}
    for message in state.messages:
        if message.type is not MessageType.TOOL_RESULT:
            continue
        call_id = message.tool_call_id or ""
        if call_id in answered:
            raise _fail(
                3, "one result per call", state.seq,
                f"results {answered[call_id]!r} and {message.id!r} both answer call {call_id!r}",
            )  # fmt: skip
        answered[call_id] = message.id
        call_message_id = state.tool_calls.get(call_id)
        call = state.get(call_message_id) if call_message_id else None
        if call is None:
            raise _fail(
                3, "results answer a call", state.seq,
                f"result {message.id!r} answers unknown call {call_id!r}",
            )  # fmt: skip
        if call.turn_id != message.turn_id:
            raise _fail(
                3, "results answer a call of the same turn", state.seq,
                f"result {message.id!r} (turn {message.turn_id!r}) answers call "
                f"{call.id!r} of turn {call.turn_id!r}",
            )  # fmt: skip


def check_seq(timeline: Timeline) -> None:
    """Invariant 5, first half: event seqs are gapless and increasing."""
    expected = timeline.first_seq + 1
    for event in timeline.events():
        if event.seq != expected:
            raise _fail(5, "gapless seq", event.seq, f"expected seq {expected}")
        expected += 1


def check_replay(timeline: Timeline) -> None:
    """Invariant 5, second half: replaying the first k events gives ``timeline.at(k)``.

    Replays once and compares every state, so it costs one replay.
    """
    replayed = replay(timeline.events(), base=timeline.base)
    for seq in range(timeline.first_seq, timeline.last_seq + 1):
        if replayed.at(seq) != timeline.at(seq):
            raise _fail(5, "replay reproduces every state", seq, "replayed state differs")


def check_invariants(timeline: Timeline) -> None:
    """Check invariants 1, 2, 3 and 5 over every state of ``timeline``.

    Invariant 6 (past states never change) needs references held over time;
    ``LifecycleMachine``-style tests check it by keeping states and hashes.
    """
    check_seq(timeline)
    previous: SessionState | None = None
    for state in timeline.states():
        check_single_turn(state)
        check_tool_pairing(state)
        if previous is not None:
            check_lifecycle(previous, state)
        previous = state
    check_replay(timeline)
