"""The machine factories check their options when called, naming the option, what was
expected and what was given (not a TypeError deep inside the first example)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from actors import InvalidConfig
from actors.testing import lifecycle_machine
from actors.testing import simulation_machine as bridged_simulation_machine
from runtime import InvalidArgument
from runtime.testing import FakeTool, ToolBehaviour, simulation_machine


def word_count(text: str) -> int:
    """Count the words.

    Args:
        text: The text.
    """
    return len(text.split())


class TestSimulationMachineOptions:
    @pytest.mark.parametrize(
        ("options", "message"),
        [
            (
                {"sessions": "s1"},
                "simulation_machine() option 'sessions' must be a non-empty sequence of distinct, "
                'non-empty session ids, e.g. ("s1", "s2") (for one session write ("s1",)) '
                "(got 's1' that is a str).",
            ),
            (
                {"sessions": ("s1", "s1")},
                "simulation_machine() option 'sessions' must be a non-empty sequence of distinct, "
                'non-empty session ids, e.g. ("s1", "s2") (for one session write ("s1",)) '
                "(got ('s1', 's1') that is a tuple).",
            ),
            (
                {"max_answers": 0},
                "simulation_machine() option 'max_answers' must be a positive int "
                "(got 0 that is an int).",
            ),
            (
                {"max_answers": "3"},
                "simulation_machine() option 'max_answers' must be a positive int "
                "(got '3' that is a str).",
            ),
            (
                {"plan_options": {"stall": True}},
                "simulation_machine() option 'plan_options' must be a mapping of some of empty, "
                "errors, invalid_calls, pauses, stalls to True or False "
                "(got {'stall': True} that is a dict).",
            ),
            (
                {"settings": {"max_nudges": 1}},
                "simulation_machine() option 'settings' must be a TurnSettings "
                "(got {'max_nudges': 1} that is a dict).",
            ),
            (
                {"interrupt_stuck": "yes"},
                "simulation_machine() option 'interrupt_stuck' must be True or False "
                "(got 'yes' that is a str).",
            ),
            (
                {"failures_dir": 3},
                "simulation_machine() option 'failures_dir' must be None or a directory path "
                "(a str or os.PathLike) (got 3 that is an int).",
            ),
            (
                {"session": ("a",)},
                "simulation_machine() got unknown options ['session']; the options are the class "
                "attributes of SimulationMachine: explain, failures_dir, interrupt_stuck, "
                "max_answers, plan_options, sessions, settings, tools.",
            ),
        ],
    )
    def test_bad_option_is_named(self, options: dict[str, Any], message: str) -> None:
        """Each bad option raises InvalidArgument naming it, the expectation and the value."""
        with pytest.raises(InvalidArgument, match=f"^{re.escape(message)}$"):
            simulation_machine(**options)

    def test_tools_must_be_simulated_tools(self) -> None:
        """A real tool given to the pure factory is named with its index and the bridge."""
        with pytest.raises(
            InvalidArgument,
            match=r"^simulation_machine\(\) option 'tools' must hold simulated tools \(a name, "
            r"spec\(\) and run\(arguments\)\); tools\[1\] is <function word_count at .*>\. "
            r"Bridge real tools with actors.testing.simulation_machine or sim_tool\.$",
        ):
            simulation_machine(tools=[FakeTool("ok", ToolBehaviour.OK), word_count])

    def test_tool_names_are_distinct(self) -> None:
        """Two tools of one name are refused (the model could call only one)."""
        with pytest.raises(InvalidArgument, match=r"'ok' is there twice\.$"):
            simulation_machine(
                tools=[FakeTool("ok", ToolBehaviour.OK), FakeTool("ok", ToolBehaviour.ERROR)]
            )

    def test_model_and_adapters_are_functions(self) -> None:
        """``model`` and ``adapters`` make parts per example: a value is refused at once."""
        with pytest.raises(InvalidArgument, match=r"^simulation_machine\(\) option 'adapters'"):
            simulation_machine(adapters=[object()])  # type: ignore[arg-type]
        with pytest.raises(InvalidArgument, match=r"^simulation_machine\(\) option 'model'"):
            simulation_machine(model=3)  # type: ignore[arg-type]

    def test_good_options_make_a_machine(self) -> None:
        """Fitting options still give a subclass with them as class attributes."""
        machine = simulation_machine(sessions=("a",), max_answers=2, plan_options={"stalls": False})
        assert machine.sessions == ("a",)
        assert machine.max_answers == 2

    def test_bridge_names_a_tool_that_is_not_one(self) -> None:
        """actors.testing.simulation_machine names the item of ``tools`` that is no tool."""
        with pytest.raises(
            InvalidConfig,
            match=r"^simulation_machine\(\) option 'tools' must hold tools \(a Tool, a function "
            r"or a simulated tool\); tools\[1\] is 'word_count' that is a str\.$",
        ):
            bridged_simulation_machine(tools=[word_count, "word_count"])

    def test_bridge_checks_the_options(self) -> None:
        """The bridge passes the options on to the same checks, and raises InvalidConfig as
        for its own (a trial user got InvalidArgument for tools=[price, price] only)."""
        with pytest.raises(InvalidConfig, match=r"^simulation_machine\(\) option 'sessions'"):
            bridged_simulation_machine(tools=[word_count], sessions="s1")


class TestLifecycleMachineOptions:
    @pytest.mark.parametrize(
        ("options", "message"),
        [
            (
                {"store": "sql"},
                "lifecycle_machine() option 'store' must be one of 'memory', 'sqlite', 'postgres' "
                "(got 'sql' that is a str).",
            ),
            (
                {"wait_timeout": 0},
                "lifecycle_machine() option 'wait_timeout' must be a finite number of seconds > 0 "
                "(got 0 that is an int).",
            ),
            (
                {"slow_seconds": -1.0},
                "lifecycle_machine() option 'slow_seconds' must be a finite number of seconds "
                ">= 0 (got -1.0 that is a float).",
            ),
            (
                {"check_views": "always"},
                "lifecycle_machine() option 'check_views' must be one of 'every', 'idle', 'never' "
                "(got 'always' that is a str).",
            ),
            (
                {"report_at": "now"},
                "lifecycle_machine() option 'report_at' must be one of 'quiet', 'step' "
                "(got 'now' that is a str).",
            ),
            (
                {"restart_every": 0},
                "lifecycle_machine() option 'restart_every' must be a positive int "
                "(got 0 that is an int).",
            ),
            (
                {"runtime_settings": None},
                "lifecycle_machine() option 'runtime_settings' must be an actors.Settings "
                "(got None that is a NoneType).",
            ),
            (
                {"extra_checks": [3]},
                "lifecycle_machine() option 'extra_checks' must be a sequence of functions "
                "(state) -> None (got [3] that is a list).",
            ),
            (
                {"sessions": []},
                "lifecycle_machine() option 'sessions' must be a non-empty sequence of distinct, "
                'non-empty session ids, e.g. ("s1", "s2") (for one session write ("s1",)) '
                "(got [] that is a list).",
            ),
        ],
    )
    def test_bad_option_is_named(self, options: dict[str, Any], message: str) -> None:
        """Each bad option raises InvalidConfig naming it, the expectation and the value."""
        with pytest.raises(InvalidConfig, match=f"^{re.escape(message)}$"):
            lifecycle_machine(**options)

    def test_unknown_option_lists_the_options(self) -> None:
        """A misspelt option is named, with the options there are."""
        with pytest.raises(
            InvalidConfig,
            match=r"^lifecycle_machine\(\) got unknown options \['wait_timout'\]; the options are "
            r"the class attributes of LifecycleMachine: cancel_grace, .*, wait_timeout\.$",
        ):
            lifecycle_machine(wait_timout=5)

    def test_tools_are_tools_with_distinct_names(self) -> None:
        """An item that is not a tool, or a second tool of one name, is named by index."""
        with pytest.raises(
            InvalidConfig,
            match=r"^lifecycle_machine\(\) option 'tools' must hold Tools or functions; "
            r"tools\[0\] is 'word_count' that is a str\.$",
        ):
            lifecycle_machine(tools=["word_count"])
        with pytest.raises(
            InvalidConfig,
            match=r"^lifecycle_machine\(\) option 'tools' must name each tool once; tools\[0\] "
            r"and tools\[1\] are both called 'word_count'\.$",
        ):
            lifecycle_machine(tools=[word_count, word_count])

    def test_adapters_is_a_function(self) -> None:
        """Adapters are started at each (re)start, so a list of started ones is refused."""
        with pytest.raises(InvalidConfig, match=r"^lifecycle_machine\(\) option 'adapters' must"):
            lifecycle_machine(adapters=[])  # type: ignore[arg-type]


def test_bridge_refuses_a_tool_twice_with_invalid_config() -> None:
    """``tools=[price, price]`` raised InvalidArgument; the bridge's other errors InvalidConfig."""
    with pytest.raises(InvalidConfig, match=r"must name each tool once; 'word_count' is there"):
        bridged_simulation_machine(tools=[word_count, word_count])
