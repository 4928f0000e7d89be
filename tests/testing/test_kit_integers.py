"""Integers the kit draws for tool arguments stay within 64 bits.

A JSON store (orjson) cannot write a larger one, so a drawn argument like
``{"n": 2**64}`` broke a run in the store instead of testing the tool.
"""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime import ToolSpec
from runtime.testing import arguments_for, invalid_arguments_for, tool_uses, turn_plans

INT64 = (-(2**63), 2**63 - 1)
MANY = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))

SCHEMA = {
    "type": "object",
    "properties": {
        "n": {"type": "integer"},
        "at_least": {"type": "integer", "minimum": 5},
        "below": {"type": "integer", "exclusiveMaximum": -5},
        "many": {"type": "array", "items": {"type": "integer"}},
        "either": {"type": ["integer", "null"]},
    },
    "required": ["n", "at_least", "below", "many", "either"],
}


def integers_in(value: Any) -> list[int]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, dict):
        return [i for v in value.values() for i in integers_in(v)]
    if isinstance(value, list | tuple):
        return [i for v in value for i in integers_in(v)]
    return []


def assert_64_bit(value: Any) -> None:
    for i in integers_in(value):
        assert INT64[0] <= i <= INT64[1], f"{i} does not fit in 64 bits"
    orjson.dumps(value)  # what the JSON stores do with arguments


class TestIntegersFit:
    @MANY
    @given(arguments_for(SCHEMA))
    def test_arguments_for(self, arguments: dict[str, Any]) -> None:
        """Valid arguments: every integer fits in 64 bits, bounds included."""
        assert_64_bit(arguments)
        assert arguments["at_least"] >= 5
        assert arguments["below"] < -5

    @MANY
    @given(invalid_arguments_for(SCHEMA))
    def test_invalid_arguments_for(self, arguments: Any) -> None:
        """Invalid arguments (a bare integer among them) fit in 64 bits too."""
        assert_64_bit(arguments)

    @MANY
    @given(st.data())
    def test_tool_uses_and_plans(self, data: st.DataObject) -> None:
        """The arguments of drawn tool calls and turn plans fit."""
        spec = ToolSpec(name="count", description="Count.", parameters=SCHEMA)
        use = data.draw(tool_uses([spec]))
        assert_64_bit([arguments for _, arguments in use.calls])
        data.draw(turn_plans([spec]))

    @given(arguments_for({"type": "object", "properties": {"n": {"type": "integer",
           "minimum": 2**70}}, "required": ["n"]}))  # fmt: skip
    def test_a_schema_past_64_bits_is_followed(self, arguments: dict[str, Any]) -> None:
        """A schema that only allows larger integers still gets them (it asked)."""
        assert arguments["n"] >= 2**70
