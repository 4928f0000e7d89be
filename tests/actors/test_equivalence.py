"""The simulator and a real runtime make the same events from the same scenario.

Each scenario runs twice: through ``runtime.testing.Simulation`` (no threads,
simulated time) and through a real ``Runtime`` (pykka actors, trio effects,
real tools), both with a frozen clock. The stored event logs must be equal,
JSON byte for byte: the turn machine decides everything, and the shell adds
nothing of its own. Waits that a scenario needs ("the tool has started", "N
chunks have streamed") are events in both: a ``threading.Event`` set by the
tool or a delta seen by a subscriber for the runtime, a predicate on the
machine for the simulation.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from stop_support import Said

from actors import Delta, DeltaKind, Runtime, ScriptedModel, Settings, Tool, tool
from actors.testing import sim_tool
from runtime import (
    Response,
    call,
    calls,
    empty,
    error,
    hang,
    reply,
    to_json,
)
from runtime.testing import EPOCH, Simulation

WAIT = 30.0
RUNNER = "runner_equivalence"


def frozen() -> datetime:
    return EPOCH


def zero() -> float:
    return 0.0


@attrs.frozen
class Send:
    session: str
    text: str


@attrs.frozen
class Idle:
    """Wait until the session is idle (every turn over)."""

    session: str


@attrs.frozen
class ToolStarted:
    """Wait until the named tool is running."""

    name: str


@attrs.frozen
class Streamed:
    """Wait until the current model call has streamed ``pieces`` text pieces."""

    session: str
    pieces: int


@attrs.frozen
class Restart:
    """Stop the runtime cleanly (a running turn gives its input back) and start another.

    The stop drains, as ``Runtime.stop`` does: the sync tool calls running end first (a
    sync tool of ``drain_tools`` ends once the stop waits for it), the others are cut."""


@attrs.frozen
class Crash:
    """The process dies: the next one starts on the store as it was (the runtime's copy is
    taken with SQLite's backup, then the old runtime is stopped, writing only to its own
    file); the turn it left is recovered."""


Step = Send | Idle | ToolStarted | Streamed | Restart | Crash


@attrs.frozen
class Scenario:
    name: str
    script: Sequence[Response]
    steps: Sequence[Step]
    tools: Callable[[dict[str, threading.Event]], list[Tool]] = lambda started: []
    settings: Settings = attrs.field(factory=lambda: Settings(passivate_after=None))


SEED_OUTPUT = "=== STDOUT ===\ncollected 5 items\n\ntests/test_history.py ..... [100%]\n"


def seed_tools(started: dict[str, threading.Event]) -> list[Tool]:
    @tool(name="run_shell_command")
    def stub_shell(command: str) -> str:
        """Run a shell command (a stub that answers like seed 000's example)."""
        return SEED_OUTPUT

    return [stub_shell]


def demo_tools(started: dict[str, threading.Event]) -> list[Tool]:
    @tool
    def calculate(expression: str) -> str:
        """Evaluate an arithmetic expression.

        Args:
            expression: Python arithmetic.
        """
        return str(eval(expression, {"__builtins__": {}}))

    @tool
    def weather(city: str) -> str:
        """Today's weather in a city.

        Args:
            city: The city's name.
        """
        raise ConnectionError(f"weather service unreachable for {city!r}")

    @tool(timeout=60)
    async def write_report(topic: str) -> str:
        """Write a long report (slow: the next message interrupts it).

        Args:
            topic: What the report is about.
        """
        started.setdefault("write_report", threading.Event()).set()
        await trio.sleep_forever()
        return "never"

    return [calculate, weather, write_report]


def blocking_tools(started: dict[str, threading.Event]) -> list[Tool]:
    @tool(timeout=None)
    async def wait_forever() -> str:
        """Blocks until cancelled."""
        started.setdefault("wait_forever", threading.Event()).set()
        await trio.sleep_forever()
        return "never"

    return [wait_forever]


def guarded_tools(started: dict[str, threading.Event]) -> list[Tool]:
    """A tool that blocks until cancelled, and one whose calls wait for a person."""

    @tool(approval=True)
    def delete_file(path: str) -> str:
        """Delete a file (each call waits for a person's approval).

        Args:
            path: The file.
        """
        return f"deleted {path}"

    return [*blocking_tools(started), delete_file]


DRAINS = "the stop waits for tool calls"
"""What the runtime logs when a stop waits for sync tool calls (``started[DRAINS]`` is set
then: the simulator's is set from the start)."""


def drain_tools(started: dict[str, threading.Event]) -> list[Tool]:
    """A sync tool that ends only once a stop waits for it, and an async one that takes
    30 s (a stop cuts it)."""

    @tool
    def sync_job(text: str) -> str:
        """A job in a worker thread (a stop cannot cancel it: it waits for it).

        Args:
            text: What to do.
        """
        started.setdefault("sync_job", threading.Event()).set()
        assert started.setdefault(DRAINS, threading.Event()).wait(WAIT), "no stop drained it"
        return f"did {text}"

    @tool(timeout=None)
    async def async_job(text: str) -> str:
        """A slow async job (a stop cancels it).

        Args:
            text: What to do.
        """
        started.setdefault("async_job", threading.Event()).set()
        await trio.sleep(30)
        return f"did {text} slowly"

    return [sync_job, async_job]


MIXED = calls([("sync_job", {"text": "a"}), ("async_job", {"text": "b"})], reasoning="both")
"""A response calling the sync tool and the async one at once."""


BOTH = calls([("wait_forever", {}), ("delete_file", {"path": "a.txt"})], reasoning="both")
"""A response calling the blocking tool and the guarded one at once."""


SCENARIOS = [
    Scenario(
        "seed 000 §6.1",
        [
            call(
                "run_shell_command",
                {"command": "uv run pytest tests/test_history.py"},
                reasoning="我需要使用 uv pytest 来运行 history 模块的单元测试。",
            ),
            reply("全部 5 个测试用例均已顺利通过。"),
        ],
        [Send("sess_agent_history", "运行 agent 历史模块的单元测试"), Idle("sess_agent_history")],
        seed_tools,
        Settings(agent_name="Kesoku", passivate_after=None),
    ),
    Scenario(
        "the demo",
        [
            call("calculate", {"expression": "2**100"}, reasoning="Compute, don't guess."),
            reply("`2**100` = 1267650600228229401496703205376."),
            call("weather", {"city": "Tokyo"}, reasoning="The weather tool should know."),
            reply("The weather tool failed; try again later?"),
            call("write_report", {"topic": "big integers"}, reasoning="This takes a while."),
            reply("Sure. In one line: Python integers grow as needed."),
        ],
        [
            Send("demo", "What is 2**100?"),
            Idle("demo"),
            Send("demo", "And the weather in Tokyo?"),
            Idle("demo"),
            Send("demo", "Write me a long report."),
            ToolStarted("write_report"),
            Send("demo", "Actually, stop: one line is enough."),
            Idle("demo"),
        ],
        demo_tools,
    ),
    Scenario(
        "interrupt mid-tool",
        [call("wait_forever", reasoning="wait"), reply("second answer")],
        [Send("s", "first"), ToolStarted("wait_forever"), Send("s", "second"), Idle("s")],
        blocking_tools,
    ),
    Scenario(
        "interrupt mid-stream",
        # Three pieces, then the stream stalls: the runtime's mailbox holds no piece the
        # simulator does not have when the interrupt comes.
        [hang(after=reply("a long answer that streams slowly", piece=4).steps[:4]), reply("ok")],
        [Send("s", "first"), Streamed("s", 3), Send("s", "second"), Idle("s")],
    ),
    Scenario(
        "model failure",
        [error("the provider is down", after=reply("par", piece=2).steps[:-1]), reply("back")],
        [Send("s", "hi"), Idle("s"), Send("s", "again"), Idle("s")],
    ),
    Scenario(
        "empty answer",
        [empty(), reply("there you go"), empty(), empty(), empty()],
        [Send("s", "hi"), Idle("s"), Send("s", "and?"), Idle("s")],
        settings=Settings(passivate_after=None, max_nudges=2),
    ),
    Scenario(
        "restart mid-turn",
        [call("wait_forever"), reply("answered after the restart")],
        [Send("s", "hi"), ToolStarted("wait_forever"), Restart(), Idle("s")],
        blocking_tools,
    ),
    # The running call was handed to its tool (marked may_have_run); the one waiting for
    # approval never started (not marked), whatever ends the turn.
    Scenario(
        "interrupt mid-tool beside a call waiting for approval",
        [BOTH, reply("second answer")],
        [Send("s", "first"), ToolStarted("wait_forever"), Send("s", "second"), Idle("s")],
        guarded_tools,
    ),
    Scenario(
        "restart mid-tool beside a call waiting for approval",
        [BOTH, reply("answered after the restart")],
        [Send("s", "hi"), ToolStarted("wait_forever"), Restart(), Idle("s")],
        guarded_tools,
    ),
    Scenario(
        "crash mid-tool beside a call waiting for approval",
        [BOTH, reply("answered after the crash")],
        [Send("s", "hi"), ToolStarted("wait_forever"), Crash(), Idle("s")],
        guarded_tools,
    ),
    # The stop waits for the sync call (its result is stored) and cuts the async one at once
    # (interrupted, may have run), though its result is on its way.
    Scenario(
        "restart while a sync call and an async call run in one session",
        [MIXED, reply("answered after the restart")],
        [Send("s", "hi"), ToolStarted("sync_job"), ToolStarted("async_job"), Restart(), Idle("s")],
        drain_tools,
    ),
    Scenario(
        "restart while a sync call and an async call run in two sessions",
        # After the restart both sessions call the model, in either order: the same answer.
        # The sync call starts last: the simulator's would end before the stop if a wait
        # delivered it (its run takes no simulated time).
        [
            call("async_job", {"text": "b"}),
            call("sync_job", {"text": "a"}),
            reply("answered after the restart"),
            reply("answered after the restart"),
        ],
        [
            Send("b", "hi"),
            ToolStarted("async_job"),
            Send("a", "hi"),
            ToolStarted("sync_job"),
            Restart(),
            Idle("a"),
            Idle("b"),
        ],
        drain_tools,
    ),
]


def simulated(scenario: Scenario) -> list[bytes]:
    """The scenario's events through the simulator."""
    drained = threading.Event()
    drained.set()  # a stop drains at once here: a sync tool waiting for it ends
    started: dict[str, threading.Event] = {DRAINS: drained}
    sim = Simulation(
        model=ScriptedModel(list(scenario.script)),
        tools=[sim_tool(t) for t in scenario.tools(started)],
        settings=_turn_settings(scenario.settings),
        freeze_time=True,
    )
    sessions: list[str] = []
    for step in scenario.steps:
        if isinstance(step, Send):
            sessions.append(step.session)
            sim.send(step.session, step.text, sender="user", channel="")
        elif isinstance(step, Idle):
            sim.run_until(lambda s, sid=step.session: s.machines[sid].is_idle)
        elif isinstance(step, ToolStarted):
            sim.run_until(lambda s, name=step.name: _tool_running(s, name))
        elif isinstance(step, Streamed):
            sim.run_until(lambda s, st=step: _streamed(s, st))
        elif isinstance(step, Crash):
            sim.crash()
        else:
            sim.stop(drain=True)
    return _log(lambda sid: sim.store.events(sid), sessions)


def real(scenario: Scenario, tmp_path: Path) -> list[bytes]:
    """The scenario's events through a real runtime (threads, trio, SQLite)."""
    started: dict[str, threading.Event] = {}
    tools = scenario.tools(started)
    for t in tools:
        started.setdefault(t.name, threading.Event())
    # A sync tool of ``drain_tools`` ends once a stop waits for it (the stop logs it).
    said = Said(DRAINS)
    started[DRAINS] = said.event
    amber = logging.getLogger("amber")
    level = amber.level
    amber.setLevel(logging.INFO)
    amber.addHandler(said)
    db = tmp_path / "amber.db"
    model = ScriptedModel(list(scenario.script))

    def make(generation: int) -> Runtime:
        # A restarted process is a new runner, as the simulator names it.
        runner = f"{RUNNER}-{generation}" if generation else RUNNER
        return Runtime(model=model, store=db, tools=tools, settings=scenario.settings,
                       clock=frozen, monotonic=zero, runner=runner).start()  # fmt: skip

    generation = 0
    rt = make(generation)
    pieces: dict[str, int] = {}
    seen = threading.Condition()

    def count(item: Any) -> None:
        if isinstance(item, Delta) and item.kind is DeltaKind.TEXT:
            with seen:
                pieces[item.turn_id] = pieces.get(item.turn_id, 0) + 1
                seen.notify_all()

    rt.subscribe(on_delta=count)
    sessions: list[str] = []
    try:
        for step in scenario.steps:
            if isinstance(step, Send):
                sessions.append(step.session)
                rt.send(step.session, step.text, sender="user")
            elif isinstance(step, Idle):
                rt.wait_idle(step.session, timeout=WAIT)
            elif isinstance(step, ToolStarted):
                assert started[step.name].wait(WAIT), f"{step.name} did not start"
                started[step.name].clear()
            elif isinstance(step, Streamed):
                with seen:
                    assert seen.wait_for(lambda n=step.pieces: max(pieces.values(), default=0) >= n,
                                         WAIT)  # fmt: skip
            elif isinstance(step, Crash):
                db = _crashed(db, tmp_path / f"crash{generation}.db")
                rt.stop()  # it writes to its own file only: the copy is the store as it died
                generation += 1
                rt = make(generation)
            else:
                rt.stop()
                generation += 1
                rt = make(generation)
        return _log(lambda sid: rt.call_store(lambda s: s.events(sid)), sessions)
    finally:
        rt.stop()
        amber.removeHandler(said)
        amber.setLevel(level)


def _crashed(db: Path, copy: Path) -> Path:
    """A consistent copy of the SQLite store ``db`` as it is now (a running runtime's)."""
    source, target = sqlite3.connect(db), sqlite3.connect(copy)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()
    return copy


def _turn_settings(settings: Settings) -> Any:
    from runtime import TurnSettings

    return TurnSettings(
        system_prompt=settings.system_prompt,
        agent_name=settings.agent_name,
        max_nudges=settings.max_nudges,
        max_model_calls=settings.max_model_calls,
        model_timeout=settings.model_timeout,
        passivate_after=settings.passivate_after,
        recover_after=settings.recover_after,
        model_name="scripted",
        runner=RUNNER,
        exclusive=True,  # one runner on a SQLite file: a turn a crash left is recovered at once
    )


def _tool_running(sim: Simulation, name: str) -> bool:
    for machine in sim.machines.values():
        run = machine.run
        if run is None:
            continue
        for call_id in run.tools:
            message = machine.state.message(machine.state.tool_calls[call_id])
            if message.tool_call is not None and message.tool_call.name == name:
                return True
    return False


def _streamed(sim: Simulation, step: Streamed) -> bool:
    run = sim.machines[step.session].run
    return (
        run is not None
        and run.assembly is not None
        and (len(run.assembly.text_pieces) >= step.pieces)
    )


def _log(events: Callable[[str], list[Any]], sessions: list[str]) -> list[bytes]:
    out: list[bytes] = []
    for session in dict.fromkeys(sessions):
        out += [to_json(event) for event in events(session)]
    return out


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_simulator_and_runtime_store_the_same_events(scenario: Scenario, tmp_path: Path) -> None:
    """Every stored event is the same, byte for byte, in the simulator and a real runtime."""
    expected = simulated(scenario)
    assert expected, "the scenario stored nothing"
    assert real(scenario, tmp_path) == expected


def test_equal_logs_mean_something() -> None:
    """A scenario with another script makes another log (the comparison can fail)."""
    (base,) = [s for s in SCENARIOS if s.name == "model failure"]
    other = attrs.evolve(base, script=[reply("no failure"), reply("back")])
    assert simulated(base) != simulated(other)


def test_a_bridged_tool_is_cancellable_as_the_real_one() -> None:
    """``sim_tool`` carries ``Tool.cancellable``: the simulator's draining stop waits for a
    sync tool's calls and cuts an async tool's, as ``Runtime.stop`` does."""
    sync_job, async_job = drain_tools({})
    assert (sync_job.cancellable, async_job.cancellable) == (False, True)
    assert [sim_tool(t).cancellable for t in (sync_job, async_job)] == [False, True]
