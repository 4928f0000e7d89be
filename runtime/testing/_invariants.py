"""The invariants of DESIGN §11 as reusable checks.

Each check raises ``InvariantViolation`` (an ``AssertionError``) whose message
names the invariant, the seq and the message at fault. ``check_invariants``
runs every check that applies to a timeline.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from .._category import category_of
from .._diff import diff
from .._history import INPUT_PHASE, phase_of, session_history
from .._lifecycle import TRANSITIONS, is_terminal
from .._message import Message, MessageType, Status
from .._state import SessionState
from .._timeline import Timeline, replay
from .._turn import TurnStatus

__all__ = [
    "InvariantViolation",
    "check_invariants",
    "check_lifecycle",
    "check_phased_order",
    "check_provider_view",
    "check_replay",
    "check_seq",
    "check_single_turn",
    "check_tool_pairing",
]


class InvariantViolation(AssertionError):
    """A DESIGN §11 invariant does not hold."""


def _fail(number: int, name: str, seq: int, detail: str) -> InvariantViolation:
    return InvariantViolation(f"Invariant {number} ({name}) broken at seq {seq}: {detail}")


def check_lifecycle(before: SessionState, after: SessionState) -> None:
    """Invariant 1: every status change between two consecutive states is legal."""
    for change in diff(before, after).status_changes:
        message = after.message(change.message_id)
        category = category_of(message)
        old, new = change.before, change.after
        assert isinstance(old, Status)
        assert isinstance(new, Status)
        if is_terminal(category, old):
            raise _fail(
                1, "terminal statuses never change", after.seq,
                f"message {message.id!r} ({category.label}) left terminal {old} for {new}",
            )  # fmt: skip
        rule = TRANSITIONS.get((old, new))
        if rule is None or category not in rule.categories:
            raise _fail(
                1, "status changes follow the lifecycle", after.seq,
                f"message {message.id!r} ({category.label}) went {old} -> {new}",
            )  # fmt: skip


def check_single_turn(state: SessionState) -> None:
    """Invariant 2: at most one active turn; an input is processing iff its turn is active."""
    active = [t.id for t in state.turn_list() if t.status is TurnStatus.ACTIVE]
    if len(active) > 1:
        raise _fail(2, "one active turn", state.seq, f"turns {sorted(active)} are all active")
    if state.active_turn_id != (active[0] if active else None):
        raise _fail(2, "one active turn", state.seq, "active_turn disagrees with the turns")
    claimed = set(state.active_turn.input_ids) if state.active_turn else set()
    for message in state.messages:
        processing = message.status is Status.PROCESSING
        if processing != (message.id in claimed):
            raise _fail(
                2, "processing iff its turn is active", state.seq,
                f"message {message.id!r} is {message.status} and "
                + ("not " if message.id not in claimed else "")
                + "claimed by the active turn",
            )  # fmt: skip


def check_tool_pairing(state: SessionState) -> None:
    """Invariant 3: every tool result answers exactly one tool call of the same turn."""
    answered: dict[str, str] = {}
    for message in state.messages:
        if message.type is not MessageType.TOOL_RESULT:
            continue
        call_id = message.tool_call_id or ""
        if call_id in answered:
            raise _fail(
                3, "one result per call", state.seq,
                f"results {answered[call_id]!r} and {message.id!r} both answer call {call_id!r}",
            )  # fmt: skip
        answered[call_id] = message.id
        call_message_id = state.tool_calls.get(call_id)
        call = state.get(call_message_id) if call_message_id else None
        if call is None:
            raise _fail(
                3, "results answer a call", state.seq,
                f"result {message.id!r} answers unknown call {call_id!r}",
            )  # fmt: skip
        if call.turn_id != message.turn_id:
            raise _fail(
                3, "results answer a call of the same turn", state.seq,
                f"result {message.id!r} (turn {message.turn_id!r}) answers call "
                f"{call.id!r} of turn {call.turn_id!r}",
            )  # fmt: skip


def check_seq(timeline: Timeline) -> None:
    """Invariant 5, first half: event seqs are gapless and increasing."""
    expected = timeline.first_seq + 1
    for event in timeline.events():
        if event.seq != expected:
            raise _fail(5, "gapless seq", event.seq, f"expected seq {expected}")
        expected += 1


def check_replay(timeline: Timeline) -> None:
    """Invariant 5, second half: replaying the first k events gives ``timeline.at(k)``.

    Replays once and compares every state, so it costs one replay.
    """
    replayed = replay(timeline.events(), base=timeline.base)
    for seq in range(timeline.first_seq, timeline.last_seq + 1):
        if replayed.at(seq) != timeline.at(seq):
            raise _fail(5, "replay reproduces every state", seq, "replayed state differs")


def check_invariants(timeline: Timeline) -> None:
    """Check invariants 1, 2, 3, 4 (audit rows), 5, 8 and 10 over every state of ``timeline``.

    Invariant 6 (past states never change) needs references held over time;
    ``LifecycleMachine``-style tests check it by keeping states and hashes.
    Invariant 7 needs the provider views built with your options (an
    artifact store for current-turn images): call ``check_provider_view``.
    """
    check_seq(timeline)
    previous: SessionState | None = None
    for state in timeline.states():
        check_single_turn(state)
        check_tool_pairing(state)
        check_phased_order(state)
        if state.audit or (previous is not None and previous.audit):
            from ._audit_checks import check_audit  # imports this module

            check_audit(state, previous)
        if previous is not None:
            check_lifecycle(previous, state)
        previous = state
    check_replay(timeline)


def check_phased_order(state: SessionState, history: Sequence[Message] | None = None) -> None:
    """Invariant 8: ``session_history`` keeps the phased order inside each turn.

    Checks that the history holds every active message exactly once; that
    each turn's output is contiguous and in phase order (thought, tool call,
    tool result, final text) with the turn's inputs before it; and that turns
    follow the order their output was stored in.

    Args:
        state: the state the history was built from.
        history: the history to check; by default ``session_history(state)``.
    """
    history = session_history(state) if history is None else history
    name = "session_history keeps the phased order"
    expected = [m.id for m in state.messages if m.active]
    got = [m.id for m in history]
    if sorted(got) != sorted(expected) or len(set(got)) != len(got):
        missing = sorted(set(expected) - set(got))
        extra = sorted(set(got) - set(expected))
        raise _fail(
            8, name, state.seq,
            f"history must hold each active message once (missing {missing}, extra {extra}, "
            f"{len(got) - len(set(got))} repeated)",
        )  # fmt: skip
    last_phase: dict[str, int] = {}
    started: list[str] = []
    for message in history:
        turn_id = message.turn_id
        if turn_id is None:
            continue
        phase = phase_of(message)
        if phase == INPUT_PHASE:
            if turn_id in last_phase and last_phase[turn_id] > INPUT_PHASE:
                raise _fail(
                    8, name, state.seq,
                    f"input {message.id!r} comes after output of its turn {turn_id!r}",
                )  # fmt: skip
            continue
        if turn_id not in last_phase or last_phase[turn_id] == INPUT_PHASE:
            started.append(turn_id)
        elif started[-1] != turn_id:
            raise _fail(
                8, name, state.seq,
                f"output of turn {turn_id!r} is split by output of turn {started[-1]!r} "
                f"at message {message.id!r}",
            )  # fmt: skip
        if phase < last_phase.get(turn_id, INPUT_PHASE):
            raise _fail(
                8, name, state.seq,
                f"message {message.id!r} (phase {phase}) comes after phase "
                f"{last_phase[turn_id]} in turn {turn_id!r}",
            )  # fmt: skip
        last_phase[turn_id] = phase
    first_output: dict[str, int] = {}
    for position, message in enumerate(state.messages):
        if message.active and message.turn_id is not None and phase_of(message) != INPUT_PHASE:
            first_output.setdefault(message.turn_id, position)
    positions = [first_output[t] for t in started]
    if positions != sorted(positions):
        raise _fail(8, name, state.seq, f"turns are out of order: {started}")


def check_provider_view(view: object, provider: str, *, seq: int = 0) -> None:
    """Invariant 7: a provider view is structurally valid for its API.

    ``provider`` is ``openai`` (a ``to_openai`` list), ``anthropic`` or
    ``gemini`` (the dicts ``to_anthropic`` and ``to_gemini`` return). Checks
    the rules of ``PROVIDERS.md`` that the SDK types cannot: allowed roles and
    blocks, no empty content, alternation where the API requires it, system
    placement, and every tool call answered in the next message(s) in the way
    the API pairs them (and no answer without its call). An empty view (no
    message to send) is allowed.

    Args:
        view: what the provider view function returned.
        provider: ``openai``, ``anthropic`` or ``gemini``.
        seq: the seq of the state, for the error message.
    """
    checks = {"openai": _openai, "anthropic": _anthropic, "gemini": _gemini}
    if provider not in checks:
        raise ValueError(
            f"check_provider_view() knows providers {sorted(checks)} (got {provider!r})."
        )
    problem = checks[provider](view)
    if problem is not None:
        raise _fail(7, f"the {provider} view is valid for its API", seq, problem)


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _openai(view: object) -> str | None:
    if not isinstance(view, list):
        return f"expected a list of messages, got a {type(view).__name__}"
    waiting: list[str] = []
    for i, message in enumerate(view):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            return f"{where} is not a dict"
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in waiting:
                return (
                    f"{where} answers tool call {call_id!r}, which the assistant message "
                    "before it did not make (or which was answered already)"
                )
            waiting.remove(call_id)
            if not _text(message.get("content")):
                return f"{where} (tool) has empty content"
            continue
        if waiting:
            return f"{where} ({role}) comes before tool calls {waiting} are answered"
        if role in ("system", "developer"):
            if any(m.get("role") not in ("system", "developer") for m in view[:i]):
                return f"{where} is a {role} message after the conversation started"
            if not _text(message.get("content")):
                return f"{where} ({role}) has empty content"
        elif role == "user":
            content = message.get("content")
            if isinstance(content, list):
                if not content or any(
                    p.get("type") == "text" and not _text(p.get("text")) for p in content
                ):
                    return f"{where} (user) has empty content"
            elif not _text(content):
                return f"{where} (user) has empty content"
        elif role == "assistant":
            calls = message.get("tool_calls")
            if calls is not None:
                problem = _openai_calls(where, calls)
                if problem is not None:
                    return problem
                waiting = [call["id"] for call in calls]
            content = message.get("content")
            if content is None and not calls:
                return f"{where} (assistant) has neither content nor tool calls"
            if content is not None and not _text(content):
                return f"{where} (assistant) has empty content"
        else:
            return f"{where} has role {role!r}"
    if waiting:
        return f"tool calls {waiting} are never answered"
    return None


def _openai_calls(where: str, calls: object) -> str | None:
    if not isinstance(calls, list) or not calls:
        return f"{where} has tool_calls={calls!r}; omit the key when there are none"
    for call in calls:
        function = call.get("function", {})
        name = f"{where} tool call {call.get('id')!r}"
        if call.get("type") != "function" or not _text(function.get("name")):
            return f"{name} is malformed: {call!r}"
        try:
            arguments = json.loads(function.get("arguments"))
        except (TypeError, ValueError):
            return f"{name} has arguments that are not a JSON string"
        if not isinstance(arguments, dict):
            return f"{name} has arguments that are not a JSON object"
    ids = [call.get("id") for call in calls]
    if len(set(ids)) != len(ids) or not all(_text(i) for i in ids):
        return f"{where} has missing or repeated tool call ids {ids}"
    return None


_ANTHROPIC_BLOCKS = {
    "user": {"text", "image", "tool_result"},
    "assistant": {"text", "tool_use", "thinking"},
}


def _anthropic(view: object) -> str | None:
    if not isinstance(view, dict) or set(view) - {"system", "messages"}:
        return "expected a dict with 'messages' and an optional 'system'"
    if "system" in view and not _text(view["system"]):
        return "system is present but empty"
    messages = view.get("messages")
    if not isinstance(messages, list):
        return "messages is not a list"
    asked: list[str] = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        role = message.get("role")
        expected_role = "user" if i % 2 == 0 else "assistant"
        if role != expected_role:
            return f"{where} has role {role!r}; roles must alternate user/assistant from user"
        content = message.get("content")
        if not isinstance(content, list) or not content:
            return f"{where} has empty content"
        kinds = [block.get("type") for block in content]
        if set(kinds) - _ANTHROPIC_BLOCKS[role]:
            return f"{where} ({role}) has blocks {kinds}"
        for block in content:
            if block.get("type") == "text" and not _text(block.get("text")):
                return f"{where} has an empty text block"
        if role == "user":
            answers = [b.get("tool_use_id") for b in content if b.get("type") == "tool_result"]
            if kinds[: len(answers)] != ["tool_result"] * len(answers):
                return f"{where} does not open with its tool_result blocks"
            if sorted(answers) != sorted(asked) or len(set(answers)) != len(answers):
                return f"{where} answers tool uses {answers}, expected exactly {asked}"
            for block in content:
                if block.get("type") == "tool_result" and not _text(block.get("content")):
                    return f"{where} has a tool_result with empty content"
            asked = []
        else:
            if asked:
                return f"tool uses {asked} are not answered"
            thinking = [k == "thinking" for k in kinds]
            if thinking[-1] or thinking != sorted(thinking, reverse=True):
                return f"{where} has thinking blocks that are not first, or last: {kinds}"
            uses = [b for b in content if b.get("type") == "tool_use"]
            for use in uses:
                if not isinstance(use.get("input"), dict):
                    return f"{where} tool_use {use.get('id')!r} has input that is not an object"
                if not re.match(r"^[a-zA-Z0-9_-]+$", str(use.get("id"))):
                    return f"{where} tool_use id {use.get('id')!r} does not match [a-zA-Z0-9_-]+"
            asked = [u.get("id") for u in uses]
            if len(set(asked)) != len(asked):
                return f"{where} repeats tool use ids {asked}"
    if asked:
        return f"tool uses {asked} are never answered"
    if messages and messages[-1]["role"] == "assistant":
        last = messages[-1]["content"][-1]
        if last.get("type") == "text" and last["text"] != last["text"].rstrip():
            return "the final assistant message ends with whitespace"
    return None


_GEMINI_DATA = {
    "text",
    "inline_data",
    "file_data",
    "function_call",
    "function_response",
    "executable_code",
    "code_execution_result",
}


def _gemini(view: object) -> str | None:
    if not isinstance(view, dict) or set(view) - {"contents", "system_instruction"}:
        return "expected a dict with 'contents' and an optional 'system_instruction'"
    if "system_instruction" in view:
        system = view["system_instruction"]
        parts = system.get("parts") if isinstance(system, dict) else None
        if not parts or not all(_text(p.get("text")) for p in parts):
            return "system_instruction is present but empty"
    contents = view.get("contents")
    if not isinstance(contents, list):
        return "contents is not a list"
    called: list[str] = []
    for i, content in enumerate(contents):
        where = f"contents[{i}]"
        role = content.get("role")
        if role != ("user" if i % 2 == 0 else "model"):
            return f"{where} has role {role!r}; roles must alternate user/model from user"
        parts = content.get("parts")
        if not isinstance(parts, list) or not parts:
            return f"{where} has no parts"
        for part in parts:
            data = set(part) & _GEMINI_DATA
            if len(data) != 1:
                return f"{where} has a part with data fields {sorted(data)}; exactly one is allowed"
            if "text" in part and not _text(part["text"]):
                return f"{where} has an empty text part"
            if part.get("thought") and "text" not in part:
                return f"{where} has a thought part without text"
        responses = [p["function_response"] for p in parts if "function_response" in p]
        if role == "user":
            names = [r.get("name") for r in responses]
            if names != called:
                return f"{where} answers function calls {names}, expected {called} in order"
            for response in responses:
                if not isinstance(response.get("response"), dict):
                    return f"{where} has a function response that is not an object"
            called = []
        else:
            if called:
                return f"function calls {called} are not answered"
            calls = [p["function_call"] for p in parts if "function_call" in p]
            for call in calls:
                if not _text(call.get("name")) or not isinstance(call.get("args", {}), dict):
                    return f"{where} has a malformed function call {call!r}"
            called = [c["name"] for c in calls]
    if called:
        return f"function calls {called} are never answered"
    return None
