"""The invariants of DESIGN §11 as reusable checks.

Each check raises ``InvariantViolation`` (an ``AssertionError``) whose message
names the invariant, the seq and the message at fault. ``check_invariants``
runs every check that applies to a timeline; ``TimelineChecker`` runs the
same checks incrementally, for states that arrive one by one.

The model-call audit rows (DESIGN §8) are checked by ``check_audit``
(invariant 4's audit half and invariant 10), which both ``check_invariants``
and ``TimelineChecker`` run on states that carry audit rows.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence

from .._category import category_of
from .._history import INPUT_PHASE, phase_of, session_history
from .._lifecycle import TRANSITIONS, is_terminal
from .._message import Message, MessageType, Status
from .._state import SessionState
from .._timeline import Timeline, replay
from .._turn import Turn, TurnStatus
from ._violation import fail

__all__ = [
    "FINAL_INPUT_STATUSES",
    "STATE_CHECKS",
    "PastStates",
    "check_invariants",
    "check_lifecycle",
    "check_phased_order",
    "check_replay",
    "check_seq",
    "check_settled",
    "check_single_turn",
    "check_tool_pairing",
    "check_turn_ends",
]

StateCheck = Callable[[SessionState], None]

FINAL_INPUT_STATUSES = frozenset({Status.PROCESSED, Status.INTERRUPTED, Status.ERROR})
"""Where an accepted input ends (invariant 9)."""


def _status_changes(before: SessionState, after: SessionState) -> Iterator[tuple[Message, Status]]:
    """``(message in after, its status in before)`` for each message whose status differs.

    What ``diff(before, after).status_changes`` finds, in the same order, without
    comparing the other fields, turns and audit rows: a message object that is
    at the same position in both states is skipped, any other is matched by id.
    """
    old_messages = before.messages
    index = before.index
    old_count = len(old_messages)
    new_messages = after.messages
    # Iterating a vector reads it a leaf at a time; indexing walks the trie on every call.
    shared = zip(old_messages, new_messages, strict=False)
    tail = new_messages[old_count:] if len(new_messages) > old_count else ()
    pairs = itertools.chain(shared, ((None, m) for m in tail))
    for same, message in pairs:
        if same is message:
            continue
        where = index.get(message.id)
        if where is None:
            continue  # added
        old = old_messages[where]
        if old is not message and old.status != message.status:
            yield message, old.status


def check_lifecycle(before: SessionState, after: SessionState) -> None:
    """Invariant 1: every status change between two consecutive states is legal."""
    for message, old in _status_changes(before, after):
        category = category_of(message)
        new = message.status
        assert isinstance(old, Status)
        assert isinstance(new, Status)
        where = {"session_id": after.session_id, "message_id": message.id}
        if is_terminal(category, old):
            raise fail(
                1, "terminal statuses never change", after.seq,
                f"message {message.id!r} ({category.label}) left terminal {old} for {new}",
                **where,
            )  # fmt: skip
        rule = TRANSITIONS.get((old, new))
        if rule is None or category not in rule.categories:
            raise fail(
                1, "status changes follow the lifecycle", after.seq,
                f"message {message.id!r} ({category.label}) went {old} -> {new}",
                **where,
            )  # fmt: skip


def check_single_turn(state: SessionState) -> None:
    """Invariant 2: at most one active turn; an input is processing iff its turn is active."""
    sid = state.session_id
    active = [t.id for t in _turns(state) if t.status is TurnStatus.ACTIVE]
    if len(active) > 1:
        raise fail(
            2, "one active turn", state.seq, f"turns {sorted(active)} are all active",
            session_id=sid,
        )  # fmt: skip
    if state.active_turn_id != (active[0] if active else None):
        raise fail(
            2, "one active turn", state.seq, "active_turn disagrees with the turns", session_id=sid
        )
    claimed = set(state.active_turn.input_ids) if state.active_turn else set()
    for message in state.messages:
        processing = message.status is Status.PROCESSING
        if processing != (message.id in claimed):
            raise fail(
                2, "processing iff its turn is active", state.seq,
                f"message {message.id!r} is {message.status} and "
                + ("not " if message.id not in claimed else "")
                + "claimed by the active turn",
                session_id=sid, message_id=message.id,
            )  # fmt: skip


def check_tool_pairing(state: SessionState) -> None:
    """Invariant 3: every tool result answers exactly one tool call of the same turn."""
    answered: dict[str, str] = {}
    for message in state.messages:
        if message.type is not MessageType.TOOL_RESULT:
            continue
        where = {"session_id": state.session_id, "message_id": message.id}
        call_id = message.tool_call_id or ""
        if call_id in answered:
            raise fail(
                3, "one result per call", state.seq,
                f"results {answered[call_id]!r} and {message.id!r} both answer call {call_id!r}",
                **where,
            )  # fmt: skip
        answered[call_id] = message.id
        call_message_id = state.tool_calls.get(call_id)
        call = state.get(call_message_id) if call_message_id else None
        if call is None:
            raise fail(
                3, "results answer a call", state.seq,
                f"result {message.id!r} answers unknown call {call_id!r}", **where,
            )  # fmt: skip
        if call.turn_id != message.turn_id:
            raise fail(
                3, "results answer a call of the same turn", state.seq,
                f"result {message.id!r} (turn {message.turn_id!r}) answers call "
                f"{call.id!r} of turn {call.turn_id!r}",
                **where,
            )  # fmt: skip


def check_turn_ends(state: SessionState) -> None:
    """Invariant 4 (the history half): after a turn ends, nothing of it is processing.

    An ended turn has no input left ``processing``; a turn that ended
    ``processed`` or ``interrupted`` has no open tool call, and an interrupted
    turn's unanswered calls are ``interrupted``. (The audit half — no audit
    row of the turn still ``running`` — is ``check_audit``.)
    """
    name = "after a turn ends nothing of it is processing"
    turns = [t for t in _turns(state) if t.status is not TurnStatus.ACTIVE]
    if not turns:
        return
    ended = {t.id: t for t in turns}
    if len(ended) != len(turns):  # two turns with one id: the later in turn order wins
        ended = {t.id: t for t in state.turn_list() if t.status is not TurnStatus.ACTIVE}
    for message in state.messages:
        turn = ended.get(message.turn_id) if message.turn_id is not None else None
        if turn is None:
            continue
        if message.status is Status.PROCESSING:
            raise fail(
                4, name, state.seq,
                f"message {message.id!r} is still processing after turn {turn.id!r} ended "
                f"{turn.status}",
                session_id=state.session_id, message_id=message.id,
            )  # fmt: skip
        if (
            turn.status is TurnStatus.INTERRUPTED
            and message.tool_call is not None
            and message.tool_call.id not in state.tool_results
            and message.status is not Status.INTERRUPTED
        ):
            raise fail(
                4, name, state.seq,
                f"tool call {message.id!r} of interrupted turn {turn.id!r} has no result and "
                f"is {message.status}, not interrupted",
                session_id=state.session_id, message_id=message.id,
            )  # fmt: skip
    if not any(_open(turn) for turn in ended.values()):
        return
    # Which to name: the first in turn order (``ended`` in the order of ``turn_list``).
    order = (t.id for t in state.turn_list() if t.status is not TurnStatus.ACTIVE)
    for turn_id in dict.fromkeys(order):
        turn = ended[turn_id]
        if _open(turn):
            raise fail(
                4, name, state.seq,
                f"turn {turn.id!r} ended {turn.status} with tool calls "
                f"{sorted(turn.open_calls)} still open",
                session_id=state.session_id,
            )  # fmt: skip


def _turns(state: SessionState) -> list[Turn]:
    """The turns of ``turn_list()``, in no particular order (it sorts them)."""
    turns = list(state.turns.values())
    if state.active_turn is not None:
        turns.append(state.active_turn)
    return turns


def _open(turn: Turn) -> bool:
    """A turn that ended processed or interrupted with tool calls open."""
    return turn.status in (TurnStatus.PROCESSED, TurnStatus.INTERRUPTED) and bool(turn.open_calls)


STATE_CHECKS: tuple[StateCheck, ...] = (check_single_turn, check_tool_pairing, check_turn_ends)
"""The checks of one state that ``check_invariants`` and ``TimelineChecker`` run on every state.

``check_audit`` (invariants 4 and 10 on audit rows) also looks at the state
before, so the two run it beside these; add your own with ``extra_checks=``.
"""


def check_seq(timeline: Timeline) -> None:
    """Invariant 5, first half: event seqs are gapless and increasing."""
    expected = timeline.first_seq + 1
    for event in timeline.events():
        if event.seq != expected:
            raise fail(
                5, "gapless seq", event.seq, f"expected seq {expected}",
                session_id=timeline.session_id,
            )  # fmt: skip
        expected += 1


def check_replay(timeline: Timeline) -> None:
    """Invariant 5, second half: replaying the first k events gives ``timeline.at(k)``.

    Replays once and compares every state, so it costs one replay.
    """
    replayed = replay(timeline.events(), base=timeline.base)
    for seq in range(timeline.first_seq, timeline.last_seq + 1):
        if replayed.at(seq) != timeline.at(seq):
            raise fail(
                5, "replay reproduces every state", seq, "replayed state differs",
                session_id=timeline.session_id,
            )  # fmt: skip


def check_invariants(
    timeline: Timeline, *, extra_checks: Iterable[Callable[[SessionState], None]] = ()
) -> None:
    """Check invariants 1, 2, 3, 4 (audit rows included), 5, 8 and 10 over every state.

    Invariant 6 (past states never change) needs references held over time:
    use ``PastStates``. Invariant 7 needs the provider views built with your
    options: call ``check_provider_views`` (or ``check_provider_view``).
    Invariant 9 needs to know which inputs were accepted: ``check_settled``.

    Args:
        timeline: the timeline to check.
        extra_checks: more ``(state) -> None`` checks to run on every state.
    """
    checks = (*STATE_CHECKS, *extra_checks)
    check_seq(timeline)
    previous: SessionState | None = None
    for state in timeline.states():
        for check in checks:
            check(state)
        check_phased_order(state)
        if state.audit or (previous is not None and previous.audit):
            from ._audit_checks import check_audit  # imports this module

            check_audit(state, previous)
        if previous is not None:
            check_lifecycle(previous, state)
        previous = state
    check_replay(timeline)


def check_settled(state: SessionState, accepted: Iterable[str] | None = None) -> None:
    """Invariant 9: every accepted input has reached a final status.

    Call it once the session is idle (``Runtime.wait_idle``), after crashes
    and restarts too.

    Args:
        state: the session's head.
        accepted: the ids of the inputs the runtime accepted; by default every
            input in the state. An accepted id the state does not have is a
            lost message.
    """
    inputs = {m.id: m for m in state.messages if category_of(m).is_input}
    wanted = list(inputs) if accepted is None else list(accepted)
    name = "every accepted user message reaches a final status"
    for message_id in wanted:
        message = inputs.get(message_id)
        if message is None:
            raise fail(
                9, name, state.seq,
                f"accepted input {message_id!r} is not in the session (lost)",
                session_id=state.session_id, message_id=message_id,
            )  # fmt: skip
        if message.status not in FINAL_INPUT_STATUSES:
            turn = f" (turn {message.turn_id!r})" if message.turn_id else ""
            raise fail(
                9, name, state.seq,
                f"input {message_id!r} is {message.status}{turn}, not processed, interrupted "
                "or error",
                session_id=state.session_id, message_id=message_id,
            )  # fmt: skip


class PastStates:
    """Invariant 6: keep states as they are seen, check later that none changed.

    ``remember(state)`` keeps a reference and its hash; ``check()`` checks
    that each kept state still hashes the same and (given a timeline) equals
    the timeline's state at its seq. A state that changed in place — a tool
    or an adapter that forced a frozen message open — fails the check::

        past = PastStates()
        past.remember(timeline.head)
        ...                                  # more events
        past.check(runtime.timeline("s1"))
    """

    def __init__(self, *, keep: int = 64) -> None:
        self._keep = keep
        self._states: dict[int, tuple[SessionState, int]] = {}

    def __len__(self) -> int:
        return len(self._states)

    def remember(self, state: SessionState) -> None:
        """Keep ``state`` (the oldest ones beyond ``keep`` are let go, the first one stays)."""
        if state.seq in self._states:
            return
        self._states[state.seq] = (state, hash(state))
        if len(self._states) > self._keep:
            seqs = sorted(self._states)
            del self._states[seqs[1]]

    def check(self, timeline: Timeline | None = None) -> None:
        """Check every kept state against its hash (and ``timeline``, if given)."""
        name = "past states never change"
        for seq, (state, digest) in sorted(self._states.items()):
            sid = state.session_id
            if hash(state) != digest:
                changed = _changed_message(state, timeline)
                raise fail(
                    6, name, seq,
                    "the state kept at this seq hashes differently now" + changed,
                    session_id=sid,
                )  # fmt: skip
            if (
                timeline is not None
                and timeline.first_seq <= seq <= timeline.last_seq
                and timeline.at(seq) != state
            ):
                changed = _changed_message(state, timeline)
                raise fail(
                    6, name, seq,
                    "the state kept at this seq differs from the timeline's" + changed,
                    session_id=sid,
                )  # fmt: skip


def _changed_message(state: SessionState, timeline: Timeline | None) -> str:
    if timeline is None or not timeline.first_seq <= state.seq <= timeline.last_seq:
        return ""
    other = timeline.at(state.seq)
    for message in state.messages:
        there = other.get(message.id)
        if there is not None and there != message:
            return f"; message {message.id!r} was {there!r} and is now {message!r}"
    return ""


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
    sid = state.session_id
    expected = [m.id for m in state.messages if m.active]
    got = [m.id for m in history]
    if sorted(got) != sorted(expected) or len(set(got)) != len(got):
        missing = sorted(set(expected) - set(got))
        extra = sorted(set(got) - set(expected))
        raise fail(
            8, name, state.seq,
            f"history must hold each active message once (missing {missing}, extra {extra}, "
            f"{len(got) - len(set(got))} repeated)",
            session_id=sid,
        )  # fmt: skip
    last_phase: dict[str, int] = {}
    started: list[str] = []
    phases: dict[int, int] = {}  # id(message) -> its phase, for the walk of the stored order
    for message in history:
        turn_id = message.turn_id
        if turn_id is None:
            continue
        phase = phases[id(message)] = phase_of(message)
        where = {"session_id": sid, "message_id": message.id}
        if phase == INPUT_PHASE:
            if turn_id in last_phase and last_phase[turn_id] > INPUT_PHASE:
                raise fail(
                    8, name, state.seq,
                    f"input {message.id!r} comes after output of its turn {turn_id!r}", **where,
                )  # fmt: skip
            continue
        if turn_id not in last_phase or last_phase[turn_id] == INPUT_PHASE:
            started.append(turn_id)
        elif started[-1] != turn_id:
            raise fail(
                8, name, state.seq,
                f"output of turn {turn_id!r} is split by output of turn {started[-1]!r} "
                f"at message {message.id!r}",
                **where,
            )  # fmt: skip
        if phase < last_phase.get(turn_id, INPUT_PHASE):
            raise fail(
                8, name, state.seq,
                f"message {message.id!r} (phase {phase}) comes after phase "
                f"{last_phase[turn_id]} in turn {turn_id!r}",
                **where,
            )  # fmt: skip
        last_phase[turn_id] = phase
    first_output: dict[str, int] = {}
    for position, message in enumerate(state.messages):
        turn_id = message.turn_id
        if turn_id is None or turn_id in first_output or not message.active:
            continue
        known = phases.get(id(message))
        if (phase_of(message) if known is None else known) != INPUT_PHASE:
            first_output[turn_id] = position
    positions = [first_output[t] for t in started]
    if positions != sorted(positions):
        raise fail(8, name, state.seq, f"turns are out of order: {started}", session_id=sid)
