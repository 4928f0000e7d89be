"""What ``amber show --view`` prints as JSON: the view names and ``view_data``.

Apart from ``_views`` (which prints the views for people, with rich) so that
``amber show --json`` loads neither rich nor the tables.

The model's view sends a current-turn image's bytes, which live in the
application's artifact store (``Settings.artifacts``), not in the Amber store:
the CLI has none. ``model_view`` builds the view with stand-in bytes for each
such image, and ``view_data`` prints each as a placeholder that names the
image, its media type and size (``show --call`` does the same for a request).
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import attrs

from runtime import Attachment, SessionState, to_data

from .._errors import InvalidConfig

if TYPE_CHECKING:
    from runtime import ModelView

__all__ = [
    "PROVIDERS",
    "VIEWS",
    "StandIn",
    "image_label",
    "message_view",
    "message_view_data",
    "model_view",
    "placeholder",
    "stand_ins_replaced",
    "view_data",
]

VIEWS = ("state", "history", "clean", "openai", "openai-responses", "anthropic", "gemini")
"""What ``--view`` takes."""
PROVIDERS = ("openai", "openai-responses", "anthropic", "gemini")
"""The views that are provider requests (JSON)."""


_STAND_IN = b"amber: image bytes not here: "


class StandIn:
    """Stands in for the application's artifact store: marker bytes for each image read."""

    def __init__(self) -> None:
        self.seen: list[Attachment] = []
        """The images read, in the order first read."""

    def read(self, attachment: Attachment) -> bytes:
        """Marker bytes naming ``attachment`` (``stand_ins_replaced`` finds them)."""
        if attachment not in self.seen:
            self.seen.append(attachment)
        return _STAND_IN + attachment.id.encode()


def image_label(attachment: Attachment, data: bytes = b"") -> str:
    """``cat.png (image/png, 1234 bytes)``: an image's name, media type and size (the
    attachment's, else the length of ``data`` when it is not stand-in bytes)."""
    size = attachment.size or (0 if data.startswith(_STAND_IN) else len(data))
    return f"{attachment.name} ({attachment.media_type}{f', {size} bytes' if size else ''})"


def placeholder(attachment: Attachment) -> str:
    """What a view or a request shows in place of an image's bytes."""
    label = image_label(attachment)
    return (
        f"<image {label[:-1]}, artifact {attachment.id}): bytes not shown, they are in the "
        "application's artifact store>"
    )


def stand_ins_replaced(value: Any, images: tuple[Attachment, ...]) -> Any:
    """``value`` with each image's stand-in bytes (base64, as a body spells them, or raw)
    replaced by a readable placeholder."""
    if not images:
        return value
    if isinstance(value, dict):
        return {k: stand_ins_replaced(v, images) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [stand_ins_replaced(v, images) for v in value]
    if isinstance(value, bytes):
        for image in images:
            if value == _STAND_IN + image.id.encode():
                return placeholder(image)
        return value
    if isinstance(value, str):
        for image in images:
            data = _STAND_IN + image.id.encode()
            for spelled in (base64.b64encode(data), base64.urlsafe_b64encode(data)):
                value = value.replace(spelled.decode("ascii"), placeholder(image))
        return value
    return value


def model_view(state: SessionState) -> ModelView:
    """``clean_history(state)``, each current-turn image's bytes stood in for (the CLI has
    no artifact store; see the module docstring)."""
    from runtime import MissingArtifact, clean_history

    try:
        return clean_history(state)
    except MissingArtifact:
        return clean_history(_undigested(state), artifacts=StandIn())


def _undigested(state: SessionState) -> SessionState:
    """``state`` with no attachment's sha256: stand-in bytes cannot match a digest."""
    messages = state.messages
    for position, message in enumerate(state.messages):
        if any(a.sha256 is not None for a in message.attachments):
            unpinned = [attrs.evolve(a, sha256=None) for a in message.attachments]
            messages = messages.set(position, attrs.evolve(message, attachments=unpinned))
    return attrs.evolve(state, messages=messages)


def _stood_in(view: ModelView) -> tuple[Attachment, ...]:
    """The images of ``view`` whose bytes stood in for the real ones."""
    from runtime import ImagePart

    return tuple(
        part.attachment
        for message in view.messages
        for part in message.parts
        if isinstance(part, ImagePart) and part.data.startswith(_STAND_IN)
    )


def view_data(view: str, state: SessionState) -> Any:
    """The view of ``state`` as JSON-ready data (an image of the current turn as a
    placeholder)."""
    if view == "state":
        return to_data(state)
    from runtime import session_history

    if view == "history":
        return [to_data(m) for m in session_history(state)]
    return message_view_data(view, model_view(state))


def _provider_data(view: str, source: ModelView) -> Any:
    """The provider view ``view`` of a model's view built already."""
    from runtime import to_anthropic, to_gemini, to_openai, to_openai_responses

    if view == "openai":
        return to_openai(source)
    if view == "openai-responses":
        return to_openai_responses(source, reasoning=True)
    if view == "anthropic":
        return to_anthropic(source)
    if view == "gemini":
        return to_gemini(source)
    raise InvalidConfig(f"unknown view {view!r}; expected one of {VIEWS}")


def message_view(state: SessionState, message_id: str) -> ModelView:
    """What the model's view of ``state`` (``clean_history``) holds of message
    ``message_id``, as a view of its own: the view messages made from it (with the other
    stored messages of the same model response, which make one view message) and the
    results the view made up for its tool call; empty when the view leaves it out.

    Spelled for a provider, it is that message's part of the request, spelled alone (in the
    whole request Anthropic and Gemini merge it with neighbours of the same role)."""
    from runtime import ModelView, ToolResultPart, ViewRole

    message = state.get(message_id)
    call_id = None if message is None or message.tool_call is None else message.tool_call.id
    picked = []
    for view_message in model_view(state).messages:
        source = view_message.source_id
        if source == message_id or message_id in view_message.source_ids:
            picked.append(view_message)
        elif source is None and call_id is not None and view_message.role is ViewRole.TOOL:
            result = view_message.parts[0]
            if isinstance(result, ToolResultPart) and result.call_id == call_id:
                picked.append(view_message)  # the result synthesized for its call
    return ModelView(session_id=state.session_id, seq=state.seq, messages=tuple(picked))


def message_view_data(view: str, part: ModelView) -> Any:
    """``view`` (``clean`` or a provider's) of ``part`` (``message_view``'s, or a whole
    ``model_view``) as JSON-ready data, each image whose bytes stood in as a placeholder."""
    data = _model_view_data(part) if view == "clean" else _provider_data(view, part)
    return stand_ins_replaced(data, _stood_in(part))


def _model_view_data(view: ModelView) -> dict[str, Any]:
    return {
        "session_id": view.session_id,
        "seq": view.seq,
        "messages": [attrs.asdict(message, recurse=True) for message in view.messages],
        "truncated": view.truncated,
        "tokens": view.tokens,
        "prefix": None if view.prefix is None else attrs.asdict(view.prefix, recurse=True),
    }
