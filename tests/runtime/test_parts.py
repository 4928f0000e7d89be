"""Response parts: assembled from chunks, stored on messages, read back in the model's order."""

from __future__ import annotations

import pytest
from conftest import Session
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import (
    Assembly,
    CallSegment,
    Category,
    MessageFinish,
    MessageStart,
    ModelRetry,
    ReasoningDelta,
    ReasoningSegment,
    RequestSent,
    StreamAssembler,
    StreamError,
    TextDelta,
    TextSegment,
    ToolCallDelta,
    response_metadata,
)
from runtime._parts import join_texts, stored_parts


def assemble(*chunks: object) -> StreamAssembler:
    assembler = StreamAssembler(fallback_id="run_1")
    for chunk in chunks:
        assembler.feed(chunk)  # type: ignore[arg-type]
    return assembler


class TestAssembly:
    def test_parts_keep_the_models_order(self) -> None:
        """Thinking, text, a call, then more text: four parts in that order."""
        a = assemble(
            MessageStart(id="m1", model="claude-x", provider="anthropic"),
            ReasoningDelta(text="Think", part=0), ReasoningDelta(text="ing.", part=0),
            ReasoningDelta(signature="sig", part=0),
            TextDelta(text="Let me ", part=1), TextDelta(text="check.", part=1),
            ToolCallDelta(index=0, id="c1", name="lookup", arguments='{"q"'),
            ToolCallDelta(index=0, arguments=': 1}'),
            TextDelta(text="Done.", part=3),
            MessageFinish(stop_reason="tool_use"),
        )  # fmt: skip
        response = a.response()
        assert response.parts == (
            ReasoningSegment(text="Thinking.", signature="sig"),
            TextSegment(text="Let me check."),
            CallSegment(index=0),
            TextSegment(text="Done."),
        )
        assert response.text == "Let me check.\n\nDone."  # a call came between
        assert response.reasoning == "Thinking."
        assert (response.model, response.provider) == ("claude-x", "anthropic")

    def test_blocks_with_new_indexes_stay_apart(self) -> None:
        """Two thinking blocks, a redacted one: three reasoning parts, joined by blank lines."""
        a = assemble(
            ReasoningDelta(text="one", part=0), ReasoningDelta(signature="s0", part=0),
            ReasoningDelta(redacted=True, signature="data", part=1),
            ReasoningDelta(text="two", part=2), ReasoningDelta(signature="s2", part=2),
        )  # fmt: skip
        parts = a.parts()
        assert parts == (
            ReasoningSegment(text="one", signature="s0"),
            ReasoningSegment(text="", signature="data", redacted=True),
            ReasoningSegment(text="two", signature="s2"),
        )
        assert a.reasoning == "one\n\ntwo"

    def test_a_late_signature_joins_the_open_text(self) -> None:
        """Gemini's signature on a last, empty text part belongs to the text before it."""
        a = assemble(
            TextDelta(text="Sunny"), TextDelta(text="."), TextDelta(text="", signature="g")
        )
        assert a.parts() == (TextSegment(text="Sunny.", signature="g"),)

    def test_a_second_signature_starts_a_new_part(self) -> None:
        """Two signed parts are never merged (each signature stays on its own part)."""
        a = assemble(TextDelta(text="a", signature="1"), TextDelta(text="b", signature="2"))
        assert a.parts() == (
            TextSegment(text="a", signature="1"),
            TextSegment(text="b", signature="2"),
        )

    def test_request_and_retries_are_kept(self) -> None:
        """RequestSent and ModelRetry fold into the response, not into its text."""
        sent = RequestSent(provider="openai", model="m", payload_digest="sha256:x")
        retry = ModelRetry(attempt=1, status=429, error="429", delay=0.5)
        response = assemble(sent, retry, MessageStart(), TextDelta(text="hi")).response()
        assert response.request == sent
        assert response.retries == (retry,)
        assert response.provider == "openai"

    def test_assembly_is_persistent(self) -> None:
        """feed returns a new assembly; the old one is unchanged."""
        before = Assembly().feed(TextDelta(text="a"))
        after = before.feed(TextDelta(text="b"))
        assert (before.text, after.text) == ("a", "ab")

    def test_an_empty_piece_of_the_open_part_changes_nothing(self) -> None:
        """A keep-alive empty delta returns the same assembly."""
        a = Assembly().feed(TextDelta(text="a"))
        assert a.feed(TextDelta(text="")) is a

    def test_unknown_chunks_are_refused(self) -> None:
        """Anything else is a StreamError naming every chunk kind."""
        with pytest.raises(StreamError, match="RequestSent or ModelRetry chunks"):
            Assembly().feed("text")  # type: ignore[arg-type]


class TestMetadata:
    def test_a_plain_response_adds_only_its_keys(self) -> None:
        """Reasoning, text, then calls with no provider data: no model_parts written."""
        meta = response_metadata(
            (ReasoningSegment(text="r"), TextSegment(text="t"), CallSegment(index=0)),
            provider="openai", source_key="t1#0",
        )  # fmt: skip
        assert meta.thought == {"model_call": "t1#0", "model_provider": "openai"}
        assert meta.calls == {0: {"model_call": "t1#0", "model_provider": "openai"}}

    def test_provider_data_is_written(self) -> None:
        """Signatures, redaction and item ids are kept with each part's position."""
        meta = response_metadata(
            (
                ReasoningSegment(text="r", signature="s", item_id="rs_1"),
                ReasoningSegment(text="", signature="d", redacted=True),
                CallSegment(index=0, signature="g", item_id="fc_1"),
            ),
            provider="anthropic",
        )
        assert meta.thought["model_parts"] == [
            {"pos": 0, "chars": 1, "signature": "s", "item_id": "rs_1"},
            {"pos": 1, "chars": 0, "signature": "d", "redacted": True},
        ]
        assert meta.calls[0]["model_parts"] == [{"pos": 2, "signature": "g", "item_id": "fc_1"}]


texts = st.text(alphabet="ab \n", max_size=6)
segments = st.lists(
    st.one_of(
        st.builds(ReasoningSegment, text=texts, signature=st.none() | st.just("s")),
        st.builds(TextSegment, text=texts, signature=st.none() | st.just("g")),
    ),
    max_size=6,
)


@settings(max_examples=200, deadline=None)
@given(segments)
def test_stored_parts_read_back_what_was_written(parts: list[object]) -> None:
    """For any parts: the joined content and model_parts read back as the same parts."""
    session = Session()
    session.ask()
    session.start()
    meta = response_metadata(parts, provider="gemini", source_key="t1#0")  # type: ignore[arg-type]
    for category, kind, metadata in (
        (Category.THOUGHT, ReasoningSegment, meta.thought),
        (Category.REPLY, TextSegment, meta.text),
    ):
        mine = [(p, s) for p, s in enumerate(parts) if isinstance(s, kind)]
        if not mine:
            continue
        content = join_texts(
            [p for p, _ in mine], [s.text for _, s in mine], reasoning=kind is ReasoningSegment
        )  # type: ignore[attr-defined]
        message = session.message(
            category, f"m{category.name}", turn_id="t1", content=content, metadata=metadata
        )
        read = stored_parts(message, category)
        if "model_parts" in metadata:
            assert [(r.rank[0], r.text, r.signature) for r in read] == [
                (p, s.text, s.signature)
                for p, s in mine  # type: ignore[attr-defined]
            ]
        else:
            assert [r.text for r in read] == [content]


class TestDefensiveReading:
    @pytest.mark.parametrize(
        "parts",
        [
            [{"pos": 0, "chars": 99}],  # longer than the content
            [{"pos": -1, "chars": 1}],
            [{"chars": 1}],
            "not a list",
            [{"pos": 0, "chars": True}],
        ],
    )
    def test_metadata_that_does_not_add_up_is_one_plain_part(self, parts: object) -> None:
        """Hand-edited or foreign model_parts never break the view."""
        session = Session()
        message = session.message(
            Category.REPLY, "a1", content="hello", metadata={"model_parts": parts}
        )
        (read,) = stored_parts(message, Category.REPLY)
        assert read.text == "hello"
        assert read.signature is None
