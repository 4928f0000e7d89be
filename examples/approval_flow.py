"""A person approves the tool calls that matter: the turn waits, nothing blocks.

``tool(approval=True)`` marks a tool whose calls wait for a person. When the
model calls it, the call is recorded and the turn waits with nothing in
flight: ``wait_idle`` returns, ``pending_approvals`` lists the calls, and
``approve`` runs one while ``deny`` answers it with an error the model reads
(and answers around). The waiting survives the session being passivated and
the runtime being restarted; ``Settings.approval_timeout`` denies a call no
one answers.

Run: python examples/approval_flow.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from actors import Runtime, ScriptedModel, Settings, call, reply, tool

SENT: list[str] = []


@tool(approval=True)
def send_money(to: str, amount: float) -> str:
    """Send money to someone.

    Args:
        to: Who gets it.
        amount: How much, in EUR.
    """
    SENT.append(f"{amount:.2f} EUR to {to}")
    return f"sent {amount:.2f} EUR to {to}"


def main() -> None:
    db = Path(tempfile.mkdtemp()) / "amber.db"
    script = [
        call("send_money", {"to": "Ana", "amount": 20}),
        reply("Done: 20 EUR went to Ana."),
        call("send_money", {"to": "Mallory", "amount": 5000}),
        reply("I did not send it: you declined the transfer."),
    ]
    settings = Settings(passivate_after=None)
    with Runtime(model=ScriptedModel(script[:2]), store=db, tools=[send_money],
                 settings=settings) as rt:  # fmt: skip
        rt.send("wallet", "Send Ana 20 EUR.", sender="Chii")
        rt.wait_idle("wallet", timeout=10)  # returns: the turn waits for a person
        (pending,) = rt.pending_approvals("wallet")
        assert pending.tool_call is not None
        print(
            f"waiting for approval: {pending.tool_call.name}({dict(pending.tool_call.arguments)})"
        )
        print(f"sent so far: {SENT}")
        call_id = pending.tool_call.id
    # The runtime stops while the call waits; the next one picks the approval up.
    with Runtime(model=ScriptedModel(script[1:2]), store=db, tools=[send_money],
                 settings=settings) as rt:  # fmt: skip
        rt.approve("wallet", call_id, by="Chii")
        state = rt.wait_idle("wallet", timeout=10)
        print(f"approved after a restart -> {[m.content for m in state][-1]}")
    with Runtime(model=ScriptedModel(script[2:]), store=db, tools=[send_money],
                 settings=settings) as rt:  # fmt: skip
        rt.send("wallet", "Send Mallory 5000 EUR.", sender="Chii")
        rt.wait_idle("wallet", timeout=10)
        (pending,) = rt.pending_approvals("wallet")
        assert pending.tool_call is not None
        rt.deny("wallet", pending.tool_call.id, "that is not a transfer I asked for", by="Chii")
        state = rt.wait_idle("wallet", timeout=10)
        denied = next(m for m in state if m.error_type == "denied")
        print(f"denied -> the model read: {denied.content[:70]}…")
        print(f"         and answered: {[m.content for m in state][-1]}")
    print(f"money actually sent: {SENT}")
    assert SENT == ["20.00 EUR to Ana"]


if __name__ == "__main__":
    main()
