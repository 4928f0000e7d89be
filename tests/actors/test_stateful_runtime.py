"""The real runtime under random interleavings, checked against the invariants (DESIGN §11).

Real actors, a real trio loop and a SQLite store in a temp dir. Each user
message carries a plan the scripted model follows for its turn (answer, call
a tool that works, fails or is slow, fail, answer empty, stream slowly), and
the machine interleaves sends, interrupts, waits and restarts. After every
step the stored timelines satisfy the invariants; at teardown, every
accepted user message has reached a final status (invariant 9).
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pytest
import trio
from harness import WAIT, Recorder
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from actors import (
    ModelRequest,
    Response,
    Runtime,
    ScriptedModel,
    Settings,
    call,
    empty,
    error,
    reply,
    tool,
)
from runtime import Role, Status
from runtime.testing import check_invariants

PLANS = ("reply", "tool_ok", "tool_fail", "tool_slow", "model_error", "empty", "stream_slow")
FINAL = frozenset({Status.PROCESSED, Status.INTERRUPTED, Status.ERROR})
SESSIONS = ("a", "b")


@tool
def ok_tool(text: str = "") -> str:
    """Echoes its input."""
    return f"echo {text}"


@tool
def bad_tool() -> str:
    """Always fails."""
    raise ValueError("bad tool")


@tool(timeout=5.0)
async def slow_tool() -> str:
    """Takes a while (a window for interrupts)."""
    await trio.sleep(0.15)
    return "slow done"


def follow_plan(request: ModelRequest) -> Response:
    """The scripted model: the turn's last input names the plan."""
    turn = request.state.active_turn
    assert turn is not None
    plan = request.state.message(turn.input_ids[-1]).content.split()[0]
    first = request.call_index == 0
    if plan == "tool_ok" and first:
        return call("ok_tool", {"text": "hi"}, reasoning="use the tool")
    if plan == "tool_fail" and first:
        return call("bad_tool")
    if plan == "tool_slow" and first:
        return call("slow_tool")
    if plan == "model_error" and first:
        return error("scripted outage")
    if plan == "empty" and first:
        return empty()
    if plan == "stream_slow":
        return reply("streaming slowly", piece=3, delay=0.02)
    return reply(f"done with {plan}")


class RuntimeMachine(RuleBasedStateMachine):
    """Drives a real runtime; the model is the set of accepted user messages."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="amber-stateful-"))
        self.db = self.dir / "amber.db"
        self.generation = itertools.count()
        self.accepted: dict[str, list[str]] = {s: [] for s in SESSIONS}
        self.counter = itertools.count()
        self.runtime = self._start()

    def _start(self) -> Runtime:
        return Runtime(
            model=ScriptedModel(follow_plan),
            store=self.db,
            tools=[ok_tool, bad_tool, slow_tool],
            adapters=[Recorder.start(platform="test")],
            settings=Settings(passivate_after=0.3, max_nudges=1),
        ).start()

    @rule(session=st.sampled_from(SESSIONS), plan=st.sampled_from(PLANS))
    def send(self, session: str, plan: str) -> None:
        message = self.runtime.send(
            session, f"{plan} #{next(self.counter)}", sender="tester", chatbot_id="test"
        )
        assert message.status is Status.PENDING_AGENT
        self.accepted[session].append(message.id)

    @rule(session=st.sampled_from(SESSIONS))
    def interrupt(self, session: str) -> None:
        self.runtime.interrupt(session)

    @precondition(lambda self: any(self.accepted.values()))
    @rule(session=st.sampled_from(SESSIONS))
    def wait(self, session: str) -> None:
        if not self.accepted[session]:
            return
        state = self.runtime.wait_idle(session, timeout=WAIT)
        assert state.active_turn is None
        for message_id in self.accepted[session]:
            assert state.message(message_id).status in FINAL

    @rule()
    def restart(self) -> None:
        self.runtime.stop()
        self.runtime = self._start()

    @invariant()
    def stored_timelines_hold_the_invariants(self) -> None:
        for session in SESSIONS:
            if not self.accepted[session]:
                continue
            timeline = self.runtime.timeline(session)
            check_invariants(timeline)
            state = timeline.head
            for message_id in self.accepted[session]:
                assert message_id in state

    def teardown(self) -> None:
        try:
            for session in SESSIONS:
                if not self.accepted[session]:
                    continue
                state = self.runtime.wait_idle(session, timeout=WAIT)
                stuck = [
                    (m.id, m.status) for m in state if m.role is Role.USER and m.status not in FINAL
                ]
                assert stuck == [], f"session {session}: inputs never settled: {stuck}"
                running = [r.operation_id for r in state.model_calls() if r.status == "running"]
                assert running == [], f"session {session}: model calls still running: {running}"
                assert {m.id for m in state if m.role is Role.USER} == set(self.accepted[session])
                check_invariants(self.runtime.timeline(session))
        finally:
            self.runtime.stop()
            shutil.rmtree(self.dir, ignore_errors=True)


RuntimeMachine.TestCase.settings = settings(
    max_examples=30,
    stateful_step_count=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

pytestmark = pytest.mark.slow

TestRuntimeMachine = RuntimeMachine.TestCase

__all__: list[Any] = ["TestRuntimeMachine"]
