"""``ViewCache``: the model's view of a session's settled history, kept between model calls.

The view of an ended turn never changes (its messages are settled; thoughts
of finished turns are dropped whichever turn runs now), so a cache keeps the
view messages of the oldest blocks, as far as a *cut* (a position no block
straddles, ``Walk``) after which only ended turns and settled messages lie.
The next view walks the history from the newest message back to that cut,
builds only the blocks it meets, and puts the kept ones before them.

A cached block is trusted only while its messages are the very objects it was
built from: a state changes a message by replacing it in the persistent
vector, so comparing the two vectors' tries by identity finds the first
changed position in time proportional to what changed (``first_change``); the
cache then falls back to the last cut before it. The cache is a frozen value:
``cached_view`` returns the next one with the view.

The view a cache gives is equal to ``clean_history``'s (a property test checks
it for every state of random sessions), and carries the cached start as a
``ViewPrefix`` so provider views spell only what follows it.
"""

from __future__ import annotations

from typing import Any

import attrs
from pyrsistent._pvector import PythonPVector
from pyrsistent.typing import PVector

from ._artifacts import ArtifactStore
from ._clean import DEFAULT_MAX_RESULT_CHARS, BlockBuilder, check_options, clean_history
from ._compact import compact, first_role, materialize
from ._history import Block, Walk
from ._message import Message
from ._state import SessionState
from ._view import ModelView, Segment, TextPart, ViewMessage, ViewPrefix, ViewRole
from ._window import START_NOTE, Window, approx_tokens

__all__ = ["ViewCache", "approx_view_tokens", "cached_view", "first_change"]

_SHIFT = 5


def _leaf_change(old: list[Any], new: list[Any], base: int, limit: int) -> int | None:
    for offset in range(min(len(old), len(new), limit - base)):
        if old[offset] is not new[offset]:
            return base + offset
    return None


def _node_change(old: list[Any], new: list[Any], level: int, base: int, limit: int) -> int | None:
    if level == 0:
        return _leaf_change(old, new, base, limit)
    span = 1 << level
    for offset, (a, b) in enumerate(zip(old, new, strict=False)):
        start = base + offset * span
        if start >= limit:
            return None
        if a is not b:
            found = _node_change(a, b, level - _SHIFT, start, limit)
            if found is not None:
                return found
    return None


def first_change(old: PVector[Any], new: PVector[Any], limit: int) -> int | None:
    """The first position below ``limit`` where ``new`` holds another object than ``old``.

    None when the first ``limit`` items are the same objects. For pyrsistent's
    pure-Python vectors this compares the tries by identity and descends only
    into nodes that differ; any other sequence is compared item by item.
    """
    limit = min(limit, len(old), len(new))
    if old is new or limit <= 0:
        return None
    a: Any = old  # pyrsistent's trie internals (``_root``, ``_shift``, ``_tail`` ...)
    b: Any = new
    if (
        type(a) is not PythonPVector
        or type(b) is not PythonPVector
        or len(b) < len(a)
        or b._shift < a._shift
    ):
        for position in range(limit):
            if a[position] is not b[position]:
                return position
        return None
    trie = min(limit, a._tail_offset)
    if trie > 0:
        node = b._root
        level = b._shift
        while level > a._shift:
            node = node[0]  # the old root is the first subtree of a grown one
            level -= _SHIFT
        found = _node_change(a._root, node, level, 0, trie)
        if found is not None:
            return found
    tail_offset = a._tail_offset
    tail = a._tail
    for position in range(max(trie, tail_offset), limit):
        if tail[position - tail_offset] is not b[position]:
            return position
    return None


@attrs.frozen(kw_only=True)
class ViewCache:
    """The view messages of a session's settled blocks, oldest first (module docstring).

    Build the first one with ``ViewCache.empty()``; ``cached_view`` returns the next.
    """

    session_id: str | None = None
    """The session it was built for (None: nothing cached yet)."""
    messages: PVector[Message] | None = None
    """The message vector of the state it was built from."""
    artifacts: ArtifactStore | None = None
    """The artifact store the views were built with."""
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS
    """The excerpt limit the views were built with."""
    segments: tuple[Segment, ...] = ()
    """For each settled block, oldest first, its view: the ``Block`` itself when it is compact
    (``runtime/_compact.py``), else a tuple of its view messages. The blocks' view messages
    are not kept: a cold view of a long session would keep about fourteen collector-tracked
    objects per turn alive, and each counts towards a full collection of the whole heap."""
    cuts: tuple[int | None, ...] = ()
    """The cut just before each block (None where a turn straddles that point)."""
    cut: int = 0
    """The cut after the last block: every cached message lies before it."""
    prefix: ViewPrefix | None = attrs.field(default=None, eq=False, repr=False)
    """The view of ``segments`` (after the start note, if the view needs one); None when
    they give no view message."""

    @classmethod
    def empty(cls) -> ViewCache:
        """A cache with nothing in it."""
        return cls()

    def _kept(
        self, state: SessionState, artifacts: ArtifactStore | None, max_result_chars: int | None
    ) -> int:
        """How many cached blocks still hold for ``state``."""
        if (
            self.session_id != state.session_id
            or self.messages is None
            or self.artifacts is not artifacts
            or self.max_result_chars != max_result_chars
            or len(state.messages) < self.cut
        ):
            return 0
        changed = first_change(self.messages, state.messages, self.cut)
        if changed is None:
            return len(self.cuts)
        for n in range(len(self.cuts) - 1, -1, -1):
            cut = self.cuts[n]
            if cut is not None and cut <= changed:
                return n
        return 0


def _settled(state: SessionState, block: Block) -> bool:
    """True when ``block``'s view can no longer change (short of a changed message)."""
    if block.turn_id is not None:
        return block.turn_id in state.turns  # ended turns only
    return block.messages[0].id not in state.queued  # an input a turn will claim is not


def _prefix(
    segments: tuple[Segment, ...], parent: ViewPrefix | None, limit: int | None
) -> ViewPrefix | None:
    """A prefix of ``segments`` (after the start note, if they need one); ``parent`` is the
    prefix it extends, whose segments are its first. None when they give no view message."""
    if parent is not None:  # its segments are the first of ``segments`` (the cache's)
        parent.parent = None  # one level is enough: a chain would keep every old list alive
        return ViewPrefix(
            segments=segments, parent=parent, note=parent.note, max_result_chars=limit
        )
    first = first_role(segments)
    if first is None:
        return None
    return ViewPrefix(segments=segments, note=first is not ViewRole.USER, max_result_chars=limit)


def cached_view(
    cache: ViewCache | None,
    state: SessionState,
    *,
    window: Window | None = None,
    artifacts: ArtifactStore | None = None,
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
) -> tuple[ViewCache, ModelView]:
    """``clean_history(state, ...)`` built from ``cache``, and the cache for the next call.

    Costs what changed since the state ``cache`` was built from: the blocks
    after its last cut, and those a changed message reopened. Arguments,
    result and errors are as for ``clean_history``; ``cache`` may be None or
    built for another session or other options (it is then started afresh).
    With a ``window`` the view is ``clean_history``'s own (it touches only what
    the window keeps) and the cache is returned as it was.
    """
    check_options(state, window, artifacts, max_result_chars)
    if cache is None:
        cache = ViewCache.empty()
    if window is not None:
        # A windowed view walks back only as far as the window reaches, which costs the
        # same at any length: building (and keeping) every settled block would not pay.
        return cache, clean_history(
            state, window=window, artifacts=artifacts, max_result_chars=max_result_chars
        )
    kept = cache._kept(state, artifacts, max_result_chars)
    whole = kept == len(cache.cuts)
    walk = Walk(state, (cache.cut if whole else cache.cuts[kept] or 0) if kept else 0)
    builder = BlockBuilder(state, artifacts, max_result_chars)
    current = builder.current
    # Each block is dropped as soon as its view is built, unless it is settled and compact
    # (``runtime/_compact.py``): then it is kept as it is, its view built only if someone
    # reads it. Only whether it is settled and the cut before it are kept besides.
    made: list[Segment] = []
    dones: list[bool] = []
    befores: list[int | None] = []
    for block, before in walk.blocks():
        done = _settled(state, block)
        dones.append(done)
        befores.append(before)
        made.append(block if done and compact(block, current) else tuple(builder.block(block)))
    if not walk.stopped:
        kept, whole = 0, False
    made.reverse()  # oldest first
    dones.reverse()
    befores.reverse()
    segments = list(cache.segments[:kept])
    cuts = list(cache.cuts[:kept])
    cut = walk.stop if kept else 0
    settled = kept
    last = len(befores) - 1
    for n, done in enumerate(dones):
        if not done:
            break
        segments.append(made[n])
        cuts.append(befores[n])
        after = befores[n + 1] if n < last else len(state.messages)
        if after is not None:
            settled = len(segments)
            cut = after
    del segments[settled:], cuts[settled:]
    used = settled - kept  # the blocks now settled
    segments_kept = tuple(segments)
    old = cache.prefix if whole else None
    if settled == kept and whole:
        prefix: ViewPrefix | None = old
        segments_kept = cache.segments
    else:
        prefix = _prefix(segments_kept, old, max_result_chars)
    new_cache = ViewCache(
        session_id=state.session_id,
        messages=state.messages,
        artifacts=artifacts,
        max_result_chars=max_result_chars,
        segments=segments_kept,
        cuts=tuple(cuts),
        cut=cut,
        prefix=prefix,
    )
    rest: list[ViewMessage] = []
    for segment in made[used:]:
        rest.extend(builder.block(segment) if type(segment) is Block else segment)
    if prefix is not None:
        view = ModelView(
            session_id=state.session_id, seq=state.seq, prefix=prefix, rest=tuple(rest)
        )
        return new_cache, view
    # Nothing settled gives a view message (a session of notifications, say), so every cached
    # block's view is empty: the view is what the blocks built now give, assembled as
    # ``assemble`` does without a window.
    if rest and rest[0].role is not ViewRole.USER:
        rest.insert(0, ViewMessage(role=ViewRole.USER, parts=(TextPart(text=START_NOTE),)))
    return new_cache, ModelView(session_id=state.session_id, seq=state.seq, messages=tuple(rest))


def _tokens(messages: tuple[ViewMessage, ...]) -> int:
    return sum(approx_tokens(m.text) for m in messages)


def approx_view_tokens(view: ModelView) -> int:
    """``approx_tokens`` of the text of every message of ``view``; a prefix it shares with
    earlier views is counted once."""
    prefix = view.prefix
    if prefix is None:
        return _tokens(view.messages)
    if prefix.tokens is None:
        parent = prefix.parent
        if parent is not None and parent.tokens is not None:
            own = materialize(prefix.own(), prefix.max_result_chars, False)
            prefix.tokens = parent.tokens + _tokens(own)
        else:
            prefix.tokens = _tokens(prefix.messages)
    return prefix.tokens + _tokens(view.tail())
