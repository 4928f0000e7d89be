"""Invariant 7: provider views are structurally valid for their APIs."""

from __future__ import annotations

import json
import re

from .._article import article
from .._artifacts import ArtifactStore
from .._clean import clean_history
from .._openai_responses import to_openai_responses
from .._providers import to_anthropic, to_gemini, to_openai
from .._state import SessionState
from .._window import Window
from ._violation import fail

__all__ = ["PROVIDERS", "check_provider_view", "check_provider_views"]

PROVIDERS = ("openai", "openai-responses", "anthropic", "gemini")
"""The provider views ``check_provider_views`` builds and checks."""


def check_provider_views(
    state: SessionState,
    *,
    system: str | None = None,
    window: Window | None = None,
    artifacts: ArtifactStore | None = None,
    max_result_chars: int | None = 20_000,
) -> None:
    """Invariant 7 for a state: build the model's view and every provider view, check each.

    The options are those the runtime builds the view with (``Settings``):
    pass the same ones so the views checked are the ones your model gets.
    A state whose view cannot be built at all (a current-turn image missing
    from ``artifacts``) raises that error, not a violation.

    Args:
        state: the session state.
        system: the system prompt, if any.
        window: the model's token/message window.
        artifacts: where current-turn images are read from.
        max_result_chars: tool results longer than this are excerpted.
    """
    view = clean_history(
        state, window=window, artifacts=artifacts, max_result_chars=max_result_chars
    )
    check_provider_view(to_openai(view, system=system), "openai", seq=state.seq)
    check_provider_view(
        to_openai_responses(view, system=system, reasoning=True), "openai-responses", seq=state.seq
    )
    check_provider_view(to_anthropic(view, system=system), "anthropic", seq=state.seq)
    check_provider_view(to_gemini(view, system=system), "gemini", seq=state.seq)


def check_provider_view(
    view: object, provider: str, *, seq: int = 0, request: bool = False
) -> None:
    """Invariant 7: a provider view is structurally valid for its API.

    ``provider`` is ``openai`` (a ``to_openai`` list), ``openai-responses``,
    ``anthropic`` or ``gemini`` (the dicts ``to_openai_responses``,
    ``to_anthropic`` and ``to_gemini`` return; a whole payload of
    ``build_payload`` is checked on those keys). Checks the rules of
    ``PROVIDERS.md`` that the SDK types cannot: allowed roles and blocks, no
    empty content, alternation where the API requires it, system placement,
    signed thinking never last, a reasoning item never last (and a Responses
    item id only after its reasoning item), and every tool
    call answered in the next message(s) in the way the API pairs them (and
    no answer without its call). An empty view (no message to send) is
    allowed.

    Args:
        view: what the provider view function returned.
        provider: ``openai``, ``openai-responses``, ``anthropic`` or ``gemini``.
        seq: the seq of the state, for the error message.
        request: also check what a request needs: something to send, and it
            does not end on the assistant's side (a request never does).
    """
    checks = {
        "openai": _openai,
        "openai-responses": _responses,
        "anthropic": _anthropic,
        "gemini": _gemini,
    }
    if provider not in checks:
        raise ValueError(
            f"check_provider_view() knows providers {sorted(checks)} (got {provider!r})."
        )
    problem = checks[provider](_view_part(view, provider))
    if problem is None and request:
        problem = _request_problem(_view_part(view, provider), provider)
    if problem is not None:
        raise fail(7, f"the {provider} view is valid for its API", seq, problem)


_VIEW_KEYS = {
    "openai-responses": ("instructions", "input"),
    "anthropic": ("system", "messages"),
    "gemini": ("contents", "system_instruction"),
}


def _view_part(view: object, provider: str) -> object:
    """The view's keys of a whole payload (``build_payload``); a view as it is."""
    if provider == "openai" and isinstance(view, dict) and "messages" in view:
        return view["messages"]
    keys = _VIEW_KEYS.get(provider)
    if keys is None or not isinstance(view, dict):
        return view
    if provider == "gemini" and "config" in view:
        config = view.get("config") or {}
        out = {"contents": view.get("contents")}
        if "system_instruction" in config:
            out["system_instruction"] = config["system_instruction"]
        return out
    return {key: view[key] for key in keys if key in view}


def _request_problem(view: object, provider: str) -> str | None:
    if provider == "openai":
        items = view if isinstance(view, list) else []
        last = items[-1].get("role") if items else None
        ends = last == "assistant"
    elif provider == "openai-responses":
        items = view.get("input", []) if isinstance(view, dict) else []
        kind = items[-1].get("type", "message") if items else None
        ends = kind in ("reasoning", "function_call") or (
            kind == "message" and items[-1].get("role") == "assistant"
        )
    else:
        key = "messages" if provider == "anthropic" else "contents"
        items = view.get(key, []) if isinstance(view, dict) else []
        ends = bool(items) and items[-1].get("role") in ("assistant", "model")
    if not items:
        return "the request has no message to send"
    if ends:
        return "the request ends on the assistant's side (a prefill); a request never does"
    return None


def _text(value: object) -> bool:
    # ``value.strip()`` would copy a long tool result to find one character that is not space.
    return isinstance(value, str) and bool(value) and not value.isspace()


def _openai(view: object) -> str | None:
    if not isinstance(view, list):
        return f"expected a list of messages, got {article(type(view).__name__)}"
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
                return f"{where} is {article(role)} message after the conversation started"
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
    "assistant": {"text", "tool_use", "thinking", "redacted_thinking"},
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
            thinking = [k in ("thinking", "redacted_thinking") for k in kinds]
            if thinking[-1] or thinking != sorted(thinking, reverse=True):
                return f"{where} has thinking blocks that are not first, or last: {kinds}"
            for block in content:
                if block.get("type") == "thinking" and not _text(block.get("signature")):
                    return f"{where} has a thinking block without its signature"
                if block.get("type") == "redacted_thinking" and not _text(block.get("data")):
                    return f"{where} has a redacted_thinking block without its data"
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
            if "text" in part and not _text(part["text"]) and not part.get("thought_signature"):
                return f"{where} has an empty text part (and no thought signature)"
            if part.get("thought") and "text" not in part:
                return f"{where} has a thought part without text"
            if "thought_signature" in part and not isinstance(part["thought_signature"], bytes):
                return f"{where} has a thought signature that is not bytes"
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
            if all(p.get("thought") for p in parts):
                return f"{where} has only thoughts"
    if called:
        return f"function calls {called} are never answered"
    return None


_RESPONSES_ITEMS = {"message", "reasoning", "function_call", "function_call_output"}


def _responses(view: object) -> str | None:
    if not isinstance(view, dict) or set(view) - {"instructions", "input"}:
        return "expected a dict with 'input' and an optional 'instructions'"
    if "instructions" in view and not _text(view["instructions"]):
        return "instructions are present but empty"
    items = view.get("input")
    if not isinstance(items, list):
        return "input is not a list"
    waiting: list[str] = []
    answered: set[str] = set()
    for i, item in enumerate(items):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            return f"{where} is not a dict"
        kind = item.get("type", "message")
        if kind not in _RESPONSES_ITEMS:
            return f"{where} has type {kind!r}"
        if kind == "function_call_output":
            call_id = item.get("call_id")
            if call_id not in waiting:
                return f"{where} answers call {call_id!r}, which no function_call before it made"
            waiting.remove(call_id)
            answered.add(call_id)
            if not _text(item.get("output")):
                return f"{where} has an empty output"
            continue
        if waiting and kind != "function_call":
            return f"{where} ({kind}) comes before calls {waiting} are answered"
        if (
            kind in ("function_call", "message")
            and item.get("id") is not None
            and not _after_reasoning(items, i)
        ):
            return (
                f"{where} ({kind}) has item id {item['id']!r} but no reasoning item before "
                "it; send the id only with its reasoning item"
            )
        if kind == "function_call":
            call_id = item.get("call_id")
            if not _text(call_id) or call_id in waiting or call_id in answered:
                return f"{where} has a missing or repeated call_id {call_id!r}"
            if not _text(item.get("name")):
                return f"{where} has no name"
            try:
                arguments = json.loads(item.get("arguments"))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                return f"{where} has arguments that are not a JSON string"
            if not isinstance(arguments, dict):
                return f"{where} has arguments that are not a JSON object"
            waiting.append(str(call_id))
        elif kind == "reasoning":
            following = items[i + 1] if i + 1 < len(items) else None
            if following is None or following.get("type", "message") == "function_call_output":
                return f"{where} is a reasoning item without the item that followed it"
            if not _text(item.get("id")) or not _text(item.get("encrypted_content")):
                return f"{where} is a reasoning item without its id or encrypted content"
        else:
            role = item.get("role")
            if role not in ("user", "assistant", "system", "developer"):
                return f"{where} has role {role!r}"
            content = item.get("content")
            if isinstance(content, list):
                if not content:
                    return f"{where} has empty content"
                for part in content:
                    if part.get("type") in ("input_text", "output_text") and not _text(
                        part.get("text")
                    ):
                        return f"{where} has an empty text part"
            elif not _text(content):
                return f"{where} has empty content"
    if waiting:
        return f"calls {waiting} are never answered"
    return None


def _after_reasoning(items: list[object], index: int) -> bool:
    """Whether a reasoning item precedes ``items[index]`` within its response (the API's rule:
    an output item id needs the reasoning item it followed)."""
    for item in reversed(items[:index]):
        if not isinstance(item, dict):
            return False
        kind = item.get("type", "message")
        if kind == "reasoning":
            return True
        if kind not in ("function_call", "message") or item.get("id") is None:
            return False  # a user message, an output or an id-less item: another response
    return False
