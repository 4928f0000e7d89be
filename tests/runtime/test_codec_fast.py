"""The codec's fast path for a state's messages gives what cattrs gives."""

from __future__ import annotations

import attrs
import orjson
from cattrs.gen import make_dict_unstructure_fn
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import Message, Timeline, to_data, to_json
from runtime._codec import _FAST_MESSAGE_DATA, _converter, _message_data
from runtime.testing import messages, timelines

_GENERAL = make_dict_unstructure_fn(Message, _converter, _cattrs_omit_if_default=False)
"""The general path: cattrs' hook, as the codec registers it for ``Message``."""


def _typed(data: dict[str, object]) -> list[tuple[str, type, object]]:
    return [(name, type(value), value) for name, value in data.items()]


class TestMessageData:
    def test_fast_path_is_on(self) -> None:
        """``Message``'s fields are the ones the fast path knows (else it turns itself off)."""
        assert _FAST_MESSAGE_DATA
        assert attrs.fields(Message)  # the check above compares these names

    @settings(max_examples=300, deadline=None)
    @given(message=messages())
    def test_same_data_as_cattrs(self, message: Message) -> None:
        """For any message: the same keys in the same order, equal values of the same types."""
        fast = _message_data(message)
        general = _GENERAL(message)
        assert _typed(fast) == _typed(general)
        assert list(fast) == list(general)
        assert orjson.dumps(fast) == orjson.dumps(general)

    @settings(max_examples=300, deadline=None)
    @given(
        message=messages(),
        plain=st.booleans(),
    )
    def test_usual_messages_take_the_fast_path(self, message: Message, plain: bool) -> None:
        """A message without tool call, attachments, elements or metadata agrees too (the
        strategy's messages often have them: here they are taken away)."""
        if plain:
            message = attrs.evolve(message, metadata={})
            if message.tool_call is None:
                message = attrs.evolve(message, attachments=(), browser_elements=())
        assert _typed(_message_data(message)) == _typed(_GENERAL(message))

    @settings(max_examples=50, deadline=None)
    @given(timeline=timelines())
    def test_states_encode_as_before(self, timeline: Timeline) -> None:
        """A state's data lists each message as cattrs would, and its JSON is unchanged."""
        state = timeline.head
        data = to_data(state)
        assert [_typed(m) for m in data["messages"]] == [
            _typed(_GENERAL(m)) for m in state.messages
        ]
        assert to_json(state) == orjson.dumps(data)
