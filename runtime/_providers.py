"""Provider views: the model's view spelled for OpenAI, Anthropic and Gemini (DESIGN §6).

Each function takes a state (or a ``ModelView`` already built by
``clean_history``) and returns plain dicts and lists, ready to pass to the
official SDK. What each API accepts is listed in ``PROVIDERS.md``; in short:

- OpenAI Chat Completions: the system prompt is the first message; an
  assistant message carries its tool calls (arguments as a JSON string) and is
  followed by one ``tool`` message per call; reasoning is never sent (there is
  no field for it), except interrupted reasoning, which the view made text.
- Anthropic Messages: the system prompt is the top-level ``system``; roles
  alternate user/assistant (same-role neighbours are merged); tool results are
  ``tool_result`` blocks opening the next user message; ``tool_use.input`` is
  an object; reasoning goes back only as a signed ``thinking`` block, first in
  its message and never alone.
- Gemini: the system prompt is ``system_instruction``; roles alternate
  user/model; function calls sit in a model content and their responses, one
  per call in the same order, open the next user content. Call ids are not
  sent: Vertex AI rejects the ``id`` field and Gemini pairs by order.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Sequence
from typing import Any, Literal

from ._artifacts import ArtifactStore
from ._clean import DEFAULT_MAX_RESULT_CHARS
from ._compact_spell import _ANTHROPIC_MATCH, anthropic_id
from ._errors import ProjectionError
from ._json import canonical
from ._message import Message
from ._spelling import source_view, spelled, system_text
from ._state import SessionState
from ._view import (
    ImagePart,
    ModelView,
    ReasoningPart,
    TextPart,
    ToolResultPart,
    ToolUsePart,
    ViewMessage,
    ViewRole,
)
from ._window import Window

__all__ = ["to_anthropic", "to_gemini", "to_openai"]

_GEMINI_IMAGES = frozenset({"image/png", "image/jpeg", "image/webp"})
_THINKING = frozenset({"thinking", "redacted_thinking"})
_TEXTUAL = (ReasoningPart, TextPart)
"""``ReasoningPart | TextPart`` as a tuple: the ``|`` builds a union object on every test."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unsent_image(part: ImagePart, provider: str) -> str:
    name = part.attachment.name
    return f"[Image {name} not shown: {provider} does not accept {part.attachment.media_type}]"


def to_openai(
    source: SessionState | ModelView,
    *,
    system: str | Message | None = None,
    system_role: Literal["system", "developer"] = "system",
    window: Window | None = None,
    artifacts: ArtifactStore | None = None,
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
) -> list[dict[str, Any]]:
    """The ``messages`` list for OpenAI Chat Completions.

    Args:
        source: a state (the view is built with ``clean_history`` and the
            options below) or a ``ModelView`` built already.
        system: the system prompt (a str or a system prompt ``Message``).
        system_role: ``system``, or ``developer`` for models that want it.
        window, artifacts, max_result_chars: as for ``clean_history``.

    Raises:
        MissingArtifact, ProjectionError, TypeError: as ``clean_history``; a
        ``ModelView`` passed with view options is a ``ProjectionError``.
    """
    view = source_view("to_openai", source, window, artifacts, max_result_chars)
    if system_role not in ("system", "developer"):
        raise ProjectionError(f"system_role must be 'system' or 'developer' (got {system_role!r}).")
    out: list[dict[str, Any]] = []
    text = system_text("to_openai", system)
    if text is not None:
        out.append({"role": system_role, "content": text})
    out.extend(spelled(view, "openai", _openai_body, merge=False))
    return out


def _openai_body(messages: Sequence[ViewMessage]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    run: list[ViewMessage] = []  # consecutive assistant messages: one entry
    for message in messages:
        role = message.role
        if role is ViewRole.ASSISTANT:
            run.append(message)
            continue
        if run:
            entry = _openai_assistant(run)
            if entry is not None:
                out.append(entry)
            run = []
        parts = message.parts
        if role is ViewRole.TOOL:
            result = parts[0]
            assert isinstance(result, ToolResultPart)
            out.append({"role": "tool", "tool_call_id": result.call_id, "content": result.text})
        elif len(parts) == 1 and type(parts[0]) is TextPart:  # ``_openai_user``'s first case
            out.append({"role": "user", "content": parts[0].text})
        else:
            out.append(_openai_user(message))
    if run:
        entry = _openai_assistant(run)
        if entry is not None:
            out.append(entry)
    return out


def _openai_assistant(run: list[ViewMessage]) -> dict[str, Any] | None:
    """One assistant message: text joined, calls with JSON-string arguments; reasoning left out."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for message in run:
        pieces: list[str] = []  # text that followed text joined as it was, else by a blank line
        previous_text = False
        for part in message.parts:
            if isinstance(part, TextPart):
                text = part.text
                if text and not text.isspace():
                    if pieces:
                        pieces.append("" if previous_text else "\n\n")
                    pieces.append(text)
                previous_text = True
                continue
            previous_text = False
            if isinstance(part, ToolUsePart):
                function = {"name": part.name, "arguments": part.arguments_json()}
                calls.append({"id": part.call_id, "type": "function", "function": function})
        if pieces:
            texts.append("".join(pieces))
    if not texts and not calls:
        return None  # reasoning only: Chat Completions has no field for it
    entry: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts) if texts else None}
    if calls:
        entry["tool_calls"] = calls  # never an empty list: the API rejects tool_calls=[]
    return entry


def _openai_user(message: ViewMessage) -> dict[str, Any]:
    if len(message.parts) == 1 and isinstance(message.parts[0], TextPart):
        return {"role": "user", "content": message.parts[0].text}
    content: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            content.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            url = f"data:{part.attachment.media_type};base64,{_b64(part.data)}"
            content.append({"type": "image_url", "image_url": {"url": url}})
    return {"role": "user", "content": content}


_anthropic_id = anthropic_id


def _merge(out: list[dict[str, Any]], role: str, key: str, items: list[Any]) -> None:
    if not items:
        return
    if out and out[-1]["role"] == role:
        out[-1][key].extend(items)
    else:
        out.append({"role": role, key: items})


def _anthropic_assistant(run: list[ViewMessage]) -> list[dict[str, Any]]:
    """Blocks of one assistant message in the model's order: signed thinking (and redacted
    thinking) exactly as received and first, text, tool uses; thinking is never last, never
    alone."""
    blocks: list[dict[str, Any]] = []
    for message in run:
        previous_text: dict[str, Any] | None = None
        for part in message.parts:
            block: dict[str, Any] | None = None
            if isinstance(part, ReasoningPart):
                # Only Anthropic's own signed blocks go back (unsigned thinking is rejected),
                # and only first in the message: one that would follow text (a response
                # stored right after another assistant message) is left out.
                if (
                    part.signature is not None
                    and part.provider in (None, "anthropic")
                    and all(b["type"] in _THINKING for b in blocks)
                ):
                    if part.redacted:
                        block = {"type": "redacted_thinking", "data": part.signature}
                    else:
                        block = {
                            "type": "thinking",
                            "thinking": part.text,
                            "signature": part.signature,
                        }
            elif isinstance(part, TextPart):
                if part.text and not part.text.isspace():
                    if previous_text is not None:  # text that followed text: one block
                        previous_text["text"] += part.text
                        continue
                    block = {"type": "text", "text": part.text}
            elif isinstance(part, ToolUsePart):
                call_id = part.call_id
                use_id = call_id if _ANTHROPIC_MATCH(call_id) else _anthropic_id(call_id)
                input_ = canonical(part.arguments)  # ``part.arguments_dict()``
                block = {"type": "tool_use", "id": use_id, "name": part.name, "input": input_}
            previous_text = block if block is not None and block["type"] == "text" else None
            if block is not None:
                blocks.append(block)
    while blocks and blocks[-1]["type"] in _THINKING:
        blocks.pop()
    return blocks


def _anthropic_user(run: list[ViewMessage]) -> list[dict[str, Any]]:
    """Blocks of user text, images and tool results (a run of results precedes any text)."""
    blocks: list[dict[str, Any]] = []
    for message in run:
        for part in message.parts:
            if isinstance(part, ToolResultPart):
                call_id = part.call_id
                block: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": call_id if _ANTHROPIC_MATCH(call_id) else _anthropic_id(call_id),
                    "content": part.text,
                }
                if part.is_error:
                    block["is_error"] = True
                blocks.append(block)
            elif isinstance(part, TextPart):
                blocks.append({"type": "text", "text": part.text})
            elif isinstance(part, ImagePart):
                source = {
                    "type": "base64",
                    "media_type": part.attachment.media_type.lower(),
                    "data": _b64(part.data),
                }
                blocks.append({"type": "image", "source": source})
    return blocks


def _sides(messages: Sequence[ViewMessage]) -> Iterator[tuple[bool, list[ViewMessage]]]:
    """Runs of consecutive view messages: the assistant's (True), or the user's and the
    tools' (False), which Anthropic and Gemini send as one user message (spelling a mixed
    run at once gives what spelling its user and tool parts apart and merging them does).

    Yielded one at a time, so each run is garbage once spelled: a list of every run would
    outlive the young collections and count towards a full one (the collector's
    threshold), which walks the whole heap."""
    assistant = ViewRole.ASSISTANT
    run: list[ViewMessage] = []
    side = False
    for message in messages:
        mine = message.role is assistant
        if mine is not side or not run:
            if run:
                yield side, run
            run = []
            side = mine
        run.append(message)
    if run:
        yield side, run


def _anthropic_body(view_messages: Sequence[ViewMessage]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for assistant, run in _sides(view_messages):
        if assistant:
            _merge(messages, "assistant", "content", _anthropic_assistant(run))
        else:
            _merge(messages, "user", "content", _anthropic_user(run))
    return messages


def to_anthropic(
    source: SessionState | ModelView,
    *,
    system: str | Message | None = None,
    window: Window | None = None,
    artifacts: ArtifactStore | None = None,
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
) -> dict[str, Any]:
    """``system`` and ``messages`` for Anthropic Messages (``client.messages.create(**view)``).

    ``system`` is left out when there is no system prompt. Arguments and
    errors are as for ``to_openai``.
    """
    view = source_view("to_anthropic", source, window, artifacts, max_result_chars)
    text = system_text("to_anthropic", system)
    messages = spelled(view, "anthropic", _anthropic_body, merge=True)
    if messages and messages[-1]["role"] == "assistant":
        # A final assistant message is a prefill, which may not end in whitespace. Copied:
        # the entry may be shared with the view's prefix.
        content = list(messages[-1]["content"])
        if content[-1]["type"] == "text":
            content[-1] = {**content[-1], "text": content[-1]["text"].rstrip()}
            messages[-1] = {**messages[-1], "content": content}
    out: dict[str, Any] = {}
    if text is not None:
        out["system"] = text
    out["messages"] = messages
    return out


def _gemini_signature(part: ReasoningPart | TextPart | ToolUsePart) -> bytes | None:
    """Gemini's own thought signature, as the bytes google-genai takes (stored as base64)."""
    if part.signature is None or part.provider != "gemini":
        return None
    try:
        return base64.b64decode(part.signature, validate=True)
    except ValueError:
        return None  # not a signature Gemini made: it would be refused


def _gemini_model(run: list[ViewMessage]) -> list[dict[str, Any]]:
    """Parts of one model content in the model's order, each with its thought signature;
    calls without ids; thoughts never alone."""
    parts: list[dict[str, Any]] = []
    for message in run:
        for part in message.parts:
            made: dict[str, Any]
            if isinstance(part, _TEXTUAL):
                text = part.text
                blank = not text or text.isspace()
                gemini = part.signature is not None and part.provider == "gemini"
                if blank and not gemini:
                    continue  # an empty part without Gemini's signature says nothing
                made = (
                    {"text": text, "thought": True}
                    if isinstance(part, ReasoningPart)
                    else {"text": text}
                )
                if gemini:
                    signature = _gemini_signature(part)
                    if signature is not None:
                        made["thought_signature"] = signature
                    elif blank:
                        continue  # its signature is not one Gemini made: as unsigned
            elif isinstance(part, ToolUsePart):
                made = {"function_call": {"name": part.name, "args": canonical(part.arguments)}}
                if part.signature is not None and part.provider == "gemini":
                    signature = _gemini_signature(part)
                    if signature is not None:
                        made["thought_signature"] = signature
            else:
                continue
            parts.append(made)
    for made in parts:
        if not made.get("thought"):
            return parts
    return []  # thoughts only (or nothing): never sent alone


def _gemini_user(run: list[ViewMessage]) -> list[dict[str, Any]]:
    """Parts of user text, images and one function response per call, in call order."""
    parts: list[dict[str, Any]] = []
    for message in run:
        for part in message.parts:
            if isinstance(part, ToolResultPart):
                response = {"error" if part.is_error else "output": part.text}
                parts.append({"function_response": {"name": part.name, "response": response}})
            elif isinstance(part, TextPart):
                parts.append({"text": part.text})
            elif isinstance(part, ImagePart):
                media_type = part.attachment.media_type.lower()
                if media_type in _GEMINI_IMAGES:
                    parts.append({"inline_data": {"mime_type": media_type, "data": part.data}})
                else:
                    parts.append({"text": _unsent_image(part, "Gemini")})
    return parts


def _gemini_body(messages: Sequence[ViewMessage]) -> list[dict[str, Any]]:
    contents: list[dict[str, Any]] = []
    for assistant, run in _sides(messages):
        if assistant:
            _merge(contents, "model", "parts", _gemini_model(run))
        else:
            _merge(contents, "user", "parts", _gemini_user(run))
    return contents


def to_gemini(
    source: SessionState | ModelView,
    *,
    system: str | Message | None = None,
    window: Window | None = None,
    artifacts: ArtifactStore | None = None,
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
) -> dict[str, Any]:
    """``contents`` and ``system_instruction`` for Gemini (google-genai).

    ``system_instruction`` is a Content (``{"parts": [{"text": ...}]}``), left
    out when there is no system prompt; pass it in the request config. Image
    bytes are raw ``bytes`` (what google-genai takes; base64 them for REST).
    Arguments and errors are as for ``to_openai``.
    """
    view = source_view("to_gemini", source, window, artifacts, max_result_chars)
    text = system_text("to_gemini", system)
    contents = spelled(view, "gemini", _gemini_body, merge=True)
    out: dict[str, Any] = {"contents": contents}
    if text is not None:
        out["system_instruction"] = {"parts": [{"text": text}]}
    return out
