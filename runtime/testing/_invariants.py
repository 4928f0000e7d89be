"""The invariants of DESIGN §11 as reusable checks.

Each check raises ``InvariantViolation`` (an ``AssertionError``) whose message
names the invariant, the seq and the message at fault. ``check_invariants``
runs every check that applies to a timeline.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._category import category_of
from .._diff import diff
from .._history import INPUT_PHASE, phase_of, session_history
from .._lifecycle import TRANSITIONS, is_terminal
from .._message import Message, MessageType, Status
from .._state import SessionState
from .._timeline import Timeline, replay
from .._turn import TurnStatus

__all__ = [
    "InvariantViolation",
    "check_invariants",
    "check_lifecycle",
    "check_phased_order",
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
    active = [t.id for t in state.turns.values() if t.status is TurnStatus.ACTIVE]
    if len(active) > 1:
        raise _fail(2, "one active turn", state.seq, f"turns {sorted(active)} are all active")
    if (state.active_turn_id is None) != (not active):
        raise _fail(2, "one active turn", state.seq, "active_turn_id disagrees with the turns")
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
    """Check invariants 1, 2, 3, 5 and 8 over every state of ``timeline``.

    Invariant 6 (past states never change) needs references held over time;
    ``LifecycleMachine``-style tests check it by keeping states and hashes.
    Invariant 7 needs the provider views built with your options (an
    artifact store for current-turn images): call ``check_provider_view``.
    """
    check_seq(timeline)
    previous: SessionState | None = None
    for state in timeline.states():
        check_single_turn(state)
        check_tool_pairing(state)
        check_phased_order(state)
        if previous is not None:
            check_lifecycle(previous, state)
        previous = state
    check_replay(timeline)


def check_phased_order(state: SessionState, history: Sequence[Message] | None = None) -> None:
    """Invariant 8: ``session_history`` keeps the phased order inside each turn.

    Checks that the history holds every active message exactly once; that
    each turn's output is contiguous and in phase order (thought, tool call,
    tool result, final text) with the turn's inputs before it; and that turns
    follow the order their output was stored in.

    Args:
        state: the state the history was built from.
        history: the history to check; by default ``session_history(state)``.
    """
    history = session_history(state) if history is None else history
    name = "session_history keeps the phased order"
    expected = [m.id for m in state.messages if m.active]
    got = [m.id for m in history]
    if sorted(got) != sorted(expected) or len(set(got)) != len(got):
        missing = sorted(set(expected) - set(got))
        extra = sorted(set(got) - set(expected))
        raise _fail(
            8, name, state.seq,
            f"history must hold each active message once (missing {missing}, extra {extra}, "
            f"{len(got) - len(set(got))} repeated)",
        )  # fmt: skip
    last_phase: dict[str, int] = {}
    started: list[str] = []
    for message in history:
        turn_id = message.turn_id
        if turn_id is None:
            continue
        phase = phase_of(message)
        if phase == INPUT_PHASE:
            if turn_id in last_phase and last_phase[turn_id] > INPUT_PHASE:
                raise _fail(
                    8, name, state.seq,
                    f"input {message.id!r} comes after output of its turn {turn_id!r}",
                )  # fmt: skip
            continue
        if turn_id not in last_phase or last_phase[turn_id] == INPUT_PHASE:
            started.append(turn_id)
        elif started[-1] != turn_id:
            raise _fail(
                8, name, state.seq,
                f"output of turn {turn_id!r} is split by output of turn {started[-1]!r} "
                f"at message {message.id!r}",
            )  # fmt: skip
        if phase < last_phase.get(turn_id, INPUT_PHASE):
            raise _fail(
                8, name, state.seq,
                f"message {message.id!r} (phase {phase}) comes after phase "
                f"{last_phase[turn_id]} in turn {turn_id!r}",
            )  # fmt: skip
        last_phase[turn_id] = phase
    first_output: dict[str, int] = {}
    for position, message in enumerate(state.messages):
        if message.active and message.turn_id is not None and phase_of(message) != INPUT_PHASE:
            first_output.setdefault(message.turn_id, position)
    positions = [first_output[t] for t in started]
    if positions != sorted(positions):
        raise _fail(8, name, state.seq, f"turns are out of order: {started}")
