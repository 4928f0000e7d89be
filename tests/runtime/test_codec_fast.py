"""The codec's fast path for a state's messages and turns gives what cattrs gives."""

from __future__ import annotations

from typing import Any

import attrs
import orjson
from cattrs.gen import make_dict_unstructure_fn
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import Message, Timeline, ToolCall, Turn, to_data, to_json
from runtime._codec import _converter
from runtime._fast_data import FAST_DATA, message_data, turn_data
from runtime.testing import messages, timelines

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
