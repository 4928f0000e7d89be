"""How the CLI describes events and messages: one line per event kind, marks, escaping."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from actors._cli._render import describe_event, touched_ids
from actors._cli._tables import message_lines
from actors._cli._text import excerpt, safe
from runtime import (
    ApprovalDecided,
    ApprovalRequested,
    BranchImported,
    Category,
    Event,
    MessageAdded,
    MetadataUpdated,
    ModelCallFinished,
    ModelCallStarted,
    OrphanRecovered,
    RolledBack,
    StatusChanged,
    Timeline,
    ToolCall,
    TurnEnded,
    TurnStarted,
    Usage,
    diff,
    new_message,
)

T0 = datetime(2026, 5, 27, 12, 0, tzinfo=UTC)


class Builder:
    """Appends events with the next seq, as a session actor would."""

    def __init__(self, session: str = "s") -> None:
        self.session = session
        self.timeline = Timeline.start(session)

    def __call__(self, cls: type[Event], **fields: Any) -> str:
        seq = self.timeline.last_seq + 1
        event = cls(session_id=self.session, seq=seq, at=T0 + timedelta(seconds=seq), **fields)
        self.timeline = self.timeline.append(event)
        return describe_event(event, self.timeline.at(seq - 1), self.timeline.head).plain

    def add(self, category: Category, id: str, **fields: Any) -> str:
        message = new_message(category, id=id, session_id=self.session, created_at=T0, **fields)
        return self(MessageAdded, message=message)


@pytest.fixture
def build() -> Builder:
    return Builder()


class TestDescribeEvent:
    def test_every_kind_in_one_line(self, build: Builder) -> None:
        """Each event kind reads as one line saying what it changed."""
        assert (
            build.add(Category.USER_QUESTION, "q1", sender="Chii", content="Run\nthe   tests")
            == "+ q1 user question from Chii: Run the tests"
        )
        assert build(TurnStarted, turn_id="t1") == "▶ t1 starts, claims q1"
        call = ToolCall(id="c1", name="sh", arguments={"command": "pytest"})
        turn = {"turn_id": "t1", "parent_id": "q1"}
        assert build.add(Category.TOOL_CALL, "m1", tool_call=call, **turn) == (
            '+ m1 tool call: sh({"command":"pytest"})'
        )
        assert build(StatusChanged, message_id="m1", expected="responded", status="delivered") == (
            "m1 tool call: responded → delivered"
        )
        assert build(MetadataUpdated, message_id="m1", metadata={"platform_id": "p7"}) == (
            'm1 metadata: platform_id="p7"'
        )
        assert build.add(
            Category.TOOL_RESULT, "r1", sender="sh", tool_call_id="c1", turn_id="t1",
            parent_id="m1", content="boom", is_error=True, error_type="exit_status",
        ) == "+ r1 tool result: ❌ exit_status: boom"  # fmt: skip
        assert build(OrphanRecovered, turn_id="t1", reason="runner died") == (
            "↺ t1 recovered (runner died); q1 back to pending_agent"
        )
        build(TurnStarted, turn_id="t1b")
        call = ToolCall(id="c2", name="sh", arguments={})
        build.add(Category.TOOL_CALL, "m2", tool_call=call, turn_id="t1b", parent_id="q1")
        assert build(OrphanRecovered, turn_id="t1b", calls_interrupted=True) == (
            "↺ t1b recovered; q1 back to pending_agent, 1 unanswered call(s) interrupted"
        )
        assert build(TurnStarted, turn_id="t2") == "▶ t2 starts, claims q1"
        assert (
            build(
                TurnEnded,
                turn_id="t2",
                outcome="error",
                reason="model down",
                metrics={"turn_time": 1.5, "session_turns": 4, "turn_tool_calls": 2},
            )
            # "4 turns" read as the turn's own count: it is the session's fourth turn.
            == "■ t2 ends error (model down); 1 input → error · turn 4 of the session · "
            "2 tool calls · 1.5 s"
        )
        assert build.add(Category.NOTIFICATION, "n1", content="hi") == "+ n1 notification: hi"
        assert build(RolledBack, to_seq=9, reason="undo") == (
            "⟲ rolled back to seq 9: 1 message inactive (undo)"
        )
        fork = build.timeline.fork(3, "f", at=T0)
        event = fork.event(1)
        assert isinstance(event, BranchImported)
        assert describe_event(event, fork.base, fork.head).plain == (
            "⑂ forked from s at seq 3: 2 messages, 1 turn"
        )

    def test_approval_lines_show_the_calls_arguments(self, build: Builder) -> None:
        """A call that waits for approval, and its decision, read with its arguments (as the
        call's own line does): 'pay()' did not say what was to be paid."""
        build.add(Category.USER_QUESTION, "q1", sender="Chii", content="go")
        build(TurnStarted, turn_id="t1")
        call = ToolCall(id="c1", name="pay", arguments={"to": "Ana", "amount": 20})
        added = build.add(Category.TOOL_CALL, "m1", tool_call=call, turn_id="t1", parent_id="q1")
        assert added.endswith('pay({"amount":20,"to":"Ana"})')
        assert build(ApprovalRequested, turn_id="t1", call_id="c1") == (
            '⏸ c1 pay({"amount":20,"to":"Ana"}) waits for approval'
        )
        assert build(ApprovalDecided, turn_id="t1", call_id="c1", approved=False, by="ana") == (
            '✘ c1 pay({"amount":20,"to":"Ana"}) denied by ana'
        )

    def test_a_decision_stored_for_the_owner(self, build: Builder) -> None:
        """The metadata that stores a decision for the session's owner reads as one."""
        build.add(Category.USER_QUESTION, "q1", sender="Chii", content="go")
        build(TurnStarted, turn_id="t1")
        call = ToolCall(id="c1", name="sh", arguments={})
        build.add(Category.TOOL_CALL, "m1", tool_call=call, turn_id="t1", parent_id="q1")
        stored = {"approval_decision": {"approved": False, "reason": "no", "by": "ana"}}
        assert build(MetadataUpdated, message_id="m1", metadata=stored) == (
            "⋯ c1 sh({}) denied by ana (no), stored for the session's owner to take"
        )
        stored = {"approval_decision": {"approved": True}}
        assert build(MetadataUpdated, message_id="m1", metadata=stored) == (
            "⋯ c1 sh({}) approved, stored for the session's owner to take"
        )

    def test_interrupt_names_calls_and_partial_output(self, build: Builder) -> None:
        """An interrupt says how many calls it cut and which partial output it kept."""
        build.add(Category.USER_QUESTION, "q1", sender="Chii", content="go")
        build(TurnStarted, turn_id="t1")
        call = ToolCall(id="c1", name="sh", arguments={})
        build.add(Category.TOOL_CALL, "m1", tool_call=call, turn_id="t1", parent_id="q1")
        partial = new_message(
            Category.REPLY, id="p1", session_id="s", created_at=T0, turn_id="t1", content="Runn"
        )
        line = build(
            TurnEnded, turn_id="t1", outcome="interrupted", reason="new input", partial=[partial]
        )
        assert line == (
            "■ t1 ends interrupted (new input); 1 input → interrupted, 1 unanswered call(s) "
            "interrupted, partial output kept: p1"
        )
        head = build.timeline.head
        assert touched_ids(build.timeline.event(4), build.timeline.at(3), head) == {
            "q1",
            "m1",
            "p1",
        }


class TestModelCalls:
    def test_started_finished_and_closed_by_the_turn(self, build: Builder) -> None:
        """Calls are numbered; a finish says its cost and outcome; a turn end closes running ones."""
        build.add(Category.USER_QUESTION, "q1", sender="Chii", content="hi")
        build(TurnStarted, turn_id="t1")
        assert build(
            ModelCallStarted, operation_id="op1", source_key="t1#0", turn_id="t1", sequence=1,
            model="gpt-x",
        ) == "◆ model call #1 op1 starts (t1, gpt-x)"  # fmt: skip
        assert build(
            ModelCallFinished, operation_id="op1", status="completed", duration_ms=1234.5,
            usage=Usage(input_tokens=1000, output_tokens=20), content="Hello there",
        ) == "◆ model call #1 op1 completed in 1,234 ms · 1,000 in / 20 out tokens → Hello there"  # fmt: skip
        build(ModelCallStarted, operation_id="op2", source_key="t1#1", turn_id="t1", sequence=2)
        assert build(TurnEnded, turn_id="t1", outcome="interrupted") == (
            "■ t1 ends interrupted; 1 input → interrupted, closes model call op2 (interrupted)"
        )

    def test_failed(self, build: Builder) -> None:
        """A failed call shows its error."""
        build.add(Category.USER_QUESTION, "q1", sender="Chii", content="hi")
        build(TurnStarted, turn_id="t1")
        build(ModelCallStarted, operation_id="op1", source_key="t1#0", turn_id="t1", sequence=1)
        assert (
            build(
                ModelCallFinished,
                operation_id="op1",
                status="failed",
                duration_ms=3.25,
                error="HTTP 529",
            )
            == "◆ model call #1 op1 failed in 3.2 ms: HTTP 529"
        )


class TestEscaping:
    def test_control_characters_are_spelled_out(self) -> None:
        """A tool's ANSI colors never reach the terminal: they print as \\x1b."""
        assert safe("\x1b[31mred\x1b[0m\ttab\nline\x07") == "\\x1b[31mred\\x1b[0m\ttab\nline\\x07"
        assert excerpt("\x1b[2Jcleared\nscreen") == "\\x1b[2Jcleared screen"

    def test_direction_controls_are_spelled_out(self) -> None:
        """User trial: U+202E (right-to-left override) and the other bidi controls reached
        the terminal raw, reordering what follows them on the line; they print as \\u202e."""
        bidi = [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
        for code in bidi:
            assert safe(f"a{chr(code)}b") == f"a\\u{code:04x}b"
        assert excerpt("done \u202e evil") == "done \\u202e evil"
        assert safe("\u200d\u05d0") == "\u200d\u05d0"  # a joiner, Hebrew: text, not controls

    def test_in_event_lines(self, build: Builder) -> None:
        """Content with escapes is shown escaped in the timeline."""
        line = build.add(Category.USER_QUESTION, "q1", sender="x\x1b]0;", content="\x1b[2J")
        assert "\x1b" not in line
        assert line == "+ q1 user question from x\\x1b]0;: \\x1b[2J"

    def test_excerpt_cuts_with_an_ellipsis(self) -> None:
        """Long text is cut to the limit, ending in …."""
        assert excerpt("a" * 100, 10) == "a" * 9 + "…"


class TestMessageLines:
    def test_columns_and_marks(self, build: Builder) -> None:
        """Aligned columns; added rows marked +, changed rows ~."""
        build.add(Category.USER_QUESTION, "q1", sender="Chii", content="hello")
        before = build.timeline.head
        build(TurnStarted, turn_id="t1")
        build.add(Category.REPLY, "r1", content="Hi!", turn_id="t1", parent_id="q1")
        after = build.timeline.head
        lines = [
            t.plain for t in message_lines(after.messages, changes=diff(before, after), title="M")
        ]
        assert lines == [
            "M",
            "  seq  id  category       status      content",
            "~   1  q1  user question  processing  Chii: hello",
            "+   3  r1  reply          pending     Hi!",
        ]


_RENDER_ARGUMENTS = """
import io, sys
from actors._cli._app import emit_json
from actors._cli._tables import _pretty
from actors._cli._text import compact
from actors._web._pages import pretty_json
from runtime import freeze
keys = "zebra apple mango kiwi banana cherry date fig".split()
arguments = freeze({k: {"y": i, "b": [{"q": 1, "c": 2}]} for i, k in enumerate(keys)})
print(compact(arguments))
print(_pretty(arguments))
print(pretty_json(arguments))
sys.stdout.flush()
emit_json(arguments)
emit_json({"arguments": arguments, "list": [arguments]})
"""


class TestArgumentsOrder:
    def test_the_same_in_every_process(self) -> None:
        """A frozen map iterates in its keys' hash order, which changes with the process's
        hash seed: every rendering of arguments or metadata (the timeline's and tables'
        one-line ``pay({...})``, ``show --message``'s fields, the web pages' JSON,
        ``--json``) sorts the keys, as the provider views do."""
        outputs = set()
        for seed in ("1", "2", "3", "4"):
            done = subprocess.run(
                [sys.executable, "-c", _RENDER_ARGUMENTS],
                env={**os.environ, "PYTHONHASHSEED": seed},
                capture_output=True,
                text=True,
                check=True,
            )
            outputs.add(done.stdout)
        assert len(outputs) == 1, "\n---\n".join(outputs)
        first = outputs.pop().splitlines()[0]
        assert first.startswith('{"apple":{"b":[{"c":2,"q":1}],"y":1},"banana":')


class TestCallsInCallOrder:
    def state(self) -> Any:
        """A session whose turn waits for approval of eight calls, in the order made."""
        from runtime.testing import FakeTool, PlanModel, Simulation, TurnPlan, UseTools

        sim = Simulation(model=PlanModel(), tools=[FakeTool("guarded", approval=True)])
        calls = tuple(("guarded", {"text": str(n)}) for n in range(8))
        sim.send("s", "go", plan=TurnPlan(UseTools(*calls)))
        sim.settle()
        return sim.head("s")

    def test_the_header_lists_waiting_calls_in_call_order(self) -> None:
        """'Awaiting approval:' listed the call ids in a hash map's order, which changes from
        one run to the next; it lists them in the order the model made the calls."""
        from actors._cli._tables import state_header

        state = self.state()
        turn = state.active_turn
        assert len(turn.awaiting_approval) == 8
        made = [m.tool_call.id for m in state.messages if m.tool_call is not None]
        header = state_header(state, last_seq=state.seq, event=None).plain
        (line,) = [line for line in header.splitlines() if line.startswith("Awaiting approval")]
        assert line == "Awaiting approval: " + ", ".join(made)
        assert header.split("open calls: ", 1)[1].startswith(", ".join(made) + ")")
