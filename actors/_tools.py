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
(``actors/_toolbox.py``) holds a session's tools by name.

Defining a tool wrongly (no annotation, ``*args``, a bad name or limit)
raises ``InvalidTool`` at decoration time.
"""

from __future__ import annotations

import copy
import functools
import inspect
import logging
import math
import re
import sys
import threading
import typing
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any, overload

import attrs
import docstring_parser
import pydantic
import trio

from runtime import ERROR_TYPES, AmberError, ToolOutcome, ToolSpec
from runtime._article import type_named

from ._errors import InvalidConfig
from ._tool_text import (
    bad_arguments,
    clip,
    describe_exception,
    exception_line,
    excerpt,
    explain,
    first_line,
    required_line,
    storable,
    text_of,
    used_asyncio,
)

__all__ = ["ERROR_TYPES", "InvalidTool", "Tool", "ToolOutcome", "tool"]

log = logging.getLogger("amber.tools")


_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


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

    @property
    def cancellable(self) -> bool:
        """False for a sync function: it runs in a worker thread, which cancelling a run
        abandons (the function runs on until it returns), so ``Runtime.stop`` waits for
        its runs instead (``docs/reliability.md``)."""
        return self._signature.is_async

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
        result = storable(await self._run(arguments))
        if len(result.content) > self.max_output_chars:
            content, _ = clip(result.content, "", 0, self.max_output_chars)
            result = attrs.evolve(result, content=content, truncated=True)
        if result.summary is None:
            result = attrs.evolve(result, summary=first_line(result.content))
        return attrs.evolve(result, duration_ms=(trio.current_time() - start) * 1000)

    async def _run(self, arguments: Mapping[str, Any]) -> ToolOutcome:
        if not isinstance(arguments, Mapping):
            return bad_arguments(
                f"Invalid arguments for tool {self.name!r}: they must be a JSON object mapping "
                f"parameter names to values (got {type(arguments).__name__} "
                f"{excerpt(repr(arguments))}). {required_line(self.parameters)}"
            )
        try:
            kwargs = self._signature.bind(dict(arguments))
        except pydantic.ValidationError as exc:
            return bad_arguments(explain(self.name, self.parameters, exc))
        except Exception as exc:  # a custom validator that raised something else
            return bad_arguments(
                f"Invalid arguments for tool {self.name!r}: {exception_line(exc)}. "
                f"{required_line(self.parameters)}"
            )
        try:
            with trio.move_on_after(math.inf if self.timeout is None else self.timeout) as scope:
                value = await self._call(kwargs)
            if scope.cancelled_caught:
                return ToolOutcome(content=self._timed_out(), is_error=True, error_type="timeout")
            return value if isinstance(value, ToolOutcome) else ToolOutcome(content=text_of(value))
        except (Exception, SystemExit) as exc:  # a tool never takes the session down
            content = describe_exception(exc)
            if self._signature.is_async and used_asyncio(exc):
                log.warning(
                    "tool %r is an async function that used asyncio (%s), but async tools run "
                    "on Amber's own trio loop, where no asyncio loop runs. To use your "
                    "program's asyncio clients, make it a sync tool (def, not async def) that "
                    "runs the coroutine on your loop and waits: "
                    "asyncio.run_coroutine_threadsafe(coro, loop).result() (docs/asyncio.md).",
                    self.name,
                    content.splitlines()[0],
                )
            return ToolOutcome(content=content, is_error=True, error_type="exception")
        except BaseException as exc:
            # Nor any other BaseException (asyncio's CancelledError from a wrapped client, a
            # library's own): only trio's cancellation of this call, and Ctrl-C, go up.
            if passes_through(exc):
                raise
            return ToolOutcome(
                content=describe_exception(exc), is_error=True, error_type="exception"
            )

    def _timed_out(self) -> str:
        """What the model reads for a run past its timeout: it may have run (a cancelled
        async tool in part; a sync one's thread runs on and may still finish)."""
        if self.cancellable:
            ended = "was stopped; it may have run in part, so check before calling it again"
        else:
            ended = (
                "was left running in its thread (a sync tool cannot be stopped): it may have "
                "run, in part or in full, and may still finish, so check before calling it again"
            )
        return (
            f"Tool {self.name!r} did not finish within its time limit of {self.timeout:g} s and "
            f"{ended}. Try a smaller or simpler request; the limit is set where the tool is "
            "defined (tool(timeout=...))."
        )

    async def _call(self, kwargs: dict[str, Any]) -> Any:
        if self._signature.is_async:
            value = await self.function(**kwargs)
        else:
            run = _Abandonable(self.name, functools.partial(_drawn, self.function, kwargs))
            try:
                value = await trio.to_thread.run_sync(run, abandon_on_cancel=True)
            except trio.Cancelled:
                run.abandon()
                raise
            # A sync wrapper around an async function hands back the coroutine.
            if inspect.isawaitable(value):
                value = await value
        # A generator's body runs as it is drawn: draw it here, under the timeout (a sync
        # one in a worker thread, so a slow one never blocks the effects loop).
        if isinstance(value, AsyncIterator):
            return [item async for item in value]
        if isinstance(value, Iterator) and not isinstance(value, ToolOutcome):
            return await trio.to_thread.run_sync(list, value, abandon_on_cancel=True)
        return value


class _Abandonable:
    """A sync tool's call in its worker thread, which a cancel abandons: it runs on, and
    what it returns then is recorded nowhere (its turn stopped waiting for it: an
    interrupt, a stop, a reload, a timeout), so it says so in the log once it ends."""

    def __init__(self, name: str, call: Callable[[], Any]) -> None:
        self._name = name
        self._call = call
        self._lock = threading.Lock()
        self._abandoned = self._ended = False
        self._value: Any = None  # what it returned, shown (bounded) only if abandoned

    def __call__(self) -> Any:
        value = self._call()
        with self._lock:
            self._ended, self._value = True, value
            abandoned = self._abandoned
        if abandoned:
            self._log()
        return value

    def abandon(self) -> None:
        """The call was cancelled: what it returns (or returned meanwhile) is dropped."""
        with self._lock:
            self._abandoned = True
            ended = self._ended
        if ended:
            self._log()

    def _log(self) -> None:
        try:
            said = excerpt(repr(self._value))
        except Exception as exc:  # a repr that fails (nested too deep, a broken __repr__)
            said = f"(a {type(self._value).__name__} whose repr failed: {type(exc).__name__})"
        log.warning(
            "tool %s: a call cancelled while it ran in its thread (its turn stopped waiting for "
            "it, or its time limit passed) has ended; its result is not recorded: %s",
            self._name, said,
        )  # fmt: skip


def _drawn(function: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """Call a sync tool's function in its worker thread; a generator (or other iterator) it
    returns is drawn there too, since its body runs only as it is drawn."""
    value = function(**kwargs)
    return list(value) if isinstance(value, Iterator) else value


def passes_through(exc: BaseException) -> bool:
    """Whether a tool's ``BaseException`` is not the tool's failure: trio's cancellation
    (the call was interrupted or timed out), ``KeyboardInterrupt`` or ``GeneratorExit``,
    alone or in a group."""
    if isinstance(exc, BaseExceptionGroup):
        return any(map(passes_through, exc.exceptions))
    return isinstance(exc, (trio.Cancelled, KeyboardInterrupt, GeneratorExit))


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
        _check_function(function)
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


def _check_function(function: object) -> None:
    """What ``tool()`` makes a tool of: a plain function, not a ``Tool`` or a name."""
    if isinstance(function, Tool):
        raise InvalidTool(
            f"tool() takes the plain function, and got the Tool {function.name!r} made already "
            f"(is @tool applied twice?). Use the Tool as it is (tools=[{function.name}]), or "
            f"change an option with attrs.evolve({function.name}, timeout=5)."
        )
    if isinstance(function, str):
        raise InvalidConfig(
            f"tool() takes a function (got {function!r} that is a 'str'); to name the tool, "
            f"write @tool(name={function!r}) above the def, or tool(fn, name={function!r})."
        )
    if not callable(function):
        raise InvalidConfig(
            f"tool() takes a function (got {function!r} that is {type_named(function)}). "
            "Write @tool above a def, @tool(timeout=...) to set an option, or tool(fn)."
        )


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
            f"Cannot resolve the annotations of tool {name!r} ({exception_line(exc)}); "
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
            f"({exception_line(exc).splitlines()[0]}). Use JSON-like types: str, int, float, "
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
