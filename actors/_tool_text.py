"""What a tool call gives back: its value as text, clipped output, exceptions and
argument errors in words a model can act on, and text a store can keep."""

from __future__ import annotations

import json
import os
import traceback
from collections.abc import Iterable, Mapping
from typing import Any

import attrs
import orjson
import outcome
import pydantic
import trio

from runtime import AmberError, ToolOutcome, storable_text

__all__ = [
    "MAX_RESULT_DEPTH",
    "ResultTooDeep",
    "bad_arguments",
    "check_depth",
    "clip",
    "describe_exception",
    "exception_line",
    "excerpt",
    "expected_of",
    "explain",
    "first_line",
    "required_line",
    "storable",
    "text_of",
    "used_asyncio",
]

_SUMMARY_CHARS = 200
_TRACEBACK_FRAMES = 3
# Frames from these files are plumbing, not the tool's code; tracebacks start after them.
_PLUMBING = (
    os.path.dirname(trio.__file__),
    os.path.dirname(outcome.__file__),
    __file__,
    os.path.join(os.path.dirname(__file__), "_tools.py"),
    os.path.join(os.path.dirname(__file__), "_toolbox.py"),
    os.path.join(os.path.dirname(__file__), "_shell.py"),
)


def bad_arguments(content: str) -> ToolOutcome:
    return ToolOutcome(content=content, is_error=True, error_type="invalid_arguments")


def required_line(schema: Mapping[str, Any]) -> str:
    required = list(schema.get("required", ()))
    names = list(schema.get("properties", {}))
    return (
        f"Required arguments: {', '.join(required) or 'none'}; "
        f"all arguments: {', '.join(names) or 'none'}."
    )


def explain(name: str, schema: Mapping[str, Any], error: pydantic.ValidationError) -> str:
    """Pydantic's validation errors, in words a model can act on."""
    properties = schema.get("properties", {})
    lines = []
    for item in error.errors(include_url=False):
        loc = item["loc"]
        where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)
        where = repr(where.removeprefix(".")) if loc else "the arguments"
        expected = ""
        if len(loc) == 1 and loc[0] in properties:
            expected = f"; expected {expected_of(properties[loc[0]])}"
        if item["type"] == "missing":
            lines.append(f"- {where}: missing, but it is required{expected}.")
        elif item["type"] == "extra_forbidden":
            lines.append(f"- {where}: not a parameter of this tool; leave it out.")
        else:
            got = excerpt(repr(item.get("input")))
            lines.append(f"- {where}: {item['msg']} (got {got}){expected}.")
    count = len(lines)
    return (
        f"Invalid arguments for tool {name!r} ({count} problem{'s' * (count != 1)}):\n"
        + "\n".join(lines)
        + f"\n{required_line(schema)} Fix the arguments and call {name!r} again."
    )


def expected_of(schema: Mapping[str, Any]) -> str:
    """A short phrase for what a schema accepts: 'integer', 'array of string', …"""
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(value) for value in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(expected_of(option) for option in schema[key])
    kind = schema.get("type")
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        return f"array of {expected_of(schema['items'])}"
    if kind == "object" and schema.get("properties"):
        return f"object with keys {', '.join(schema['properties'])}"
    if isinstance(kind, list):
        return " or ".join(map(str, kind))
    return str(kind) if kind else "any JSON value"


def storable(outcome: ToolOutcome) -> ToolOutcome:
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


MAX_RESULT_DEPTH = 200
"""How deeply a tool's return value may nest: orjson has no limit for tuples, and a few
thousand levels crash the process instead of raising."""


class ResultTooDeep(AmberError, ValueError):
    """A tool returned a value nested more than 200 levels deep (an error result)."""


def check_depth(value: Any) -> None:
    """Raise ``ResultTooDeep`` if ``value`` nests more than ``MAX_RESULT_DEPTH`` levels."""
    stack = [(value, 0)]
    seen = 0
    while stack:
        item, depth = stack.pop()
        if depth > MAX_RESULT_DEPTH:
            raise ResultTooDeep(
                f"the tool's result nests more than {MAX_RESULT_DEPTH} levels deep; return "
                "something flatter (or text)"
            )
        seen += 1
        if seen > 1_000_000:  # a huge flat value: the size limit deals with it later
            return
        if isinstance(item, (list, tuple, set, frozenset)):
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, Mapping):
            stack.extend((child, depth + 1) for child in item.values())


def text_of(value: Any) -> str:
    """A return value as the text the model reads: str as is, anything else as JSON."""
    if isinstance(value, str):
        return value
    check_depth(value)
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


def clip(head: str, tail: str, missing: int, limit: int) -> tuple[str, int]:
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


def first_line(text: str) -> str | None:
    line = next((line.strip() for line in text.splitlines() if line.strip()), None)
    return None if line is None else excerpt(line, _SUMMARY_CHARS)


def excerpt(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def exception_line(exc: BaseException) -> str:
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def describe_exception(exc: BaseException) -> str:
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
    text = exception_line(exc)
    if frames:
        text += "\nTraceback (innermost last):\n" + "".join(_frame(frame) for frame in frames)
    return text.rstrip("\n")


def _frame(frame: traceback.FrameSummary) -> str:
    where = f'  File "{frame.filename}", line {frame.lineno}, in {frame.name}\n'
    line = (frame.line or "").strip()
    return where + (f"    {line}\n" if line else "")


_ASYNCIO_ERRORS = ("no running event loop", "no current event loop", "unrecognized yield message")
"""What asyncio code says when it runs on trio (``asyncio.get_running_loop`` and the like,
or a bare ``yield`` trio does not know)."""


def used_asyncio(exc: BaseException) -> bool:
    """Whether ``exc`` (or one it came from) is asyncio code finding no asyncio loop."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, RuntimeError | TypeError) and any(
            text in str(cause) for text in _ASYNCIO_ERRORS
        ):
            return True
        cause = cause.__cause__ or cause.__context__
    return False
