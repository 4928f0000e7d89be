"""Stored model call bodies decode by their constructor as the codec decodes them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from runtime import AuditStatus, DecodeError, Event, ModelCallFinished, ModelCallStarted, Usage
from runtime._audit import AuditCall
from runtime._codec import to_json
from runtime._retry import ModelRetry
from runtime.store._compact import decode_body, encode_body

_OFFSETS = st.sampled_from([UTC, timezone(timedelta(hours=2)), timezone(timedelta(hours=-7))])
_TEXT = st.text(max_size=6)
_NAME = st.text(min_size=1, max_size=6)
_ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1), st.floats(allow_nan=False),
    st.text(max_size=5), st.sampled_from(["completed", "failed", "running", ""]),
    st.dictionaries(st.text(max_size=3), st.integers(-(2**63), 2**64 - 1), max_size=2),
    st.lists(st.integers(-(2**63), 2**63 - 1), max_size=2),
    st.lists(st.dictionaries(st.sampled_from(["id", "name", "arguments_json", "x"]),
                             st.text(max_size=3) | st.integers(0, 3)), max_size=2),
    st.dictionaries(st.sampled_from(["input_tokens", "output_tokens", "x"]),
                    st.integers(-2, 2**64) | st.text(max_size=2) | st.floats(0, 3), max_size=2),
)  # fmt: skip

_STARTS = st.builds(
    ModelCallStarted,
    session_id=st.just("s"),
    seq=st.integers(1, 10**9),
    at=st.datetimes(min_value=datetime(2000, 1, 2), timezones=_OFFSETS),
    operation_id=_NAME,
    source_key=_NAME,
    turn_id=_NAME,
    sequence=st.integers(1, 2**63 - 1),
    role=_NAME,
    model=st.none() | _TEXT,
    started_at=st.none() | st.just(datetime(2000, 1, 1, tzinfo=UTC)),
)
_FINISHES = st.builds(
    ModelCallFinished,
    session_id=st.just("s"),
    seq=st.integers(1, 10**9),
    at=st.datetimes(timezones=_OFFSETS),
    operation_id=_NAME,
    status=st.sampled_from([AuditStatus.COMPLETED, AuditStatus.FAILED]),
    duration_ms=st.none() | st.integers(0, 10**6) | st.floats(min_value=0, max_value=1e9),
    usage=st.none()
    | st.builds(Usage, input_tokens=st.integers(0, 2**63 - 1), output_tokens=st.integers(0, 9)),
    content=_TEXT,
    reasoning=_TEXT,
    tool_calls=st.lists(
        st.builds(AuditCall, id=_NAME, name=_NAME, arguments_json=_TEXT), max_size=2
    ),
    stop_reason=st.none() | _TEXT,
    error=st.none() | _TEXT,
    source_key=st.none() | _NAME,
    response_model=st.none() | _TEXT,
    retries=st.lists(st.builds(ModelRetry, attempt=st.integers(1, 3)), max_size=1),
    cost_usd=st.none() | st.integers(0, 3) | st.floats(min_value=0, max_value=10),
)
_STARTED_FIELDS = ["operation_id", "source_key", "turn_id", "sequence", "role", "model",
                   "started_at", "request", "x"]  # fmt: skip
_FINISHED_FIELDS = ["operation_id", "status", "duration_ms", "usage", "content", "reasoning",
                    "tool_calls", "stop_reason", "error", "source_key", "response_model",
                    "retries", "cost_usd", "x"]  # fmt: skip


def _full(event: Event, data: dict[str, Any]) -> dict[str, Any]:
    """The codec's full form of a stored body."""
    full = {"kind": event.kind, "session_id": event.session_id, "seq": event.seq, **data}
    at = data.get("at")
    if type(at) is int:
        full["at"] = (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=at)).isoformat()
    return full


class TestModelCallFastPath:
    @settings(max_examples=500, deadline=None)
    @example(  # a sequence beyond 64 bits: the codec refuses it, so must the constructor
        event=ModelCallStarted(session_id="s", seq=1, at=datetime(2026, 1, 1, tzinfo=UTC),
                               operation_id="o", source_key="k", turn_id="t", sequence=1),
        field="sequence", value=2**64 - 1, change=True,
    )  # fmt: skip
    @given(
        event=_STARTS | _FINISHES,
        field=st.sampled_from(sorted({*_STARTED_FIELDS, *_FINISHED_FIELDS})),
        value=_ODD_VALUES,
        change=st.booleans(),
    )
    def test_agrees_with_the_codec(
        self, event: Event, field: str, value: object, change: bool
    ) -> None:
        """A model call's body, as stored or with one field changed to any JSON value, decodes
        (by the constructor when its fields are plain) as the codec decodes its full form: the
        same event, or a DecodeError from both."""
        from runtime._converter import structure

        data = orjson.loads(encode_body(event))
        if change:
            data[field] = value
        body = orjson.dumps(data)
        data = orjson.loads(body)  # what is stored: JSON has no inf (orjson writes null)
        try:
            expected: Event | None = structure(_full(event, data), Event)
        except DecodeError:
            expected = None
        if expected is None:
            with pytest.raises(DecodeError):
                decode_body(event.kind, event.session_id, event.seq, body)
            return
        got = decode_body(event.kind, event.session_id, event.seq, body)
        assert got == expected
        assert to_json(got) == to_json(expected)

    def test_the_calls_the_runtime_stores_take_it(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A call's start and its end with usage and tool calls do not reach the codec (whose
        general path imports cattrs)."""
        from runtime.store import _compact

        def refuse(data: object, cls: object) -> object:
            raise AssertionError(f"decoded by the codec: {data!r}")

        at = datetime(2026, 1, 1, tzinfo=UTC)
        events: list[Event] = [
            ModelCallStarted(session_id="s", seq=3, at=at, operation_id="run_1",
                             source_key="t#0", turn_id="t", sequence=1, model="scripted"),
            ModelCallFinished(session_id="s", seq=4, at=at, operation_id="run_1",
                              status=AuditStatus.COMPLETED, duration_ms=3.5,
                              usage=Usage(output_tokens=31), reasoning="so",
                              tool_calls=[AuditCall(id="c", name="run", arguments_json="{}")],
                              stop_reason="tool_use", source_key="t#0", cost_usd=0.25),
        ]  # fmt: skip
        monkeypatch.setattr(_compact, "from_data", refuse)
        for event in events:
            assert decode_body(event.kind, "s", event.seq, encode_body(event)) == event
