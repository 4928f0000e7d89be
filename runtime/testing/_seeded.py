"""``simulate(seed)``: one simulated run drawn from a seed, with no Hypothesis.

The same walk as ``SimulationMachine`` (people send, post, interrupt and
send invalid input; completions arrive in drawn orders; the process crashes
and stops; everything settles), drawn from a small deterministic generator,
so thousands of runs a second per core can hunt for bugs and any run is
replayed exactly from its seed. A failure raises the ``InvariantViolation``
with the seed, the steps that led to it (as Python calls), and the saved
sessions for ``amber inspect``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from .. import Category, ChannelKind, InvalidInput, TurnSettings
from ._parts import FakeChannel, PlanModel, SimAdapter, SimModel, SimTool, fake_tools
from ._plans import Answer, RaiseError, Say, SayNothing, Stall, TurnPlan, UseTools
from ._saved import failure_path, inspect_commands, save_sessions
from ._simulator import INVALID_INPUTS, invalid_input
from ._violation import InvariantViolation
from ._world import Simulation

__all__ = ["Prng", "SimRun", "simulate"]

_MASK = (1 << 64) - 1


class Prng:
    """SplitMix64: a small, fast, deterministic generator (the same sequence everywhere)."""

    def __init__(self, seed: int) -> None:
        self._state = seed & _MASK

    def next(self) -> int:
        """The next 64-bit value."""
        self._state = (self._state + 0x9E3779B97F4A7C15) & _MASK
        z = self._state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """0 … n-1."""
        return self.next() % n

    def chance(self, p: float) -> bool:
        """True with probability ``p``."""
        return self.next() < p * 2**64

    def pick(self, items: Sequence[Any]) -> Any:
        """One of ``items``."""
        return items[self.below(len(items))]

    def choose(self, n: int) -> int:
        """A scheduling choice among ``n``: mostly the earliest due, sometimes any."""
        return 0 if n == 1 or self.chance(0.7) else self.below(n)


@attrs.frozen(kw_only=True)
class SimRun:
    """What one seeded run did."""

    seed: int
    """Its seed."""
    steps: tuple[str, ...]
    """What happened, as Python calls on the simulation."""
    inputs: int
    """Inputs the machines took."""
    events: int
    """Events stored."""
    seconds: float
    """Simulated seconds it covered."""


_TEXTS = ("hi", "what's the weather?", "run the tests", "again", "stop", "🙂", "")
_CHANNELS = ("discord", "wechat")
_POSTED = (
    Category.CRON_PROMPT,
    Category.BACKGROUND_ALERT,
    Category.COMPACTION_REQUEST,
    Category.NOTIFICATION,
)


def _answer(prng: Prng, tools: Sequence[str]) -> Answer:
    roll = prng.below(100)
    pause = prng.pick((0.0, 0.0, 0.0, 0.5, 5.0))
    if roll < 40 and tools:
        count = 1 + prng.below(3)
        calls: list[tuple[str, Any]] = []
        for _ in range(count):
            kind = prng.below(10)
            if kind == 0:
                calls.append(("no_such_tool", {}))
            elif kind == 1:
                calls.append((prng.pick(tools), '{"unclosed": '))
            elif kind < 4 and "guarded" in tools:
                calls.append(("guarded", {"text": "x"}))  # waits for a person's approval
            else:
                calls.append((prng.pick(tools), {"text": prng.pick(("a", "b c", "ünï"))}))
        ids = None
        if prng.chance(0.2):  # a provider that numbers calls per response
            ids = tuple(f"call_{i}" for i in range(count))
        reasoning = prng.pick(("", "", "Let me check."))
        return UseTools(*calls, reasoning=reasoning, call_ids=ids, pause=pause)
    if roll < 75:
        return Say(prng.pick(("done", "sure, 42", "a" * 300)),
                   reasoning=prng.pick(("", "thinking")), piece=prng.pick((16, 3)),
                   pause=pause / 10)  # fmt: skip
    if roll < 85:
        return RaiseError("scripted outage", prng.pick(("", "par")))
    if roll < 93:
        return SayNothing(pause)
    return Stall(prng.pick(("", "Let me th")))


def _plan(prng: Prng, tools: Sequence[str]) -> TurnPlan:
    if prng.chance(0.2):
        return TurnPlan()
    return TurnPlan(*(_answer(prng, tools) for _ in range(1 + prng.below(3))))


def _adapters() -> list[SimAdapter]:
    return [
        FakeChannel("discord", ChannelKind.LIVE),
        FakeChannel("wechat", ChannelKind.SILENT),
    ]


def simulate(
    seed: int,
    *,
    steps: int = 20,
    sessions: Sequence[str] = ("s1",),
    tools: Sequence[SimTool] | None = None,
    model: SimModel | None = None,
    adapters: Callable[[], Sequence[SimAdapter]] | None = None,
    settings: TurnSettings | None = None,
    check_views: bool = True,
    failures_dir: str | None = None,
) -> SimRun:
    """Run one simulation of up to ``steps`` steps drawn from ``seed``, then settle and check.

    Args:
        seed: the run's seed; the same seed replays the same run.
        steps: the most steps (sends, posts, interrupts, completions, crashes …).
        sessions: the sessions traffic goes to.
        tools: the tools (default: ``fake_tools(hang=True)``; a turn stuck on
            the hanging tool is interrupted at the end, as a person would).
        model: the model; None follows plans drawn from the seed.
        adapters: makes the adapters (default: a live and a silent ``FakeChannel``).
        settings: the turn machine's settings.
        check_views: check invariant 7 on every model request.
        failures_dir: where a failing run's sessions are saved (default
            ``$AMBER_FAILURES_DIR`` or ``.amber-failures``).

    Raises:
        InvariantViolation: a check failed; its notes give the seed, the steps
            and where the sessions were saved.
    """
    prng = Prng(seed)
    tools = tuple(fake_tools(hang=True)) if tools is None else tuple(tools)
    planned = model is None
    sim = Simulation(
        model=PlanModel() if model is None else model,
        tools=tools,
        adapters=(adapters or _adapters)(),
        settings=settings or TurnSettings(max_nudges=1, model_timeout=60.0, passivate_after=30.0),
        choose=prng.choose,
        check_views=check_views,
    )
    names = [t.name for t in tools]
    transcript: list[str] = []
    try:
        for _ in range(1 + prng.below(steps)):
            _act(sim, prng, transcript, sessions, names, planned)
        transcript.append("sim.settle(interrupt_stuck=True); sim.check_liveness()")
        sim.settle(interrupt_stuck=True)
        sim.raise_problem()
        sim.check_liveness()
    except InvariantViolation as exc:
        lines = [f"Simulation seed {seed} failed after these steps:"]
        lines += [f"    {line}" for line in transcript]
        stored = [s for s in sessions if s in sim.store]
        if stored:
            path = failure_path(f"simulate-{seed}", failures_dir)
            saved = save_sessions(sim.store, stored, path)
            lines.append(f"Its sessions are saved in {path}; time-travel with:")
            lines += [f"    {command}" for command in inspect_commands(saved, path)]
        exc.add_note("\n".join(lines))
        raise
    events = sum(sim.head(s).seq for s in sessions)
    return SimRun(seed=seed, steps=tuple(transcript), inputs=sim.steps, events=events,
                  seconds=sim.now)  # fmt: skip


def _act(
    sim: Simulation,
    prng: Prng,
    transcript: list[str],
    sessions: Sequence[str],
    tools: Sequence[str],
    planned: bool,
) -> None:
    roll = prng.below(100)
    session = prng.pick(sessions)
    waiting = sim.approvals(session)
    if waiting and prng.chance(0.4):  # a person answers the approval the turn waits for
        call_id, approved = prng.pick(waiting), prng.chance(0.6)
        transcript.append(f"sim.decide({session!r}, {call_id!r}, approved={approved})")
        sim.decide(session, call_id, approved, None if approved else "no")
    elif roll < 35:
        text, channel = prng.pick(_TEXTS) or "hi", prng.pick(_CHANNELS)
        plan = _plan(prng, tools) if planned else None
        transcript.append(f"sim.send({session!r}, {text!r}, plan={plan!r}, channel={channel!r})")
        sim.send(session, text, plan=plan, channel=channel)
    elif roll < 62:
        choices = [prng.choose(8) for _ in range(1 + prng.below(6))]
        transcript.append(f"sim.run({choices!r})")
        sim.run(choices)
    elif roll < 69:
        transcript.append(f"sim.interrupt({session!r})")
        sim.interrupt(session)
    elif roll < 75:
        category, channel = prng.pick(_POSTED), prng.pick(_CHANNELS)
        plan = _plan(prng, tools) if planned and category.is_input else None
        transcript.append(f"sim.post({session!r}, {category}, plan={plan!r})")
        sim.post(session, category, f"a {category.label}", channel=channel, plan=plan)
    elif roll < 80:
        problem = prng.pick(INVALID_INPUTS)
        transcript.append(f"sim.send({session!r}, invalid_input({problem!r}))  # refused")
        before = sim.head(session).seq
        try:
            sim.send(session, invalid_input(problem))
        except InvalidInput:
            if sim.head(session).seq != before:
                raise InvariantViolation(
                    f"Contract (refused input is never stored) broken: an input with {problem} "
                    "was refused but left events", name="refused input is never stored",
                ) from None  # fmt: skip
        else:
            raise InvariantViolation(
                f"Contract (invalid input is refused) broken: an input with {problem} was "
                "accepted", name="invalid input is refused",
            )  # fmt: skip
    elif roll < 91:
        transcript.append("sim.settle()")
        sim.settle()
    elif roll < 96:
        transcript.append("sim.crash()")
        sim.crash()
    else:
        transcript.append("sim.stop()")
        sim.stop()
    sim.raise_problem()
