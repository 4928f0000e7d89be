"""Human approval of tool calls: the turn waits, a person approves or denies, it survives."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from actors import (
    ApprovalNeeded,
    AskTimeout,
    InvalidConfig,
    NotAwaitingApproval,
    Reply,
    Runtime,
    ScriptedModel,
    Settings,
    TextPiece,
    ToolResult,
    call,
    calls,
    reply,
    tool,
)
from actors._ids import utc_now
from actors._leasing import store_decision
from runtime import (
    ApprovalDecided,
    InvalidEvent,
    InvalidInput,
    Status,
    TurnOutcome,
    UnknownSession,
)
from runtime.store import SQLiteStore

WAIT = 60.0


def deleter(ran: list[str]) -> Any:
    @tool(approval=True)
    def delete_file(path: str) -> str:
        """Delete a file.

        Args:
            path: The file.
        """
        ran.append(path)
        return f"deleted {path}"

    return delete_file


def model() -> ScriptedModel:
    return ScriptedModel([call("delete_file", {"path": "/tmp/x"}), reply("Done.")],
                         fallback=reply("Understood."))  # fmt: skip


def make(store: Any = ":memory:", **settings: Any) -> tuple[Runtime, list[str]]:
    ran: list[str] = []
    rt = Runtime(model=model(), store=store, tools=[deleter(ran)],
                 settings=Settings(passivate_after=None, **settings))  # fmt: skip
    return rt, ran


def waiting_call(rt: Runtime, session: str = "s1") -> str:
    rt.wait_idle(session, timeout=WAIT)  # returns while the turn waits for a person
    (message,) = rt.pending_approvals(session)
    assert message.tool_call is not None
    return message.tool_call.id


class TestApproval:
    def test_the_call_waits_then_runs_once_approved(self) -> None:
        """Nothing runs until ``approve``; then the tool runs and the turn answers."""
        rt, ran = make()
        with rt:
            sent = rt.send("s1", "delete /tmp/x")
            call_id = waiting_call(rt)
            assert ran == []
            state = rt.state("s1")
            assert state.message(sent.id).status is Status.PROCESSING
            assert list(state.active_turn.awaiting_approval) == [call_id]  # type: ignore[union-attr]
            rt.approve("s1", call_id, by="Chii")
            final = rt.wait_idle("s1", timeout=WAIT)
        assert ran == ["/tmp/x"]
        assert final.message(sent.id).status is Status.PROCESSED
        assert [m.content for m in final][-1] == "Done."

    def test_pending_approvals_come_in_the_order_the_model_called(self) -> None:
        """Several calls in one answer are listed in the order the model made them (they
        came in the hash order of their ids)."""
        ran: list[str] = []
        paths = [f"/tmp/{i}" for i in range(12)]
        script = ScriptedModel([calls([("delete_file", {"path": p}) for p in paths])],
                               fallback=reply("Done."))  # fmt: skip
        settings = Settings(passivate_after=None)
        with Runtime(model=script, store=":memory:", tools=[deleter(ran)], settings=settings) as rt:
            rt.send("s1", "delete them all")
            rt.wait_idle("s1", timeout=WAIT)
            pending = rt.pending_approvals("s1")
        assert [m.tool_call.arguments["path"] for m in pending if m.tool_call] == paths

    def test_a_denied_call_never_runs_and_the_model_is_told_why(self) -> None:
        """``deny``: no run; the model gets an error result with the reason, and answers."""
        rt, ran = make()
        with rt:
            rt.send("s1", "delete /tmp/x")
            call_id = waiting_call(rt)
            rt.deny("s1", call_id, "not on a Friday", by="Chii")
            final = rt.wait_idle("s1", timeout=WAIT)
            second = rt.model.requests[1]  # type: ignore[attr-defined]
        assert ran == []
        result = next(m for m in final if m.tool_call_id == call_id)
        assert result.is_error
        assert result.error_type == "denied"
        assert "The user denied this tool call: not on a Friday." in result.content
        assert "not on a Friday" in str(second.view.messages[-1].text)

    def test_approving_what_does_not_wait_is_a_clear_error(self) -> None:
        """A call decided already, or unknown: ``NotAwaitingApproval``."""
        rt, _ = make()
        with rt:
            rt.send("s1", "delete /tmp/x")
            call_id = waiting_call(rt)
            rt.approve("s1", call_id)
            with pytest.raises(NotAwaitingApproval, match=r"^No tool call '.+' waits for approval"):
                rt.deny("s1", call_id)
            with pytest.raises(NotAwaitingApproval):
                rt.approve("s1", "call_nope")

    @pytest.mark.parametrize(
        ("args", "message"),
        [((None,), r"^deny\(\) takes the tool call's id as a non-empty str \(got None that is a 'NoneType'\)"),
         ((5,), r"^deny\(\) takes the tool call's id as a non-empty str \(got 5 that is an 'int'\)"),
         (("",), r"^deny\(\) takes the tool call's id as a non-empty str \(got the empty str ''\)"),
         (("call_x", 5), r"^deny\(\) takes a reason that is a str or None \(got 5 that is an 'int'\)")],
    )  # fmt: skip
    def test_a_decision_of_the_wrong_type_is_invalid_input(
        self, args: tuple[Any, ...], message: str
    ) -> None:
        """deny('s1', None) said 'No tool call None waits for approval'."""
        rt, _ = make()
        with rt:
            rt.send("s1", "delete /tmp/x")
            waiting_call(rt)
            with pytest.raises(InvalidInput, match=message):
                rt.deny("s1", *args)
            with pytest.raises(InvalidInput, match=r"^approve\(\) takes the tool call's id"):
                rt.approve("s1", None)  # type: ignore[arg-type]
            with pytest.raises(
                InvalidInput,
                match=r"^approve\(\) takes the tool call's id as a non-empty str \(got the empty "
                r"str ''\): the id of a call that waits",
            ):
                rt.approve("s1", "")
            with pytest.raises(InvalidInput, match=r"^approve\(\) takes by= as a str or None"):
                rt.approve("s1", "call_x", by=7)  # type: ignore[arg-type]
            assert len(rt.pending_approvals("s1")) == 1

    def test_a_decision_for_an_unknown_session_is_unknown_session(self) -> None:
        """approve('nope', …) said no call waits, and left a live empty session 'nope'
        behind: rt.state('nope') and pending_approvals('nope') then answered for it."""
        rt, ran = make()
        with rt:
            for decide in (lambda: rt.approve("nope", "call_x"), lambda: rt.deny("nope", "c")):
                with pytest.raises(UnknownSession, match="'nope'"):
                    decide()
            with pytest.raises(UnknownSession):
                rt.state("nope")
            with pytest.raises(UnknownSession):
                rt.pending_approvals("nope")
            assert "nope" not in rt.sessions()
        assert ran == []

    def test_a_new_message_interrupts_a_waiting_turn(self) -> None:
        """A person writes instead of answering: the turn ends interrupted, the call too."""
        rt, ran = make()
        with rt:
            first = rt.send("s1", "delete /tmp/x")
            call_id = waiting_call(rt)
            rt.send("s1", "never mind")
            final = rt.wait_idle("s1", timeout=WAIT)
            with pytest.raises(NotAwaitingApproval):
                rt.approve("s1", call_id)
        assert ran == []
        assert final.message(first.id).status is Status.INTERRUPTED
        assert final.message(final.tool_calls[call_id]).status is Status.INTERRUPTED

    def test_a_timeout_denies(self) -> None:
        """``approval_timeout``: no answer in time is a denial by ``timeout``."""
        rt, ran = make(approval_timeout=0.05)
        with rt:
            rt.send("s1", "delete /tmp/x")
            final = rt.wait_idle("s1", timeout=WAIT)
            while final.active_turn is not None:  # waiting, until the timer denies it
                final = rt.wait_idle("s1", timeout=WAIT)
        assert ran == []
        result = next(m for m in final if m.error_type == "denied")
        assert "Settings.approval_timeout" in result.content
        assert result.metadata["denied_by"] == "timeout"


class TestWaitingSurvives:
    def test_passivation(self) -> None:
        """The waiting session's actor stops (no thread waits); approving reloads it."""
        ran: list[str] = []
        rt = Runtime(model=model(), store=":memory:", tools=[deleter(ran)],
                     settings=Settings(passivate_after=0.05))  # fmt: skip
        with rt:
            rt.send("s1", "delete /tmp/x")
            call_id = waiting_call(rt)
            assert rt.wait_passivated("s1", timeout=WAIT)
            rt.approve("s1", call_id)
            final = rt.wait_idle("s1", timeout=WAIT)
        assert ran == ["/tmp/x"]
        assert final.active_turn is None

    def test_an_ask_waiting_for_its_answer_keeps_the_session_live(self) -> None:
        """An ask whose turn waits for approval: passivating would drop its waiter (the
        caller never got the answer, or waited for ever from ask_async), so the session
        refuses to passivate until the answer is in."""
        rt, ran = make()
        with rt:
            answer: dict[str, Any] = {}
            asking = threading.Thread(
                target=lambda: answer.update(reply=rt.ask("s1", "delete /tmp/x", timeout=WAIT))
            )
            asking.start()
            call_id = waiting_call(rt)
            seq = rt.state("s1").seq
            proxy = rt.router.live("s1")
            assert proxy.close_if_idle(seq).get(timeout=WAIT) is False
            rt.approve("s1", call_id)
            asking.join(WAIT)
        assert answer["reply"].text == "Done."
        assert ran == ["/tmp/x"]

    def test_an_ask_that_timed_out_does_not_keep_the_session_live(self) -> None:
        """Nobody waits for the answer of an ask that timed out: the session may passivate
        while the call waits (approving later reloads it, as for a send)."""
        ran: list[str] = []
        rt = Runtime(model=model(), store=":memory:", tools=[deleter(ran)],
                     settings=Settings(passivate_after=0.05))  # fmt: skip
        with rt:
            with pytest.raises(AskTimeout):
                rt.ask("s1", "delete /tmp/x", timeout=0.2)  # the call waits for a person
            call_id = waiting_call(rt)
            assert rt.wait_passivated("s1", timeout=WAIT)
            rt.approve("s1", call_id)
            final = rt.wait_idle("s1", timeout=WAIT)
        assert ran == ["/tmp/x"]
        assert final.active_turn is None

    def test_a_restart(self, tmp_path: Path) -> None:
        """The runtime stops while a call waits; the next one takes the approval and runs it."""
        db = tmp_path / "amber.db"
        rt, _ = make(db)
        with rt:
            rt.send("s1", "delete /tmp/x")
            call_id = waiting_call(rt)
        with SQLiteStore(db) as store:
            assert store.load_state("s1").active_turn is not None  # still waiting, on disk
        ran: list[str] = []
        rt2 = Runtime(model=ScriptedModel([reply("Done.")]), store=db, tools=[deleter(ran)],
                      settings=Settings(passivate_after=None))  # fmt: skip
        with rt2:
            assert [m.tool_call.id for m in rt2.pending_approvals("s1")] == [call_id]  # type: ignore[union-attr]
            rt2.approve("s1", call_id)
            final = rt2.wait_idle("s1", timeout=WAIT)
        assert ran == ["/tmp/x"]
        assert [m.content for m in final][-1] == "Done."
        assert [t.status.value for t in final.turn_list()] == ["processed"]

    def test_amber_recover_leaves_it_waiting(self, tmp_path: Path) -> None:
        """A call waiting for a person, however long, is no orphan: ``amber recover`` (with
        --rebuild too) leaves it waiting and says so, ``amber sessions`` says it waits for
        approval, and the next runtime still takes the approval (before the fix recover
        interrupted the call and put the input back to pending: the approval was lost)."""
        from cli_support import amber

        db = tmp_path / "amber.db"
        rt, _ = make(db)
        with rt:
            rt.send("s1", "delete /tmp/x")
            call_id = waiting_call(rt)
        dry = amber("recover", "--older-than", "0", "--dry-run", "--db", db)
        assert dry.exit_code == 0, dry.output
        assert "Would recover" not in dry.output
        assert "No orphaned turns" in dry.output
        assert "Left alone (waits for a person to approve tool calls, not a runner): s1" in (
            dry.output
        )
        for options in ((), ("--rebuild",)):
            done = amber("recover", "--older-than", "0", *options, "--json", "--db", db)
            data = json.loads(done.output)
            assert (data["recovered"], data["waiting_for_approval"]) == ([], ["s1"])
        listed = amber("sessions", "--db", db)
        assert "waits for approval" in listed.output
        (row,) = json.loads(amber("sessions", "--json", "--db", db).output)
        assert row["waits_for_approval"] is True
        ran: list[str] = []
        rt2 = Runtime(model=ScriptedModel([reply("Done.")]), store=db, tools=[deleter(ran)],
                      settings=Settings(passivate_after=None))  # fmt: skip
        with rt2:
            assert [m.tool_call.id for m in rt2.pending_approvals("s1")] == [call_id]  # type: ignore[union-attr]
            rt2.approve("s1", call_id)
            final = rt2.wait_idle("s1", timeout=WAIT)
        assert ran == ["/tmp/x"]
        assert [t.status.value for t in final.turn_list()] == ["processed"]

    def test_a_runtime_without_the_tool_refuses_to_approve_it(self, tmp_path: Path) -> None:
        """On a store no other runtime could run (SQLite), a runtime that lacks the tool
        refuses to approve its call, storing nothing, and may still deny it."""
        db = tmp_path / "amber.db"
        rt, _ = make(db)
        with rt:
            rt.send("s1", "delete /tmp/x")
            call_id = waiting_call(rt)
        rt2 = Runtime(model=ScriptedModel([reply("Not done.")]), store=db,
                      settings=Settings(passivate_after=None))  # fmt: skip
        with rt2:
            seq = rt2.state("s1").seq
            with pytest.raises(InvalidConfig, match=r"calls 'delete_file', a tool this runtime"):
                rt2.approve("s1", call_id)
            assert rt2.state("s1").seq == seq
            rt2.deny("s1", call_id, "no tool here")
            final = rt2.wait_idle("s1", timeout=WAIT)
        assert [m.content for m in final][-1] == "Not done."


class TestStreaming:
    def test_the_stream_says_a_call_waits_and_the_caller_approves(self) -> None:
        """``stream`` yields ``ApprovalNeeded``; the caller approves from the loop."""
        rt, ran = make()
        with rt:

            async def main() -> list[Any]:
                events = []
                async for event in rt.stream("s1", "delete /tmp/x"):
                    events.append(event)
                    if isinstance(event, ApprovalNeeded):
                        await asyncio.to_thread(rt.approve, "s1", event.call_id)
                return events

            events = asyncio.run(main())
        assert ran == ["/tmp/x"]
        kinds = [type(e).__name__ for e in events if not isinstance(e, TextPiece)]
        # ToolCallStarted: "recorded; it runs, or waits for approval" -- then the wait.
        assert kinds == ["ToolCallStarted", "ApprovalNeeded", "ToolResult", "Reply"]
        assert isinstance(events[-1], Reply)
        assert events[-1].outcome is TurnOutcome.PROCESSED
        assert next(e for e in events if isinstance(e, ToolResult)).content == "deleted /tmp/x"

    def test_ask_blocks_until_someone_decides(self) -> None:
        """A sync ``ask`` waits through the approval; another thread approves."""
        rt, ran = make()
        with rt:
            answers: list[Reply] = []
            asker = threading.Thread(target=lambda: answers.append(rt.ask("s1", "delete it")))
            asker.start()
            call_id = waiting_call(rt)
            rt.approve("s1", call_id)
            asker.join(WAIT)
        assert answers[0].text == "Done."
        assert ran == ["/tmp/x"]


class TestDecisionsStoredInTheFile:
    """A decision stored in a SQLite file by another process (``store_decision``, as a
    process that does not run the session stores it): the runtime that runs the session
    takes it, once."""

    def test_the_next_runtime_takes_it(self, tmp_path: Path) -> None:
        """Stored while no runtime ran the file: the next runtime (resuming the session)
        runs the tool once and ends the turn; the call no longer waits."""
        db = tmp_path / "amber.db"
        rt, _ = make(db)
        with rt:
            rt.send("s1", "delete /tmp/x")
            call_id = waiting_call(rt)
        with SQLiteStore(db) as store:
            with pytest.raises(InvalidEvent, match=r"ApprovalDecided.by must be a str or None"):
                store_decision(store, "s1", call_id, True, None, 5, at=utc_now())  # type: ignore[arg-type]
            store_decision(store, "s1", call_id, True, None, "admin", at=utc_now())
            with pytest.raises(NotAwaitingApproval, match=r"was approved by 'admin' already"):
                store_decision(store, "s1", call_id, False, "no", "bo", at=utc_now())
        ran: list[str] = []
        rt2 = Runtime(model=ScriptedModel([reply("Done.")]), store=db, tools=[deleter(ran)],
                      settings=Settings(passivate_after=None), resume=["s1"])  # fmt: skip
        with rt2:
            final = rt2.wait_idle("s1", timeout=WAIT)
            with pytest.raises(NotAwaitingApproval, match=r"^No tool call '.+' waits"):
                rt2.approve("s1", call_id)
        assert ran == ["/tmp/x"]
        assert [m.content for m in final][-1] == "Done."
        with SQLiteStore(db) as store:
            (decided,) = [e for e in store.events("s1") if isinstance(e, ApprovalDecided)]
        assert (decided.approved, decided.by) == (True, "admin")

    def test_a_runtime_deciding_too_meets_it_and_the_tool_runs_once(self, tmp_path: Path) -> None:
        """Stored while the runtime runs the session and waits: the runtime's own approve
        meets it (its write conflicts, it adopts the stored decision and takes it), so
        its own decision finds nothing waiting; the tool runs once."""
        db = tmp_path / "amber.db"
        rt, ran = make(db)
        with rt:
            rt.send("s1", "delete /tmp/x")
            call_id = waiting_call(rt)
            with SQLiteStore(db) as store:
                store_decision(store, "s1", call_id, False, "not now", "bo", at=utc_now())
            with pytest.raises(NotAwaitingApproval):
                rt.approve("s1", call_id, by="Chii")
            final = rt.wait_idle("s1", timeout=WAIT)
        assert ran == []
        result = next(m for m in final if m.tool_call_id == call_id)
        assert result.error_type == "denied"
        assert result.metadata["denied_by"] == "bo"
        assert "not now" in result.content
