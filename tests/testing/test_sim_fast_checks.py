"""The per-step checks the simulator runs take shortcuts; each gives what the plain walk gives.

Each shortcut (a status-only diff for invariant 1, the turns unsorted for
invariants 2 and 4, each message's phase found once for invariant 8, ``in``
before reading a category flag) is compared here with the plain version it
replaced, on legal sessions and on states corrupted behind the reducer's back,
so the failures (which check, which message, which words) are the same too.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime import Category, Message, SessionState, Status, Timeline, TurnStatus
from runtime._category import _DEFAULT, _FLAGGED, _NO_METADATA, category_of
from runtime._diff import diff
from runtime._history import INPUT_PHASE, phase_of, session_history
from runtime._lifecycle import TRANSITIONS, is_terminal
from runtime.testing import (
    Simulation,
    check_phased_order,
    check_single_turn,
    check_turn_ends,
    fake_tools,
    messages,
    timelines,
)
from runtime.testing._invariants import check_lifecycle
from runtime.testing._parts import PlanModel
from runtime.testing._seeded import Prng, _act, _adapters
from runtime.testing._violation import fail

FAST = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))

# -- the plain versions the shortcuts replaced ----------------------------------------------


def plain_lifecycle(before: SessionState, after: SessionState) -> None:
    for change in diff(before, after).status_changes:
        message = after.message(change.message_id)
        category = category_of(message)
        old, new = change.before, change.after
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


def plain_single_turn(state: SessionState) -> None:
    sid = state.session_id
    active = [t.id for t in state.turn_list() if t.status is TurnStatus.ACTIVE]
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


def plain_turn_ends(state: SessionState) -> None:
    name = "after a turn ends nothing of it is processing"
    ended = {t.id: t for t in state.turn_list() if t.status is not TurnStatus.ACTIVE}
    if not ended:
        return
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
    for turn in ended.values():
        if turn.status in (TurnStatus.PROCESSED, TurnStatus.INTERRUPTED) and turn.open_calls:
            raise fail(
                4, name, state.seq,
                f"turn {turn.id!r} ended {turn.status} with tool calls "
                f"{sorted(turn.open_calls)} still open",
                session_id=state.session_id,
            )  # fmt: skip


def plain_phased_order(state: SessionState) -> None:
    history = session_history(state)
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
    for message in history:
        turn_id = message.turn_id
        if turn_id is None:
            continue
        phase = phase_of(message)
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
        if message.active and message.turn_id is not None and phase_of(message) != INPUT_PHASE:
            first_output.setdefault(message.turn_id, position)
    positions = [first_output[t] for t in started]
    if positions != sorted(positions):
        raise fail(8, name, state.seq, f"turns are out of order: {started}", session_id=sid)


def plain_category(message: Message) -> Category:
    role, type_ = message.role, message.type
    metadata = message.metadata
    if metadata is not _NO_METADATA and metadata:
        for category in _FLAGGED[(role, type_)]:
            if metadata.get(category.spec.flag or "") is True:
                return category
    return _DEFAULT[(role, type_, message.sender == "Notification")]


# -- states to compare them on ---------------------------------------------------------------


def outcome(check: Callable[..., None], *args: Any) -> tuple[str, str] | None:
    """What a check did: None if it passed, else the error's type and message."""
    try:
        check(*args)
    except Exception as exc:  # the same error, whatever it is
        return type(exc).__name__, str(exc)
    return None


def simulated_states(seed: int, steps: int = 12) -> Iterator[SessionState]:
    """Every state of a seeded simulation's session (``simulate``'s walk, two sessions)."""
    prng = Prng(seed)
    tools = tuple(fake_tools(hang=True))
    sim = Simulation(model=PlanModel(), tools=tools, adapters=_adapters(), choose=prng.choose)
    names = [t.name for t in tools]
    for _ in range(steps):
        _act(sim, prng, [], ("s1", "s2"), names, True)
    sim.settle(interrupt_stuck=True)
    for checker in sim.checkers.values():
        timeline = checker.timeline
        yield from (timeline.at(seq) for seq in range(timeline.first_seq, timeline.last_seq + 1))


def corrupt(state: SessionState, data: st.DataObject) -> SessionState:
    """``state`` changed behind the reducer's back in one of the ways the checks look for."""
    how = data.draw(
        st.sampled_from(["status", "turn", "no active", "open calls", "inactive", "moved"])
    )
    if how in ("status", "inactive", "moved") and len(state.messages):
        position = data.draw(st.integers(0, len(state.messages) - 1))
        message = state.messages[position]
        if how == "status":
            changed = attrs.evolve(message, status=data.draw(st.sampled_from(list(Status))))
        elif how == "moved":  # to another turn (or none): its history block changes
            turn_ids = [t.id for t in state.turn_list()]
            turn_id = data.draw(st.sampled_from([None, *turn_ids]))
            changed = attrs.evolve(message, turn_id=turn_id)
        else:
            changed = attrs.evolve(message, active=not message.active)
        return attrs.evolve(state, messages=state.messages.set(position, changed))
    turns = state.turn_list()
    if how == "no active" or not turns:
        return attrs.evolve(state, active_turn=None)
    turn = data.draw(st.sampled_from(turns))
    if how == "turn":
        changed_turn = attrs.evolve(turn, status=data.draw(st.sampled_from(list(TurnStatus))))
    else:
        changed_turn = attrs.evolve(turn, open_calls={"call_x": "msg_x", **turn.open_calls})
    if state.active_turn is turn:
        return attrs.evolve(state, active_turn=changed_turn)
    return attrs.evolve(state, turns=state.turns.set(turn.id, changed_turn))


def assert_same(before: SessionState, after: SessionState) -> None:
    assert outcome(check_lifecycle, before, after) == outcome(plain_lifecycle, before, after)
    assert outcome(check_single_turn, after) == outcome(plain_single_turn, after)
    assert outcome(check_turn_ends, after) == outcome(plain_turn_ends, after)
    assert outcome(check_phased_order, after) == outcome(plain_phased_order, after)
    for message in after.messages:
        assert category_of(message) is plain_category(message)


class TestShortcutsGiveThePlainResults:
    @FAST
    @given(timeline=timelines(rich=True), data=st.data())
    def test_on_drawn_sessions(self, timeline: Timeline, data: st.DataObject) -> None:
        """On a drawn session's states, as they are and corrupted: the same outcome."""
        seq = data.draw(st.integers(max(timeline.first_seq, 1), max(timeline.last_seq, 1)))
        before, after = timeline.at(seq - 1), timeline.at(seq)
        assert_same(before, after)
        assert_same(before, corrupt(after, data))

    @FAST
    @given(seed=st.integers(0, 2**32), data=st.data())
    def test_on_simulated_sessions(self, seed: int, data: st.DataObject) -> None:
        """On every state of a seeded simulation, as it is and corrupted: the same outcome."""
        states = list(simulated_states(seed))
        for before, after in itertools.pairwise(states):
            if before.session_id == after.session_id:
                assert_same(before, after)
        if len(states) > 1:
            at = data.draw(st.integers(1, len(states) - 1))
            before, after = states[at - 1], states[at]
            if before.session_id == after.session_id:
                assert_same(before, corrupt(after, data))

    @FAST
    @given(message=messages(), flags=st.dictionaries(
        st.sampled_from(["is_cronjob", "is_compaction", "is_nudge", "is_system_prompt",
                         "is_crash_notice", "other"]),
        st.sampled_from([True, False, 1, "true", None])))  # fmt: skip
    def test_category_flags(self, message: Message, flags: dict[str, Any]) -> None:
        """A category flag counts only when it is ``True``; ``in`` first reads the same."""
        flagged = attrs.evolve(message, metadata={**message.metadata, **flags})
        assert category_of(flagged) is plain_category(flagged)

    @FAST
    @given(seed=st.integers(0, 2**32))
    def test_history_of_the_same_fields(self, seed: int) -> None:
        """Two states that share the fields ``session_history`` reads have one history, so
        ``TimelineChecker`` checks invariant 8 once for them."""
        states = list(simulated_states(seed))
        fields = ("messages", "index", "turns", "active_turn", "turn_order")
        for before, after in itertools.pairwise(states):
            if all(getattr(before, f) is getattr(after, f) for f in fields):
                assert session_history(before) == session_history(after)
                assert outcome(check_phased_order, after) is None
