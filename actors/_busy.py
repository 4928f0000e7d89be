"""What keeps a session from being idle, in words (a session actor's ``waiting_for``).

``wait_idle``'s ``IdleTimeout`` says it: a turn left active by a runner that
stopped, a turn running (the model, tool calls, approvals), inputs queued, or
messages an adapter has not reported delivered yet.
"""

from __future__ import annotations

from runtime import SessionMachine

__all__ = ["busy_reasons"]


def busy_reasons(machine: SessionMachine, awaiting: set[str], *, settled: bool) -> dict[str, str]:
    """What keeps a session actor's ``when_idle(settled)`` from answering, in words (its
    ``waiting_for``; ``awaiting``: the messages an adapter will report delivered)."""
    state = machine.state
    why: dict[str, str] = {}
    turn, run = state.active_turn, machine.run
    if turn is not None and run is None:
        why["turn"] = (
            f"turn {turn.id} was left active by a runner that stopped and waits to be "
            "recovered (Settings.recover_after)"
        )
    elif turn is not None and run is not None and not machine.is_waiting:
        doing = []
        if run.model_run is not None:
            doing.append("waiting for the model")
        if run.tools:
            doing.append(f"running tool calls {', '.join(sorted(run.tools))}")
        if turn.awaiting_approval:
            waiting = ", ".join(sorted(turn.awaiting_approval))
            doing.append(f"tool calls {waiting} wait for approval")
        why["turn"] = f"turn {turn.id} is active" + (f" ({'; '.join(doing)})" if doing else "")
    if state.queued:
        ids = list(state.queued)
        why["inputs"] = f"{_count(len(ids), 'input waits', 'inputs wait')} ({', '.join(ids)})"
    if settled and awaiting and machine.is_quiet:
        ids = sorted(awaiting)
        why["delivery"] = (
            f"{_count(len(ids), 'message waits', 'messages wait')} for an adapter to report "
            f"{'it' if len(ids) == 1 else 'them'} delivered ({', '.join(ids)})"
        )
    return why


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"
