"""Model-call audit through the runtime (seed 003's verification table, adapted)."""

from __future__ import annotations

from pathlib import Path

from harness import WAIT, RuntimeFactory, make_runtime, when

from actors import (
    Delta,
    DeltaKind,
    MessageFinish,
    MessageStart,
    Response,
    Runtime,
    ScriptedModel,
    TextDelta,
    ToolCallDelta,
    call,
    error,
    reply,
    tool,
)
from runtime import AuditStatus, Status, TurnStatus, Usage, to_openai
from runtime.testing import check_invariants

__all__ = ["make_runtime"]


@tool
def lookup(q: str = "") -> str:
    """Looks something up."""
    return f"found {q}"


def statuses(rt: Runtime, session: str) -> list[AuditStatus]:
    return [row.status for row in rt.model_calls(session)]


class TestRows:
    def test_two_call_turn_stores_two_ordered_rows(self, make_runtime: RuntimeFactory) -> None:
        """A turn with a tool call makes two rows, in order, keyed by the provider's ids."""
        model = ScriptedModel(
            [
                call(
                    "lookup", {"q": "x"}, id="prov_1", usage=Usage(input_tokens=50, output_tokens=9)
                ),
                reply("done", id="prov_2", usage=Usage(input_tokens=80, output_tokens=3)),
                reply("second turn", id="prov_3"),
            ]
        )
        rt = make_runtime(model=model, tools=[lookup])
        rt.send("s", "go")
        rt.wait_idle("s", timeout=WAIT)
        rows = rt.model_calls("s")
        assert [(r.operation_id, r.sequence, r.status) for r in rows] == [
            ("prov_1", 1, AuditStatus.COMPLETED),
            ("prov_2", 2, AuditStatus.COMPLETED),
        ]
        assert rows[0].usage == Usage(input_tokens=50, output_tokens=9)
        assert rows[0].tool_calls[0].name == "lookup"
        assert rows[1].content == "done"
        assert all(r.duration_ms is not None and r.duration_ms >= 0 for r in rows)
        assert rows[0].model == "scripted"
        rt.send("s", "again")
        rt.wait_idle("s", timeout=WAIT)
        turns = rt.state("s").turn_list()
        assert [r.operation_id for r in rt.model_calls("s", turns[1].id)] == ["prov_3"]
        check_invariants(rt.timeline("s"))

    def test_runtime_ids_when_the_provider_gives_none(self, make_runtime: RuntimeFactory) -> None:
        """Without a provider message id, the row is keyed by the runtime's model-run id."""
        rt = make_runtime(model=ScriptedModel([reply("hi")]))
        rt.send("s", "go")
        rt.wait_idle("s", timeout=WAIT)
        (row,) = rt.model_calls("s")
        assert row.operation_id.startswith("run_")

    def test_rows_stay_out_of_history_and_views(self, make_runtime: RuntimeFactory) -> None:
        """Counts, history and the model's next view never show audit rows."""
        model = ScriptedModel([reply("first answer", id="p1"), reply("ok", id="p2")])
        rt = make_runtime(model=model)
        rt.send("s", "one")
        rt.wait_idle("s", timeout=WAIT)
        rt.send("s", "two")
        state = rt.wait_idle("s", timeout=WAIT)
        assert len(state.messages) == 4
        assert sum(state.counts) == 4
        assert "p1" not in repr(to_openai(model.requests[1].view))


class TestIdempotency:
    def test_repeated_start_is_idempotent(self, make_runtime: RuntimeFactory) -> None:
        """A stream that repeats its MessageStart leaves one row."""
        steps = (MessageStart(id="p1"), MessageStart(id="p1"), TextDelta(text="hi"),
                 MessageFinish(usage=Usage(output_tokens=1)))  # fmt: skip
        rt = make_runtime(model=ScriptedModel([Response(steps)]))
        user = rt.send("s", "go")
        state = rt.wait_idle("s", timeout=WAIT)
        assert state.message(user.id).status is Status.PROCESSED
        assert [r.operation_id for r in state.model_calls()] == ["p1"]

    def test_conflicting_start_fails_the_turn(self, make_runtime: RuntimeFactory) -> None:
        """A second start of the same call with another id fails loudly: the turn ends as error."""
        steps = (MessageStart(id="p1"), TextDelta(text="hi"), MessageStart(id="p2"),
                 MessageFinish())  # fmt: skip
        rt = make_runtime(model=ScriptedModel([Response(steps)]))
        user = rt.send("s", "go")
        state = rt.wait_idle("s", timeout=WAIT)
        assert state.message(user.id).status is Status.ERROR
        (turn,) = state.turn_list()
        assert "audit refused" in (turn.reason or "")
        assert statuses(rt, "s") == [AuditStatus.FAILED]


class TestAStreamWithoutItsFinish:
    """A model whose stream ends without ``MessageFinish`` was cut short (docs/providers.md,
    "Writing a Model"): a user's custom model that stopped mid-answer had its half reply
    recorded as complete and its half-streamed tool call run."""

    def test_text_is_kept_marked_and_the_turn_fails(self, make_runtime: RuntimeFactory) -> None:
        steps = (MessageStart(id="p"), TextDelta(text="The answer is defini"))
        rt = make_runtime(model=ScriptedModel([Response(steps)]))
        user = rt.send("s", "go")
        state = rt.wait_idle("s", timeout=WAIT)
        assert state.message(user.id).status is Status.ERROR
        (row,) = rt.model_calls("s")
        assert row.status is AuditStatus.FAILED
        assert "ended before MessageFinish" in (row.error or "")
        (turn,) = state.turn_list()
        assert "ended before MessageFinish" in (turn.reason or "")
        (kept,) = [m for m in state.messages if m.content == "The answer is defini"]
        assert dict(kept.metadata).get("interrupted") is True
        check_invariants(rt.timeline("s"))

    def test_a_tool_call_is_not_run(self, make_runtime: RuntimeFactory) -> None:
        ran: list[int] = []

        @tool
        def transfer(amount: int) -> str:
            """Moves money."""
            ran.append(amount)
            return "moved"

        steps = (
            MessageStart(id="p"),
            ToolCallDelta(index=0, id="c1", name="transfer", arguments='{"amount": 100}'),
        )
        rt = make_runtime(model=ScriptedModel([Response(steps)]), tools=[transfer])
        user = rt.send("s", "go")
        state = rt.wait_idle("s", timeout=WAIT)
        assert state.message(user.id).status is Status.ERROR
        assert ran == []
        assert statuses(rt, "s") == [AuditStatus.FAILED]


class TestNoRunningRowOnceFinal:
    def test_failed_call(self, make_runtime: RuntimeFactory) -> None:
        """A failing model leaves a failed row with its error and duration."""
        rt = make_runtime(
            model=ScriptedModel([error("provider down", after=[MessageStart(id="p")])])
        )
        rt.send("s", "go")
        rt.wait_idle("s", timeout=WAIT)
        (row,) = rt.model_calls("s")
        assert row.status is AuditStatus.FAILED
        assert "provider down" in (row.error or "")
        assert row.duration_ms is not None

    def test_failure_before_any_chunk_still_leaves_a_row(
        self, make_runtime: RuntimeFactory
    ) -> None:
        """A call that fails before streaming anything is still a (failed) row."""
        rt = make_runtime(model=ScriptedModel([error("refused")]))
        rt.send("s", "go")
        rt.wait_idle("s", timeout=WAIT)
        assert statuses(rt, "s") == [AuditStatus.FAILED]

    def test_interrupt_after_first_chunk(self, make_runtime: RuntimeFactory) -> None:
        """Mid-turn the row reads running; the interrupt closes it as interrupted."""
        model = ScriptedModel([reply("slow words here", piece=2, delay=0.05, id="p1"), reply("ok")])
        rt = make_runtime(model=model)
        streaming, callback = when(lambda d: isinstance(d, Delta) and d.kind is DeltaKind.TEXT)
        rt.subscribe(callback, on_delta=callback)
        rt.send("s", "first")
        streaming.wait()
        assert statuses(rt, "s") == [AuditStatus.RUNNING]  # readable mid-turn
        rt.send("s", "second")
        rt.wait_idle("s", timeout=WAIT)
        assert statuses(rt, "s") == [AuditStatus.INTERRUPTED, AuditStatus.COMPLETED]
        check_invariants(rt.timeline("s"))

    def test_restart_with_a_turn_in_flight(self, tmp_path: Path) -> None:
        """Stopping mid-call abandons the row; the next runtime answers with a new one."""
        db = tmp_path / "a.db"
        first_model = ScriptedModel([reply("never", delay=30, id="p1")])
        with Runtime(model=first_model, store=db) as first:
            sub_signal, callback = when(lambda d: isinstance(d, Delta))
            first.subscribe(callback, on_delta=callback)
            first.send("s", "go")
            sub_signal.wait()
        with Runtime(model=ScriptedModel([reply("answered", id="p2")]), store=db) as second:  # fmt: skip
            state = second.wait_idle("s", timeout=WAIT)
            assert [(r.operation_id, r.status) for r in state.model_calls()] == [
                ("p1", AuditStatus.ABANDONED),
                ("p2", AuditStatus.COMPLETED),
            ]
            assert [t.status for t in state.turn_list()] == [
                TurnStatus.RECOVERED,
                TurnStatus.PROCESSED,
            ]
            check_invariants(second.timeline("s"))
