"""Tools: schema derivation, decoration errors, invoke's outcomes and limits, the Toolbox."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import enum
import functools
import logging
import sys
import threading
import time
import typing
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Annotated, Any, Literal

import attrs
import pydantic
import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stop_support import Said
from typing_extensions import TypedDict

from actors._toolbox import Toolbox
from actors._tools import ERROR_TYPES, InvalidTool, Tool, ToolOutcome, tool
from runtime import ToolSpec

T = typing.TypeVar("T")

BOUND = 30.0
"""Seconds within which a cancelled or timed-out run must return (real time). What must
not be waited for blocks for 600 s: a margin of 20 against a loaded machine."""


def run(fn: Callable[[], Awaitable[T]], *, autojump: bool = False) -> T:
    """Run ``fn`` under trio (with a virtual clock when ``autojump``)."""
    clock = trio.testing.MockClock(autojump_threshold=0) if autojump else None
    return trio.run(fn, clock=clock)


def invoke(t: Tool, arguments: Any, *, autojump: bool = False) -> ToolOutcome:
    return run(lambda: t.invoke(arguments), autojump=autojump)


def walk(node: Any) -> Iterator[Mapping[str, Any]]:
    """Every dict inside a JSON value."""
    if isinstance(node, Mapping):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from walk(item)


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(TypedDict):
    x: int
    y: int


class Tree(TypedDict):
    name: str
    children: list[Tree]


@dataclasses.dataclass
class Book:
    title: str
    pages: int = 1


@attrs.frozen
class Pair:
    left: int
    right: set[int]


class Reply(pydantic.BaseModel):
    text: str


def schema_of(fn: Callable[..., Any]) -> dict[str, Any]:
    return dict(tool(fn).parameters)


class TestSchema:
    def test_scalars(self) -> None:
        """int, float, str and bool map to JSON schema types; all are required."""

        def f(a: int, b: float, c: str, d: bool) -> None: ...

        assert schema_of(f) == {
            "type": "object",
            "properties": {
                "a": {"type": "integer"},
                "b": {"type": "number"},
                "c": {"type": "string"},
                "d": {"type": "boolean"},
            },
            "required": ["a", "b", "c", "d"],
            "additionalProperties": False,
        }

    def test_containers_literal_optional_defaults(self) -> None:
        """list[str], Literal, X | None and defaults; a default makes a parameter optional."""

        def f(
            tags: list[str],
            mode: Literal["fast", "slow"] = "fast",
            limit: int | None = None,
            scale: float = 1.5,
        ) -> None: ...

        assert schema_of(f) == {
            "type": "object",
            "properties": {
                "tags": {"type": "array", "items": {"type": "string"}},
                "mode": {"type": "string", "enum": ["fast", "slow"], "default": "fast"},
                "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
                "scale": {"type": "number", "default": 1.5},
            },
            "required": ["tags"],
            "additionalProperties": False,
        }

    def test_enum_and_typed_dict_are_inlined(self) -> None:
        """Enums and nested TypedDicts are inlined: no $defs or $ref for plain types."""

        def f(color: Color, at: Point, box: Book | None = None) -> None: ...

        schema = schema_of(f)
        assert schema["properties"]["color"] == {"type": "string", "enum": ["red", "blue"]}
        assert schema["properties"]["at"] == {
            "type": "object",
            "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
            "required": ["x", "y"],
            "additionalProperties": False,
        }
        assert schema["properties"]["box"]["anyOf"][0]["properties"] == {
            "title": {"type": "string"},
            "pages": {"type": "integer", "default": 1},
        }
        assert "$defs" not in schema
        assert not [node for node in walk(schema) if "$ref" in node]

    def test_no_title_noise(self) -> None:
        """pydantic's generated titles are dropped, but a property called 'title' stays."""

        def f(book: Book, title: str = "title") -> None: ...

        schema = schema_of(f)
        assert [node for node in walk(schema) if isinstance(node.get("title"), str)] == []
        assert set(schema["properties"]) == {"book", "title"}
        assert schema["properties"]["title"] == {"type": "string", "default": "title"}

    def test_recursive_type_keeps_defs(self) -> None:
        """A recursive type cannot be inlined, so its definition stays under $defs."""

        def f(tree: Tree) -> None: ...

        schema = schema_of(f)
        assert schema["properties"]["tree"] == {"$ref": "#/$defs/Tree"}
        assert schema["$defs"]["Tree"]["properties"]["children"] == {
            "type": "array",
            "items": {"$ref": "#/$defs/Tree"},
        }

    def test_docstring_descriptions(self) -> None:
        """The docstring's summary, body and Returns describe the tool; Args describe parameters."""

        def search(query: str, limit: int = 10) -> list[str]:
            """Search the notes.

            Matches words anywhere in a note.

            Args:
                query: Words to look for.
                limit: At most this many
                    notes come back.

            Returns:
                The matching note titles.
            """
            return []

        made = tool(search)
        assert made.description == (
            "Search the notes.\n\nMatches words anywhere in a note.\n\n"
            "Returns: The matching note titles."
        )
        assert made.parameters["properties"] == {
            "query": {"type": "string", "description": "Words to look for."},
            "limit": {
                "type": "integer",
                "default": 10,
                "description": "At most this many\nnotes come back.",
            },
        }

    def test_annotated_field_constraints(self) -> None:
        """Annotated pydantic constraints appear in the schema and are enforced."""

        def f(n: Annotated[int, pydantic.Field(ge=1, le=5)]) -> int:
            return n

        made = tool(f)
        assert made.parameters["properties"]["n"] == {"type": "integer", "minimum": 1, "maximum": 5}
        assert invoke(made, {"n": 9}).error_type == "invalid_arguments"

    def test_description_argument_wins(self) -> None:
        """description= replaces the docstring's; no docstring gives an empty description."""

        def f() -> None:
            """Docstring."""

        def g() -> None: ...

        assert tool(f, description="Given.").description == "Given."
        assert tool(g).description == ""

    def test_no_parameters(self) -> None:
        """A tool without parameters takes an empty object."""

        def now() -> str:
            return "noon"

        assert schema_of(now) == {
            "type": "object",
            "properties": {},
            "required": [],
            "additionalProperties": False,
        }

    def test_parameter_names_that_pydantic_reserves(self) -> None:
        """Parameters may be named like pydantic's own attributes (json, schema, model_config)."""

        def f(json: str, schema: int, model_config: bool = False) -> str:
            return f"{json} {schema} {model_config}"

        made = tool(f)
        assert list(made.parameters["properties"]) == ["json", "schema", "model_config"]
        assert invoke(made, {"json": "j", "schema": 2}).content == "j 2 False"

    def test_spec_is_a_fresh_copy(self) -> None:
        """spec() gives a ToolSpec whose schema the caller may change without harm."""

        def f(a: int) -> None: ...

        made = tool(f)
        spec = made.spec()
        assert spec == ToolSpec(name="f", description="", parameters=made.parameters)
        spec.parameters["properties"]["a"]["type"] = "string"
        assert made.parameters["properties"]["a"] == {"type": "integer"}


class TestDecoration:
    def test_cancellable(self) -> None:
        """An async tool can be cancelled; a sync one (in a worker thread) cannot, so a
        runtime stop waits for its runs."""

        @tool
        def sync() -> None: ...

        @tool
        async def asynchronous() -> None: ...

        assert (sync.cancellable, asynchronous.cancellable) == (False, True)

    def test_forms(self) -> None:
        """@tool, @tool(...) and tool(fn, ...) all make a Tool; calling it calls the function."""

        @tool
        def a(x: int) -> int:
            return x + 1

        @tool(name="bee", timeout=5, max_output_chars=100)
        async def b() -> None: ...

        assert isinstance(a, Tool)
        assert a(1) == 2
        assert (a.name, a.timeout, a.max_output_chars) == ("a", 30.0, 20_000)
        assert (b.name, b.timeout, b.max_output_chars) == ("bee", 5.0, 100)
        assert tool(lambda: None, name="anon").name == "anon"

    def test_missing_annotation(self) -> None:
        """A parameter without an annotation is named, with the fix."""

        def f(a: int, b) -> None: ...  # type: ignore[no-untyped-def]

        with pytest.raises(
            InvalidTool,
            match=r"^Parameter 'b' of tool 'f' has no type annotation; the model needs one to know what to send\. Annotate it, e\.g\. 'b: str'\.$",
        ):
            tool(f)

    def test_star_args(self) -> None:
        """*args and **kwargs are refused: the model sends named arguments."""

        def f(*items: int) -> None: ...

        def g(**options: int) -> None: ...

        with pytest.raises(
            InvalidTool,
            match=r"^Parameter 'items' of tool 'f' is \*items; the model sends named arguments only, so list each one as its own typed parameter\.$",
        ):
            tool(f)
        with pytest.raises(InvalidTool, match=r"^Parameter 'options' of tool 'g' is \*\*options;"):
            tool(g)

    def test_positional_only(self) -> None:
        """Positional-only parameters are refused."""

        def f(a: int, /) -> None: ...

        with pytest.raises(
            InvalidTool,
            match=r"^Parameter 'a' of tool 'f' is positional-only; the model sends named arguments, so remove the '/' from the signature\.$",
        ):
            tool(f)

    @pytest.mark.parametrize("name", ["", "has space", "x" * 65, "dotted.name", "<lambda>"])
    def test_bad_name(self, name: str) -> None:
        """Names must match ^[a-zA-Z0-9_-]{1,64}$."""
        with pytest.raises(
            InvalidTool,
            match=r"^A tool name must be 1 to 64 letters, digits, '_' or '-' \(got .*\); pass one with tool\(name=\.\.\.\)\.$",
        ):
            tool(lambda: None, name=name if name != "<lambda>" else None)

    @pytest.mark.parametrize("timeout", [0, -1.0, float("nan"), float("inf"), True])
    def test_bad_timeout(self, timeout: Any) -> None:
        """The timeout is a positive finite number of seconds or None."""
        with pytest.raises(
            InvalidTool,
            match=r"^The timeout of tool 'f' must be a positive number of seconds, or None for no limit \(got .*\)\.$",
        ):
            tool(name="f", timeout=timeout)(lambda: None)

    def test_bad_max_output(self) -> None:
        """max_output_chars is an int of at least 100."""
        with pytest.raises(
            InvalidTool,
            match=r"^The max_output_chars of tool 'f' must be an int of at least 100 \(got 99\)\.$",
        ):
            tool(name="f", max_output_chars=99)(lambda: None)

    def test_evolve_checks_limits(self) -> None:
        """attrs.evolve runs the same checks."""
        made = tool(name="f")(lambda: None)
        assert attrs.evolve(made, timeout=None).timeout is None
        with pytest.raises(InvalidTool, match=r"^The timeout of tool 'f' must be"):
            attrs.evolve(made, timeout=0)

    def test_stale_docstring(self) -> None:
        """Args that the signature does not have are refused (a typo or a stale docstring)."""

        def f(query: str) -> None:
            """Find.

            Args:
                qeury: What to find.
            """

        with pytest.raises(
            InvalidTool,
            match=r"^The docstring of tool 'f' describes 'qeury', which the signature does not have \(it has \['query'\]\); fix the Args section\.$",
        ):
            tool(f)

    def test_type_without_schema(self) -> None:
        """A type pydantic cannot describe is refused, with the types that work."""

        class Opaque:
            pass

        def f(thing: Opaque) -> None: ...

        with pytest.raises(
            InvalidTool,
            match=r"^Cannot describe the parameters of tool 'f' as JSON schema \(.*\)\. Use JSON-like types: str, int, float, bool, list, dict, Literal, Enum, typing_extensions\.TypedDict, dataclasses or pydantic models\.$",
        ):
            tool(f)

    @pytest.mark.skipif(
        sys.version_info >= (3, 12),
        reason="pydantic takes typing.TypedDict on 3.12+ (test_storable_io pins that it works)",
    )
    def test_typing_typed_dict_on_311(self) -> None:
        """typing.TypedDict is refused on Python < 3.12 (pydantic needs typing_extensions')."""

        class Old(typing.TypedDict):
            a: int

        def f(old: Old) -> None: ...

        with pytest.raises(InvalidTool, match=r"typing_extensions\.TypedDict"):
            tool(f)

    def test_unresolvable_annotation(self) -> None:
        """An annotation naming a type that cannot be found says where to define it."""

        def f(a: Missing) -> None: ...  # type: ignore[name-defined] # noqa: F821

        with pytest.raises(
            InvalidTool,
            match=r"^Cannot resolve the annotations of tool 'f' \(NameError: name 'Missing' is not defined\); import or define the types it names before the tool is defined\.$",
        ):
            tool(f)

    def test_local_types_resolve(self) -> None:
        """Types defined in the function that defines the tool resolve (annotations are strings here)."""

        class Local(TypedDict):
            a: int

        @tool
        def f(value: Local) -> int:
            return value["a"]

        @tool(name="g")
        def g(value: Local) -> int:
            return value["a"]

        assert f.parameters["properties"]["value"]["properties"] == {"a": {"type": "integer"}}
        assert invoke(g, {"value": {"a": 4}}).content == "4"

    def test_not_callable(self) -> None:
        """tool() of a non-callable is a TypeError saying how to make a tool."""
        with pytest.raises(
            TypeError,
            match=r"^tool\(\) takes a function \(got 3 that is an 'int'\)\. Write @tool above a "
            r"def, @tool\(timeout=\.\.\.\) to set an option, or tool\(fn\)\.$",
        ):
            tool(3)  # type: ignore[call-overload]

    def test_a_name_where_the_function_goes(self) -> None:
        """tool("name") (the name passed where the function goes) says how to name a tool."""
        with pytest.raises(
            TypeError,
            match=r"^tool\(\) takes a function \(got 'lookup' that is a 'str'\); to name the "
            r"tool, write @tool\(name='lookup'\) above the def, or tool\(fn, name='lookup'\)\.$",
        ):
            tool("lookup")  # type: ignore[call-overload]
        with pytest.raises(TypeError, match=r"^tool\(\) takes a function \(got 'lookup'"):
            tool(timeout=5)("lookup")  # type: ignore[arg-type]

    def test_a_tool_made_already(self) -> None:
        """tool() of a Tool said it 'has no __name__'; it says the Tool is made and how to
        change its options."""

        @tool
        def lookup(key: str) -> str:
            return key

        message = (
            r"^tool\(\) takes the plain function, and got the Tool 'lookup' made already "
            r"\(is @tool applied twice\?\)\. Use the Tool as it is \(tools=\[lookup\]\), or "
            r"change an option with attrs\.evolve\(lookup, timeout=5\)\.$"
        )
        with pytest.raises(InvalidTool, match=message):
            tool(lookup)
        with pytest.raises(InvalidTool, match=message):
            tool(timeout=5)(lookup)


class TestInvoke:
    def test_sync_runs_in_a_thread_async_in_trio(self) -> None:
        """Sync functions run in a worker thread, async ones in the trio thread."""
        main = threading.get_ident()

        @tool
        def sync() -> bool:
            return threading.get_ident() == main

        @tool
        async def asyn() -> bool:
            return threading.get_ident() == main

        assert invoke(sync, {}).content == "false"
        assert invoke(asyn, {}).content == "true"

    @pytest.mark.parametrize(
        ("seconds", "error"),
        [
            (0.01, "RuntimeError: no running event loop"),
            (0, "TypeError: trio.run received unrecognized yield message None."),
        ],
    )
    def test_an_async_tool_awaiting_asyncio_tells_how_to_use_the_programs_loop(
        self, caplog: pytest.LogCaptureFixture, seconds: float, error: str
    ) -> None:
        """An async tool that awaits an asyncio client (a chat platform's, aiohttp) fails on
        the trio loop: the model reads it as any exception, and a warning tells the developer
        why and how to run it on their own loop (there was only the bare error in the tool
        result)."""

        @tool
        async def post(text: str) -> str:
            """Post it."""
            await asyncio.sleep(seconds)
            return "posted"

        with caplog.at_level(logging.WARNING, logger="amber.tools"):
            outcome = invoke(post, {"text": "hi"})
        assert outcome.error_type == "exception"
        assert outcome.content.startswith(error)
        (record,) = caplog.records
        assert record.getMessage().startswith(
            f"tool 'post' is an async function that used asyncio ({error}"
        )
        assert record.getMessage().endswith(
            "), but async tools run on Amber's own trio loop, where no asyncio loop runs. To "
            "use your program's asyncio clients, make it a sync tool (def, not async def) that "
            "runs the coroutine on your loop and waits: "
            "asyncio.run_coroutine_threadsafe(coro, loop).result() (docs/asyncio.md)."
        )

    def test_str_result(self) -> None:
        """A str result is the content as is; the summary is its first non-empty line."""

        @tool
        def f(name: str) -> str:
            return f"\n  hello {name}  \nsecond"

        outcome = invoke(f, {"name": "ada"})
        assert outcome == attrs.evolve(
            ToolOutcome(content="\n  hello ada  \nsecond", summary="hello ada"),
            duration_ms=outcome.duration_ms,
        )
        assert outcome.duration_ms > 0

    def test_summary_is_one_short_line(self) -> None:
        """The default summary is the first non-empty line, cut to 200 characters."""
        outcome = invoke(tool(name="f")(lambda: "\n" + "w" * 300 + "\nmore"), {})
        assert outcome.summary == "w" * 199 + "…"
        assert invoke(tool(name="f")(lambda: " \n "), {}).summary is None

    @pytest.mark.parametrize(
        ("value", "text"),
        [
            ({"a": [1, 2.5, None]}, '{"a":[1,2.5,null]}'),
            (None, "null"),
            (7, "7"),
            ((1, "x"), '[1,"x"]'),
            (Color.RED, '"red"'),
            (Book(title="t"), '{"title":"t","pages":1}'),
            (Pair(1, {2}), '{"left":1,"right":[2]}'),
            (Reply(text="hi"), '{"text":"hi"}'),
            (b"bytes", '"bytes"'),
            ({1: "int key"}, '{"1":"int key"}'),
            (datetime.date(2026, 5, 27), '"2026-05-27"'),
            (2**70, "1180591620717411303424"),
            (object, "\"<class 'object'>\""),
        ],
    )
    def test_non_str_results_become_json(self, value: Any, text: str) -> None:
        """Anything else becomes JSON; unknown objects fall back to their str()."""
        assert invoke(tool(name="f")(lambda: value), {}).content == text

    def test_tool_may_return_an_outcome(self) -> None:
        """A returned ToolOutcome is kept (its error and summary); invoke fills in the duration."""

        @tool
        def f() -> ToolOutcome:
            return ToolOutcome(content="no", is_error=True, error_type="exit_status", summary="s")

        outcome = invoke(f, {})
        assert (outcome.content, outcome.error_type, outcome.summary) == ("no", "exit_status", "s")
        assert outcome.duration_ms > 0

    def test_invalid_arguments(self) -> None:
        """Missing, unknown and mistyped arguments are one error, readable by a model."""

        @tool
        def add(a: int, b: int, tags: list[str] | None = None) -> int:
            return a + b

        outcome = invoke(add, {"a": "one", "c": 3, "tags": ["x", 2]})
        assert (outcome.is_error, outcome.error_type) == (True, "invalid_arguments")
        assert outcome.content == (
            "Invalid arguments for tool 'add' (4 problems):\n"
            "- 'a': Input should be a valid integer, unable to parse string as an integer "
            "(got 'one'); expected integer.\n"
            "- 'b': missing, but it is required; expected integer.\n"
            "- 'tags[1]': Input should be a valid string (got 2).\n"
            "- 'c': not a parameter of this tool; leave it out.\n"
            "Required arguments: a, b; all arguments: a, b, tags. "
            "Fix the arguments and call 'add' again."
        )
        assert outcome.summary == "Invalid arguments for tool 'add' (4 problems):"

    def test_expected_types_are_described(self) -> None:
        """The expected part names enum values, unions and element types."""

        def f(color: Color, n: int | None, items: list[int], at: Point) -> None: ...

        outcome = invoke(tool(f), {})
        assert outcome.content.splitlines()[1:5] == [
            '- \'color\': missing, but it is required; expected one of "red", "blue".',
            "- 'n': missing, but it is required; expected integer or null.",
            "- 'items': missing, but it is required; expected array of integer.",
            "- 'at': missing, but it is required; expected object with keys x, y.",
        ]

    def test_nested_missing_key(self) -> None:
        """A missing key inside a nested object is named by its path."""

        def f(at: Point) -> None: ...

        outcome = invoke(tool(f), {"at": {"x": 1}})
        assert outcome.content.splitlines()[1] == "- 'at.y': missing, but it is required."

    def test_lax_coercion(self) -> None:
        """Arguments are validated leniently: "3" is accepted for an int, as pydantic's lax mode does."""

        @tool
        def double(n: int) -> int:
            return 2 * n

        assert invoke(double, {"n": "3"}).content == "6"

    def test_arguments_not_a_mapping(self) -> None:
        """Arguments that are not an object are invalid_arguments, not a crash."""

        def f(a: int) -> None: ...

        outcome = invoke(tool(f), [1])
        assert outcome.error_type == "invalid_arguments"
        assert outcome.content == (
            "Invalid arguments for tool 'f': they must be a JSON object mapping parameter "
            "names to values (got list [1]). Required arguments: a; all arguments: a."
        )

    def test_validator_raising_other_errors(self) -> None:
        """A custom validator that raises a non-validation error still gives invalid_arguments."""

        def boom(value: int) -> int:
            raise KeyError("nope")

        def f(n: Annotated[int, pydantic.AfterValidator(boom)]) -> None: ...

        outcome = invoke(tool(f), {"n": 1})
        assert outcome.error_type == "invalid_arguments"
        assert outcome.content.startswith("Invalid arguments for tool 'f': KeyError: 'nope'.")

    def test_exception(self) -> None:
        """An exception is an error outcome: its type, message and the tool's frames, not trio's."""

        def helper(x: str) -> None:
            raise ValueError(f"bad {x}")

        @tool
        def f(x: str) -> None:
            helper(x)

        outcome = invoke(f, {"x": "input"})
        assert (outcome.is_error, outcome.error_type) == (True, "exception")
        assert outcome.summary == "ValueError: bad input"
        lines = outcome.content.splitlines()
        assert lines[:2] == ["ValueError: bad input", "Traceback (innermost last):"]
        assert "in f" in lines[2]
        assert "in helper" in lines[4]
        assert "trio" not in outcome.content
        assert "outcome" not in outcome.content

    def test_async_exception_and_group(self) -> None:
        """An async tool's exception, even one wrapped by its own nursery, names the real error."""

        async def fail() -> None:
            raise RuntimeError("inner")

        @tool
        async def f() -> None:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(fail)

        outcome = invoke(f, {})
        assert outcome.error_type == "exception"
        assert outcome.content.startswith("RuntimeError: inner\nTraceback")

    def test_exception_without_message_and_system_exit(self) -> None:
        """An exception with no message is its type name; SystemExit is caught too."""

        def exit_() -> None:
            raise SystemExit(2)

        assert invoke(tool(name="f")(exit_), {}).summary == "SystemExit: 2"

        def bare() -> None:
            raise LookupError

        assert invoke(tool(bare), {}).summary == "LookupError"

    def test_other_base_exceptions_are_failures(self) -> None:
        """A tool raising a BaseException that is not trio's cancellation (asyncio's
        CancelledError from a wrapped client, a custom BaseException) fails that call only:
        it once escaped and stopped the effects loop of every session."""
        import asyncio

        class Abort(BaseException):
            pass

        @tool
        async def wrapped_client() -> None:
            raise asyncio.CancelledError("upstream client cancelled")

        @tool
        def aborts() -> None:
            raise Abort("stop")

        @tool
        async def grouped() -> None:
            raise BaseExceptionGroup("many", [Abort("one"), ValueError("two")])

        outcome = invoke(wrapped_client, {})
        assert outcome.error_type == "exception"
        assert outcome.summary == "CancelledError: upstream client cancelled"
        assert invoke(aborts, {}).summary.endswith("Abort: stop")
        assert invoke(grouped, {}).error_type == "exception"

    def test_trio_cancellation_still_propagates(self) -> None:
        """The call's own cancellation (an interrupt) is not turned into a result."""

        @tool
        async def slow() -> str:
            await trio.sleep(10)
            return "late"

        async def main() -> object:
            with trio.move_on_after(0.01):
                return await slow.invoke({})
            return "cancelled"

        assert trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0)) == "cancelled"

    def test_keyboard_interrupt_propagates(self) -> None:
        """KeyboardInterrupt is not a tool failure; it goes up."""

        @tool
        async def f() -> None:
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            invoke(f, {})

    def test_async_timeout(self) -> None:
        """An async tool past its timeout is cancelled and answered as a timeout."""
        cancelled = []

        @tool(timeout=0.2)
        async def slow() -> str:
            try:
                await trio.sleep(100)
            except trio.Cancelled:
                cancelled.append(trio.current_time())
                raise
            return "late"

        outcome = invoke(slow, {}, autojump=True)
        assert outcome.duration_ms == pytest.approx(200.0)
        assert (outcome.is_error, outcome.error_type) == (True, "timeout")
        assert outcome.content == (
            "Tool 'slow' did not finish within its time limit of 0.2 s and was stopped; it may "
            "have run in part, so check before calling it again. Try a smaller or simpler "
            "request; the limit is set where the tool is defined (tool(timeout=...))."
        )
        assert cancelled == [pytest.approx(0.2)]

    def test_sync_timeout(self) -> None:
        """A blocked sync tool times out promptly; its thread is abandoned, not waited for."""
        release = threading.Event()

        @tool(timeout=0.2)
        def blocked() -> str:
            release.wait(600)
            return "late"

        started = time.monotonic()
        try:
            outcome = invoke(blocked, {})
        finally:
            release.set()
        assert outcome.error_type == "timeout"
        assert time.monotonic() - started < BOUND
        # Its thread runs on (it cannot be stopped): the model is told it may have run.
        assert outcome.content == (
            "Tool 'blocked' did not finish within its time limit of 0.2 s and was left running "
            "in its thread (a sync tool cannot be stopped): it may have run, in part or in "
            "full, and may still finish, so check before calling it again. Try a smaller or "
            "simpler request; the limit is set where the tool is defined (tool(timeout=...))."
        )

    def test_an_abandoned_sync_call_says_its_result_is_dropped_when_it_ends(self) -> None:
        """A sync call cancelled while its thread runs (here, its time limit) logs, once its
        function returns, that what it returned is not recorded: it used to be dropped
        without a word."""
        release = threading.Event()

        @tool(timeout=0.2)
        def abandoned_deploy() -> str:
            assert release.wait(600)  # until the run was abandoned
            return "deployed"

        dropped = Said("tool abandoned_deploy: ")
        logging.getLogger("amber.tools").addHandler(dropped)
        try:
            assert invoke(abandoned_deploy, {}).error_type == "timeout"
            release.set()
            assert dropped.event.wait(BOUND)
        finally:
            release.set()
            logging.getLogger("amber.tools").removeHandler(dropped)
        assert dropped.said == [
            "tool abandoned_deploy: a call cancelled while it ran in its thread (its turn stopped "
            "waiting for it, or its time limit passed) has ended; its result is not recorded: "
            "'deployed'"
        ]

    def test_an_abandoned_call_whose_result_has_no_repr_still_says_it_ended(self) -> None:
        """The line shows what the call returned only once it was abandoned (a call's
        result is not repr'd on every run: a result nested too deep failed its call), and a
        repr that fails is named instead."""
        release = threading.Event()
        nested: list[object] = []
        for _ in range(100_000):
            nested = [nested]

        @tool(timeout=0.2)
        def deep_deploy() -> object:
            assert release.wait(600)  # until the run was abandoned
            return nested

        dropped = Said("tool deep_deploy: ")
        logging.getLogger("amber.tools").addHandler(dropped)
        try:
            assert invoke(deep_deploy, {}).error_type == "timeout"
            release.set()
            assert dropped.event.wait(BOUND)
        finally:
            release.set()
            logging.getLogger("amber.tools").removeHandler(dropped)
        (said,) = dropped.said
        assert said.endswith(
            "its result is not recorded: (a list whose repr failed: RecursionError)"
        )

    def test_no_timeout(self) -> None:
        """timeout=None lets a tool run as long as it takes."""

        @tool(timeout=None)
        async def patient() -> str:
            await trio.sleep(10_000)
            return "done"

        outcome = invoke(patient, {}, autojump=True)
        assert outcome.content == "done"
        assert outcome.duration_ms == pytest.approx(10_000_000)

    def test_cancelling_an_async_tool(self) -> None:
        """A cancel scope around invoke cancels an async tool: trio.Cancelled, not an outcome."""
        seen: list[str] = []

        @tool(timeout=None)
        async def forever() -> None:
            try:
                await trio.sleep_forever()
            finally:
                seen.append("tool saw the cancel")

        async def main() -> float:
            with trio.move_on_after(0.1) as scope:
                try:
                    await forever.invoke({})
                except trio.Cancelled:
                    seen.append("invoke raised Cancelled")
                    raise
            assert scope.cancelled_caught
            return trio.current_time()

        started = time.monotonic()
        run(main)
        assert time.monotonic() - started < BOUND
        assert seen == ["tool saw the cancel", "invoke raised Cancelled"]

    def test_cancelling_a_sync_tool(self) -> None:
        """Cancelling a blocked sync tool returns promptly (the thread is abandoned)."""
        release = threading.Event()

        @tool(timeout=None)
        def blocked() -> None:
            release.wait(600)

        async def main() -> bool:
            with trio.move_on_after(0.1) as scope:
                await blocked.invoke({})
            return scope.cancelled_caught

        started = time.monotonic()
        try:
            assert run(main)
        finally:
            release.set()
        assert time.monotonic() - started < BOUND

    def test_truncation_keeps_head_and_tail(self) -> None:
        """Content past max_output_chars keeps its start and end around a marker that counts the cut."""

        @tool(max_output_chars=100)
        def long() -> str:
            return "a" * 1000 + "b" * 1000

        outcome = invoke(long, {})
        head, _, tail = outcome.content.partition("\n…[truncated ")
        assert outcome.truncated
        assert len(outcome.content) <= 100
        assert set(head) == {"a"}
        kept_tail = tail.split("]…\n")[1]
        assert set(kept_tail) == {"b"}
        assert tail.startswith(f"{2000 - len(head) - len(kept_tail)} chars]…\n")
        assert abs(len(head) - len(kept_tail)) <= 1

    def test_errors_are_truncated_too(self) -> None:
        """An exception with a huge message is cut like any content."""

        def huge() -> None:
            raise ValueError("x" * 10_000)

        outcome = invoke(tool(huge, max_output_chars=200), {})
        assert (outcome.error_type, outcome.truncated) == ("exception", True)
        assert len(outcome.content) <= 200
        assert outcome.content.startswith("ValueError: xxx")

    def test_short_content_is_untouched(self) -> None:
        """Content exactly at the limit is not cut."""
        outcome = invoke(tool(name="f", max_output_chars=100)(lambda: "z" * 100), {})
        assert (outcome.content, outcome.truncated) == ("z" * 100, False)


class TestToolOutcome:
    def test_error_type_goes_with_is_error(self) -> None:
        """is_error and error_type are set together or not at all."""
        with pytest.raises(
            ValueError,
            match=r"^A ToolOutcome has an error_type exactly when is_error is True \(got is_error=True, error_type=None\); pass both or neither\.$",
        ):
            ToolOutcome(content="x", is_error=True)
        with pytest.raises(ValueError, match=r"\(got is_error=False, error_type='timeout'\)"):
            ToolOutcome(content="x", error_type="timeout")

    def test_error_types_are_documented(self) -> None:
        """ERROR_TYPES names every error type Amber produces."""
        assert set(ERROR_TYPES) == {
            "invalid_arguments",
            "unknown_tool",
            "timeout",
            "exception",
            "exit_status",
            "denied",
        }


def greet(name: str, times: int = 1) -> str:
    """Greet someone.

    Args:
        name: Who.
        times: How often.
    """
    return " ".join([f"hi {name}"] * times)


async def shout(text: str) -> str:
    return text.upper()


class TestToolbox:
    def test_collection(self) -> None:
        """A toolbox wraps plain functions, sorts by name and answers lookups."""
        box = Toolbox([shout, tool(greet, timeout=1)])
        assert box.names() == ("greet", "shout")
        assert len(box) == 2
        assert "greet" in box
        assert "nope" not in box
        assert [t.name for t in box] == ["greet", "shout"]
        greet_tool = box.get("greet")
        assert greet_tool is not None
        assert greet_tool.timeout == 1.0
        assert box.get("nope") is None
        assert [spec.name for spec in box.specs()] == ["greet", "shout"]
        assert box.specs()[0] == greet_tool.spec()
        assert repr(box) == "Toolbox(['greet', 'shout'])"
        assert Toolbox(box).names() == box.names()

    def test_duplicate_names(self) -> None:
        """Two tools with one name are refused, naming both."""
        with pytest.raises(
            InvalidTool,
            match=r"^Two tools are named 'greet': tools\[0\] \(<function greet at .*>\) and tools\[1\] \(<function shout at .*>\); give one another name with tool\(fn, name=\.\.\.\)\.$",
        ):
            Toolbox([greet, tool(shout, name="greet")])

    def test_run(self) -> None:
        """run takes parsed arguments or the model's JSON text (empty text is no arguments)."""
        box = Toolbox([greet, tool(name="noargs")(lambda: "ok")])
        assert run(lambda: box.run("greet", {"name": "ada", "times": 2})).content == "hi ada hi ada"
        assert run(lambda: box.run("greet", '{"name": "bob"}')).content == "hi bob"
        assert run(lambda: box.run("noargs", "  ")).content == "ok"

    def test_unknown_tool(self) -> None:
        """An unknown tool is an error outcome listing the known ones."""
        outcome = run(lambda: Toolbox([greet, shout]).run("gret", {}))
        assert (outcome.is_error, outcome.error_type) == (True, "unknown_tool")
        assert outcome.content == "There is no tool named 'gret'. The tools are: greet, shout."
        assert outcome.summary == outcome.content
        empty = run(lambda: Toolbox().run("x", "{}"))
        assert (
            empty.content
            == "There is no tool named 'x'. The tools are: none (this session has no tools)."
        )

    def test_malformed_json(self) -> None:
        """Malformed JSON is invalid_arguments with the parse error and an excerpt."""
        outcome = run(lambda: Toolbox([greet]).run("greet", '{"name": "ada"'))
        assert outcome.error_type == "invalid_arguments"
        assert outcome.content == (
            "The arguments for tool 'greet' are not valid JSON (unexpected end of data: line 1 "
            'column 15 (char 14)); got \'{"name": "ada"\'. Send one JSON object, e.g. '
            '{"name": "value"}.'
        )

    def test_json_that_is_not_an_object(self) -> None:
        """JSON that parses but is not an object is invalid_arguments."""
        outcome = run(lambda: Toolbox([greet]).run("greet", '["ada"]'))
        assert outcome.content == (
            "The arguments for tool 'greet' must be a JSON object (got list '[\"ada\"]'). "
            "Send one JSON object."
        )

    def test_errors_from_every_path_are_known_types(self) -> None:
        """Every error outcome's error_type is one of ERROR_TYPES."""

        def boom() -> None:
            raise ValueError

        box = Toolbox([greet, boom])
        calls: list[tuple[str, Any]] = [
            ("nope", {}),
            ("greet", "{"),
            ("greet", {}),
            ("boom", {}),
        ]
        for name, arguments in calls:
            outcome = run(functools.partial(box.run, name, arguments))
            assert outcome.error_type in ERROR_TYPES


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)
argument_dicts = st.dictionaries(
    st.sampled_from(["text", "count", "flags", "extra"]) | st.text(max_size=5),
    json_values,
    max_size=4,
)


@tool
def typed(text: str, count: int = 1, flags: list[bool] | None = None) -> str:
    """A tool with a few typed parameters."""
    return text * count


TYPED = Toolbox([typed])


class TestToolboxProperties:
    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        name=st.sampled_from(["typed", "other"]), arguments=argument_dicts | st.text(max_size=30)
    )
    def test_run_never_raises(self, name: str, arguments: dict[str, Any] | str) -> None:
        """For any JSON argument object (or any text), run returns an outcome and never raises."""
        outcome = run(lambda: TYPED.run(name, arguments))
        assert isinstance(outcome, ToolOutcome)
        assert outcome.is_error == (outcome.error_type is not None)
        assert outcome.error_type is None or outcome.error_type in ERROR_TYPES
        assert len(outcome.content) <= typed.max_output_chars


class TestBaseExceptionInRuntime:
    def test_a_tool_raising_a_base_exception_fails_its_call_only(self) -> None:
        """asyncio's CancelledError from a tool once stopped the effects loop: its session
        hung and every other session's turn failed with EffectsStopped."""
        import asyncio

        from actors import Runtime, ScriptedModel, Settings, call, reply
        from runtime import Status

        @tool(timeout=5)
        async def lookup(q: str) -> str:
            """Look something up.

            Args:
                q: The query.
            """
            raise asyncio.CancelledError("upstream client cancelled")

        model = ScriptedModel([call("lookup", {"q": "a"}), reply("done")], fallback=reply("ok"))
        with Runtime(
            model=model, tools=[lookup], store=":memory:", settings=Settings(passivate_after=None)
        ) as rt:
            rt.send("s1", "go")
            first = rt.wait_idle("s1", timeout=60)
            rt.send("s2", "hello")
            second = rt.wait_idle("s2", timeout=60)
        result = next(m for m in first.messages if m.tool_call_id is not None)
        assert result.is_error
        assert result.content.startswith("CancelledError: upstream client cancelled")
        assert [m.content for m in first.messages][-1] == "done"
        assert second.messages[0].status is Status.PROCESSED
        assert second.messages[-1].content == "ok"


class TestGeneratorTools:
    """A tool that yields its result piece by piece is drawn like a function runs."""

    def test_sync_generator_is_drawn_in_a_worker_thread(self) -> None:
        """A sync generator's body runs in the worker thread, not the trio thread; its
        items become a JSON list."""
        main = threading.get_ident()

        @tool
        def chunks() -> Iterator[bool]:
            yield threading.get_ident() == main
            yield threading.get_ident() == main

        assert invoke(chunks, {}).content == "[false,false]"

    def test_sync_generator_times_out(self) -> None:
        """A sync generator that blocks between items times out under the tool's limit."""
        release = threading.Event()

        @tool(timeout=0.2)
        def slow() -> Iterator[str]:
            yield "first"
            release.wait(600)
            yield "late"

        started = time.monotonic()
        try:
            outcome = invoke(slow, {})
        finally:
            release.set()
        assert outcome.error_type == "timeout"
        assert time.monotonic() - started < BOUND
        # Its thread runs on (it cannot be stopped): the model is told it may have run.
        assert outcome.content == (
            "Tool 'slow' did not finish within its time limit of 0.2 s and was left running "
            "in its thread (a sync tool cannot be stopped): it may have run, in part or in "
            "full, and may still finish, so check before calling it again. Try a smaller or "
            "simpler request; the limit is set where the tool is defined (tool(timeout=...))."
        )

    def test_async_generator_is_drawn(self) -> None:
        """An async generator's items become a JSON list (not its repr)."""

        @tool
        async def pieces(n: int) -> typing.AsyncIterator[int]:
            for i in range(n):
                await trio.sleep(0)
                yield i

        assert invoke(pieces, {"n": 3}).content == "[0,1,2]"

    def test_async_generator_times_out(self) -> None:
        """An async generator that hangs between items times out under the tool's limit."""

        @tool(timeout=5)
        async def hangs() -> typing.AsyncIterator[str]:
            yield "first"
            await trio.sleep_forever()
            yield "never"

        outcome = invoke(hangs, {}, autojump=True)
        assert outcome.error_type == "timeout"
        assert outcome.duration_ms == pytest.approx(5000)
