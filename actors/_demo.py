"""``amber demo``: a scripted agent session with real tools, stored in SQLite.

The demo needs no network and no API key: a ``ScriptedModel`` plays the
agent, and everything else is real. It runs three questions through a
``Runtime`` on the ``CliAdapter``:

1. a tool call that runs: ``run_shell_command`` (``shell_tool()``) runs a
   harmless ``python3 -c "print(2**100)"``;
2. a failing tool: a Python tool that raises, answered as an error result
   the model reads;
3. an interrupt: a slow tool is running when a second message arrives (sent
   as soon as the tool has signalled that it started, never after a sleep),
   so the turn ends interrupted and a new turn answers both.

It ends with a summary of what was stored and the commands to inspect it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import threading
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import attrs
import trio
from rich.console import Console
from rich.rule import Rule
from rich.text import Text

from runtime import (
    Delta,
    MessageAdded,
    SessionState,
    Status,
    TurnEnded,
    TurnOutcome,
    Update,
    call,
    reply,
)
from runtime.store import SQLiteStore

from ._cli_adapter import CliAdapter
from ._runtime import Runtime
from ._scripted import ScriptedModel
from ._settings import Settings
from ._shell import shell_tool
from ._tools import Tool, tool

__all__ = ["DEMO_SESSION", "DemoResult", "demo_session_id", "run_demo"]

DEMO_SESSION = "demo"
"""The demo's session id (``demo-2``, ``demo-3`` … when the store has it already)."""
_PERSON = "Chii"
_WAIT = 20.0
"""Seconds the demo waits for a turn before it gives up (it takes well under one)."""

QUESTIONS = (
    "What is 2**100? Compute it, don't guess.",
    "And what's the weather in Tokyo?",
    "Write me a long report on big integers.",
    "Actually, stop: one line is enough.",
)
"""What the person types, in order (the fourth interrupts the third's turn)."""


class DemoFailed(RuntimeError):
    """The demo did not go as scripted (a turn did not finish in time)."""


@attrs.frozen(kw_only=True)
class DemoResult:
    """What the demo stored."""

    session_id: str
    """The session it wrote."""
    db: Path
    """The store file."""
    state: SessionState
    """The session's last state."""
    events: int
    """Events stored."""
    interrupt_seq: int
    """Seq of the ``TurnEnded`` that recorded the interrupt."""
    input_seq: int
    """Seq of the ``MessageAdded`` of the question that interrupted it (the state just before
    the interrupt: the same batch then marks the cut tool call as one that may have run)."""


def demo_session_id(store: SQLiteStore, wanted: str | None = None) -> str:
    """``wanted``, or the first of ``demo``, ``demo-2``, ``demo-3`` … the store does not hold."""
    if wanted is not None:
        return wanted
    candidate, number = DEMO_SESSION, 1
    while candidate in store:
        number += 1
        candidate = f"{DEMO_SESSION}-{number}"
    return candidate


def _python_command() -> str:
    """``python3`` when the PATH the shell sees finds it, else this interpreter's path."""
    found = shutil.which("python3", path=_shell_path())
    return "python3" if found else shlex.quote(sys.executable)


def _shell_path() -> str:
    """The PATH of the demo's shell: this interpreter's folder first, so ``python3`` is ours."""
    return os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])


@tool
def weather(city: str) -> str:
    """Today's weather in a city.

    Args:
        city: The city's name.
    """
    # A real tool failing for real: the demo runs offline, so the "service" is down.
    raise ConnectionError(f"weather service unreachable for {city!r} (the demo runs offline)")


def _report_tool(started: threading.Event) -> Tool:
    @tool(timeout=60)
    async def write_report(topic: str) -> str:
        """Write a long report on a topic (slow: it takes a minute).

        Args:
            topic: What the report is about.
        """
        started.set()
        await trio.sleep(60)  # cancelled by the interrupt long before this ends
        return f"A long report on {topic}."

    return write_report


def _model(python: str) -> ScriptedModel:
    command = f'{python} -c "print(2**100)"'
    return ScriptedModel(
        [
            call(
                "run_shell_command",
                {"command": command},
                reasoning="Python's integers are exact, so I'll compute it instead of guessing.",
            ),
            reply("`2**100` = **1,267,650,600,228,229,401,496,703,205,376** (31 digits)."),
            call(
                "weather",
                {"city": "Tokyo"},
                reasoning="The weather tool should know.",
            ),
            reply(
                "I couldn't get the weather: the weather tool failed with *weather service "
                "unreachable* (this demo runs offline). Try again later?"
            ),
            call(
                "write_report",
                {"topic": "big integers"},
                reasoning="A long report: the report tool will take a while.",
            ),
            reply(
                "Sure. In one line: Python integers grow as needed, so `2**100` is exact, "
                "with no overflow."
            ),
        ]
    )


def run_demo(
    db: Path,
    *,
    console: Console | None = None,
    session_id: str | None = None,
    running: Callable[[Runtime], AbstractContextManager[Runtime]] = lambda runtime: runtime,
) -> DemoResult:
    """Run the demo session into the store at ``db`` and print it on ``console``.

    ``running`` runs the runtime for the demo's length (``amber demo`` starts it with
    the stop signals handled, ``StopSignals.guarded``): by default, ``with runtime``.

    Raises:
        NotAStore: ``db`` is not an Amber store.
        SessionExists: ``session_id`` was given and the store holds it already.
        DemoFailed: a turn did not finish within 20 s.
    """
    console = console if console is not None else Console(highlight=False, markup=False)
    with SQLiteStore(db) as store:
        session = demo_session_id(store, session_id)
        if session in store:
            from runtime import SessionExists

            raise SessionExists(
                f"The store {str(db)!r} already has a session {session!r}; pick another id with "
                "--session, or leave it out to let the demo choose one."
            )
    started = threading.Event()
    tools = [
        shell_tool(timeout=30, env={**os.environ, "PATH": _shell_path()}),
        weather,
        _report_tool(started),
    ]
    model, settings = _model(_python_command()), Settings(agent_name="Amber")
    # Started last: the runtime stops it, also when it cannot be made.
    adapter = CliAdapter.start(console=console, sessions=[session])
    person = {"sender": _PERSON, "chatbot_id": "cli", "channel_id": "terminal"}
    runtime = Runtime(
        model=model,
        store=db,
        tools=tools,
        adapters=[adapter],
        settings=settings,
        resume="none",  # the demo touches its own session only, never a stored fork
    )
    with running(runtime) as rt:
        for number, question in enumerate(QUESTIONS[:2], start=1):
            console.print(Rule(Text(f"turn {number}", style="dim"), style="dim"))
            rt.send(session, question, **person)
            _wait(rt, session)
        console.print(Rule(Text("turn 3, interrupted by turn 4", style="dim"), style="dim"))
        shown = threading.Event()
        with rt.subscribe(lambda item: _on_shown(item, shown), session_id=session):
            rt.send(session, QUESTIONS[2], **person)
            # Interrupt once the tool runs and its call is on screen, as a person would.
            if not (started.wait(_WAIT) and shown.wait(_WAIT)):
                raise DemoFailed(f"The report tool did not start within {_WAIT:g} s.")
        rt.send(session, QUESTIONS[3], **person)  # interrupts the running turn
        state = _wait(rt, session)
        events = rt.call_store(lambda s: s.events(session))
    interrupt = next(
        e for e in events if isinstance(e, TurnEnded) and e.outcome is TurnOutcome.INTERRUPTED
    )
    asked = max(e.seq for e in events if isinstance(e, MessageAdded) and e.seq < interrupt.seq)
    return DemoResult(
        session_id=session,
        db=db,
        state=state,
        events=len(events),
        interrupt_seq=interrupt.seq,
        input_seq=asked,
    )


def _on_shown(item: Update | Delta, shown: threading.Event) -> None:
    """Set ``shown`` once the ``write_report`` call is delivered (drawn on the terminal)."""
    if not isinstance(item, Update):
        return
    call = item.message.tool_call
    if call is not None and call.name == "write_report" and item.message.status is Status.DELIVERED:
        shown.set()


def _wait(rt: Runtime, session: str) -> SessionState:
    try:
        return rt.wait_idle(session, timeout=_WAIT)
    except TimeoutError:
        raise DemoFailed(f"The demo's turn did not finish within {_WAIT:g} s.") from None


def print_summary(result: DemoResult, console: Console, *, db_arg: str) -> None:
    """The closing summary: what was stored and the commands to look at it."""
    state = result.state
    turns = Counter(str(turn.status) for turn in state.turn_list())
    statuses = state.status_counts()
    by_status = ", ".join(
        f"{count} {status}" for status, count in sorted(statuses.items(), key=lambda i: -i[1])
    )
    from ._cli._hints import command_line  # the hints are shell commands, quoted

    session, db = result.session_id, ("--db", db_arg)
    console.print(Rule(Text("demo finished", style="bold"), style="dim"))
    turn_text = ", ".join(f"{n} {status}" for status, n in sorted(turns.items()))
    lines = [
        ("Session  ", f"{result.session_id}"),
        ("Turns    ", f"{sum(turns.values())} ({turn_text})"),
        ("Messages ", f"{len(state)} ({by_status})"),
        ("Events   ", f"{result.events}, stored in {result.db}"),
    ]
    for label, value in lines:
        console.print(Text.assemble((label, "bold"), value), soft_wrap=True)
    seq, before = result.interrupt_seq, result.input_seq
    console.print()
    console.print(
        Text.assemble(("Inspect it: ", "bold"), command_line("inspect", session, options=db)),
        soft_wrap=True,
    )
    hints = [
        (command_line("timeline", session, options=db), "one line per event"),
        (
            command_line("show", session, options=("--at", before, *db)),
            "the state just before the interrupt",
        ),
        (command_line("diff", session, before, seq, options=db), "what the interrupt changed"),
        (
            command_line("replay", session, options=("--verify", *db)),
            "rebuild it from the log and check",
        ),
    ]
    width = max(len(command) for command, _ in hints)
    for command, what in hints:
        line = Text.assemble("  ", (command.ljust(width), "cyan"), "  ", (what, "dim"))
        console.print(line, soft_wrap=True)
    if statuses.get(Status.PENDING) or statuses.get(Status.PENDING_AGENT):
        console.print(Text("(some messages are still pending: see amber show)", style="yellow"))
