"""Tools: typed callables the model may call, run under trio with limits (DESIGN §7).

``@tool`` turns a sync or async function into a ``Tool``: its JSON schema
comes from the signature (through pydantic), its description and the
parameters' descriptions from the Google-style docstring. ``Tool.invoke``
validates the model's arguments, runs the function (async ones directly,
sync ones in a worker thread) under a timeout, turns the return value into
text and cuts text longer than the output limit. Whatever goes wrong—bad
arguments, an exception, a timeout—comes back as a ``ToolOutcome`` with
``is_error`` and an ``error_type`` from ``ERROR_TYPES``; only cancellation
(``trio.Cancelled``) and ``KeyboardInterrupt`` propagate. A ``Toolbox``
holds a session's tools by name.

Defining a tool wrongly (no annotation, ``*args``, a bad name or limit)
raises ``InvalidTool`` at decoration time.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import math
import os
import re
import sys
import traceback
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, overload

import attrs
import docstring_parser
import orjson
import outcome
import pydantic
import trio

from runtime import ERROR_TYPES, AmberError, ToolOutcome, ToolSpec, storable_text

from ._errors import InvalidConfig

__all__ = ["ERROR_TYPES", "InvalidTool", "Tool", "ToolOutcome", "Toolbox", "tool"]


_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_SUMMARY_CHARS = 200
_TRACEBACK_FRAMES = 3
# Frames from these files are plumbing, not the tool's code; tracebacks start after them.
_PLUMBING = (
    os.path.dirname(trio.__file__),
    os.path.dirname(outcome.__file__),
    __file__,
    os.path.join(os.path.dirname(__file__), "_shell.py"),
)


class InvalidTool(AmberError, ValueError):
    """A tool definition Amber cannot use (found when the tool is made, not run)."""


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidTool(
            "A tool name must be 1 to 64 letters, digits, '_' or '-' "
            f"(got {name!r}); pass one with tool(name=...)."
        )
    return name


def _check_timeout(name: str, timeout: object) -> float | None:
    if timeout is None:
        return None
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not (0 < timeout < math.inf)
    ):
        raise InvalidTool(
            f"The timeout of tool {name!r} must be a positive number of seconds, "
            f"or None for no limit (got {timeout!r})."
        )
    return float(timeout)


def _check_max_output(name: str, limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 100:
        raise InvalidTool(
            f"The max_output_chars of tool {name!r} must be an int of at least 100 (got {limit!r})."
        )
    return limit


@attrs.frozen(kw_only=True)
class _Signature:
    """How to check a tool's arguments and call its function."""

    model: type[pydantic.BaseModel]
    fields: Mapping[str, str]  # pydantic field name -> parameter name
    is_async: bool

    def bind(self, arguments: object) -> dict[str, Any]:
        """The keyword arguments for the function; raises ``pydantic.ValidationError``."""
        values = self.model.model_validate(arguments)
        return {param: getattr(values, field) for field, param in self.fields.items()}


@attrs.frozen(kw_only=True, eq=False)
class Tool:
    """A callable the model may call, with its schema and run limits.

    Made by ``tool()``; change a limit with ``attrs.evolve(t, timeout=5)``.
    Calling the tool object calls the plain function (handy in tests);
    ``invoke`` is how the runtime runs it.
    """

    name: str = attrs.field(validator=lambda _, __, value: _check_name(value))
    """The name the model calls it by."""
    description: str
    """What it does, for the model."""
    parameters: Mapping[str, Any] = attrs.field(repr=False)
    """The JSON schema of its arguments (an object schema)."""
    timeout: float | None = attrs.field(
        default=30.0, validator=lambda self, _, value: _check_timeout(self.name, value)
    )
    """Seconds a run may take before it is cancelled; None for no limit."""
    max_output_chars: int = attrs.field(
        default=20_000, validator=lambda self, _, value: _check_max_output(self.name, value)
    )
    """Longer content is cut to this many characters, keeping its head and tail."""
    function: Callable[..., Any] = attrs.field(repr=False)
    """The function that does the work."""
    approval: bool = False
    """True: each call waits for a person to approve it (``Runtime.approve``/``deny``)."""
    _signature: _Signature = attrs.field(repr=False, alias="signature")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (no validation, no limits)."""
        return self.function(*args, **kwargs)

    def spec(self) -> ToolSpec:
        """What the model is told about this tool (a fresh copy of the schema)."""
        return ToolSpec(
            name=self.name,
            description=self.description,
            parameters=copy.deepcopy(dict(self.parameters)),
            needs_approval=self.approval,
        )

    async def invoke(self, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Run the tool on the model's arguments; must be called inside trio.

        Args:
            arguments: The parsed argument object, parameter name to value.

        Returns:
            The outcome, with ``duration_ms`` measured. Bad arguments, an
            exception and a timeout are error outcomes.

        Raises:
            trio.Cancelled: the surrounding scope was cancelled. A sync tool's
                thread is abandoned (it runs on until its function returns).
        """
        start = trio.current_time()
        result = _storable(await self._run(arguments))
        if len(result.content) > self.max_output_chars:
            content, _ = _clip(result.content, "", 0, self.max_output_chars)
            result = attrs.evolve(result, content=content, truncated=True)
        if result.summary is None:
            result = attrs.evolve(result, summary=_first_line(result.content))
        return attrs.evolve(result, duration_ms=(trio.current_time() - start) * 1000)

    async def _run(self, arguments: Mapping[str, Any]) -> ToolOutcome:
        if not isinstance(arguments, Mapping):
            return _bad_arguments(
                f"Invalid arguments for tool {self.name!r}: they must be a JSON object mapping "
                f"parameter names to values (got {type(arguments).__name__} "
                f"{_excerpt(repr(arguments))}). {_required(self.parameters)}"
            )
        try:
            kwargs = self._signature.bind(dict(arguments))
        except pydantic.ValidationError as exc:
            return _bad_arguments(_explain(self.name, self.parameters, exc))
        except Exception as exc:  # a custom validator that raised something else
            return _bad_arguments(
                f"Invalid arguments for tool {self.name!r}: {_exception_line(exc)}. "
                f"{_required(self.parameters)}"
            )
        try:
            with trio.move_on_after(math.inf if self.timeout is None else self.timeout) as scope:
                value = await self._call(kwargs)
            if scope.cancelled_caught:
                return ToolOutcome(
                    content=(
                        f"Tool {self.name!r} did not finish within its time limit of "
                        f"{self.timeout:g} s and was stopped. Try a smaller or simpler request; "
                        "the limit is set where the tool is defined (tool(timeout=...))."
                    ),
                    is_error=True,
                    error_type="timeout",
                )
            return value if isinstance(value, ToolOutcome) else ToolOutcome(content=_text(value))
        except (Exception, SystemExit) as exc:  # a tool never takes the session down
            return ToolOutcome(
                content=_describe_exception(exc), is_error=True, error_type="exception"
            )

    async def _call(self, kwargs: dict[str, Any]) -> Any:
        if self._signature.is_async:
            return await self.function(**kwargs)
        value = await trio.to_thread.run_sync(
            functools.partial(self.function, **kwargs), abandon_on_cancel=True
        )
        # A sync wrapper around an async function hands back the coroutine.
        return await value if inspect.isawaitable(value) else value


@overload
def tool(
    fn: Callable[..., Any],
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = 30.0,
    max_output_chars: int = 20_000,
    approval: bool = False,
) -> Tool: ...


@overload
def tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = 30.0,
    max_output_chars: int = 20_000,
    approval: bool = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = 30.0,
    max_output_chars: int = 20_000,
    approval: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a tool of a sync or async function; use as ``@tool`` or ``@tool(timeout=5)``.

    Every parameter needs a type annotation that pydantic can describe as
    JSON schema (``str``, ``int``, ``float``, ``bool``, lists, dicts,
    ``Literal``, ``Enum``, ``typing_extensions.TypedDict``, dataclasses,
    pydantic models, ``X | None``); defaults make a parameter optional.

    Args:
        fn: The function. Without it, ``tool(...)`` returns a decorator.
        name: The name the model sees; defaults to the function's name.
        description: What the tool does; defaults to the docstring's summary
            and body (and its ``Returns`` section).
        timeout: Seconds a run may take; None for no limit.
        max_output_chars: Longer results are cut to this size (at least 100).
        approval: Each call waits for a person to approve it before it runs
            (``Runtime.approve``, ``Runtime.deny``); for tools that delete,
            send or pay.

    Returns:
        The ``Tool`` (or, without ``fn``, a decorator that makes one).

    Raises:
        InvalidTool: the name, a limit or the signature cannot be used; the
            message says which parameter and how to fix it.
    """

    def make(function: Callable[..., Any], scope: Mapping[str, Any] | None = None) -> Tool:
        if not callable(function):
            raise InvalidConfig(f"tool() takes a function (got {function!r} that is not callable).")
        tool_name = _check_name(name if name is not None else _default_name(function))
        limit = _check_timeout(tool_name, timeout)
        chars = _check_max_output(tool_name, max_output_chars)
        docs = docstring_parser.parse(inspect.getdoc(function) or "")
        if scope is None:  # called as the decorator that tool(...) returned
            scope = _caller_locals()
        signature, parameters = _analyse(tool_name, function, docs, scope)
        return Tool(
            name=tool_name,
            description=_description(docs) if description is None else description,
            parameters=parameters,
            timeout=limit,
            max_output_chars=chars,
            function=function,
            signature=signature,
            approval=_check_flag(tool_name, "approval", approval),
        )

    return make if fn is None else make(fn, _caller_locals())


def _check_flag(name: str, option: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidTool(f"The {option} of tool {name!r} must be True or False (got {value!r}).")
    return value


def _caller_locals() -> Mapping[str, Any]:
    """The local names where the tool is defined (two frames up), for its annotations.

    A function defined in a function may name local types; with postponed
    annotations those only resolve in the defining frame (pydantic does the same).
    """
    getframe = getattr(sys, "_getframe", None)
    try:
        return dict(getframe(2).f_locals) if getframe is not None else {}
    except ValueError:  # no such frame
        return {}


def _default_name(function: Callable[..., Any]) -> str:
    name = getattr(function, "__name__", None)
    if not isinstance(name, str):
        raise InvalidTool(
            f"Cannot name a tool after {function!r}, which has no __name__; "
            "pass one with tool(fn, name=...)."
        )
    return name


def _description(docs: docstring_parser.Docstring) -> str:
    parts = [docs.short_description, docs.long_description]
    if docs.returns is not None and docs.returns.description:
        parts.append(f"Returns: {docs.returns.description}")
    return "\n\n".join(part.strip() for part in parts if part and part.strip())


def _analyse(
    name: str,
    function: Callable[..., Any],
    docs: docstring_parser.Docstring,
    scope: Mapping[str, Any],
) -> tuple[_Signature, dict[str, Any]]:
    """The argument validator and JSON schema of ``function``'s parameters."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as exc:
        raise InvalidTool(f"Cannot read the signature of tool {name!r} ({exc}).") from None
    try:
        hints = typing.get_type_hints(function, localns=dict(scope), include_extras=True)
    except Exception as exc:
        raise InvalidTool(
            f"Cannot resolve the annotations of tool {name!r} ({_exception_line(exc)}); "
            "import or define the types it names before the tool is defined."
        ) from None
    documented = {param.arg_name: param.description for param in docs.params}
    fields: dict[str, Any] = {}
    names: dict[str, str] = {}
    for index, param in enumerate(signature.parameters.values()):
        where = f"Parameter {param.name!r} of tool {name!r}"
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            star = "*" if param.kind is param.VAR_POSITIONAL else "**"
            raise InvalidTool(
                f"{where} is {star}{param.name}; the model sends named arguments only, "
                "so list each one as its own typed parameter."
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise InvalidTool(
                f"{where} is positional-only; the model sends named arguments, "
                "so remove the '/' from the signature."
            )
        if param.name not in hints:
            raise InvalidTool(
                f"{where} has no type annotation; the model needs one to know what to send. "
                f"Annotate it, e.g. '{param.name}: str'."
            )
        default = ... if param.default is param.empty else param.default
        # Fields get neutral names and the parameter as alias, so a parameter may be
        # called 'json', 'schema' or '_x' without clashing with pydantic's own names.
        field = f"p{index}"
        names[field] = param.name
        fields[field] = (
            hints[param.name],
            pydantic.Field(default, alias=param.name, description=documented.pop(param.name, None)),
        )
    if documented:
        raise InvalidTool(
            f"The docstring of tool {name!r} describes {', '.join(map(repr, documented))}, "
            f"which the signature does not have (it has {list(signature.parameters)!r}); "
            "fix the Args section."
        )
    try:
        model = pydantic.create_model(
            f"{name}_arguments", __config__=pydantic.ConfigDict(extra="forbid"), **fields
        )
        schema = _clean_schema(model.model_json_schema())
    except (pydantic.PydanticUserError, TypeError, ValueError) as exc:
        raise InvalidTool(
            f"Cannot describe the parameters of tool {name!r} as JSON schema "
            f"({_exception_line(exc).splitlines()[0]}). Use JSON-like types: str, int, float, "
            "bool, list, dict, Literal, Enum, typing_extensions.TypedDict, dataclasses "
            "or pydantic models."
        ) from None
    is_async = inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
        type(function).__call__  # an object with an async __call__
    )
    return _Signature(model=model, fields=names, is_async=is_async), schema


# Keywords whose value is a schema, a list of schemas or a name -> schema map; titles
# are dropped only there, so a property or default that is called "title" survives.
_SCHEMA_KEYS = frozenset({"items", "additionalProperties", "not", "contains"})
_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_SCHEMA_MAPS = frozenset({"properties", "$defs", "patternProperties"})


class _Recursive(Exception):
    """A type refers to itself, so its definitions cannot be inlined."""


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Pydantic's schema without titles, with ``$ref``s inlined unless a type is recursive."""
    defs = schema.get("$defs", {})

    def walk(node: Any, inline: bool, seen: frozenset[str]) -> Any:
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if inline and isinstance(ref, str) and ref.startswith("#/$defs/"):
            key = ref.removeprefix("#/$defs/")
            if key in seen:
                raise _Recursive(key)
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return {**walk(defs[key], inline, seen | {key}), **walk(rest, inline, seen)}
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "title" and isinstance(value, str):
                continue
            if key in _SCHEMA_KEYS:
                value = walk(value, inline, seen)
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                value = [walk(item, inline, seen) for item in value]
            elif key in _SCHEMA_MAPS and isinstance(value, dict):
                if key == "$defs" and inline:
                    continue
                value = {k: walk(v, inline, seen) for k, v in value.items()}
            out[key] = value
        return out

    try:
        cleaned: dict[str, Any] = walk(schema, True, frozenset())
    except _Recursive:
        cleaned = walk(schema, False, frozenset())
    first = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
    return {**first, **cleaned}


def _bad_arguments(content: str) -> ToolOutcome:
    return ToolOutcome(content=content, is_error=True, error_type="invalid_arguments")


def _required(schema: Mapping[str, Any]) -> str:
    required = list(schema.get("required", ()))
    names = list(schema.get("properties", {}))
    return (
        f"Required arguments: {', '.join(required) or 'none'}; "
        f"all arguments: {', '.join(names) or 'none'}."
    )


def _explain(name: str, schema: Mapping[str, Any], error: pydantic.ValidationError) -> str:
    """Pydantic's validation errors, in words a model can act on."""
    properties = schema.get("properties", {})
    lines = []
    for item in error.errors(include_url=False):
        loc = item["loc"]
        where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)
        where = repr(where.removeprefix(".")) if loc else "the arguments"
        expected = ""
        if len(loc) == 1 and loc[0] in properties:
            expected = f"; expected {_expected(properties[loc[0]])}"
        if item["type"] == "missing":
            lines.append(f"- {where}: missing, but it is required{expected}.")
        elif item["type"] == "extra_forbidden":
            lines.append(f"- {where}: not a parameter of this tool; leave it out.")
        else:
            got = _excerpt(repr(item.get("input")))
            lines.append(f"- {where}: {item['msg']} (got {got}){expected}.")
    count = len(lines)
    return (
        f"Invalid arguments for tool {name!r} ({count} problem{'s' * (count != 1)}):\n"
        + "\n".join(lines)
        + f"\n{_required(schema)} Fix the arguments and call {name!r} again."
    )


def _expected(schema: Mapping[str, Any]) -> str:
    """A short phrase for what a schema accepts: 'integer', 'array of string', …"""
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(value) for value in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(_expected(option) for option in schema[key])
    kind = schema.get("type")
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        return f"array of {_expected(schema['items'])}"
    if kind == "object" and schema.get("properties"):
        return f"object with keys {', '.join(schema['properties'])}"
    if isinstance(kind, list):
        return " or ".join(map(str, kind))
    return str(kind) if kind else "any JSON value"


def _storable(outcome: ToolOutcome) -> ToolOutcome:
    """``outcome`` with text a store can keep.

    A tool's output comes from the system (file names from ``os.listdir``,
    environment variables, decoded bytes), where bytes that are not UTF-8
    arrive as lone surrogates. They are spelled out (``\\xff``) instead of
    failing the turn when the result is stored.
    """
    content, summary = storable_text(outcome.content), outcome.summary
    if summary is not None:
        summary = storable_text(summary)
    if content is outcome.content and summary is outcome.summary:
        return outcome
    return attrs.evolve(outcome, content=content, summary=summary)


_MAX_RESULT_DEPTH = 200
"""How deeply a tool's return value may nest: orjson has no limit for tuples, and a few
thousand levels crash the process instead of raising."""


class ResultTooDeep(AmberError, ValueError):
    """A tool returned a value nested more than 200 levels deep (an error result)."""


def _check_depth(value: Any) -> None:
    """Raise ``ResultTooDeep`` if ``value`` nests more than ``_MAX_RESULT_DEPTH`` levels."""
    stack = [(value, 0)]
    seen = 0
    while stack:
        item, depth = stack.pop()
        if depth > _MAX_RESULT_DEPTH:
            raise ResultTooDeep(
                f"the tool's result nests more than {_MAX_RESULT_DEPTH} levels deep; return "
                "something flatter (or text)"
            )
        seen += 1
        if seen > 1_000_000:  # a huge flat value: the size limit deals with it later
            return
        if isinstance(item, (list, tuple, set, frozenset)):
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, Mapping):
            stack.extend((child, depth + 1) for child in item.values())


def _text(value: Any) -> str:
    """A return value as the text the model reads: str as is, anything else as JSON."""
    if isinstance(value, str):
        return value
    _check_depth(value)
    try:
        return orjson.dumps(value, default=_jsonable, option=orjson.OPT_NON_STR_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):  # e.g. an int beyond 64 bits
        return json.dumps(value, default=_jsonable, ensure_ascii=False)


def _jsonable(value: Any) -> Any:
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json")
    if attrs.has(type(value)):
        return attrs.asdict(value, recurse=False)
    if isinstance(value, bytes | bytearray):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Iterable) and not isinstance(value, str):
        return list(value)
    return str(value)


def _clip(head: str, tail: str, missing: int, limit: int) -> tuple[str, int]:
    """Fit ``head + <missing chars> + tail`` into ``limit`` characters.

    Keeps the start and the end with a marker that says how much was cut;
    returns the text and the number of characters cut (0 if none).
    """
    total = len(head) + missing + len(tail)
    if not missing and total <= limit:
        return head + tail, 0
    keep = max(0, limit - len(_marker(total)))
    if missing:
        end = tail[max(0, len(tail) - keep // 2) :]
        start = head[: keep - len(end)]
    else:
        text = head + tail
        start, end = text[: keep - keep // 2], text[len(text) - keep // 2 :]
    cut = total - len(start) - len(end)
    return start + _marker(cut) + end, cut


def _marker(cut: int) -> str:
    return f"\n…[truncated {cut} chars]…\n"


def _first_line(text: str) -> str | None:
    line = next((line.strip() for line in text.splitlines() if line.strip()), None)
    return None if line is None else _excerpt(line, _SUMMARY_CHARS)


def _excerpt(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _exception_line(exc: BaseException) -> str:
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _describe_exception(exc: BaseException) -> str:
    """``Type: message`` and the last frames of the tool's own code.

    Each frame is two lines (``File …, line …, in …`` and the source line),
    the same on every Python: ``traceback.format_list`` adds caret lines
    (``~~~^^^``) on 3.13, which the model does not need.
    """
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]  # a nursery in the tool wrapped one failure
    frames = list(traceback.extract_tb(exc.__traceback__))
    while frames and frames[0].filename.startswith(_PLUMBING):
        del frames[0]
    frames = frames[-_TRACEBACK_FRAMES:]
    text = _exception_line(exc)
    if frames:
        text += "\nTraceback (innermost last):\n" + "".join(_frame(frame) for frame in frames)
    return text.rstrip("\n")


def _frame(frame: traceback.FrameSummary) -> str:
    where = f'  File "{frame.filename}", line {frame.lineno}, in {frame.name}\n'
    line = (frame.line or "").strip()
    return where + (f"    {line}\n" if line else "")


class Toolbox:
    """An immutable set of tools, by name.

    Args:
        tools: Tools, or plain functions (made tools with ``tool()``).

    Raises:
        InvalidTool: two tools have the same name, or a function is not a
            usable tool.
    """

    __slots__ = ("_tools",)

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]] = ()) -> None:
        by_name: dict[str, Tool] = {}
        for item in tools:
            made = item if isinstance(item, Tool) else tool(item)
            if made.name in by_name:
                raise InvalidTool(
                    f"Two tools are named {made.name!r}: {by_name[made.name].function!r} and "
                    f"{made.function!r}; give one another name with tool(fn, name=...)."
                )
            by_name[made.name] = made
        self._tools: Mapping[str, Tool] = types.MappingProxyType(dict(sorted(by_name.items())))

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
            _storable(result),
            summary=_first_line(storable_text(result.content)),
            duration_ms=(trio.current_time() - start) * 1000,
        )


def _parse(name: str, text: str) -> dict[str, Any] | ToolOutcome:
    try:
        value = orjson.loads(text.strip() or "{}")
    except orjson.JSONDecodeError as exc:
        return _bad_arguments(
            f"The arguments for tool {name!r} are not valid JSON ({exc}); got "
            f'{_excerpt(text, 200)!r}. Send one JSON object, e.g. {{"name": "value"}}.'
        )
    if not isinstance(value, dict):
        return _bad_arguments(
            f"The arguments for tool {name!r} must be a JSON object (got "
            f"{type(value).__name__} {_excerpt(text, 200)!r}). Send one JSON object."
        )
    return value
