"""Orphans in the turn machine: a turn left active by a runner that is gone (or may be).

When a session loads with an active turn and nothing of it runs here, the
turn is recovered (``OrphanRecovered``: its input goes back to pending, and a
new turn claims it) at once when its runner is known to be gone, or once
``recover_after`` has passed since its last activity. A turn that only waits
for a person is no orphan: it waits on (``resume_waiting``).
"""

from __future__ import annotations

from ._approval import resume_waiting
from ._commands import SetTimer
from ._events import OrphanRecovered
from ._handed import handed_calls, mark_may_have_run, reloaded_text, started_text
from ._step import Step
from ._turn_ops import maybe_start_turn

__all__ = ["ORPHAN_TIMER", "orphaned"]

ORPHAN_TIMER = "orphan"
"""The timer that recovers a turn a runner left, once ``recover_after`` has passed."""


def orphaned(s: Step, *, runner_gone: bool = False, foreign_write: bool = False) -> None:
    """A turn left active by a runner that is gone (or may be): give its input back now or later.

    A turn that only waits for a person (its open calls all wait for approval,
    no input came meanwhile) is no orphan, however long it has waited: it
    waits on, with this runner, at once. Otherwise the runner is known to be
    gone when this runner alone runs the store (``exclusive``), when the turn
    is this runner's own (its run was lost with the session's actor), or when
    the shell says so; then the turn is recovered at once. Otherwise (a shared
    store) it waits ``recover_after`` from its last activity.
    """
    state = s.state
    turn = state.active_turn
    assert turn is not None
    assert state.updated_at is not None
    if resume_waiting(s):
        return  # it only waits for a person (who may be slow): it waits on, with this runner
    settings = s.settings
    own = turn.runner is not None and turn.runner == settings.runner
    gone = runner_gone or settings.exclusive or own
    age = (s.at - state.updated_at).total_seconds()
    wait = settings.recover_after - age
    if not gone and wait > 0:
        s.command(SetTimer(name=ORPHAN_TIMER, seconds=wait))
        return
    if gone and own and foreign_write:
        reason = (
            f"another process wrote to the session (input, or a decision stored for it) "
            f"while its runner ({turn.runner}) ran the turn; the runner reloaded the session "
            "and recovered the turn at once, to answer its input again with what came"
        )
    elif gone:
        who = f"its runner ({turn.runner})" if turn.runner else "its runner"
        reason = f"{who} is gone: the turn was left active; recovered at once"
    else:
        reason = (
            f"no activity for {age:.0f} s when the session was loaded; its runner is presumed dead"
        )
    handed = handed_calls(state)  # they may have run; a call waiting for approval never did
    if handed:
        told = reloaded_text if own and foreign_write else started_text
        reason = f"{reason}; {told(state, handed)}"
    mark_may_have_run(s, handed)
    s.emit(OrphanRecovered, turn_id=turn.id, reason=reason, calls_interrupted=True)
    maybe_start_turn(s)
