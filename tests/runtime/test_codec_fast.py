"""The codec's fast paths (messages, turns, events, states, plain values) give what cattrs
gives."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import attrs
import orjson
import pytest
from cattrs.gen import make_dict_unstructure_fn
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import (
    EVENT_TYPES,
    Event,
    Message,
    MessageAdded,
    Status,
    Timeline,
    ToolCall,
    Turn,
    TurnOutcome,
    to_data,
    to_json,
)
from runtime._converter import _converter, unstructure
from runtime._fast_data import FAST_DATA, _event_plan, message_data, turn_data
from runtime.testing import events, messages, timelines

_GENERAL_MESSAGE = make_dict_unstructure_fn(Message, _converter, _cattrs_omit_if_default=False)
_GENERAL_TURN = make_dict_unstructure_fn(Turn, _converter, _cattrs_omit_if_default=False)
"""The general path: cattrs' hooks, as the codec registers them."""


def _typed(data: dict[str, Any]) -> list[tuple[str, type, object]]:
    """Each key with its value and the value's type, in order (``==`` alone misses types)."""
    return [(name, type(value), value) for name, value in data.items()]


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

    def test_plain_kinds_take_the_fast_path(self) -> None:
        """The kinds the show and timeline commands meet most are encoded without cattrs."""
        plain = {kind for kind, cls in EVENT_TYPES.items() if _event_plan(cls) is not None}
        assert {"message_added", "status_changed", "turn_started", "turn_ended"} <= plain

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
