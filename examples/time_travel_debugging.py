"""Time-travel debugging from Python: find where a session went wrong, fork, replay fixed.

A support agent converts currencies with a tool that has a bug (it uses
cents where it should use euros). A user gets a wrong answer. From the
stored log alone we:

1. find the turn that went wrong (the tool result the reply was built on),
2. fork the session just before that turn started (the question is pending
   again in the fork; the original is left untouched),
3. run the fork with the fixed tool: a runtime that starts on the store
   answers pending input by itself,
4. compare the two sessions message by message, and verify both logs.

The same steps work on the command line: ``amber timeline``, ``amber show
--at``, ``amber fork --at``, ``amber diff --other`` (see docs/time-travel.md).

Run: python examples/time_travel_debugging.py
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path

from actors import ModelRequest, Response, Runtime, ScriptedModel, call, reply, tool
from runtime import Category, Message, ToolResultPart, TurnStarted, category_of, diff, thaw
from runtime.store import SQLiteStore

RATES = {("EUR", "USD"): 1.08}


@tool(name="convert")
def convert_buggy(amount: float, source: str, target: str) -> str:
    """Convert money between currencies.

    Args:
        amount: How much, in the source currency.
        source: ISO code of the source currency.
        target: ISO code of the target currency.
    """
    return f"{amount * 100 * RATES[(source, target)]:.2f} {target}"  # bug: cents, not euros


@tool(name="convert")  # the same tool, fixed: the model calls it by the same name
def convert_fixed(amount: float, source: str, target: str) -> str:
    """Convert money between currencies.

    Args:
        amount: How much, in the source currency.
        source: ISO code of the source currency.
        target: ISO code of the target currency.
    """
    return f"{amount * RATES[(source, target)]:.2f} {target}"


def agent(request: ModelRequest) -> Response:
    """A scripted agent that reads its tool's result, as a real model would."""
    if request.call_index == 0:
        return call("convert", {"amount": 20, "source": "EUR", "target": "USD"})
    results = [p for m in request.view.messages for p in m.parts if isinstance(p, ToolResultPart)]
    return reply(f"20 EUR is {results[-1].text} today.")


def show(title: str, messages: list[Message]) -> None:
    print(title)
    for m in messages:
        kind = category_of(m).name.lower().replace("_", " ")
        text = f"{m.tool_call.name}({thaw(m.tool_call.arguments)})" if m.tool_call else m.content
        print(f"  {m.id:18} {kind:13} {m.status:13} {text}")


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "amber.db"

        # The incident: a session recorded with the buggy tool.
        model = ScriptedModel(agent)
        with Runtime(model=model, store=db, tools=[convert_buggy]) as rt:
            rt.send("support", "Hi! How much is 20 EUR in USD?", sender="Chii")
            rt.wait_idle("support", timeout=10)

        # 1. Find where it went wrong, from the log alone.
        with SQLiteStore(db) as store:
            timeline = store.load_timeline("support")
        show("The stored session:", list(timeline.head.messages))
        bad = next(m for m in timeline.head.messages if category_of(m) is Category.TOOL_RESULT)
        assert bad.event_seq is not None
        assert bad.turn_id is not None
        print(
            f"\nThe reply rests on tool result {bad.id}, added at seq {bad.event_seq}: {bad.content!r}"
        )
        turn = timeline.head.turn(bad.turn_id)
        assert turn is not None
        print(
            f"Its turn {turn.id} started at seq {turn.started_seq}; before that the question was pending:"
        )
        before = timeline.at(turn.started_seq - 1)
        show(f"  state at seq {before.seq}:", list(before.messages))
        assert isinstance(timeline.event(turn.started_seq), TurnStarted)

        # 2. Fork just before the turn: a new session whose question is pending again.
        fork = timeline.fork(before.seq, "support-fixed", at=datetime.now(UTC))
        with SQLiteStore(db) as store:
            store.append(fork.events())
        print(f"\nForked seq {before.seq} into support-fixed (the original is untouched).")

        # 3. Replay with the fixed tool: a runtime starting on the store answers pending input.
        with Runtime(model=ScriptedModel(agent), store=db, tools=[convert_fixed]) as rt:
            fixed = rt.wait_idle("support-fixed", timeout=10)
        show("\nThe fork, answered with the fixed tool:", list(fixed.messages))

        # 4. Compare the two sessions and check both logs replay to what is stored.
        with SQLiteStore(db) as store:
            original = store.load_state("support")
            for session in ("support", "support-fixed"):
                store.verify(session)
        delta = diff(original, fixed)
        print(
            f"\nsupport -> support-fixed: {len(delta.added)} messages only in the fork, "
            f"{len(delta.removed)} only in the original."
        )
        wrong = next(m for m in delta.removed if category_of(m) is Category.REPLY)
        right = next(m for m in delta.added if category_of(m) is Category.REPLY)
        print(f"  before the fix: {wrong.content}\n  after the fix:  {right.content}")
        print("Both logs replay to their stored states (store.verify).")
        assert right.content == "20 EUR is 21.60 USD today."


if __name__ == "__main__":
    main()
