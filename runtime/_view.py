"""The model's view as values: what ``clean_history`` returns and the provider views read.

A ``ModelView`` is a list of ``ViewMessage``s, one per stored message that
the model sees (plus the few the view synthesizes: an interrupted tool result,
a note that earlier history was left out). Each holds typed parts. Provider
views (``to_openai``, ``to_anthropic``, ``to_gemini``) only regroup and spell
these parts; every decision about what the model sees is made once, here and
in ``clean_history``.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable
from typing import Any

import attrs
from pyrsistent import PMap as PMapABC
from pyrsistent.typing import PMap

from ._json import PMAP_CLASS, FrozenJSON, canonical, map_items
from ._message import Attachment
from ._replace import constructor

__all__ = [
    "ImagePart",
    "ModelView",
    "ReasoningPart",
    "TextPart",
    "ToolResultPart",
    "ToolUsePart",
    "ViewMessage",
    "ViewPart",
    "ViewPrefix",
    "ViewRole",
]


class ViewRole(enum.StrEnum):
    """Who speaks a ``ViewMessage``, before a provider maps it to its own roles."""

    USER = "user"
    """A person's input, or a runtime notice the model reads as user text."""
    ASSISTANT = "assistant"
    """The model's own text, reasoning or tool calls."""
    TOOL = "tool"
    """The result of one tool call."""


@attrs.frozen(kw_only=True)
class TextPart:
    """Text the model reads (markers for stripped or interrupted content included)."""

    text: str
    """Never empty or blank (except a model's text part that only carries a signature)."""
    provider: str | None = None
    """For model text: the API that wrote it (its ``signature`` and ``item_id`` are that API's)."""
    signature: str | None = None
    """For model text: the provider's signature on it (Gemini)."""
    item_id: str | None = None
    """For model text: the provider's item id (OpenAI Responses)."""


@attrs.frozen(kw_only=True)
class ImagePart:
    """An image of the current turn, with its bytes loaded from the artifact store."""

    attachment: Attachment
    """The attachment it was loaded for."""
    data: bytes = attrs.field(repr=lambda data: f"<{len(data)} bytes>")
    """The image's bytes."""


@attrs.frozen(kw_only=True)
class ReasoningPart:
    """Reasoning of the current turn (providers that cannot take it back drop it)."""

    text: str
    """The reasoning text (empty for a redacted block)."""
    signature: str | None = None
    """The provider's opaque data for it, sent back unchanged: Anthropic's signature (or a
    redacted block's data), Gemini's thought signature, OpenAI Responses' encrypted content."""
    provider: str | None = None
    """The API that produced it; None for a thought stored with a bare
    ``metadata["signature"]`` (read as Anthropic's)."""
    redacted: bool = False
    """True for a block the provider withheld (Anthropic ``redacted_thinking``)."""
    item_id: str | None = None
    """The provider's item id (OpenAI Responses reasoning item)."""


@attrs.frozen(kw_only=True)
class ToolUsePart:
    """A tool call the model made."""

    call_id: str
    """The call's id; the ``ToolResultPart`` that answers it names it."""
    name: str
    """The tool."""
    arguments: PMap[str, FrozenJSON]
    """The arguments, frozen."""
    provider: str | None = None
    """The API that made the call (its ``signature`` and ``item_id`` are that API's)."""
    signature: str | None = None
    """The provider's signature on the call (Gemini's thought signature)."""
    item_id: str | None = None
    """The provider's item id (OpenAI Responses ``fc_…``)."""

    def arguments_dict(self) -> dict[str, Any]:
        """The arguments as a plain dict (what Anthropic and Gemini want), keys sorted."""
        return canonical(self.arguments)  # type: ignore[return-value]

    def arguments_json(self) -> str:
        """The arguments as a compact JSON string (what OpenAI wants)."""
        return arguments_json(self.arguments)


@attrs.frozen(kw_only=True)
class ToolResultPart:
    """What a tool call returned, as the model reads it."""

    call_id: str
    """The call it answers."""
    name: str
    """The tool's name (Gemini pairs responses by name)."""
    text: str
    """The result text: excerpted when oversized, never empty."""
    is_error: bool = False
    """True when the tool failed (or the call was interrupted)."""
    synthesized: bool = False
    """True when the call had no result and the view made one up (interrupted)."""
    excerpted: bool = False
    """True when ``text`` is a head + tail excerpt of a larger stored result."""


def arguments_json(arguments: PMap[str, FrozenJSON]) -> str:
    """Tool-call arguments as compact JSON, non-ASCII kept as is.

    Keys are sorted at every level: a frozen map iterates in its keys' hash order,
    which changes with every process, and the same call must be the same prompt
    after a restart (the provider's prompt cache depends on it).
    """
    held: Any = arguments  # pyrsistent's untyped internals: ``_size``, ``_buckets``
    kind = type(held)
    if kind is PMAP_CLASS and held._size == 1:
        for bucket in held._buckets:
            if bucket:  # the map's one item, mostly {"command": "ls"}
                key, value = bucket[0]
                if type(value) is str:
                    # What the encoder writes for it (``_ENCODE`` builds a C encoder on
                    # every call, which costs more than the rest for a small map).
                    made: str = f"{{{_STRING(key)}:{_STRING(value)}}}"
                    return made
                break
    elif kind is not PMAP_CLASS and not isinstance(arguments, PMapABC):
        # a hand-built part may hold a plain dict
        return _ENCODE(canonical(arguments))
    items = map_items(arguments)
    if len(items) > 1:
        items.sort()  # compares keys only: a map's keys are distinct
    out = []
    for key, value in items:
        if type(value) is not str:
            return _ENCODE(canonical(arguments))
        # What the encoder writes for it, string by string (``_ENCODE`` builds a C encoder
        # on every call, which costs more than the rest for a small map).
        out.append(f"{_STRING(key)}:{_STRING(value)}")
    return "{" + ",".join(out) + "}"


_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_STRING: Any = json.encoder.encode_basestring
"""The function the encoder above writes each string with (``ensure_ascii=False``)."""
"""``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` without building an
encoder per call (``dumps`` does, for any non-default option)."""


ViewPart = TextPart | ImagePart | ReasoningPart | ToolUsePart | ToolResultPart
"""Any part of a ``ViewMessage``."""


@attrs.frozen(kw_only=True)
class ViewMessage:
    """One message of the model's view; most come from one stored message."""

    role: ViewRole
    """Who speaks it."""
    parts: tuple[ViewPart, ...]
    """What it says, never empty. A tool message has exactly one ``ToolResultPart``."""
    source_id: str | None = None
    """Id of the (first) stored message it was made from; None when the view made it up."""
    source_ids: tuple[str, ...] = ()
    """Ids of every stored message it was made from (a model response's thought, text and
    calls make one assistant message); empty when the view made it up."""
    turn_id: str | None = None
    """The turn of that message."""
    event_seq: int | None = None
    """The ``event_seq`` of that message (a reference back into the store)."""

    @property
    def text(self) -> str:
        """The text of its text-like parts, joined by blank lines (for counting and display)."""
        out = []
        for part in self.parts:
            if isinstance(part, TextPart | ReasoningPart | ToolResultPart):
                if part.text:
                    out.append(part.text)
            elif isinstance(part, ToolUsePart):
                out.append(f"{part.name}({part.arguments_json()})")
        return "\n\n".join(out)


# Trusted constructors: the view's hot path builds these values from fields of messages
# that were checked when they were stored. They are made as the reducer's ``replacer``
# makes its copies (``runtime/_replace.py``): an instance of an unfrozen twin, plain slot
# stores, then ``__class__`` assigned, which costs about half of storing through the slots'
# descriptors and a third of the frozen class's __init__ (it goes through
# object.__setattr__ per field); they give an equal value
# (tests/runtime/test_view_fast_paths.py pins it). The classes have no validators or
# converters, so nothing is skipped but the generic attribute lookup.
trusted_view_message: Callable[
    [ViewRole, tuple[ViewPart, ...], str | None, tuple[str, ...], str | None, int | None],
    ViewMessage,
] = constructor(ViewMessage, "role", "parts", "source_id", "source_ids", "turn_id", "event_seq")
"""``ViewMessage(...)`` of checked values, by position, built without ``__init__``."""
trusted_text: Callable[[str], TextPart] = constructor(
    TextPart, "text", provider="None", signature="None", item_id="None"
)
"""``TextPart(text=text)``, built without ``__init__``."""
trusted_reasoning: Callable[[str], ReasoningPart] = constructor(
    ReasoningPart, "text", signature="None", provider="None", redacted="False", item_id="None"
)
"""``ReasoningPart(text=text)``, built without ``__init__``."""
trusted_tool_use: Callable[[str, str, PMap[str, FrozenJSON]], ToolUsePart] = constructor(
    ToolUsePart, "call_id", "name", "arguments", provider="None", signature="None", item_id="None"
)
"""``ToolUsePart(call_id=..., name=..., arguments=...)``, by position, without ``__init__``."""
trusted_tool_result: Callable[[str, str, str, bool, bool, bool], ToolResultPart] = constructor(
    ToolResultPart, "call_id", "name", "text", "is_error", "synthesized", "excerpted"
)
"""``ToolResultPart(...)`` of checked values, by position, built without ``__init__``."""


Segment = Any
"""One settled block's share of a ``ViewPrefix``: a tuple of its view messages, or the
``Block`` itself when it is plain enough to be spelled straight from its stored messages
(``runtime/_compact.py``), its view messages built only when someone reads them."""


@attrs.define(eq=False)
class ViewPrefix:
    """The first messages of successive views of one session, which later views share.

    Kept as one segment per settled block (``segments``): a block the provider views can
    spell straight from its stored messages is kept as it is, and its view messages are
    built only when ``messages`` is read (then once). Provider views keep what they spelled
    of it (``spelled``) so the next view spells only what follows. The memos are caches of
    a pure function of ``segments``: filling them never changes what a view means. Entries
    of ``spelled`` are shared between the lists provider views return; treat those as
    read-only.
    """

    segments: tuple[Segment, ...] = ()
    """One per settled block, oldest first (see ``Segment``)."""
    parent: ViewPrefix | None = None
    """The shorter prefix this one extends: its segments are the first of ``segments`` (its
    spelled lists are extended, not rebuilt)."""
    spelled: dict[str, list[Any]] = attrs.field(factory=dict)
    """Provider -> what it spelled of ``messages`` (no system prompt, no final touches)."""
    tokens: int | None = None
    """``approx_tokens`` of the text of ``messages``, once counted."""
    note: bool = False
    """True when the view starts with the note that earlier history was left out (its
    first block does not start on the user's side)."""
    max_result_chars: int | None = None
    """The excerpt limit the blocks' views are built with."""
    built: tuple[ViewMessage, ...] | None = attrs.field(default=None, alias="messages")
    """``messages`` once built (or as given)."""

    def __attrs_post_init__(self) -> None:
        if not self.segments and self.built:  # made from its messages: one segment of them
            self.segments = (self.built,)

    @property
    def messages(self) -> tuple[ViewMessage, ...]:
        """The view messages, the same objects at the start of every view that holds this
        prefix (built on first read)."""
        built = self.built
        if built is None:
            from ._compact import materialize

            parent = self.parent
            if parent is not None:
                own = self.segments[len(parent.segments) :]
                built = parent.messages + materialize(own, self.max_result_chars, False)
            else:
                built = materialize(self.segments, self.max_result_chars, self.note)
            self.built = built
        return built

    def own(self) -> tuple[Segment, ...]:
        """The segments after the parent's."""
        parent = self.parent
        return self.segments if parent is None else self.segments[len(parent.segments) :]


def _lazy_messages(view: ModelView) -> tuple[ViewMessage, ...]:
    prefix = view.prefix
    rest = view.rest
    assert prefix is not None
    assert rest is not None
    return prefix.messages + rest


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ModelView:
    """The model's view of a session at one seq (``clean_history``'s result).

    Equal (and hashing equal) to another when their session, seq, messages,
    ``truncated`` and ``tokens`` are; ``prefix`` does not count. A view a
    ``ViewCache`` made builds its ``messages`` on first read (provider views
    spell its settled start without them).
    """

    session_id: str
    """The session."""
    seq: int
    """The seq of the state it was built from."""
    built: tuple[ViewMessage, ...] | None = attrs.field(default=None, alias="messages")
    """``messages`` as given or once built (None until then: see ``rest``)."""
    truncated: bool = False
    """True when a window left older history out (a note says so at the top)."""
    tokens: int | None = None
    """Estimated tokens of ``messages`` by the window's counter; None without a window."""
    prefix: ViewPrefix | None = attrs.field(default=None)
    """The settled start of ``messages`` shared with other views of the session (a
    ``ViewCache`` sets it), so provider views spell it once; None: no such start."""
    rest: tuple[ViewMessage, ...] | None = attrs.field(default=None)
    """The messages after ``prefix`` when the view was made from the two (then ``messages``
    is built from them on first read); None when ``messages`` was given."""

    def __attrs_post_init__(self) -> None:
        if self.built is None and (self.prefix is None or self.rest is None):
            raise TypeError(
                "ModelView() takes its messages, or a prefix and the rest after it (got "
                f"messages=None, prefix={self.prefix!r}, rest={self.rest!r})."
            )

    @property
    def messages(self) -> tuple[ViewMessage, ...]:
        """The view, oldest first; it never starts with an assistant or tool message."""
        built = self.built
        if built is None:
            built = _lazy_messages(self)
            object.__setattr__(self, "built", built)
        return built

    def tail(self) -> tuple[ViewMessage, ...]:
        """The messages after ``prefix`` (all of them without a prefix), built or not."""
        prefix = self.prefix
        if prefix is None:
            return self.messages
        if self.built is None and self.rest is not None:
            return self.rest
        return self.messages[len(prefix.messages) :]

    def last_role(self) -> ViewRole | None:
        """The role of the last message (None for an empty view), without building them."""
        tail = self.tail()
        if tail:
            return tail[-1].role
        prefix = self.prefix
        if prefix is None:
            return None
        from ._compact import prefix_last_role

        return prefix_last_role(prefix)

    def _key(self) -> tuple[Any, ...]:
        return (self.session_id, self.seq, self.messages, self.truncated, self.tokens)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, ModelView)
        return self._key() == other._key()

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"ModelView(session_id={self.session_id!r}, seq={self.seq!r}, "
            f"messages={self.messages!r}, truncated={self.truncated!r}, tokens={self.tokens!r})"
        )

    def __len__(self) -> int:
        return len(self.messages)
