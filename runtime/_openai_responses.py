"""The model's view spelled for the OpenAI Responses API: ``to_openai_responses`` (DESIGN §6).

The Responses API takes ``instructions`` (the system prompt) and a list of
``input`` items:

- user text and current-turn images as ``{"role": "user", "content": …}``
  messages (``input_text`` and ``input_image`` parts);
- each model response as the items it was made of, in the model's order:
  ``reasoning`` items (only OpenAI Responses' own, with their id and
  encrypted content, and only when asked: ``reasoning=True``), the text as
  an output ``message`` (with its item id when the Responses API wrote it;
  an assistant input message otherwise), and ``function_call`` items with
  the call id and the arguments as a JSON string;
- one ``function_call_output`` per call, in call order, after the response
  that made it.

A reasoning item must travel with the item that followed it, so one left
at the end of a response (a response cut short) is dropped. The other way
round, the API refuses an output item id (``fc_…``, ``msg_…``) sent without
the reasoning item that came before it in its response ("Item 'fc_…' of type
'function_call' was provided without its required 'reasoning' item"): an
item's id is sent only when that reasoning item is sent too (not for earlier
turns, whose reasoning stays home, nor for a response without reasoning).
The ``call_id`` is what pairs a call with its output, so it always goes.
"""

from __future__ import annotations

import base64
from typing import Any

from ._artifacts import ArtifactStore
from ._clean import DEFAULT_MAX_RESULT_CHARS
from ._message import Message
from ._spelling import source_view, system_text
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

__all__ = ["RESPONSES", "to_openai_responses"]

RESPONSES = "openai-responses"
"""The provider name of the OpenAI Responses API (``model_provider`` of what it wrote)."""


def to_openai_responses(
    source: SessionState | ModelView,
    *,
    system: str | Message | None = None,
    reasoning: bool = False,
    window: Window | None = None,
    artifacts: ArtifactStore | None = None,
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
) -> dict[str, Any]:
    """``instructions`` and ``input`` for OpenAI Responses (``client.responses.create(**view)``).

    Args:
        source: a state or a ``ModelView`` built already.
        system: the system prompt; left out when None or blank.
        reasoning: send back the current turn's reasoning items (with their
            encrypted content); only reasoning models take them.
        window, artifacts, max_result_chars: as for ``clean_history``.

    Raises:
        MissingArtifact, ProjectionError, TypeError: as ``to_openai``.
    """
    view = source_view("to_openai_responses", source, window, artifacts, max_result_chars)
    return spell_responses(view, system=system, reasoning=reasoning)


def spell_responses(
    view: ModelView,
    *,
    system: str | Message | None,
    reasoning: bool,
    bare_ids: bool = False,
) -> dict[str, Any]:
    """``to_openai_responses`` of a built view; ``bare_ids``: item ids sent without their
    reasoning item too, as requests were spelled before (for ``rebuild_request`` of them)."""
    text = system_text("to_openai_responses", system)
    items: list[dict[str, Any]] = []
    for message in view.messages:
        if message.role is ViewRole.USER:
            items.append(_user(message))
        elif message.role is ViewRole.TOOL:
            result = message.parts[0]
            assert isinstance(result, ToolResultPart)
            items.append(
                {"type": "function_call_output", "call_id": result.call_id, "output": result.text}
            )
        else:
            items.extend(_assistant(message, reasoning=reasoning, bare_ids=bare_ids))
    out: dict[str, Any] = {}
    if text is not None:
        out["instructions"] = text
    out["input"] = items
    return out


def _user(message: ViewMessage) -> dict[str, Any]:
    if len(message.parts) == 1 and isinstance(message.parts[0], TextPart):
        return {"role": "user", "content": message.parts[0].text}
    content: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            content.append({"type": "input_text", "text": part.text})
        elif isinstance(part, ImagePart):
            data = base64.b64encode(part.data).decode("ascii")
            url = f"data:{part.attachment.media_type};base64,{data}"
            content.append({"type": "input_image", "image_url": url, "detail": "auto"})
    return {"role": "user", "content": content}


def _assistant(message: ViewMessage, *, reasoning: bool, bare_ids: bool) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    text: dict[str, Any] | None = None  # the message item the next text part joins
    text_id: str | None = None  # the item id of that text (sent or not)
    reasoned = False  # the reasoning item before this point of the response was sent
    for part in message.parts:
        if isinstance(part, TextPart):
            if not part.text.strip():
                continue
            own = part.provider == RESPONSES and part.item_id is not None
            if text is not None and (not own or text_id == part.item_id):
                _append_text(text, part.text)
                continue
            text_id = part.item_id if own else None
            if own and (reasoned or bare_ids):
                text = {
                    "type": "message",
                    "id": part.item_id,
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": part.text, "annotations": []}],
                }
            else:
                text = {"role": "assistant", "content": part.text}
            items.append(text)
            continue
        text = None
        if isinstance(part, ReasoningPart):
            reasoned = (
                reasoning
                and part.provider == RESPONSES
                and part.item_id is not None
                and part.signature is not None
            )
            if reasoned:
                summary = [{"type": "summary_text", "text": part.text}] if part.text.strip() else []
                items.append(
                    {
                        "type": "reasoning",
                        "id": part.item_id,
                        "summary": summary,
                        "encrypted_content": part.signature,
                    }
                )
        elif isinstance(part, ToolUsePart):
            call: dict[str, Any] = {
                "type": "function_call",
                "call_id": part.call_id,
                "name": part.name,
                "arguments": part.arguments_json(),
            }
            if part.provider == RESPONSES and part.item_id is not None and (reasoned or bare_ids):
                call["id"] = part.item_id
            items.append(call)
    while items and items[-1].get("type") == "reasoning":
        items.pop()  # a reasoning item travels with the item after it
    return items


def _append_text(item: dict[str, Any], text: str) -> None:
    if "content" in item and isinstance(item["content"], list):
        item["content"][0]["text"] += text
    else:
        item["content"] += text
