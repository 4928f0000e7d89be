"""What a model call's request was built from: ``RequestRecord`` and canonical digests.

A model call's audit row keeps a ``RequestRecord``: the seq of the state its
view was built from, the view options, the provider, the model, the
provider-native parameters, digests of the system prompt and the tool
schemas, and a digest of the payload itself. The system prompt and the tool
schemas are stored once per session, inline in the first row that used
them (``system`` and ``tools``); later rows name them by digest.
``rebuild_request`` (``runtime._replay``) turns a record back into the exact
payload, and checks it against ``payload_digest``.

Digests are sha256 over canonical JSON: keys sorted, no spaces, non-ASCII
kept, bytes as base64 (``canonical_json``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import attrs
import orjson
from pyrsistent.typing import PMap

from ._json import FrozenJSON, freeze_map, thaw
from ._repr import value_repr

__all__ = [
    "RequestRecord",
    "canonical_json",
    "digest",
    "tools_json",
    "tools_text",
]


def _bytes(value: object) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        import base64  # rare in a request: not imported with every record

        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (tuple, set, frozenset)) or hasattr(value, "tolist"):
        return list(value)  # type: ignore[call-overload]
    raise TypeError(f"cannot put {type(value).__name__} {value!r} in canonical JSON")


def canonical_json(value: Any) -> bytes:
    """``value`` as canonical JSON bytes (sorted keys, compact, bytes as base64)."""
    return orjson.dumps(thaw(value), default=_bytes, option=orjson.OPT_SORT_KEYS)


def digest(value: Any) -> str:
    """``sha256:<hex>`` of ``value``'s canonical JSON (a str is hashed as its UTF-8 text)."""
    data = value.encode() if isinstance(value, str) else canonical_json(value)
    return "sha256:" + hashlib.sha256(data).hexdigest()


def tools_text(tools: Iterable[Any]) -> str:
    """``tools_json(tools)`` as the canonical JSON text ``tools_digest`` hashes."""
    return canonical_json(tools_json(tools)).decode()


def tools_json(tools: Iterable[Any]) -> list[dict[str, Any]]:
    """Tool specs (``ToolSpec``) as plain JSON, in order: what their digest covers."""
    return [
        {"name": t.name, "description": t.description, "parameters": thaw(t.parameters)}
        for t in tools
    ]


def _map(value: object) -> PMap[str, FrozenJSON]:
    return freeze_map(value)


@attrs.frozen(kw_only=True)
class RequestRecord:
    """What one model call's request was built from (enough to rebuild it exactly)."""

    __repr__ = value_repr

    provider: str
    """The payload builder: ``openai``, ``openai-responses``, ``anthropic``, ``gemini``, or a
    custom model's own name."""
    model: str
    """The model asked for."""
    view_seq: int
    """Seq of the state whose ``clean_history`` the request was built from."""
    payload_digest: str
    """``digest`` of the payload sent (the SDK call's arguments)."""
    params: PMap[str, FrozenJSON] = attrs.field(factory=dict, converter=freeze_map)
    """Provider-native parameters merged into the payload."""
    system_digest: str | None = None
    """``digest`` of the system prompt, or None without one."""
    tools_digest: str | None = None
    """``digest`` of ``tools_json(tools)``, or None without tools."""
    window: PMap[str, FrozenJSON] = attrs.field(factory=dict, converter=_map)
    """The view's window (``window_json``); empty for no window."""
    max_result_chars: int | None = None
    """The view's tool-result excerpt length (None: never cut)."""
    base_url: str | None = None
    """Where it was sent, when not the provider's default endpoint."""
    system: str | None = None
    """The system prompt itself, when this row is the first of the session to use it."""
    tools: str | None = None
    """The tool schemas themselves (``tools_json`` as canonical JSON text, which
    ``tools_digest`` hashes), when this row is the first of the session to use them."""
