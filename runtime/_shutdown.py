"""A runtime stop in the turn machine: the running turn gives its input back (DESIGN §7).

A stop ends the running turn with ``OrphanRecovered``: its input goes back to
pending, and the next runtime starts it again. A turn that only waits for a
person is left waiting. Tool runs the shell cannot cancel (sync tools, in
their threads) are drained first (``Stopping.draining``): the turn waits for
their results, records them as any result, and only then gives its input back
(or waits on, if all that is left is a person's approval), so that a call that
ended is never run again after the restart. A call still
running when the wait ends, or cancelled by the stop, is interrupted: it is marked
(``MAY_HAVE_RUN``, so the result the model's view makes up for it says it may
have run), and the turn's reason says so too.

A reload during the drain (another process wrote to the session, and the write of a
result met it: ``Loaded.draining``) does not end it: the turn is rebuilt from the head
and waits on for the runs still draining, as before the reload (``reloaded``).
"""

from __future__ import annotations

from collections.abc import Iterable

from pyrsistent import pmap

from ._commands import CancelRun, ClearTimer
from ._events import OrphanRecovered
from ._handed import handed_calls, mark_may_have_run, named_calls
from ._inputs import Stopping
from ._machine import SessionMachine
from ._replace import replace
from ._step import Step
from ._turn_ops import cancel_runs, model_timer, open_cut_call, stored_run

__all__ = ["drained", "reloaded", "stopping"]

RESTARTS = "the runtime stopped during the turn; it restarts on next load"
"""The reason of a turn a stop cut with no tool call running."""


def stopping(s: Step, input: Stopping) -> None:
    """The runtime stops: drain the runs in ``input.draining``, or end the turn now."""
    run = s.run
    if run is None:
        return
    if SessionMachine(state=s.state, run=run).is_quiet:
        s.run = None  # it only waits for a person: it waits on, for the next runner
        return
    keep = {call_id for call_id in run.tools if call_id in input.draining}
    if run.stopping is not None or not keep:
        _stop(s)
        return
    if run.model_run is not None:  # not while tools run, but a stop ends it anyway
        s.command(CancelRun(run_id=run.model_run))
        s.command(ClearTimer(name=model_timer(run.model_run)))
    cut = frozenset(call_id for call_id in run.tools if call_id not in keep)
    for call_id in sorted(cut):
        s.command(CancelRun(run_id=call_id))
    tools = run.tools
    for call_id in cut:
        tools = tools.remove(call_id)
    s.run = replace(run, tools=tools, stopping=cut, model_run=None)


def drained(s: Step) -> None:
    """A result came in while a stop waits: once the last is in, the turn ends."""
    run = s.run
    if run is None or run.stopping is None or run.tools:
        return
    if not run.stopping and SessionMachine(state=s.state, run=run).is_quiet:
        s.run = None  # only a person's approval is left: it waits on, for the next runner
        return
    _stop(s)


def reloaded(s: Step, draining: Iterable[tuple[str, float]]) -> None:
    """The session was reloaded while a stop waits for the turn's runs ``draining`` (call
    id, monotonic start): the turn this runner ran waits on for those the head leaves
    unanswered, and the stop's end gives it back as before the reload. The head's other
    calls handed to their tools are the ones the stop cut. No turn starts, no model is
    called: input stored meanwhile waits for the next start."""
    turn = s.state.active_turn
    if s.run is not None or turn is None or turn.runner != s.settings.runner:
        return  # the turn ended meanwhile, or is another runner's: nothing of it runs here
    handed = set(handed_calls(s.state))
    tools = pmap({call_id: started for call_id, started in draining if call_id in handed})
    s.run = replace(stored_run(s), tools=tools, stopping=frozenset(handed - set(tools)))
    drained(s)  # none left: the turn is given back now


def _stop(s: Step) -> None:
    run = s.run
    assert run is not None
    ran = sorted({*run.tools, *(run.stopping or ())})
    open_cut_call(s)
    cancel_runs(s, run)
    mark_may_have_run(s, ran)
    s.emit(
        OrphanRecovered,
        turn_id=run.turn_id,
        reason=_reason(s, ran) if ran else RESTARTS,
        calls_interrupted=True,
    )
    s.run = None


def _reason(s: Step, running: list[str]) -> str:
    one = len(running) == 1
    return (
        f"the runtime stopped while tool call{'' if one else 's'} "
        f"{named_calls(s.state, running)} still ran; {'it' if one else 'they'} may have run, "
        f"so check before running {'it' if one else 'them'} again; the turn restarts on next "
        "load"
    )
