"""The snapshot builders make ordinary frozen values, equal to those attrs' __init__ makes."""

from __future__ import annotations

import weakref
from typing import Any

import attrs
import pytest
from hypothesis import given, settings

from runtime import Message, ToolCall, Turn
from runtime.store import _fast
from runtime.store._build import slot_builder
from runtime.testing import messages, timelines


def field_values(value: Any) -> list[Any]:
    return [getattr(value, field.name) for field in attrs.fields(type(value))]


@attrs.frozen
class Final:
    """A frozen class that refuses subclasses (so the fast builder cannot be made)."""

    x: int
    y: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        raise TypeError("Final cannot be subclassed")


class TestSlotBuilder:
    def test_the_fast_builder_is_used(self) -> None:
        """On this Python the decoders build by class assignment (or the speed-up is lost)."""
        for build in (_fast._new_message, _fast._new_tool_call, _fast._new_turn):
            assert build.__name__ == "build_by_class_assignment"

    @settings(max_examples=100, deadline=None)
    @given(messages())
    def test_messages(self, message: Message) -> None:
        """A built message is a Message, equal and hashing equal to the one __init__ made."""
        for fast in (True, False):
            built = slot_builder(Message, by_class_assignment=fast)(*field_values(message))
            assert type(built) is Message
            assert built == message
            assert hash(built) == hash(message)
            assert repr(built) == repr(message)

    @settings(max_examples=30, deadline=None)
    @given(timelines(max_steps=30))
    def test_turns(self, timeline: Any) -> None:
        """A built turn is a Turn equal to the one __init__ made."""
        for turn in timeline.head.turn_list():
            built = slot_builder(Turn)(*field_values(turn))
            assert type(built) is Turn
            assert built == turn
            assert hash(built) == hash(turn)

    @pytest.mark.parametrize("fast", [True, False])
    def test_built_values_stay_frozen(self, fast: bool) -> None:
        """A built value refuses changes and deletions, and evolves like any other."""
        call = slot_builder(ToolCall, by_class_assignment=fast)("call_1", "sh", _fast._EMPTY_MAP, 0)
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            call.name = "rm"  # type: ignore[misc]
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            del call.name  # type: ignore[misc]
        assert attrs.evolve(call, name="rm") == ToolCall(id="call_1", name="rm")
        assert weakref.ref(call)() is call

    def test_falls_back_to_descriptors(self) -> None:
        """A class that cannot be built by class assignment is built through its descriptors."""
        build = slot_builder(Final)
        assert build.__name__ == "build_by_descriptors"
        assert build(1, "a") == Final(1, "a")
