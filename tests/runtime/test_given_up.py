"""Callers that give up (``Interrupt(input_id=…)``) on the pure machine: a turn whose every
input's caller gave up does not go on calling the model, and a turn is never ended by a
caller giving up while another of its inputs is still wanted (``SessionMachine.cancelled``
leaks into no later turn)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import (
    CallModel,
    Category,
    Decision,
    Draft,
    InputArrived,
    Interrupt,
    Loaded,
    MessageAdded,
    MessageFinish,
    MessageStart,
    ModelChunk,
    Resume,
    SessionMachine,
    SessionState,
    TextDelta,
    TurnEnded,
    TurnOutcome,
    TurnSettings,
    Usage,
    step,
)
from runtime.testing import EPOCH

SETTINGS = TurnSettings(model_timeout=60.0, passivate_after=30.0, max_nudges=1)
GAVE_UP = "interrupted: the caller stopped waiting for the answer"


class Session:
    """One session's machine stepped by hand; remembers whose caller gave up."""

    def __init__(self) -> None:
        self.machine = SessionMachine.load(SessionState.empty("s"))
        self.now = 0.0
        self.inputs: list[str] = []
        self.given_up: set[str] = set()
        self.run_id: str | None = None  # the model call running

    def __call__(self, kind: type, **fields: Any) -> Decision:
        self.now += 1.0
        at = {"at": EPOCH + timedelta(seconds=self.now), "mono": self.now}
        decision = step(self.machine, SETTINGS, kind(**fields, **at))
        self.machine = decision.machine
        for command in decision.commands:
            if isinstance(command, CallModel):
                self.run_id = command.run_id
        if self.machine.run is None:
            self.run_id = None
        return decision

    def send(self) -> Decision:
        draft = Draft(category=Category.USER_QUESTION, content="hi", sender="Chii")
        decision = self(InputArrived, draft=draft)
        added = decision.events[0]
        assert isinstance(added, MessageAdded)
        self.inputs.append(added.message.id)
        return decision

    def give_up(self, input_id: str) -> Decision:
        self.given_up.add(input_id)
        return self(Interrupt, reason=GAVE_UP, input_id=input_id)

    def reload(self) -> Decision:
        """Another process wrote to the session: the shell adopts the stored head and steps
        ``Loaded`` (as ``SessionSync._reload`` does), passing on whose caller gave up."""
        cancelled = self.machine.cancelled
        self.machine = SessionMachine.load(self.machine.state)
        return self(Loaded, foreign_write=True, cancelled=cancelled)

    def answer(self) -> None:
        if self.run_id is None:
            return
        for chunk in (MessageStart(), TextDelta(text="ok"), MessageFinish(usage=Usage())):
            self(ModelChunk, run_id=self.run_id, chunk=chunk)

    def check(self, decision: Decision) -> None:
        turn = self.machine.state.active_turn
        if self.machine.run is not None and turn is not None:
            assert not set(turn.input_ids) <= self.given_up, (
                f"turn {turn.id} runs on though every caller of {turn.input_ids} gave up"
            )
        for event in decision.events:
            if isinstance(event, TurnEnded) and event.outcome is TurnOutcome.INTERRUPTED:
                ended = self.machine.state.turn(event.turn_id)
                assert ended is not None
                if event.reason in (GAVE_UP, "cancelled by the caller"):
                    assert set(ended.input_ids) <= self.given_up, (
                        f"turn {event.turn_id} ended by a caller giving up though an input "
                        f"of {ended.input_ids} is still wanted (given up: {self.given_up})"
                    )


class TestATurnWhoseCallersAllGaveUp:
    def test_one_given_up_before_the_turn_claimed_it_and_one_after(self) -> None:
        """Two inputs wait; the first's caller gives up, then a turn claims both (it runs
        for the second). Once the second's caller gives up too, the turn ends: it ran on,
        calling the model for nobody (the first's cancel was forgotten as the turn began)."""
        s = Session()
        s.send()
        s.send()
        first, second = s.inputs
        s.give_up(first)
        s(Resume)
        assert s.run_id is not None  # the second is still wanted
        decision = s.give_up(second)
        assert s.machine.run is None, "the turn calls the model though nobody waits"
        s.check(decision)


class TestAReloadKeepsWhoGaveUp:
    def test_a_caller_gave_up_before_a_foreign_write_reload(self) -> None:
        """An ask's input waits; its caller gives up; another process writes to the session
        and it reloads before the turn starts: the turn ends at once, without calling the
        model (the reload forgot who gave up, and the model was called for nobody)."""
        s = Session()
        s.send()
        (asked,) = s.inputs
        s.give_up(asked)
        decision = s.reload()
        assert not any(isinstance(c, CallModel) for c in decision.commands), (
            "the model is called for a caller who gave up before the reload"
        )
        assert s.machine.run is None
        s.check(decision)

    def test_one_of_two_given_up_before_the_reload(self) -> None:
        """Two inputs wait; the first's caller gives up; a reload starts a turn that claims
        both (for the second). Once the second's caller gives up, it ends."""
        s = Session()
        s.send()
        s.send()
        first, second = s.inputs
        s.give_up(first)
        s.reload()
        assert s.run_id is not None  # the second is still wanted
        decision = s.give_up(second)
        assert s.machine.run is None, "the turn calls the model though nobody waits"
        s.check(decision)

    def test_only_queued_or_claimed_ids_are_carried(self) -> None:
        """Ids given back with ``Loaded.cancelled`` that no input waits for, and no running
        turn claims, are dropped (they leak into no later turn)."""
        s = Session()
        s.send()
        s.machine = SessionMachine.load(s.machine.state)
        s(Loaded, foreign_write=True, cancelled=["gone", s.inputs[0]])
        assert s.machine.cancelled == frozenset()  # the turn it claimed was ended
        s.send()
        s.machine = SessionMachine.load(s.machine.state)
        s(Loaded, foreign_write=True, cancelled=["gone"])
        assert s.machine.cancelled == frozenset()
        assert s.run_id is not None


_OPS = st.lists(
    st.one_of(
        st.just(("send", 0)),
        st.just(("resume", 0)),
        st.just(("answer", 0)),
        st.just(("reload", 0)),
        st.tuples(st.just("give_up"), st.integers(0, 7)),
    ),
    max_size=25,
)


class TestCallersGivingUpAtAnyMoment:
    @settings(max_examples=300, deadline=None)
    @given(ops=_OPS)
    def test_no_turn_runs_for_nobody_and_none_ends_while_wanted(
        self, ops: list[tuple[str, int]]
    ) -> None:
        """Inputs sent, turns started and answered, callers giving up, in any order: no
        turn runs once every caller of its inputs gave up, and none ends interrupted by a
        caller giving up while an input of it is still wanted."""
        s = Session()
        for op, n in ops:
            if op == "send":
                decision = s.send()
            elif op == "resume":
                decision = s(Resume)
            elif op == "reload":
                decision = s.reload()
            elif op == "answer":
                s.answer()
                decision = s(Resume)
            elif s.inputs:
                decision = s.give_up(s.inputs[n % len(s.inputs)])
            else:
                continue
            s.check(decision)
