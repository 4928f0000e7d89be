"""Write a custom tool: a typed signature, a docstring, errors the model can read.

Shows the JSON schema the model gets, a unit test of the tool without a
runtime (``Tool.invoke`` under trio), and a session where the model first
calls the tool with bad arguments, reads the error, and calls it again.

Run: python examples/custom_tool.py
"""

from __future__ import annotations

import enum
import json

import trio

from actors import Runtime, ScriptedModel, ToolOutcome, call, reply, tool
from runtime import category_of, thaw


class Priority(enum.Enum):
    """How urgent a ticket is."""

    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"


TICKETS: list[dict[str, object]] = []


@tool(timeout=5)
def create_ticket(
    title: str, priority: Priority = Priority.NORMAL, tags: list[str] | None = None
) -> dict[str, object]:
    """Open a ticket in the issue tracker.

    Args:
        title: One line saying what is wrong.
        priority: How urgent it is.
        tags: Labels to put on the ticket.
    """
    if not title.strip():
        raise ValueError("a ticket needs a title")
    ticket = {
        "id": f"T-{len(TICKETS) + 1}",
        "title": title,
        "priority": priority.value,
        "tags": tags or [],
    }
    TICKETS.append(ticket)
    return ticket


@tool
def close_ticket(ticket_id: str) -> ToolOutcome:
    """Close a ticket.

    Args:
        ticket_id: The ticket's id, like T-1.
    """
    if not any(t["id"] == ticket_id for t in TICKETS):
        # Choose the error type and summary yourself with a ToolOutcome.
        return ToolOutcome(
            content=f"No ticket {ticket_id}; open ones: {[t['id'] for t in TICKETS]}",
            is_error=True,
            error_type="not_found",
            summary=f"no ticket {ticket_id}",
        )
    return ToolOutcome(content=f"{ticket_id} closed.")


def main() -> None:
    print("The schema the model sees for create_ticket:")
    print(json.dumps(create_ticket.parameters, indent=2))

    # A unit test needs no runtime: invoke() validates, runs and never raises.
    async def unit() -> None:
        bad = await create_ticket.invoke({"title": "Login fails", "priority": "urgent"})
        assert bad.is_error
        assert bad.error_type == "invalid_arguments"
        ok = await create_ticket.invoke({"title": "Login fails", "priority": "high"})
        assert not ok.is_error, ok.content
        print(f"\nunit test: bad arguments -> {bad.error_type}; good ones -> {ok.content}")

    trio.run(unit)
    TICKETS.clear()

    model = ScriptedModel(
        [
            call(
                "create_ticket", {"title": "Login page times out", "priority": "urgent"}
            ),  # not a Priority
            call(
                "create_ticket",
                {"title": "Login page times out", "priority": "high", "tags": ["auth"]},
            ),
            call("close_ticket", {"ticket_id": "T-9"}),  # no such ticket
            reply("Opened T-1 (high) for the login timeout."),
        ]
    )
    with Runtime(model=model, store=":memory:", tools=[create_ticket, close_ticket]) as rt:
        rt.send("support", "The login page times out, please file it.", sender="Chii")
        state = rt.wait_idle("support", timeout=10)

    print("\nThe session (each tool result is what the model read):")
    for message in state:
        kind = category_of(message).name.lower().replace("_", " ")
        flag = f" [{message.error_type}]" if message.is_error else ""
        text = " / ".join(message.content.splitlines()[:2])
        if message.tool_call is not None:
            text = f"{message.tool_call.name}({json.dumps(thaw(message.tool_call.arguments))})"
        print(f"  {kind:12} {message.status:10} {text[:90]}{flag}")
    assert TICKETS == [
        {"id": "T-1", "title": "Login page times out", "priority": "high", "tags": ["auth"]}
    ]


if __name__ == "__main__":
    main()
