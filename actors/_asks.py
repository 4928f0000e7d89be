"""``AskBook``: a session actor's inputs sent with ``ask``, and what their callers see.

For each asked input it notes the turn that claims it, forwards that turn's
live events to the caller's stream (text and reasoning pieces, tool calls
and results), and resolves the caller's waiter with the ``Reply`` once the
input reaches a final status.
"""

from __future__ import annotations

from collections.abc import Sequence

from runtime import (
    FINAL_INPUT,
    ApprovalDecided,
    ApprovalRequested,
    Delta,
    DeltaKind,
    Event,
    SessionState,
    Update,
    reply_of,
)

from ._answers import (
    ApprovalNeeded,
    ReasoningPiece,
    ReplyWaiter,
    TextPiece,
    ToolCallStarted,
    ToolResult,
)

__all__ = ["AskBook"]


class AskBook:
    """The asked inputs of one session, by id (the actor's, used from its thread only)."""

    def __init__(self) -> None:
        self._asks: dict[str, tuple[ReplyWaiter, list[str | None]]] = {}

    def __bool__(self) -> bool:
        return bool(self._asks)

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._asks

    def add(self, message_id: str, waiter: ReplyWaiter) -> None:
        """An asked input was stored."""
        self._asks[message_id] = (waiter, [None])

    def drop_abandoned(self) -> None:
        """Forget the asks whose callers' waits timed out (nobody waits for their reply)."""
        for message_id, (waiter, _) in list(self._asks.items()):
            if waiter.abandoned:
                del self._asks[message_id]

    def fail_all(self, error: BaseException) -> None:
        """The session stopped: every caller gets ``error``."""
        asks, self._asks = self._asks, {}
        for waiter, _ in asks.values():
            waiter.fail(error)

    def settle(self, update: Update, state: SessionState) -> None:
        """A message joined or changed: note an asked input's turn, resolve it once final,
        or stream a tool call or result of an asked turn."""
        message = update.message
        entry = self._asks.get(message.id)
        if entry is not None:
            if message.status in FINAL_INPUT:
                del self._asks[message.id]
                entry[0].resolve(reply_of(state, message.id))
            elif message.turn_id is not None:
                entry[1][0] = message.turn_id
            return
        if message.turn_id is None or not update.is_new:
            return
        call = message.tool_call
        for waiter, turn in self._asks.values():
            if waiter.sink is None or turn[0] != message.turn_id:
                continue
            if call is not None:
                waiter.sink(ToolCallStarted(call_id=call.id, name=call.name,
                                            arguments=call.arguments, message=message))  # fmt: skip
            elif message.tool_call_id is not None:
                waiter.sink(ToolResult(call_id=message.tool_call_id, name=message.sender,
                                       content=message.content, is_error=message.is_error,
                                       message=message))  # fmt: skip

    def decided(self, events: Sequence[Event], state: SessionState) -> None:
        """A decision was stored: note on the waiters of their turn's calls that wait for
        approval (or no longer do), and tell streams of those that start waiting."""
        for event in events:
            if isinstance(event, ApprovalDecided):
                for waiter, _ in self._asks.values():
                    if event.call_id in waiter.approvals:
                        waiter.approvals = {
                            k: v for k, v in waiter.approvals.items() if k != event.call_id
                        }
            if not isinstance(event, ApprovalRequested):
                continue
            message = state.message(state.tool_calls[event.call_id])
            call = message.tool_call
            assert call is not None
            for waiter, turn in self._asks.values():
                if turn[0] != event.turn_id:
                    continue
                waiter.approvals = {**waiter.approvals, call.id: call.name}
                if waiter.sink is not None:
                    waiter.sink(ApprovalNeeded(call_id=call.id, name=call.name,
                                               arguments=call.arguments))  # fmt: skip

    def stream(self, delta: Delta) -> None:
        """A live piece of an asked turn's model message: to the callers that stream it."""
        for waiter, turn in self._asks.values():
            if waiter.sink is None or turn[0] != delta.turn_id:
                continue
            if delta.kind is DeltaKind.TEXT:
                waiter.sink(TextPiece(text=delta.text))
            elif delta.kind is DeltaKind.REASONING:
                waiter.sink(ReasoningPiece(text=delta.text))
