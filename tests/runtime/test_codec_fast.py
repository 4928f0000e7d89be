"""The codec's fast paths (messages, turns, events, states, plain values) give what cattrs
gives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import attrs
import orjson
import pytest
from cattrs.gen import make_dict_unstructure_fn
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import (
    EVENT_TYPES,
    AuditStatus,
    Event,
    Message,
    MessageAdded,
    ModelCallFinished,
    ModelCallStarted,
    Status,
    Timeline,
    ToolCall,
    Turn,
    TurnOutcome,
    Usage,
    to_data,
    to_json,
)
from runtime._audit import AuditCall, AuditRow
from runtime._converter import _converter, unstructure
from runtime._fast_data import (
    FAST_DATA,
    _event_plan,
    audit_data,
    event_data,
    message_data,
    turn_data,
)
from runtime._retry import ModelRetry
from runtime.testing import events, messages, timelines

_GENERAL_MESSAGE = make_dict_unstructure_fn(Message, _converter, _cattrs_omit_if_default=False)
_GENERAL_TURN = make_dict_unstructure_fn(Turn, _converter, _cattrs_omit_if_default=False)
"""The general path: cattrs' hooks, as the codec registers them."""


_TIMES = st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(hours=-7))]))
_NAME = st.text(min_size=1, max_size=6)
_TEXT = st.text(max_size=6)
_USAGE = st.none() | st.builds(
    Usage, **{f.name: st.integers(0, 2**63 - 1) for f in attrs.fields(Usage)}
)
_AUDIT_CALLS = st.lists(
    st.builds(AuditCall, id=_NAME, name=_NAME, arguments_json=_TEXT), max_size=2
)
_RETRIES = st.lists(st.builds(ModelRetry, attempt=st.integers(1, 3)), max_size=1)
_COST = st.none() | st.integers(0, 3) | st.floats(min_value=0, max_value=10)
_MODEL_CALL_FIELDS: dict[str, Any] = {
    "operation_id": _NAME, "source_key": _NAME, "turn_id": _NAME, "role": _NAME,
    "sequence": st.integers(1, 2**63 - 1), "model": st.none() | _TEXT,
    "status": st.sampled_from([AuditStatus.COMPLETED, AuditStatus.FAILED]),
    "duration_ms": st.none() | st.floats(min_value=0, max_value=1e9), "usage": _USAGE,
    "content": _TEXT, "reasoning": _TEXT, "tool_calls": _AUDIT_CALLS,
    "stop_reason": st.none() | _TEXT, "error": st.none() | _TEXT,
    "response_model": st.none() | _TEXT, "retries": _RETRIES, "cost_usd": _COST,
}  # fmt: skip
"""Values of the fields of a model call's events and audit row (no request record: the
runtime's scripted and provider models store none; rows with one go through cattrs)."""


_STARTED_ONLY = {"turn_id", "sequence", "role", "model", "source_key"}
"""Fields the end of a call has not (``source_key``: it has, optional)."""


def _model_call_events() -> st.SearchStrategy[Event]:
    """Model calls' starts and ends with any plain fields (``events()`` draws none)."""
    common = {"session_id": st.just("s"), "seq": st.integers(1, 10**9), "at": _TIMES}
    fields = {name: _MODEL_CALL_FIELDS[name] for name in ("operation_id", "source_key",
              "turn_id", "sequence", "role", "model")}  # fmt: skip
    starts = st.builds(ModelCallStarted, **common, **fields, started_at=st.none())
    ends = st.builds(
        ModelCallFinished,
        **common,
        **{f.name: _MODEL_CALL_FIELDS[f.name] for f in attrs.fields(ModelCallFinished)
           if f.name in _MODEL_CALL_FIELDS.keys() - _STARTED_ONLY},
        source_key=st.none() | _NAME,
    )  # fmt: skip
    return starts | ends


_AUDIT_ROWS = st.builds(
    AuditRow,
    **{f.name: _MODEL_CALL_FIELDS[f.name] for f in attrs.fields(AuditRow)
       if f.name in _MODEL_CALL_FIELDS and f.name != "status"},
    status=st.sampled_from(list(AuditStatus)),
    started_at=_TIMES,
    started_seq=st.integers(0, 2**63 - 1),
    finished_at=st.none() | _TIMES,
    ended_seq=st.none() | st.integers(0, 2**63 - 1),
)  # fmt: skip


def _typed(data: dict[str, Any]) -> list[tuple[str, type, object]]:
    """Each key with its value and the value's type, in order (``==`` alone misses types)."""
    return [(name, type(value), value) for name, value in data.items()]


def _items(value: Any) -> list[dict[str, Any]]:
    """A usage (one dict) or tool calls (a list of dicts) as a list; none: empty."""
    return [] if value is None else [value] if isinstance(value, dict) else list(value)


class TestFastData:
    def test_fast_path_is_on(self) -> None:
        """The classes' fields are the ones the fast path knows (else it turns itself off)."""
        assert FAST_DATA
        assert [f.name for f in attrs.fields(ToolCall)] == ["id", "name", "arguments", "index"]

    @settings(max_examples=300, deadline=None)
    @given(message=messages(), plain=st.booleans())
    def test_messages_as_cattrs(self, message: Message, plain: bool) -> None:
        """For any message: the same keys in the same order, equal values of the same types,
        the same JSON (``plain``: without attachments and elements, so that it is fast)."""
        if plain:
            message = attrs.evolve(message, attachments=(), browser_elements=())
        fast = message_data(message)
        general = _GENERAL_MESSAGE(message)
        if fast is None:
            assert message.attachments or message.browser_elements
            return
        assert _typed(fast) == _typed(general)
        assert _typed(fast["tool_call"] or {}) == _typed(general["tool_call"] or {})
        assert orjson.dumps(fast) == orjson.dumps(general)

    @settings(max_examples=100, deadline=None)
    @given(timeline=timelines())
    def test_states_as_cattrs(self, timeline: Timeline) -> None:
        """Every state's messages and turns come out as cattrs makes them; its JSON too."""
        for state in (timeline.base, *(after for _, after in timeline.entries)):
            data = to_data(state)
            assert [_typed(m) for m in data["messages"]] == [
                _typed(_GENERAL_MESSAGE(m)) for m in state.messages
            ]
            turns = state.turn_list()
            assert [_typed(t) for t in data["turns"]] == [_typed(_GENERAL_TURN(t)) for t in turns]
            for turn in turns:
                fast = turn_data(turn)
                assert fast is not None
                assert orjson.dumps(fast) == orjson.dumps(_GENERAL_TURN(turn))
            assert to_json(state) == orjson.dumps(data)


class TestFastEvents:
    @settings(max_examples=400, deadline=None)
    @given(event=events(), plain=st.booleans())
    def test_events_as_cattrs(self, event: Event, plain: bool) -> None:
        """For any event: ``to_data`` (from the slots when its fields are plain) gives the
        keys, order, values and types cattrs gives, and the same JSON."""
        if plain and isinstance(event, MessageAdded):
            message = attrs.evolve(event.message, attachments=(), browser_elements=())
            event = attrs.evolve(event, message=message)
        fast = to_data(event)
        general = unstructure(event)
        assert _typed(fast) == _typed(general)
        assert orjson.dumps(fast) == orjson.dumps(general)

    @settings(max_examples=300, deadline=None)
    @given(event=_model_call_events())
    def test_model_calls_as_cattrs(self, event: Event) -> None:
        """A model call's start and end: ``to_data`` from the slots (cattrs for retries) gives
        what cattrs gives, its usage and tool calls included."""
        fast = event_data(event)
        general = unstructure(event)
        if fast is None:
            assert isinstance(event, ModelCallFinished)
            assert event.retries
            return
        assert _typed(fast) == _typed(general)
        for name in ("usage", "tool_calls"):
            for got, wanted in zip(_items(fast.get(name)), _items(general.get(name)), strict=True):
                assert _typed(got) == _typed(wanted)
        assert orjson.dumps(fast) == orjson.dumps(general)

    @settings(max_examples=300, deadline=None)
    @given(row=_AUDIT_ROWS)
    def test_audit_rows_as_cattrs(self, row: AuditRow) -> None:
        """A state's audit row: from its slots (cattrs for retries) as cattrs gives it."""
        fast = audit_data(row)
        general = unstructure(row)
        if fast is None:
            assert row.retries
            return
        assert _typed(fast) == _typed(general)
        for name in ("usage", "tool_calls"):
            for got, wanted in zip(_items(fast[name]), _items(general[name]), strict=True):
                assert _typed(got) == _typed(wanted)
        assert orjson.dumps(fast) == orjson.dumps(general)

    def test_plain_kinds_take_the_fast_path(self) -> None:
        """The kinds the show and timeline commands meet most are encoded without cattrs."""
        plain = {kind for kind, cls in EVENT_TYPES.items() if _event_plan(cls) is not None}
        assert {"message_added", "status_changed", "turn_started", "turn_ended"} <= plain
        assert {"model_call_started", "model_call_finished"} <= plain  # every real session's

    @settings(max_examples=100, deadline=None)
    @given(timeline=timelines(rich=True))
    def test_states_and_their_events_as_cattrs(self, timeline: Timeline) -> None:
        """Every state and event of a session (audit rows too): to_data as cattrs."""
        for event, state in timeline.entries:
            assert orjson.dumps(to_data(event)) == orjson.dumps(unstructure(event))
            assert _typed(to_data(state)) == _typed(unstructure(state))
            assert orjson.dumps(to_data(state)) == orjson.dumps(unstructure(state))

    @pytest.mark.parametrize(
        "value", [None, True, 0, -(2**63), 1.5, "", "x", Status.PROCESSED, TurnOutcome.ERROR]
    )
    def test_plain_values_as_cattrs(self, value: object) -> None:
        assert type(to_data(value)) is type(unstructure(value))
        assert to_data(value) == unstructure(value)

    def test_times_as_cattrs(self) -> None:
        at = datetime(2026, 5, 27, 12, 50, 9, 5, tzinfo=timezone(timedelta(hours=2)))
        assert to_data(at) == unstructure(at) == at.isoformat()
