"""Fast paths of the model's view, each pinned equal to the general path it stands for.

``plain_block`` (a plain block in one pass) against ``BlockBuilder.general_block``;
the walk's one-step reading of a turn (``Walk(fast=True)``) against its message-by-message
walk;
``Block.stored_order`` against the stored positions; ``canonical`` and
``arguments_json`` against their plain definitions; the provider bodies (one pass
over the view) against the run-by-run spelling they replaced.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st
from pyrsistent import pmap, pvector

from runtime import (
    Attachment,
    Category,
    SessionState,
    Timeline,
    ToolCall,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
    clean_history,
    freeze,
    new_message,
)
from runtime._clean import DEFAULT_MAX_RESULT_CHARS, BlockBuilder
from runtime._history import Block, Walk, trusted_block
from runtime._json import canonical, map_items
from runtime._plain_block import plain_block
from runtime._providers import (
    _anthropic_assistant,
    _anthropic_body,
    _anthropic_user,
    _gemini_body,
    _gemini_model,
    _gemini_signature,
    _gemini_user,
    _merge,
    _openai_assistant,
    _openai_body,
    _openai_user,
)
from runtime._view import (
    ReasoningPart,
    TextPart,
    ToolResultPart,
    ToolUsePart,
    ViewMessage,
    ViewRole,
    arguments_json,
    trusted_reasoning,
    trusted_text,
    trusted_tool_result,
    trusted_tool_use,
    trusted_view_message,
)
from runtime.testing import json_values, timelines
from tests.runtime.test_view_cache import Building

T0 = datetime(2026, 1, 1, tzinfo=UTC)
OUTPUTS = frozenset({Category.THOUGHT, Category.REPLY, Category.TOOL_CALL})


class AnyBytes:
    """An artifact store that has every attachment (as a few bytes)."""

    def read(self, attachment: Attachment) -> bytes:
        return b"\x89PNG" + attachment.name.encode()


ARTIFACTS = AnyBytes()


class _SubMap(Mapping[Any, Any]):
    """A map that is not pyrsistent's own class (``map_items`` calls its ``iteritems``)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getitem__(self, key: Any) -> Any:
        return self.inner[key]

    def __iter__(self) -> Any:
        return iter(self.inner)

    def __len__(self) -> int:
        return len(self.inner)

    def iteritems(self) -> Any:
        return self.inner.iteritems()


def reference_canonical(value: object) -> object:
    """``canonical`` as it was first written: the definition the fast one must match."""
    if isinstance(value, dict) or hasattr(value, "iteritems"):
        return {key: reference_canonical(value[key]) for key in sorted(value)}  # type: ignore[attr-defined]
    if isinstance(value, list | tuple) or hasattr(value, "tolist"):
        return [reference_canonical(item) for item in value]  # type: ignore[attr-defined]
    return value


def check_blocks(state: SessionState, max_result_chars: int | None) -> int:
    """Every block of ``state``: the fast path, where it applies, gives the general path's
    view, ``stored_order`` holds, and an output without metadata gets the same parts from
    ``plain_parts`` as read back through ``stored_parts``. Returns how many blocks took the
    fast path."""
    builder = BlockBuilder(state, ARTIFACTS, max_result_chars)
    taken = 0
    for block, _ in Walk(state).blocks():
        if block.stored_order:
            positions = [state.index[m.id] for m in block.messages]
            assert positions == sorted(positions)
        for message, category in zip(block.messages, block.categories, strict=True):
            if category in OUTPUTS and not message.metadata:  # parts()'s shortcut
                assert builder.plain_parts(message, category) == builder.stored(message, category)
        fast = plain_block(builder, block)
        if fast is not None:
            taken += 1
            assert fast == builder.general_block(block)
    return taken


class TestPlainBlock:
    @settings(max_examples=80, deadline=None)
    @given(timelines(), st.sampled_from([None, 5, DEFAULT_MAX_RESULT_CHARS]))
    def test_equals_the_general_path(self, timeline: Timeline, limit: int | None) -> None:
        """For every state of a random session, each block the fast path takes gets the
        view the general path builds (interleaved calls, results out of order, thoughts
        of the current and of finished turns, interrupted and recovered turns)."""
        for state in timeline.states():
            check_blocks(state, limit)

    @settings(max_examples=40, deadline=None)
    @given(timelines(rich=True))
    def test_equals_the_general_path_in_rich_sessions(self, timeline: Timeline) -> None:
        """The same with every category, attachments, signatures and partial output (the
        fast path declines what it does not cover)."""
        for state in timeline.states():
            check_blocks(state, 50)

    def test_takes_the_blocks_of_a_plain_session(self) -> None:
        """A session of plain turns (question, thought, calls, results, reply) takes the fast
        path for every block, and its view is clean_history's."""
        session = Building("s")
        emit, add = session.emit, session.add

        for n in range(3):
            add(Category.USER_QUESTION, f"u{n}", sender="U", content=f"q{n}")
            emit(TurnStarted, turn_id=f"t{n}")
            add(Category.THOUGHT, f"th{n}", turn_id=f"t{n}", content="hmm")
            for k in (1, 0):
                call = ToolCall(id=f"c{n}{k}", name="sh", arguments={"k": k}, index=k)
                add(Category.TOOL_CALL, f"call{n}{k}", turn_id=f"t{n}", tool_call=call)
            for k in (0, 1):
                add(Category.TOOL_RESULT, f"r{n}{k}", turn_id=f"t{n}", sender="sh",
                    tool_call_id=f"c{n}{k}", content="ok")  # fmt: skip
            add(Category.REPLY, f"a{n}", turn_id=f"t{n}", content=f"a{n}")
            if n < 2:  # the last turn runs on: its thought is kept
                emit(TurnEnded, turn_id=f"t{n}", outcome=TurnOutcome.PROCESSED)
        state = session.state
        assert check_blocks(state, DEFAULT_MAX_RESULT_CHARS) == 3
        view = clean_history(state)
        assert [m.role.value for m in view.messages][-5:] == [
            "user", "assistant", "tool", "tool", "assistant"
        ]  # fmt: skip
        reasoning, first, second = view.messages[-4].parts
        assert reasoning == ReasoningPart(text="hmm")
        assert [first.call_id, second.call_id] == ["c20", "c21"]  # type: ignore[union-attr]
        finished = view.messages[1]  # turn t0's response: its thought is not sent
        assert [type(p).__name__ for p in finished.parts] == ["ToolUsePart", "ToolUsePart"]
        assert finished.source_ids == ("th0", "call01", "call00")
        assert view.messages[4].parts == (TextPart(text="a0"),)


def same_walks(state: SessionState) -> int:
    """The walk with its one-step turns gives the blocks, cuts and ``stopped`` of the
    message-by-message walk, from the head and stopping at each cut and at positions
    that are not cuts. Returns how many blocks the whole walk yields."""
    slow = list(Walk(state, fast=False).blocks())
    assert list(Walk(state).blocks()) == slow
    stops = {cut for _, cut in slow if cut is not None} | {1, 2, len(state.messages) // 2}
    for stop in sorted(stops):
        fast_walk, slow_walk = Walk(state, stop), Walk(state, stop, fast=False)
        assert list(fast_walk.blocks()) == list(slow_walk.blocks())
        assert fast_walk.stopped == slow_walk.stopped
    return len(slow)


class TestTurnRun:
    @settings(max_examples=60, deadline=None)
    @given(st.booleans().flatmap(lambda rich: timelines(rich=rich)))
    def test_equals_the_message_by_message_walk(self, timeline: Timeline) -> None:
        """For every state of random plain and rich sessions (interleaved and recovered
        turns, inputs waiting, rolled-back messages, metadata), the walk that reads a turn
        in one step gives the blocks and cuts of the walk message by message."""
        for state in timeline.states():
            same_walks(state)

    @settings(max_examples=30, deadline=None)
    @given(timelines())
    def test_a_state_built_by_hand_on_a_c_vector(self, timeline: Timeline) -> None:
        """A state whose messages are pyrsistent's C ``pvector`` (built by hand: the field
        takes any vector) has no leaves to read: the walk reads its runs a message at a
        time and still gives the blocks and cuts of the message-by-message walk (a turn
        of two messages or more once raised a TypeError there)."""
        for state in timeline.states():
            same_walks(attrs.evolve(state, messages=pvector(list(state.messages))))

    def test_long_turns_out_of_order_and_interrupted_runs(self) -> None:
        """Turns across leaves of the message vector, out of phase order, with a loose
        message or a rolled-back one inside, and queued input: the same blocks."""
        session = Building("s")
        emit, add = session.emit, session.add

        for n in range(8):
            turn = f"t{n}"
            add(Category.USER_QUESTION, f"u{n}", sender="U", content=f"q{n}")
            emit(TurnStarted, turn_id=turn)
            calls = 3 + 7 * (n % 3)  # some turns cross a 32-message leaf
            for k in range(calls):
                call = ToolCall(id=f"c{n}_{k}", name="sh", arguments={"k": k}, index=k)
                add(Category.TOOL_CALL, f"call{n}_{k}", turn_id=turn, tool_call=call)
                if n % 2:  # async: each result right after its call (out of phase order)
                    add(Category.TOOL_RESULT, f"r{n}_{k}", turn_id=turn, sender="sh",
                        tool_call_id=f"c{n}_{k}", content="ok")  # fmt: skip
            if n % 2 == 0:
                for k in range(calls):
                    add(Category.TOOL_RESULT, f"r{n}_{k}", turn_id=turn, sender="sh",
                        tool_call_id=f"c{n}_{k}", content="ok")  # fmt: skip
            if n == 3:
                add(Category.NOTIFICATION, f"note{n}", content="outside any turn")
            add(Category.REPLY, f"a{n}", turn_id=turn, content=f"a{n}")
            if n == 5:
                add(Category.USER_QUESTION, f"wait{n}", sender="U", content="queued")
            emit(TurnEnded, turn_id=turn, outcome=TurnOutcome.PROCESSED)
            assert same_walks(session.state) > n
        add(Category.USER_QUESTION, "last", sender="U", content="q")
        assert same_walks(session.state) > 8

    def test_the_benchmark_session(self) -> None:
        """The benchmark's session (turns of ten, the last one running) at a few sizes."""
        for size in (10, 40, 330):
            same_walks(build_bench(size))


def build_bench(messages: int) -> SessionState:
    """``benchmarks/bench_views.build``: turns of a question, a thought, three calls, three
    results, a notification and a reply; the last turn runs on."""
    session = Building("b")
    emit, add = session.emit, session.add

    turns = messages // 10
    for n in range(turns):
        turn = f"t{n}"
        add(Category.USER_QUESTION, f"u{n}", sender="Chii", content=f"question {n}")
        emit(TurnStarted, turn_id=turn)
        add(Category.THOUGHT, f"th{n}", turn_id=turn, content="thinking")
        for k in range(3):
            call = ToolCall(id=f"call_{n}_{k}", name="sh", arguments={"command": "ls"}, index=k)
            add(Category.TOOL_CALL, f"c{n}_{k}", turn_id=turn, tool_call=call)
        for k in range(3):
            add(Category.TOOL_RESULT, f"r{n}_{k}", turn_id=turn, sender="sh",
                tool_call_id=f"call_{n}_{k}", content="file.txt")  # fmt: skip
        add(Category.NOTIFICATION, f"n{n}", turn_id=turn, content="progress")
        add(Category.REPLY, f"a{n}", turn_id=turn, content=f"answer {n}")
        if n < turns - 1:
            emit(TurnEnded, turn_id=turn, outcome=TurnOutcome.PROCESSED)
    return session.state


class TestCanonical:
    @settings(max_examples=300)
    @given(json_values(max_leaves=20))
    def test_equals_the_reference(self, value: object) -> None:
        """``canonical`` of a frozen value is the plain sorted thaw, key order included."""
        frozen = freeze(value)
        fast = canonical(frozen)
        expected = reference_canonical(frozen)
        assert fast == expected
        assert json.dumps(fast) == json.dumps(expected)  # same key order at every level

    @settings(max_examples=300)
    @given(
        st.dictionaries(st.text(max_size=3) | st.integers(-40, 40), st.integers(), max_size=40),
        st.lists(st.text(max_size=3) | st.integers(-40, 40), max_size=10),
    )
    def test_map_items_equal_iteritems(self, items: dict[Any, int], removed: list[Any]) -> None:
        """``map_items`` (read from the buckets) gives ``iteritems``'s items in its order, for
        maps grown, shrunk and colliding (small int keys share buckets), and for a map
        subclass (which takes ``iteritems``)."""
        frozen = pmap(items).discard(removed[0]) if removed else pmap(items)
        for key in removed[1:]:
            frozen = frozen.discard(key)
        assert map_items(frozen) == [*frozen.iteritems()]
        assert map_items(_SubMap(frozen)) == [*frozen.iteritems()]  # type: ignore[arg-type]

    @settings(max_examples=300)
    @given(
        st.dictionaries(st.text(max_size=8), json_values(), max_size=5)
        | st.dictionaries(st.text(max_size=8), st.text(max_size=12), max_size=4)
    )
    def test_arguments_json_equals_dumps(self, arguments: dict[str, Any]) -> None:
        """``arguments_json`` is ``json.dumps`` of the sorted arguments, compact, non-ASCII
        kept (string-valued maps take a fast path; escapes and non-BMP text included)."""
        frozen = freeze(arguments)
        expected = json.dumps(
            reference_canonical(frozen), ensure_ascii=False, separators=(",", ":")
        )
        assert arguments_json(frozen) == expected  # type: ignore[arg-type]


def reference_runs(messages: Sequence[ViewMessage]) -> list[tuple[ViewRole, list[ViewMessage]]]:
    """Consecutive view messages of one role (how the bodies were first spelled)."""
    runs: list[tuple[ViewRole, list[ViewMessage]]] = []
    for message in messages:
        if runs and runs[-1][0] is message.role:
            runs[-1][1].append(message)
        else:
            runs.append((message.role, [message]))
    return runs


def reference_texts(parts: Sequence[object]) -> str:
    """The model text of ``parts`` as the OpenAI body first joined it: text that followed
    text as it was, text a call or a thought came between by a blank line."""
    out: list[str] = []
    previous_text = False
    for part in parts:
        if isinstance(part, TextPart):
            if part.text.strip():
                if out:
                    out.append("" if previous_text else "\n\n")
                out.append(part.text)
            previous_text = True
        else:
            previous_text = False
    return "".join(out)


def reference_openai_assistant(run: list[ViewMessage]) -> dict[str, Any] | None:
    """One OpenAI assistant entry as first spelled: the texts, then the calls, in two passes."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for message in run:
        text = reference_texts(message.parts)
        if text:
            texts.append(text)
        for part in message.parts:
            if isinstance(part, ToolUsePart):
                arguments = json.dumps(
                    canonical(part.arguments), ensure_ascii=False, separators=(",", ":")
                )
                function = {"name": part.name, "arguments": arguments}
                calls.append({"id": part.call_id, "type": "function", "function": function})
    if not texts and not calls:
        return None
    entry: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts) if texts else None}
    if calls:
        entry["tool_calls"] = calls
    return entry


def reference_openai(messages: Sequence[ViewMessage]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for role, run in reference_runs(messages):
        if role is ViewRole.ASSISTANT:
            entry = reference_openai_assistant(run)
            if entry is not None:
                out.append(entry)
        elif role is ViewRole.TOOL:
            for message in run:
                result = message.parts[0]
                assert isinstance(result, ToolResultPart)
                out.append({"role": "tool", "tool_call_id": result.call_id, "content": result.text})
        else:
            out.extend(_openai_user(message) for message in run)
    return out


def reference_anthropic(messages: Sequence[ViewMessage]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for role, run in reference_runs(messages):
        if role is ViewRole.ASSISTANT:
            _merge(out, "assistant", "content", _anthropic_assistant(run))
        else:
            _merge(out, "user", "content", _anthropic_user(run))
    return out


def reference_gemini_model(run: list[ViewMessage]) -> list[dict[str, Any]]:
    """One Gemini model content's parts as first spelled (a part's kind tested twice)."""
    parts: list[dict[str, Any]] = []
    for message in run:
        for part in message.parts:
            made: dict[str, Any] | None = None
            signed = (
                isinstance(part, ReasoningPart | TextPart)
                and part.provider == "gemini"
                and part.signature is not None
            )
            if isinstance(part, ReasoningPart):
                if part.text.strip() or signed:
                    made = {"text": part.text, "thought": True}
            elif isinstance(part, TextPart):
                if part.text.strip() or signed:
                    made = {"text": part.text}
            elif isinstance(part, ToolUsePart):
                made = {"function_call": {"name": part.name, "args": canonical(part.arguments)}}
            if made is None:
                continue
            assert isinstance(part, ReasoningPart | TextPart | ToolUsePart)
            signature = _gemini_signature(part)
            if signature is not None:
                made["thought_signature"] = signature
            elif "text" in made and not made["text"].strip():
                continue
            parts.append(made)
    if all(p.get("thought") for p in parts):
        return []
    return parts


def reference_gemini(messages: Sequence[ViewMessage]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for role, run in reference_runs(messages):
        if role is ViewRole.ASSISTANT:
            _merge(out, "model", "parts", reference_gemini_model(run))
        else:
            _merge(out, "user", "parts", _gemini_user(run))
    return out


class TestProviderBodies:
    @settings(max_examples=60, deadline=None)
    @given(timelines(rich=True), st.integers(0, 12))
    def test_equal_the_run_by_run_spelling(self, timeline: Timeline, start: int) -> None:
        """Each provider body of every state's view (and of any tail of it, which may start
        with any role) equals the spelling run by run, merged."""
        for state in timeline.states():
            messages = clean_history(state, artifacts=ARTIFACTS).messages[start:]
            assert _openai_body(messages) == reference_openai(messages)
            assert _anthropic_body(messages) == reference_anthropic(messages)
            assert _gemini_body(messages) == reference_gemini(messages)


_KEYS = st.text(st.characters(exclude_categories=["Cs"]), max_size=3)
_TEXTS = st.sampled_from(["", " ", "\n", "a", "b\n", " c ", "é"])
_PROVIDERS = st.sampled_from([None, "gemini", "anthropic"])
_SIGNATURES = st.sampled_from([None, "", "c2lnbg==", "not base64!"])
_ASSISTANT_PARTS = st.one_of(  # storable text only: no lone surrogates
    st.builds(TextPart, text=_TEXTS, provider=_PROVIDERS, signature=_SIGNATURES),
    st.builds(ReasoningPart, text=_TEXTS, provider=_PROVIDERS, signature=_SIGNATURES),
    st.builds(
        ToolUsePart,
        provider=_PROVIDERS,
        signature=_SIGNATURES,
        call_id=st.text(max_size=4),
        name=st.text(max_size=4),
        arguments=st.dictionaries(_KEYS, _KEYS | st.integers(-9, 9) | st.none(), max_size=3).map(
            freeze
        ),
    ),
)


class TestOpenAIAssistant:
    @given(st.lists(st.lists(_ASSISTANT_PARTS, min_size=1, max_size=6), min_size=1, max_size=3))
    def test_equals_the_two_pass_spelling(self, runs: list[list[Any]]) -> None:
        """One pass over the parts (texts and calls together) spells a run of assistant
        messages as the two passes did: texts joined as before, calls in order."""
        run = [ViewMessage(role=ViewRole.ASSISTANT, parts=tuple(parts)) for parts in runs]
        assert _openai_assistant(run) == reference_openai_assistant(run)


class TestGeminiModel:
    @given(st.lists(st.lists(_ASSISTANT_PARTS, min_size=1, max_size=6), min_size=1, max_size=3))
    def test_equals_the_first_spelling(self, runs: list[list[Any]]) -> None:
        """A model content's parts, each part's kind tested once, are those first spelled:
        blank parts without a valid Gemini signature left out, signatures as bytes, thoughts
        never alone."""
        run = [ViewMessage(role=ViewRole.ASSISTANT, parts=tuple(parts)) for parts in runs]
        assert _gemini_model(run) == reference_gemini_model(run)


class TestBlank:
    def test_isspace_is_a_blank_strip(self) -> None:
        """The views test blank text as ``not text or text.isspace()`` (no copy of the text)
        where they tested ``not text.strip()``: the two agree on every code point, hence on
        every string (``strip()`` removes exactly the characters ``isspace()`` accepts)."""
        assert all((not c.strip()) == c.isspace() for c in map(chr, range(0x110000)))

    @given(st.text())
    def test_on_any_text(self, text: str) -> None:
        """The two tests agree on any text."""
        assert (not text.strip()) == (not text or text.isspace())


def same_value(fast: object, general: object) -> None:
    """Equal, of one type, with the same hash and repr: the one value, however built."""
    assert type(fast) is type(general)
    assert fast == general
    assert hash(fast) == hash(general)
    assert repr(fast) == repr(general)


_ids = st.text(max_size=6)
_maybe = st.none() | _ids


class TestTrustedConstructors:
    @given(st.text(max_size=20), _ids, _ids, st.booleans(), st.booleans(), st.booleans())
    def test_parts_equal_their_constructors(
        self, text: str, call_id: str, name: str, error: bool, synthesized: bool, cut: bool
    ) -> None:
        """Each trusted part constructor gives the value the class's own __init__ gives."""
        same_value(trusted_text(text), TextPart(text=text))
        same_value(trusted_reasoning(text), ReasoningPart(text=text))
        arguments = freeze({"q": text})
        same_value(
            trusted_tool_use(call_id, name, arguments),  # type: ignore[arg-type]
            ToolUsePart(call_id=call_id, name=name, arguments=arguments),  # type: ignore[arg-type]
        )
        same_value(
            trusted_tool_result(call_id, name, text, error, synthesized, cut),
            ToolResultPart(
                call_id=call_id, name=name, text=text, is_error=error, synthesized=synthesized,
                excerpted=cut,
            ),
        )  # fmt: skip

    @given(
        _maybe,
        st.lists(st.sampled_from(Category), max_size=3),
        st.booleans(),
        st.booleans(),
    )
    def test_block_equals_its_constructor(
        self, turn_id: str | None, categories: list[Category], stored_order: bool, bare: bool
    ) -> None:
        """A block the walk builds without ``__init__`` is the constructor's value."""
        messages = tuple(
            new_message(
                Category.USER_QUESTION, id=f"u{n}", session_id="s", created_at=T0, sender="U"
            )
            for n in range(len(categories))
        )
        fast = trusted_block(turn_id, messages, tuple(categories), stored_order, bare)
        general = Block(
            turn_id=turn_id, messages=messages, categories=tuple(categories),
            stored_order=stored_order, bare=bare,
        )  # fmt: skip
        same_value(fast, general)
        assert fast.bare is general.bare is bare

    @given(
        st.sampled_from(ViewRole),
        st.lists(st.text(max_size=10), min_size=1, max_size=3),
        _maybe,
        st.lists(_ids, max_size=3),
        _maybe,
        st.none() | st.integers(0, 10**6),
    )
    def test_view_message_equals_its_constructor(
        self,
        role: ViewRole,
        texts: list[str],
        source_id: str | None,
        source_ids: list[str],
        turn_id: str | None,
        event_seq: int | None,
    ) -> None:
        """A trusted view message is the constructor's value, and evolves like it."""
        parts = tuple(TextPart(text=t) for t in texts)
        fast = trusted_view_message(role, parts, source_id, tuple(source_ids), turn_id, event_seq)
        general = ViewMessage(
            role=role, parts=parts, source_id=source_id, source_ids=tuple(source_ids),
            turn_id=turn_id, event_seq=event_seq,
        )  # fmt: skip
        same_value(fast, general)
        assert attrs.evolve(fast, turn_id="x") == attrs.evolve(general, turn_id="x")
