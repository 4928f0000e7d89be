"""The turn machine: ``step(machine, settings, input) -> Decision``, decision by decision."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import (
    Announce,
    ApprovalDecided,
    ApprovalGiven,
    AuditStatus,
    CallModel,
    CancelRun,
    Category,
    ClearTimer,
    Decision,
    Delivered,
    Draft,
    Event,
    InputArrived,
    Interrupt,
    Loaded,
    MessageAdded,
    MessageFinish,
    MessageStart,
    MetadataUpdated,
    ModelCallFinished,
    ModelCallStarted,
    ModelChunk,
    ModelEnded,
    ModelRetry,
    OrphanRecovered,
    Passivate,
    RequestSent,
    Resume,
    ResumeSoon,
    RunnerFailed,
    RunTool,
    SessionMachine,
    SessionState,
    SetTimer,
    Status,
    Stopping,
    StreamDelta,
    TextDelta,
    TimerFired,
    ToolCallDelta,
    ToolDone,
    ToolOutcome,
    ToolResultPart,
    ToolSpec,
    TurnEnded,
    TurnOutcome,
    TurnSettings,
    TurnStarted,
    TurnStatus,
    category_of,
    clean_history,
    from_json,
    step,
    to_json,
)
from runtime._turn_ops import NOTICES
from runtime.testing import (
    EPOCH,
    PlanModel,
    Prng,
    Say,
    Simulation,
    TurnPlan,
    UseTools,
    fake_tools,
    simulate,
)

TOOL = ToolSpec(name="lookup", description="Look a thing up.", parameters={"type": "object"})
SETTINGS = TurnSettings(tools=(TOOL,), model_timeout=60.0, passivate_after=30.0, max_nudges=1)
SHARED = attrs.evolve(SETTINGS, exclusive=False, runner="runner_b")


class Driver:
    """Steps one session's machine by hand, at a time that only moves when told."""

    def __init__(self, settings: TurnSettings = SETTINGS, session_id: str = "s") -> None:
        self.settings = settings
        self.machine = SessionMachine.load(SessionState.empty(session_id))
        self.now = 0.0

    def stamp(self) -> dict[str, Any]:
        return {"at": EPOCH + timedelta(seconds=self.now), "mono": self.now}

    def __call__(self, kind: type, **fields: Any) -> Decision:
        decision = step(self.machine, self.settings, kind(**fields, **self.stamp()))
        self.machine = decision.machine
        return decision

    def send(self, text: str = "hi") -> Decision:
        draft = Draft(category=Category.USER_QUESTION, content=text, sender="Chii")
        return self(InputArrived, draft=draft)

    def started(self) -> CallModel:
        """Send, then resume: the turn starts and the model is called."""
        self.send()
        decision = self(Resume)
        calls = [c for c in decision.commands if isinstance(c, CallModel)]
        assert len(calls) == 1
        return calls[0]

    def stream(self, run_id: str, *chunks: Any) -> list[Decision]:
        return [self(ModelChunk, run_id=run_id, chunk=c) for c in chunks]


def kinds(decision: Decision) -> list[str]:
    return [type(e).__name__ for e in decision.events]


def commands(decision: Decision, kind: type) -> list[Any]:
    return [c for c in decision.commands if isinstance(c, kind)]


class TestInputs:
    def test_input_is_stored_and_the_turn_starts_on_the_next_step(self) -> None:
        """A new input is stored with a derived id; the turn starts when ``Resume`` comes."""
        d = Driver()
        decision = d.send("hello")
        assert kinds(decision) == ["MessageAdded"]
        added = decision.events[0]
        assert isinstance(added, MessageAdded)
        assert added.message.id == "msg_a27592ee_000001"
        assert commands(decision, ResumeSoon) == [ResumeSoon()]
        assert [c.update.message.id for c in commands(decision, Announce)] == [added.message.id]
        started = d(Resume)
        assert kinds(started) == ["TurnStarted"]
        call = commands(started, CallModel)[0]
        assert call.request.call_index == 0
        assert commands(started, SetTimer) == [SetTimer(name=f"model:{call.run_id}", seconds=60.0)]

    def test_new_input_interrupts_the_running_turn(self) -> None:
        """Mid-turn input: the turn ends interrupted, its model run is cancelled."""
        d = Driver()
        call = d.started()
        d.stream(call.run_id, MessageStart(), TextDelta(text="par"))
        decision = d.send("stop")
        assert kinds(decision) == ["MessageAdded", "TurnEnded"]
        ended = decision.events[1]
        assert isinstance(ended, TurnEnded)
        assert ended.outcome is TurnOutcome.INTERRUPTED
        assert [m.content for m in ended.partial] == ["par"]
        assert CancelRun(run_id=call.run_id) in decision.commands
        assert ClearTimer(name=f"model:{call.run_id}") in decision.commands

    def test_step_refuses_what_is_not_an_input(self) -> None:
        """Anything but a machine input is a TypeError naming what it takes."""
        with pytest.raises(TypeError, match=r"^step\(\) takes one of the machine's inputs"):
            step(SessionMachine.load(SessionState.empty("s")), SETTINGS, "hi")  # type: ignore[arg-type]


class TestCallersThatGiveUp:
    """``Interrupt(input_id=…)``: the caller of one input stopped waiting for its answer."""

    def _claiming_two(self) -> tuple[Driver, CallModel, list[str]]:
        d = Driver()
        d.send("ana asks")
        d.send("ben asks")
        call = commands(d(Resume), CallModel)[0]
        turn = d.machine.state.active_turn
        assert turn is not None
        return d, call, list(turn.input_ids)

    def test_a_turn_another_input_still_wants_goes_on(self) -> None:
        """One of two inputs a turn claims is given up: nothing changes, the turn runs on
        for the other (it was interrupted: the other's caller got no answer)."""
        d, call, (ana, _) = self._claiming_two()
        decision = d(Interrupt, reason="the caller stopped waiting", input_id=ana)
        assert decision.events == ()
        assert CancelRun(run_id=call.run_id) not in decision.commands
        assert d.machine.run is not None

    def test_the_last_caller_giving_up_interrupts_it(self) -> None:
        """Once every input it claims is given up, the turn ends interrupted."""
        d, call, (ana, ben) = self._claiming_two()
        d(Interrupt, reason="the caller stopped waiting", input_id=ana)
        decision = d(Interrupt, reason="the caller stopped waiting", input_id=ben)
        assert kinds(decision) == ["TurnEnded"]
        assert decision.events[0].outcome is TurnOutcome.INTERRUPTED  # type: ignore[attr-defined]
        assert CancelRun(run_id=call.run_id) in decision.commands
        assert d.machine.cancelled == frozenset()

    def test_a_plain_interrupt_ends_the_turn_whoever_waits(self) -> None:
        """``Interrupt`` without an input (``Runtime.interrupt``) ends the turn at once."""
        d, _, _ = self._claiming_two()
        assert kinds(d(Interrupt, reason="interrupted by the user")) == ["TurnEnded"]


class TestCutOffCalls:
    """A model call its turn's end cuts off before the stream's first chunk, once the model
    reported it sent (a trial: interrupted calls left no audit row though they may be billed)."""

    SENT = RequestSent(provider="openai", model="gpt-x", payload_digest="0" * 64)

    def test_an_interrupt_before_the_first_chunk_records_the_call(self) -> None:
        d = Driver()
        call = d.started()
        d.stream(call.run_id, self.SENT)
        decision = d.send("stop")
        assert kinds(decision) == ["MessageAdded", "ModelCallStarted", "TurnEnded"]
        started = decision.events[1]
        assert isinstance(started, ModelCallStarted)
        assert started.operation_id == call.run_id  # no provider id yet: the run's own
        (row,) = d.machine.state.model_calls()
        assert row.status is AuditStatus.INTERRUPTED
        assert row.request is not None  # what it was built from, for rebuild_request
        assert row.ended_seq == decision.events[2].seq

    def test_the_row_of_a_cut_off_call_starts_when_the_call_started(self) -> None:
        """Its row opens with the event that ends the turn, but ``started_at`` is the time of
        the step that called the model and ``finished_at`` the time it was cut off (both were
        that of the turn's end)."""
        d = Driver()
        d.now = 10.0
        call = d.started()
        d.now = 12.0
        d.stream(call.run_id, self.SENT)
        d.now = 15.0
        decision = d.send("stop")
        assert kinds(decision) == ["MessageAdded", "ModelCallStarted", "TurnEnded"]
        (row,) = d.machine.state.model_calls()
        assert row.started_at == EPOCH + timedelta(seconds=10)
        assert row.finished_at == EPOCH + timedelta(seconds=15)
        started = decision.events[1]
        assert isinstance(started, ModelCallStarted)
        assert from_json(to_json(started), Event) == started  # stored and read back as it was

    def test_a_stopped_cut_off_call_starts_when_the_call_started(self) -> None:
        """The same when a stop cuts it off (the row closes as abandoned)."""
        d = Driver()
        d.now = 3.0
        call = d.started()
        d.stream(call.run_id, self.SENT)
        d.now = 9.5
        d(Stopping)
        (row,) = d.machine.state.model_calls()
        assert (row.started_at, row.finished_at) == (
            EPOCH + timedelta(seconds=3),
            EPOCH + timedelta(seconds=9.5),
        )

    def test_a_call_that_fails_before_its_first_chunk_starts_when_it_started(self) -> None:
        """A failure before the first chunk opens the row as it closes it; it starts when
        the model was called, and ends when it failed."""
        d = Driver()
        d.now = 1.0
        call = d.started()
        d.stream(call.run_id, self.SENT)
        d.now = 31.0
        d(ModelEnded, run_id=call.run_id, error="ModelFailure: rate limited")
        (row,) = d.machine.state.model_calls()
        assert row.status is AuditStatus.FAILED
        assert (row.started_at, row.finished_at) == (
            EPOCH + timedelta(seconds=1),
            EPOCH + timedelta(seconds=31),
        )

    def test_a_call_cut_off_while_its_retry_waits_records_the_call(self) -> None:
        d = Driver()
        call = d.started()
        d.stream(call.run_id, ModelRetry(attempt=1, status=429, error="slow down", delay=3.0))
        decision = d.send("stop")
        assert kinds(decision) == ["MessageAdded", "ModelCallStarted", "TurnEnded"]
        (row,) = d.machine.state.model_calls()
        assert row.status is AuditStatus.INTERRUPTED

    def test_a_stop_before_the_first_chunk_records_the_call_as_abandoned(self) -> None:
        d = Driver()
        call = d.started()
        d.stream(call.run_id, self.SENT)
        decision = d(Stopping)
        assert kinds(decision) == ["ModelCallStarted", "OrphanRecovered"]
        (row,) = d.machine.state.model_calls()
        assert row.status is AuditStatus.ABANDONED

    def test_a_call_never_reported_sent_leaves_no_row(self) -> None:
        d = Driver()
        d.started()
        decision = d.send("stop")
        assert kinds(decision) == ["MessageAdded", "TurnEnded"]
        assert d.machine.state.model_calls() == ()

    def test_a_streaming_call_is_not_opened_twice(self) -> None:
        d = Driver()
        call = d.started()
        d.stream(call.run_id, self.SENT, MessageStart(id="msg_p1"), TextDelta(text="par"))
        decision = d.send("stop")
        assert kinds(decision) == ["MessageAdded", "TurnEnded"]
        (row,) = d.machine.state.model_calls()
        assert (row.operation_id, row.status) == ("msg_p1", AuditStatus.INTERRUPTED)


class TestReloadAfterAForeignWrite:
    def test_the_recovered_turn_says_another_process_wrote(self) -> None:
        """This runner reloads its session mid-turn because another process wrote to it:
        the turn is recovered at once, and the reason says why. Before, it said the
        runner "is gone" (a trial read that in the log of a live worker)."""
        d = Driver(SHARED)
        d.started()
        d.machine = SessionMachine.load(d.machine.state)
        decision = d(Loaded, foreign_write=True)
        recovered = decision.events[0]
        assert isinstance(recovered, OrphanRecovered)
        assert "another process wrote to the session" in recovered.reason
        assert "is gone" not in recovered.reason

    def _calling(self, d: Driver) -> None:
        """The turn runs two calls, c1 and c2, of the tool ``lookup``."""
        call = d.started()
        d.stream(
            call.run_id,
            MessageStart(),
            ToolCallDelta(index=0, id="c1", name="lookup", arguments="{}"),
            ToolCallDelta(index=1, id="c2", name="lookup", arguments="{}"),
            MessageFinish(),
        )
        d(ModelEnded, run_id=call.run_id)

    def test_a_result_held_answers_its_call_before_the_turn_is_recovered(self) -> None:
        """The write of c1's result met another process's: the runner reloads with the
        result it holds (``Loaded.results``), which answers c1 before the turn is
        recovered; c2, still running, is the only call marked may-have-run. Before, the
        reload dropped c1's result and marked both."""
        d = Driver(SHARED)
        self._calling(d)
        d.now = 2.0
        done = ToolDone(call_id="c1", outcome=ToolOutcome(content="42"), **d.stamp())
        d.machine = SessionMachine.load(d.machine.state)
        d.now = 3.0
        decision = d(Loaded, foreign_write=True, results=[(done, 0.5)])
        assert kinds(decision) == ["MessageAdded", "MetadataUpdated", "OrphanRecovered",
                                   "TurnStarted"]  # fmt: skip
        added, marked, recovered, _ = decision.events
        assert isinstance(added, MessageAdded)
        result = added.message
        assert (result.tool_call_id, result.content) == ("c1", "42")
        assert result.metadata["duration_ms"] == 1500.0
        state = d.machine.state
        assert isinstance(recovered, OrphanRecovered)
        assert (result.turn_id, result.parent_id) == (recovered.turn_id, state.tool_calls["c1"])
        assert isinstance(marked, MetadataUpdated)
        assert marked.message_id == state.tool_calls["c2"]
        assert "c2 (lookup)" in recovered.reason
        assert "c1" not in recovered.reason

    def test_a_result_the_head_answered_already_is_not_recorded_twice(self) -> None:
        """A held result whose call the reloaded head answers (or whose turn ended) adds
        nothing."""
        d = Driver(SHARED)
        self._calling(d)
        done = ToolDone(call_id="c1", outcome=ToolOutcome(content="42"), **d.stamp())
        d(ToolDone, call_id="c1", outcome=ToolOutcome(content="42"))
        d.machine = SessionMachine.load(d.machine.state)
        decision = d(Loaded, foreign_write=True, results=[(done, 0.0)])
        assert [e for e in decision.events if isinstance(e, MessageAdded)] == []


class TestModelCalls:
    def test_a_reply_ends_the_turn_with_metrics(self) -> None:
        """The first chunk opens the audit row; the end records the reply and ends the turn."""
        d = Driver()
        call = d.started()
        first, text = d.stream(call.run_id, MessageStart(id="msg_p1"), TextDelta(text="Sunny."))
        assert kinds(first) == ["ModelCallStarted"]
        assert commands(text, StreamDelta)[0].delta.text == "Sunny."
        d.now = 0.25
        d.stream(call.run_id, MessageFinish(stop_reason="end_turn"))
        decision = d(ModelEnded, run_id=call.run_id)
        assert kinds(decision) == ["ModelCallFinished", "MessageAdded", "TurnEnded"]
        finished, reply, ended = decision.events
        assert isinstance(finished, ModelCallFinished)
        assert finished.duration_ms == 250.0
        assert isinstance(reply, MessageAdded)
        assert reply.message.content == "Sunny."
        assert reply.message.metadata["model_call"] == f"{ended.turn_id}#0"  # type: ignore[attr-defined]
        assert set(reply.message.metadata["turn_metrics"]) >= {"turn_time", "turn_tool_calls"}
        assert isinstance(ended, TurnEnded)
        assert ended.outcome is TurnOutcome.PROCESSED
        assert d.machine.run is None

    def test_a_stream_that_ends_without_its_finish_was_cut_short(self) -> None:
        """No ``MessageFinish`` before the model run ends: the call fails, the text is kept as
        partial output and a streamed tool call is not run."""
        d = Driver()
        call = d.started()
        d.stream(call.run_id, MessageStart(), TextDelta(text="The answer is"),
                 ToolCallDelta(index=0, id="c1", name="lookup", arguments="{}"))  # fmt: skip
        decision = d(ModelEnded, run_id=call.run_id)
        assert kinds(decision) == ["ModelCallFinished", "TurnEnded"]  # the notice in its end
        finished, ended = decision.events
        assert isinstance(finished, ModelCallFinished)
        assert "ended before MessageFinish" in (finished.error or "")
        assert isinstance(ended, TurnEnded)
        assert ended.outcome is TurnOutcome.ERROR
        assert [m.content for m in ended.partial] == ["The answer is"]
        assert commands(decision, RunTool) == []

    def test_tool_calls_run_then_the_model_is_called_again(self) -> None:
        """Calls are recorded and run; the last result calls the model again."""
        d = Driver()
        call = d.started()
        d.stream(
            call.run_id,
            MessageStart(),
            ToolCallDelta(index=0, id="c1", name="lookup", arguments='{"q": 1}'),
            ToolCallDelta(index=1, id="c2", name="nope", arguments="{}"),
            MessageFinish(),
        )
        decision = d(ModelEnded, run_id=call.run_id)
        assert kinds(decision) == ["ModelCallFinished", "MessageAdded", "MessageAdded",
                                   "MessageAdded"]  # fmt: skip
        unknown = decision.events[3]
        assert isinstance(unknown, MessageAdded)
        assert unknown.message.error_type == "unknown_tool"
        assert commands(decision, RunTool) == [RunTool(call_id="c1", name="lookup",
                                                       arguments={"q": 1})]  # fmt: skip
        assert commands(decision, CallModel) == []
        d.now = 1.0
        done = d(ToolDone, call_id="c1", outcome=ToolOutcome(content="42"))
        assert kinds(done) == ["MessageAdded"]
        result = done.events[0]
        assert isinstance(result, MessageAdded)
        assert result.message.metadata["duration_ms"] == 1000.0
        assert commands(done, CallModel)[0].request.call_index == 1

    @pytest.mark.parametrize("number", [2**64, -(2**63) - 1, 10**30])
    def test_an_integer_beyond_64_bits_is_refused_not_rounded(self, number: int) -> None:
        """orjson reads such an integer as a float: the tool would have run with a rounded
        number, stored as if the model sent it. The call is refused, its text kept as sent."""
        d = Driver()
        call = d.started()
        raw = f'{{"id": {number}, "note": "x"}}'
        d.stream(call.run_id, MessageStart(),
                 ToolCallDelta(index=0, id="c1", name="lookup", arguments=raw),
                 MessageFinish())  # fmt: skip
        decision = d(ModelEnded, run_id=call.run_id)
        assert commands(decision, RunTool) == []
        added = [e.message for e in decision.events if isinstance(e, MessageAdded)]
        tool_call, result = added
        assert tool_call.metadata["raw_arguments"] == raw
        assert "tool_arguments" not in tool_call.metadata
        assert result.error_type == "invalid_arguments"
        assert "$.arguments.id must be an integer that fits in 64 bits (got " in result.content
        assert "store big numbers as strings" in result.content

    def test_deep_arguments_with_long_digits_are_refused_not_raised(self) -> None:
        """orjson takes 1,024 levels, Python's json fewer: the exact re-read of deep JSON
        raised RecursionError out of step() (the session actor died, its turn stuck)."""
        d = Driver()
        call = d.started()
        raw = '{"n": "1234567890123456789", "a": ' + "[" * 990 + "]" * 990 + "}"
        d.stream(call.run_id, MessageStart(),
                 ToolCallDelta(index=0, id="c1", name="lookup", arguments=raw),
                 MessageFinish())  # fmt: skip
        decision = d(ModelEnded, run_id=call.run_id)
        assert commands(decision, RunTool) == []
        result = [e.message for e in decision.events if isinstance(e, MessageAdded)][-1]
        assert result.error_type == "invalid_arguments"
        # Either wording: Python 3.12+ reads it, then ToolCall refuses the depth.
        assert "levels deep" in result.content

    def test_nineteen_digits_that_fit_still_run(self) -> None:
        """The exact re-read only refuses what does not fit: 2**63 - 1 runs as sent."""
        d = Driver()
        call = d.started()
        raw = f'{{"id": {2**63 - 1}, "digits": "12345678901234567890", "f": 1.5}}'
        d.stream(call.run_id, MessageStart(),
                 ToolCallDelta(index=0, id="c1", name="lookup", arguments=raw),
                 MessageFinish())  # fmt: skip
        decision = d(ModelEnded, run_id=call.run_id)
        assert commands(decision, RunTool) == [
            RunTool(call_id="c1", name="lookup",
                    arguments={"id": 2**63 - 1, "digits": "12345678901234567890", "f": 1.5})
        ]  # fmt: skip

    def test_a_reused_call_id_gets_a_fresh_one(self) -> None:
        """A provider that numbers calls per response: the second ``c1`` is renamed."""
        d = Driver()
        call = d.started()
        d.stream(call.run_id, MessageStart(), ToolCallDelta(index=0, id="c1", name="lookup"),
                 MessageFinish())  # fmt: skip
        d(ModelEnded, run_id=call.run_id)
        second = commands(d(ToolDone, call_id="c1", outcome=ToolOutcome(content="x")), CallModel)[0]
        d.stream(second.run_id, MessageStart(), ToolCallDelta(index=0, id="c1", name="lookup"),
                 MessageFinish())  # fmt: skip
        decision = d(ModelEnded, run_id=second.run_id)
        renamed = commands(decision, RunTool)[0]
        assert renamed.call_id.startswith("call_a27592ee_")
        added = [e for e in decision.events if isinstance(e, MessageAdded)]
        assert added[0].message.metadata["provider_call_id"] == "c1"

    def test_stale_chunks_and_results_are_ignored(self) -> None:
        """Reports of a cancelled run change nothing."""
        d = Driver()
        call = d.started()
        d.send("again")  # interrupts; the old run is cancelled
        assert step(d.machine, SETTINGS, ModelChunk(run_id=call.run_id, chunk=TextDelta(text="x"),
                                                    **d.stamp())).events == ()  # fmt: skip
        assert d(ToolDone, call_id="nope", outcome=ToolOutcome(content="x")).events == ()

    def test_an_empty_answer_is_nudged_then_fails(self) -> None:
        """Nothing said: a nudge and another call; again (max_nudges=1): the turn fails."""
        d = Driver()
        call = d.started()
        d.stream(call.run_id, MessageStart(), MessageFinish())
        nudged = d(ModelEnded, run_id=call.run_id)
        assert kinds(nudged) == ["ModelCallFinished", "MessageAdded"]
        again = commands(nudged, CallModel)[0]
        d.stream(again.run_id, MessageStart(), MessageFinish())
        failed = d(ModelEnded, run_id=again.run_id)
        assert kinds(failed)[-2:] == ["ModelCallFinished", "TurnEnded"]
        assert failed.events[-1].outcome is TurnOutcome.ERROR  # type: ignore[attr-defined]
        assert failed.events[-1].notice is not None  # type: ignore[attr-defined]

    def test_a_blocked_empty_answer_fails_at_once_without_a_nudge(self) -> None:
        """A safety stop with nothing said is no empty answer to nudge: the same request would
        be blocked again, so the turn fails at once and the user is told it was blocked."""
        d = Driver()
        call = d.started()
        d.stream(call.run_id, MessageStart(), MessageFinish(stop_reason="SAFETY"))
        failed = d(ModelEnded, run_id=call.run_id)
        assert kinds(failed) == ["ModelCallFinished", "TurnEnded"]
        assert commands(failed, CallModel) == []
        finished, ended = failed.events
        assert isinstance(finished, ModelCallFinished)
        assert finished.status is AuditStatus.FAILED
        assert finished.stop_reason == "SAFETY"
        assert "safety filter" in (finished.error or "")
        assert isinstance(ended, TurnEnded)
        assert ended.outcome is TurnOutcome.ERROR
        assert ended.notice is not None
        assert ended.notice.content == NOTICES["blocked"]

    def test_a_reply_cut_off_at_the_token_limit_runs_none_of_its_calls(self) -> None:
        """Stopped by the output token limit: the text is kept as partial output, the call
        (perhaps cut mid-arguments) is not run, and the row keeps what was said."""
        d = Driver()
        call = d.started()
        d.stream(call.run_id, MessageStart(), TextDelta(text="Let me check"),
                 ToolCallDelta(index=0, id="c1", name="lookup", arguments='{"q": "to'),
                 MessageFinish(stop_reason="max_tokens"))  # fmt: skip
        failed = d(ModelEnded, run_id=call.run_id)
        assert kinds(failed) == ["ModelCallFinished", "TurnEnded"]
        assert commands(failed, RunTool) == []
        finished, ended = failed.events
        assert isinstance(finished, ModelCallFinished)
        assert finished.status is AuditStatus.FAILED
        assert finished.content == "Let me check"
        assert finished.stop_reason == "max_tokens"
        assert [c.name for c in finished.tool_calls] == ["lookup"]
        assert "output token limit" in (finished.error or "")
        assert isinstance(ended, TurnEnded)
        assert [m.content for m in ended.partial] == ["Let me check"]
        assert ended.partial[0].metadata["model_error"] == finished.error
        assert ended.notice is not None
        assert ended.notice.content == NOTICES["cut"]

    def test_a_broken_stream_keeps_its_text_before_the_crash_notice(self) -> None:
        """Text streamed, then the stream broke: the partial reply is stored and announced
        before the crash notice (a channel posts the text, then says it failed), and both
        come with the turn's end."""
        d = Driver()
        call = d.started()
        d.stream(call.run_id, MessageStart(), TextDelta(text="Sunny in"))
        failed = d(ModelEnded, run_id=call.run_id, error="ModelStreamBroken: dropped",
                   error_type="ModelStreamBroken")  # fmt: skip
        assert kinds(failed)[-1] == "TurnEnded"
        ended = failed.events[-1]
        assert isinstance(ended, TurnEnded)
        assert ended.outcome is TurnOutcome.ERROR
        assert [m.content for m in ended.partial] == ["Sunny in"]
        assert ended.notice is not None
        assert category_of(ended.notice) is Category.CRASH_NOTICE
        state = failed.machine.state
        tail = [(category_of(m), m.status) for m in state.messages[-2:]]
        assert tail == [(Category.REPLY, Status.PENDING), (Category.CRASH_NOTICE, Status.PENDING)]
        assert state.messages[-2].metadata["interrupted"] is True
        assert "interrupted" not in state.messages[-1].metadata
        announced = [c.update.message.id for c in commands(failed, Announce)
                     if c.update.message.id in {m.id for m in state.messages[-2:]}]  # fmt: skip
        assert announced == [m.id for m in state.messages[-2:]]

    def test_the_model_timer_fails_a_slow_call(self) -> None:
        """``model:<run>`` firing while the call runs: it fails as a timeout and is cancelled."""
        d = Driver()
        call = d.started()
        d.now = 60.0
        decision = d(TimerFired, name=f"model:{call.run_id}")
        assert kinds(decision) == ["ModelCallStarted", "ModelCallFinished", "TurnEnded"]
        assert "ModelTimeout: the model did not finish within 60.0 s" in (
            decision.events[-1].reason  # type: ignore[attr-defined]
        )
        assert CancelRun(run_id=call.run_id) in decision.commands
        assert d(TimerFired, name=f"model:{call.run_id}").events == ()  # stale now

    def test_max_model_calls_bounds_a_loop(self) -> None:
        """A model that keeps calling tools fails the turn at ``max_model_calls``."""
        d = Driver(TurnSettings(tools=(TOOL,), max_model_calls=2))
        run = d.started()
        for n in range(2):
            d.stream(run.run_id, MessageStart(),
                     ToolCallDelta(index=0, id=f"c{n}", name="lookup"), MessageFinish())  # fmt: skip
            d(ModelEnded, run_id=run.run_id)
            decision = d(ToolDone, call_id=f"c{n}", outcome=ToolOutcome(content="again"))
            if n == 0:
                run = commands(decision, CallModel)[0]
        assert decision.events[-1].outcome is TurnOutcome.ERROR  # type: ignore[attr-defined]
        assert "Settings.max_model_calls" in decision.events[-1].reason  # type: ignore[attr-defined]


class TestRecovery:
    def _orphan(self, age: float, settings: TurnSettings = SHARED) -> Driver:
        """A turn ``runner_a`` left active, found ``age`` s later by ``settings``' runner."""
        d = Driver(attrs.evolve(settings, runner="runner_a"))
        d.started()
        d.settings = settings
        d.machine = SessionMachine.load(d.machine.state)  # the runner is gone; the state stays
        d.now += age
        return d

    def test_a_young_orphan_waits_for_recover_after(self) -> None:
        """A turn active for less than ``recover_after``: a timer, no recovery yet."""
        d = self._orphan(10.0)
        decision = d(Loaded)
        assert decision.events == ()
        assert SetTimer(name="orphan", seconds=290.0) in decision.commands
        assert not d.machine.is_idle, "an orphaned turn must not be passivated away"

    def test_an_old_orphan_is_recovered_and_answered(self) -> None:
        """Older than ``recover_after``: its input goes back to pending and a turn claims it."""
        d = self._orphan(400.0)
        decision = d(Loaded)
        assert kinds(decision)[:2] == ["OrphanRecovered", "TurnStarted"]

    def test_a_dead_runner_is_recovered_at_once(self) -> None:
        """``runner_gone``: no waiting."""
        decision = self._orphan(1.0)(Loaded, runner_gone=True)
        assert isinstance(decision.events[0], OrphanRecovered)
        assert decision.events[0].calls_interrupted

    def test_on_a_store_this_runner_holds_every_orphan_is_recovered_at_once(self) -> None:
        """``exclusive``: whoever left the turn is gone; no ``recover_after`` wait."""
        d = self._orphan(1.0, attrs.evolve(SHARED, exclusive=True))
        decision = d(Loaded)
        assert isinstance(decision.events[0], OrphanRecovered)
        assert "is gone" in decision.events[0].reason  # type: ignore[operator]

    def test_this_runners_own_turn_is_recovered_at_once(self) -> None:
        """A turn this runner started, found after its actor was lost: no wait either."""
        d = Driver(attrs.evolve(SHARED, runner="runner_a"))
        d.started()
        assert d.machine.state.active_turn.runner == "runner_a"  # type: ignore[union-attr]
        d.machine = SessionMachine.load(d.machine.state)
        d.settings = attrs.evolve(SHARED, runner="runner_a")
        assert isinstance(d(Loaded).events[0], OrphanRecovered)

    def test_new_input_waits_for_the_orphan_instead_of_conflicting(self) -> None:
        """Input while an orphaned turn is active is queued; no second turn starts."""
        d = self._orphan(1.0)
        d(Loaded)
        d.send("anyone?")
        assert d(Resume).events == ()
        d.now = 400.0
        recovered = d(TimerFired, name="orphan")
        assert kinds(recovered)[:2] == ["OrphanRecovered", "TurnStarted"]
        claimed = recovered.events[1]
        assert isinstance(claimed, TurnStarted)
        assert len(d.machine.state.active_turn.input_ids) == 2  # type: ignore[union-attr]

    def test_stopping_gives_the_input_back(self) -> None:
        """A clean stop mid-turn: ``OrphanRecovered`` and every run cancelled."""
        d = Driver()
        call = d.started()
        decision = d(Stopping)
        assert kinds(decision) == ["OrphanRecovered"]
        assert CancelRun(run_id=call.run_id) in decision.commands
        assert decision.events[0].calls_interrupted  # type: ignore[attr-defined]

    def test_stopping_mid_tool_interrupts_the_call(self) -> None:
        """A stop while a tool runs marks the cut call interrupted, as an interrupt does (a
        channel edits its ⏳ line to ⏹); the recovered turn lists no open call."""
        d = Driver()
        call = d.started()
        d.stream(
            call.run_id,
            MessageStart(),
            ToolCallDelta(index=0, id="c1", name="lookup", arguments='{"q": 1}'),
            MessageFinish(),
        )
        assert commands(d(ModelEnded, run_id=call.run_id), RunTool) != []
        turn_id = d.machine.state.active_turn_id
        message_id = d.machine.state.tool_calls["c1"]
        d(Stopping)
        state = d.machine.state
        assert state.message(message_id).status is Status.INTERRUPTED
        assert dict(state.turns[turn_id].open_calls) == {}

    @staticmethod
    def _calling(d: Driver, *names: str) -> list[str]:
        """A turn whose model called ``names`` (ids c0, c1, …), all running now but
        ``guarded`` (it waits for a person)."""
        call = d.started()
        deltas = [
            ToolCallDelta(index=i, id=f"c{i}", name=name, arguments="{}")
            for i, name in enumerate(names)
        ]
        d.stream(call.run_id, MessageStart(), *deltas, MessageFinish())
        ran = commands(d(ModelEnded, run_id=call.run_id), RunTool)
        assert [c.name for c in ran] == [name for name in names if name != "guarded"]
        return [f"c{i}" for i in range(len(names))]

    def test_a_draining_stop_waits_for_the_call_and_records_its_result(self) -> None:
        """``Stopping(draining=…)`` lets those runs go on (nothing stored, nothing cancelled);
        the last result is stored as any result, then the turn is recovered, with no model
        call after it, and the call is not interrupted."""
        d = Driver()
        (c0,) = self._calling(d, "lookup")
        turn_id = d.machine.state.active_turn_id
        waiting = d(Stopping, draining={c0})
        assert (waiting.events, commands(waiting, CancelRun)) == ((), [])
        done = d(ToolDone, call_id=c0, outcome=ToolOutcome(content="42"))
        assert kinds(done) == ["MessageAdded", "OrphanRecovered"]
        assert commands(done, CallModel) == []
        recovered = done.events[1]
        assert isinstance(recovered, OrphanRecovered)
        assert recovered.reason == "the runtime stopped during the turn; it restarts on next load"
        state = d.machine.state
        assert state.message(state.tool_calls[c0]).status is not Status.INTERRUPTED
        assert state.turns[turn_id].status is TurnStatus.RECOVERED
        assert d.machine.run is None
        assert d(Stopping).events == ()  # the stop's end finds nothing left to do

    def test_a_call_still_running_when_the_drain_ends_may_have_run(self) -> None:
        """The stop's end (``Stopping`` without ``draining``) interrupts what still runs, and
        the turn's reason names the call and says it may have run."""
        d = Driver()
        (c0,) = self._calling(d, "lookup")
        d(Stopping, draining={c0})
        ended = d(Stopping)
        assert kinds(ended) == ["MetadataUpdated", "OrphanRecovered"]
        recovered = ended.events[1]
        assert isinstance(recovered, OrphanRecovered)
        assert recovered.calls_interrupted
        assert recovered.reason == (
            "the runtime stopped while tool call c0 (lookup) still ran; it may have run, so "
            "check before running it again; the turn restarts on next load"
        )
        assert CancelRun(run_id=c0) in ended.commands
        state = d.machine.state
        assert state.message(state.tool_calls[c0]).status is Status.INTERRUPTED
        assert d(ToolDone, call_id=c0, outcome=ToolOutcome(content="late")).events == ()
        (result,) = [
            part
            for message in clean_history(state).messages
            for part in message.parts
            if isinstance(part, ToolResultPart)
        ]
        assert (result.call_id, result.synthesized) == (c0, True)
        assert result.text == (
            "[Interrupted: the call to lookup was still running when its turn was cut off, and "
            "its result was lost; it may have run, in part or in full. Check before calling "
            "it again.]"
        )

    def test_runs_not_drained_are_cancelled_at_once_and_named(self) -> None:
        """Only the runs in ``draining`` are waited for: the others are cancelled when the stop
        begins, and the reason names them as calls that may have run."""
        d = Driver(attrs.evolve(SETTINGS, tools=(TOOL, attrs.evolve(TOOL, name="fetch"))))
        c0, c1 = self._calling(d, "lookup", "fetch")
        waiting = d(Stopping, draining={c0})
        assert commands(waiting, CancelRun) == [CancelRun(run_id=c1)]
        done = d(ToolDone, call_id=c0, outcome=ToolOutcome(content="42"))
        recovered = done.events[-1]
        assert isinstance(recovered, OrphanRecovered)
        assert recovered.reason is not None
        assert recovered.reason.startswith("the runtime stopped while tool call c1 (fetch)")
        state = d.machine.state
        assert state.message(state.tool_calls[c1]).status is Status.INTERRUPTED
        assert state.message(state.tool_calls[c0]).status is not Status.INTERRUPTED

    def test_a_turn_left_waiting_for_approval_by_the_drain_waits_on(self) -> None:
        """A call ran beside one that waits for a person: once the drain has its result, the
        turn only waits for the approval, so it waits on for the next runner (as a stop
        leaves such a turn) instead of being recovered and losing the wait."""
        guarded = attrs.evolve(TOOL, name="guarded", needs_approval=True)
        d = Driver(attrs.evolve(SETTINGS, tools=(TOOL, guarded)))
        c0, c1 = self._calling(d, "lookup", "guarded")
        assert d(Stopping, draining={c0}).events == ()
        done = d(ToolDone, call_id=c0, outcome=ToolOutcome(content="42"))
        assert kinds(done) == ["MessageAdded"]
        assert d.machine.run is None
        turn = d.machine.state.active_turn
        assert turn is not None
        assert list(turn.awaiting_approval) == [c1]
        assert d.machine.state.waits_for_approval

    def test_a_stop_with_nothing_to_drain_ends_the_turn_at_once(self) -> None:
        """``draining`` naming no running call: the stop is as without it."""
        d = Driver()
        self._calling(d, "lookup")
        assert kinds(d(Stopping, draining={"elsewhere"})) == ["MetadataUpdated", "OrphanRecovered"]

    def test_a_runner_failure_fails_the_turn(self) -> None:
        """``RunnerFailed`` (the store could not write): the turn ends as error."""
        d = Driver()
        d.started()
        decision = d(RunnerFailed, reason="StoreError: disk full")
        assert decision.events[-1].outcome is TurnOutcome.ERROR  # type: ignore[attr-defined]


class TestDeliveryAndIdleness:
    def test_delivery_is_a_compare_and_set(self) -> None:
        """A report of the status seen moves it to delivered; a stale one changes nothing."""
        d = Driver()
        call = d.started()
        d.stream(call.run_id, MessageStart(), TextDelta(text="ok"), MessageFinish())
        reply = d(ModelEnded, run_id=call.run_id).events[1]
        assert isinstance(reply, MessageAdded)
        report = {"message_id": reply.message.id, "expected": Status.PENDING}
        assert kinds(d(Delivered, **report)) == ["StatusChanged"]
        assert d(Delivered, **report).events == ()

    def test_an_idle_session_asks_to_be_passivated(self) -> None:
        """Idle: the idle timer is armed once; when it fires, ``Passivate`` at the seq."""
        d = Driver()
        call = d.started()
        d.stream(call.run_id, MessageStart(), TextDelta(text="ok"), MessageFinish())
        ended = d(ModelEnded, run_id=call.run_id)
        assert SetTimer(name="idle", seconds=30.0) in ended.commands
        fired = d(TimerFired, name="idle")
        assert commands(fired, Passivate) == [Passivate(seq=d.machine.state.seq)]
        assert d(Interrupt).events == ()


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32))
def test_the_same_inputs_make_the_same_events(seed: int) -> None:
    """Two runs of one seed store the same events, byte for byte (determinism)."""
    logs = []
    for _ in range(2):
        sim = Simulation(model=PlanModel(), tools=fake_tools(), settings=SETTINGS,
                         choose=Prng(seed).choose)  # fmt: skip
        prng = Prng(seed + 1)
        for n in range(4):
            sim.send("s", f"message {n}", plan=TurnPlan(UseTools(("ok", {"text": "a"})),
                                                        Say("done")))  # fmt: skip
            sim.run([prng.below(4) for _ in range(prng.below(6))])
        sim.settle()
        logs.append([to_json(e) for e in sim.store.events("s")])
    assert logs[0] == logs[1]
    assert len(logs[0]) > 4


def test_ids_are_derived_from_the_session_and_seq() -> None:
    """``msg_<8 hex of the session>_<seq>``: the same in every process, other in a fork."""
    from runtime._step import session_tag

    assert session_tag("s") == "a27592ee"
    assert session_tag("demo") == "5be1ef79"
    run = simulate(7, check_views=False)
    assert run.events > 0


GUARDED = ToolSpec(name="guarded", description="Needs a person.", parameters={"type": "object"},
                   needs_approval=True)  # fmt: skip


class TestApprovals:
    def waiting(self, settings: TurnSettings) -> tuple[Driver, str]:
        d, call_id, _ = self.requested(settings)
        return d, call_id

    def requested(self, settings: TurnSettings) -> tuple[Driver, str, Decision]:
        d = Driver(settings)
        call = d.started()
        d.stream(call.run_id, MessageStart(), ToolCallDelta(index=0, id="c1", name="guarded"),
                 MessageFinish())  # fmt: skip
        decision = d(ModelEnded, run_id=call.run_id)
        assert kinds(decision)[-1] == "ApprovalRequested"
        assert commands(decision, RunTool) == []
        assert commands(decision, CallModel) == []
        return d, "c1", decision

    def test_a_call_that_needs_approval_waits_quietly(self) -> None:
        """The call is recorded and waits: nothing runs, the session is quiet."""
        d, _ = self.waiting(TurnSettings(tools=(GUARDED,), passivate_after=30.0))
        assert d.machine.is_waiting
        assert d.machine.is_quiet
        assert not d.machine.is_idle
        assert d(TimerFired, name="idle").commands[:1] == (Passivate(seq=d.machine.state.seq),)

    def test_approval_runs_it_and_denial_answers_it(self) -> None:
        """Approved: ``RunTool``. Denied: an error result, and the model is called again."""
        d, call_id = self.waiting(TurnSettings(tools=(GUARDED,)))
        approved = d(ApprovalGiven, call_id=call_id, approved=True)
        assert kinds(approved) == ["ApprovalDecided"]
        assert commands(approved, RunTool)[0].call_id == call_id
        d, call_id = self.waiting(TurnSettings(tools=(GUARDED,)))
        denied = d(ApprovalGiven, call_id=call_id, approved=False, reason="no")
        assert kinds(denied) == ["ApprovalDecided", "MessageAdded"]
        assert commands(denied, CallModel)

    def test_the_timeout_denies_on_simulated_time(self) -> None:
        """``approval_timeout``: a timer, and no passivation meanwhile; firing denies."""
        d, call_id, asked = self.requested(
            TurnSettings(tools=(GUARDED,), approval_timeout=90.0, passivate_after=30.0)
        )
        assert SetTimer(name=f"approval:{call_id}", seconds=90.0) in asked.commands
        assert d(TimerFired, name="idle").commands == ()  # the timer must live to deny it
        d.now = 90.0
        fired = d(TimerFired, name=f"approval:{call_id}")
        decided = fired.events[0]
        assert isinstance(decided, ApprovalDecided)
        assert (decided.approved, decided.by) == (False, "timeout")
        result = fired.events[1]
        assert isinstance(result, MessageAdded)
        assert result.message.error_type == "denied"
        assert result.message.content == (
            "No one approved this tool call within 90 s (Settings.approval_timeout), so it "
            "did not run. Do not call it again with these arguments unless the user asks; "
            "answer without it, or ask the user what to do."
        )  # not "The user denied this tool call": no one did

    def test_a_waiting_turn_survives_a_reload(self) -> None:
        """Passivated or restarted while it waits: on load it waits on, not recovered."""
        d, call_id = self.waiting(TurnSettings(tools=(GUARDED,), runner="a"))
        d.machine = SessionMachine.load(d.machine.state)
        d.settings = TurnSettings(tools=(GUARDED,), runner="b")
        assert d(Loaded).events == ()
        assert d.machine.is_waiting
        assert kinds(d(ApprovalGiven, call_id=call_id, approved=True)) == ["ApprovalDecided"]

    @pytest.mark.parametrize("age", [10.0, 400.0])
    def test_a_waiting_turn_of_another_runner_is_no_orphan(self, age: float) -> None:
        """On a shared store, a turn another runner left waiting only for a person is
        not recovered, however old (before the fix, after ``recover_after`` its call was
        interrupted and the approval lost): it waits on, with this runner, at once."""
        shared = TurnSettings(tools=(GUARDED,), runner="b", exclusive=False)
        d, call_id = self.waiting(attrs.evolve(shared, runner="a"))
        d.machine = SessionMachine.load(d.machine.state)
        d.settings = shared
        d.now += age
        loaded = d(Loaded)
        assert loaded.events == ()
        assert [c for c in commands(loaded, SetTimer) if c.name == "orphan"] == []
        assert d.machine.is_waiting
        assert kinds(d(ApprovalGiven, call_id=call_id, approved=True)) == ["ApprovalDecided"]

    def stored(self, d: Driver, call_id: str, approved: bool, **fields: Any) -> None:
        """A decision another process stored for the owner (``store_decision``'s event)."""
        from runtime import MetadataUpdated, apply
        from runtime._decisions import decision_metadata

        turn = d.machine.state.active_turn
        assert turn is not None
        state = d.machine.state
        event = MetadataUpdated(
            session_id=state.session_id, seq=state.seq + 1, at=EPOCH + timedelta(seconds=d.now),
            message_id=turn.awaiting_approval[call_id],
            metadata=decision_metadata(approved, fields.get("reason"), fields.get("by")),
        )  # fmt: skip
        d.machine = SessionMachine.load(apply(state, event))  # the owner reloads

    def test_an_approval_stored_elsewhere_is_taken_on_load(self) -> None:
        """A decision another process stored for the call (its message's metadata) is
        taken by the runner that loads the session: ``ApprovalDecided`` (by whoever
        decided), then the tool runs, once."""
        d, call_id = self.waiting(TurnSettings(tools=(GUARDED,), runner="a"))
        self.stored(d, call_id, True, by="admin")
        d.settings = TurnSettings(tools=(GUARDED,), runner="b")
        loaded = d(Loaded)
        assert kinds(loaded) == ["ApprovalDecided"]
        decided = loaded.events[0]
        assert isinstance(decided, ApprovalDecided)
        assert (decided.call_id, decided.approved, decided.by) == (call_id, True, "admin")
        assert [c.call_id for c in commands(loaded, RunTool)] == [call_id]
        assert not d.machine.is_waiting
        # Loaded again (the tool's result never came: its runner died): not run again,
        # and marked as a call that may have run (it was handed to its tool).
        d.machine = SessionMachine.load(d.machine.state)
        again = d(Loaded)
        assert commands(again, RunTool) == []
        assert kinds(again)[:2] == ["MetadataUpdated", "OrphanRecovered"]
        recovered = again.events[1]
        assert isinstance(recovered, OrphanRecovered)
        assert f"tool call {call_id} (guarded) had started" in str(recovered.reason)

    def test_a_stored_denial_that_ends_the_turn_on_load(self) -> None:
        """A stored denial taken on load when the turn may call the model no more: the
        turn ends (as error, with its notice) and the session loads. Before, an assert
        failed in every load, so the session could never be loaded again (review)."""
        d, call_id = self.waiting(TurnSettings(tools=(GUARDED,), runner="a", max_model_calls=1))
        self.stored(d, call_id, False, reason="no", by="admin")
        d.settings = TurnSettings(tools=(GUARDED,), runner="b", max_model_calls=1)
        loaded = d(Loaded)
        assert kinds(loaded)[:2] == ["ApprovalDecided", "MessageAdded"]
        assert kinds(loaded)[-1] == "TurnEnded"
        assert d.machine.state.active_turn is None
        assert d.machine.run is None

    def test_a_stored_approval_of_a_tool_this_runner_lacks_waits_on(self) -> None:
        """A runner without the call's tool leaves a stored approval for one that has it:
        the call waits on, its decision still stored. Before, it took the approval and
        its shell failed with KeyError running the tool, and the approved call was lost
        (review)."""
        d, call_id = self.waiting(TurnSettings(tools=(GUARDED,), runner="a"))
        self.stored(d, call_id, True, by="admin")
        d.settings = TurnSettings(tools=(TOOL,), runner="b")
        loaded = d(Loaded)
        assert loaded.events == ()
        assert commands(loaded, RunTool) == []
        assert d.machine.is_waiting
        # A runner that has it takes it.
        d.machine = SessionMachine.load(d.machine.state)
        d.settings = TurnSettings(tools=(GUARDED,), runner="c")
        taken = d(Loaded)
        assert kinds(taken) == ["ApprovalDecided"]
        assert [c.call_id for c in commands(taken, RunTool)] == [call_id]

    def test_a_stored_denial_of_a_tool_this_runner_lacks_is_taken(self) -> None:
        """A denial runs nothing: any runner takes it."""
        d, call_id = self.waiting(TurnSettings(tools=(GUARDED,), runner="a"))
        self.stored(d, call_id, False, by="admin")
        d.settings = TurnSettings(tools=(TOOL,), runner="b")
        assert kinds(d(Loaded))[:2] == ["ApprovalDecided", "MessageAdded"]

    def test_a_denial_stored_elsewhere_is_taken_on_load(self) -> None:
        """A stored denial answers the call with the denied result (its reason) and calls
        the model again: the turn goes on."""
        d, call_id = self.waiting(TurnSettings(tools=(GUARDED,), runner="a"))
        self.stored(d, call_id, False, reason="too risky", by="admin")
        loaded = d(Loaded)
        assert kinds(loaded) == ["ApprovalDecided", "MessageAdded"]
        result = loaded.events[1]
        assert isinstance(result, MessageAdded)
        assert result.message.error_type == "denied"
        assert result.message.content.startswith("The user denied this tool call: too risky.")
        assert result.message.metadata["denied_by"] == "admin"
        assert commands(loaded, RunTool) == []
        assert commands(loaded, CallModel)

    def test_only_the_calls_with_a_stored_decision_are_taken(self) -> None:
        """Of two calls that wait, the one decided elsewhere is taken; the other waits
        on, with its approval timer (the decided one's is cleared)."""
        settings = TurnSettings(tools=(GUARDED,), runner="a", approval_timeout=90.0)
        d = Driver(settings)
        call = d.started()
        d.stream(call.run_id, MessageStart(), ToolCallDelta(index=0, id="c1", name="guarded"),
                 ToolCallDelta(index=1, id="c2", name="guarded"), MessageFinish())  # fmt: skip
        d(ModelEnded, run_id=call.run_id)
        self.stored(d, "c2", True)
        loaded = d(Loaded)
        assert kinds(loaded) == ["ApprovalDecided"]
        assert [c.call_id for c in commands(loaded, RunTool)] == ["c2"]
        turn = d.machine.state.active_turn
        assert turn is not None
        assert list(turn.awaiting_approval) == ["c1"]
        assert [t.name for t in commands(loaded, SetTimer)] == ["approval:c1"]

    def test_a_malformed_stored_decision_is_ignored(self) -> None:
        """Metadata under the key that is not a decision (no bool ``approved``) decides
        nothing: the call waits on."""
        from runtime import MetadataUpdated, apply
        from runtime._decisions import DECISION_KEY

        d, call_id = self.waiting(TurnSettings(tools=(GUARDED,), runner="a"))
        state = d.machine.state
        turn = state.active_turn
        assert turn is not None
        event = MetadataUpdated(session_id="s", seq=state.seq + 1, at=EPOCH,
                                message_id=turn.awaiting_approval[call_id],
                                metadata={DECISION_KEY: {"approved": "yes"}})  # fmt: skip
        d.machine = SessionMachine.load(apply(state, event))
        assert d(Loaded).events == ()
        assert d.machine.is_waiting

    @settings(max_examples=150, deadline=None)
    @given(
        st.lists(
            st.tuples(
                st.sampled_from(["store", "decide", "done", "reload", "takeover"]),
                st.sampled_from(["c1", "c2"]),
                st.booleans(),
            ),
            max_size=14,
        )
    )
    def test_a_call_is_decided_and_run_at_most_once(
        self, actions: list[tuple[str, str, bool]]
    ) -> None:
        """Decisions stored by other processes, the owner's own, tool results, reloads and
        takeovers, in any order: each call is decided at most once (``ApprovalDecided``)
        and run at most once (``RunTool``), and a stored decision is taken as stored."""
        from runtime import MetadataUpdated, apply
        from runtime._decisions import decision_metadata, stored_decision

        d = Driver(TurnSettings(tools=(GUARDED,), runner="a"))
        call = d.started()
        d.stream(call.run_id, MessageStart(), ToolCallDelta(index=0, id="c1", name="guarded"),
                 ToolCallDelta(index=1, id="c2", name="guarded"), MessageFinish())  # fmt: skip
        d(ModelEnded, run_id=call.run_id)
        log = d.machine.state  # the stored head: the owner's, or ahead of it
        runs: list[str] = []
        decided: list[str] = []
        stored: dict[str, tuple[bool, str | None, str | None]] = {}

        def adopt(decision: Decision) -> None:
            nonlocal log
            log = decision.machine.state
            runs.extend(c.call_id for c in commands(decision, RunTool))
            for event in decision.events:
                if isinstance(event, ApprovalDecided):
                    decided.append(event.call_id)
                    if event.call_id in stored:
                        want = stored[event.call_id]
                        assert (event.approved, event.reason, event.by) == want

        def owner(kind: type, **fields: Any) -> None:
            if d.machine.state is not log:  # its write would conflict: it reloads first
                d.machine = SessionMachine.load(log)
                adopt(d(Loaded))
            adopt(d(kind, **fields))

        for action, call_id, flag in actions:
            turn = log.active_turn
            waits = turn is not None and call_id in turn.awaiting_approval
            if action == "store" and waits:
                assert turn is not None
                message_id = turn.awaiting_approval[call_id]
                if stored_decision(log.message(message_id)) is None:  # else refused
                    stored[call_id] = (flag, None if flag else "no", "other")
                    log = apply(log, MetadataUpdated(
                        session_id="s", seq=log.seq + 1, at=EPOCH, message_id=message_id,
                        metadata=decision_metadata(*stored[call_id])))  # fmt: skip
            elif action == "decide":
                owner(ApprovalGiven, call_id=call_id, approved=flag)
            elif action == "done" and d.machine.run is not None and call_id in d.machine.run.tools:
                owner(ToolDone, call_id=call_id, outcome=ToolOutcome(content="ok"))
            elif action in ("reload", "takeover"):
                runner = "a" if action == "reload" else "b"
                d.settings = TurnSettings(tools=(GUARDED,), runner=runner)
                d.machine = SessionMachine.load(log)  # what ran is lost with the old actor
                adopt(d(Loaded))
        assert len(runs) == len(set(runs))
        assert len(decided) == len(set(decided))
        assert set(runs) <= set(decided)

    def test_input_stored_elsewhere_ends_a_waiting_turn_on_load(self) -> None:
        """Input another process stored while the turn waited (its ``MessageAdded`` only,
        as ``store_input`` stores it): on load the turn is recovered, not left waiting with
        the input queued for good, and one turn takes both inputs."""
        d, _ = self.waiting(TurnSettings(tools=(GUARDED,), runner="a"))
        d.machine = SessionMachine.load(d.machine.state)  # another process's view of it
        added = [e for e in d.send("never mind").events if isinstance(e, MessageAdded)]
        assert len(added) == 1
        d.machine = SessionMachine.load(d.machine.state)  # the owner reloads
        loaded = d(Loaded)
        assert kinds(loaded)[:2] == ["OrphanRecovered", "TurnStarted"]
        turn = d.machine.state.active_turn
        assert turn is not None
        assert len(turn.input_ids) == 2
        assert commands(loaded, CallModel)
