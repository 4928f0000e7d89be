"""``Toolbox``: a session's tools by name, and running one by the model's call."""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import attrs
import orjson
import trio

from runtime import ToolOutcome, ToolSpec, storable_text
from runtime._article import article, type_named

from ._errors import InvalidConfig
from ._tool_text import bad_arguments, excerpt, first_line, storable
from ._tools import InvalidTool, Tool, tool

__all__ = ["Toolbox"]


class Toolbox:
    """An immutable set of tools, by name.

    Args:
        tools: Tools, or plain functions (made tools with ``tool()``).

    Raises:
        InvalidConfig: an item is no tool nor function (a value, a name, a class); the
            message names its position (``tools[2]``).
        InvalidTool: two tools have the same name (or one is listed twice), or a
            function is not a usable tool.
    """

    __slots__ = ("_tools",)

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]] = ()) -> None:
        by_name: dict[str, tuple[int, Tool]] = {}
        for index, item in enumerate(tools):
            made = _made(index, item)
            if made.name in by_name:
                raise _twice(by_name[made.name], (index, made))
            by_name[made.name] = (index, made)
        self._tools: Mapping[str, Tool] = types.MappingProxyType(
            {name: made for name, (_, made) in sorted(by_name.items())}
        )

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"Toolbox({list(self._tools)!r})"

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    def names(self) -> tuple[str, ...]:
        """The tool names, sorted."""
        return tuple(self._tools)

    def specs(self) -> tuple[ToolSpec, ...]:
        """What the model is told about the tools, sorted by name."""
        return tuple(item.spec() for item in self._tools.values())

    async def run(self, name: str, arguments: Mapping[str, Any] | str) -> ToolOutcome:
        """Run the tool called ``name``; must be called inside trio.

        Args:
            name: The tool the model called.
            arguments: The arguments, parsed or as the model's JSON text
                (empty text means no arguments).

        Returns:
            The outcome; an unknown tool or malformed JSON is an error outcome.

        Raises:
            trio.Cancelled: the surrounding scope was cancelled.
        """
        start = trio.current_time()
        found = self._tools.get(name)
        if found is None:
            known = ", ".join(self._tools) or "none (this session has no tools)"
            result = ToolOutcome(
                content=f"There is no tool named {name!r}. The tools are: {known}.",
                is_error=True,
                error_type="unknown_tool",
            )
        elif isinstance(arguments, str):
            parsed = _parse(name, arguments)
            if isinstance(parsed, ToolOutcome):
                result = parsed
            else:
                return await found.invoke(parsed)
        else:
            return await found.invoke(arguments)
        return attrs.evolve(
            storable(result),
            summary=first_line(storable_text(result.content)),
            duration_ms=(trio.current_time() - start) * 1000,
        )


_EXPECTED = (
    "tools takes functions (plain, or decorated with @tool) and Tools made with tool(fn, ...)"
)


def _made(index: int, item: object) -> Tool:
    """``tools[index]`` as a ``Tool``: a Tool as it is, a function made one with ``tool()``.

    Raises:
        InvalidConfig: it is no function (a value, a name, a class).
        InvalidTool: ``tool()`` cannot make a tool of the function (the message names
            ``tools[index]``).
    """
    if isinstance(item, Tool):
        return item
    where = f"tools[{index}]"
    if isinstance(item, type):
        name = item.__name__
        if issubclass(item, Tool):
            raise InvalidConfig(
                f"{where} is the class Tool itself, not a tool; {_EXPECTED}. Decorate a def "
                "with @tool, or write tool(fn)."
            )
        raise InvalidConfig(
            f"{where} is the class {name}, not a tool: calling it would make {article(name)}, "
            f"not run a tool. {_EXPECTED}; pass a function, or a method of an instance: "
            f"tools=[{name}().method]."
        )
    if isinstance(item, str):
        shown = item if item.isidentifier() else "my_function"
        raise InvalidConfig(
            f"{where} is the str {excerpt(repr(item), 80)}, not a tool; {_EXPECTED}. Pass the "
            f"function itself, not its name: tools=[{shown}]."
        )
    if not callable(item):
        raise InvalidConfig(
            f"{where} is {excerpt(repr(item), 80)} that is {type_named(item)}, not a tool; "
            f"{_EXPECTED}. Pass the function itself: tools=[my_function], not "
            "tools=[my_function()]."
        )
    try:
        return tool(item)
    except (InvalidTool, InvalidConfig) as exc:
        raise type(exc)(f"{where}: {exc}") from None


def _twice(first: tuple[int, Tool], second: tuple[int, Tool]) -> InvalidTool:
    """Two entries of ``tools`` with one name: the same tool listed twice, or two tools."""
    (i, one), (j, other) = first, second
    if one is other or one.function is other.function:
        return InvalidTool(
            f"tools[{i}] and tools[{j}] are the same tool {one.name!r} (the function "
            f"{one.function!r}), listed twice; list each tool once."
        )
    return InvalidTool(
        f"Two tools are named {one.name!r}: tools[{i}] ({one.function!r}) and tools[{j}] "
        f"({other.function!r}); give one another name with tool(fn, name=...)."
    )


def _parse(name: str, text: str) -> dict[str, Any] | ToolOutcome:
    try:
        value = orjson.loads(text.strip() or "{}")
    except orjson.JSONDecodeError as exc:
        return bad_arguments(
            f"The arguments for tool {name!r} are not valid JSON ({exc}); got "
            f'{excerpt(text, 200)!r}. Send one JSON object, e.g. {{"name": "value"}}.'
        )
    if not isinstance(value, dict):
        return bad_arguments(
            f"The arguments for tool {name!r} must be a JSON object (got "
            f"{type(value).__name__} {excerpt(text, 200)!r}). Send one JSON object."
        )
    return value
