"""Check plain values against the official SDKs' request types, strictly.

pydantic's ``TypeAdapter`` over the SDKs' TypedDicts lets unknown keys
through, so this walks the types itself: a TypedDict must have its required
keys and no others; a pydantic model (google-genai) must use known fields
(by name or alias); unions must match one member; literals, lists, dicts and
scalars are checked all the way down. ``conform(value, annotation)`` returns
the problems found, each with the path to the value.
"""

from __future__ import annotations

import collections.abc
import enum
import types
import typing
from typing import Any

import pydantic
import typing_extensions

_TYPED_DICT_META = (type(typing.TypedDict("_A", {})), type(typing_extensions.TypedDict("_B", {})))
_hints_cache: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _hints_cache:
        _hints_cache[cls] = typing_extensions.get_type_hints(cls, include_extras=True)
    return _hints_cache[cls]


def _strip(annotation: Any) -> tuple[Any, bool | None]:
    """Unwrap Annotated/Required/NotRequired; say which of the last two it was."""
    required: bool | None = None
    while True:
        origin = typing_extensions.get_origin(annotation)
        if origin in (typing_extensions.Required, typing.Required):
            required, annotation = True, typing_extensions.get_args(annotation)[0]
        elif origin in (typing_extensions.NotRequired, typing.NotRequired):
            required, annotation = False, typing_extensions.get_args(annotation)[0]
        elif origin in (typing_extensions.Annotated, typing.Annotated):
            annotation = annotation.__origin__
        elif isinstance(
            annotation, typing.TypeAliasType if hasattr(typing, "TypeAliasType") else ()
        ):
            annotation = annotation.__value__
        else:
            return annotation, required


def conform(value: Any, annotation: Any, path: str = "$") -> list[str]:
    """Problems that keep ``value`` from being an instance of ``annotation`` (empty: fine)."""
    annotation, _ = _strip(annotation)
    if annotation in (Any, object):
        return []
    if annotation is None or annotation is type(None):
        return [] if value is None else [f"{path}: expected None, got {value!r}"]
    origin = typing_extensions.get_origin(annotation)
    args = typing_extensions.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        failures = []
        for member in args:
            problems = conform(value, member, path)
            if not problems:
                return []
            failures.append(problems)
        # The member that got furthest (deepest path) explains the mismatch best.
        best = max(failures, key=lambda ps: (max(len(p.split(": ")[0]) for p in ps), -len(ps)))
        return [f"{path}: matches no member of {annotation}; closest: {best}"]
    if origin in (typing.Literal, typing_extensions.Literal):
        return [] if value in args else [f"{path}: expected one of {args!r}, got {value!r}"]
    if isinstance(annotation, _TYPED_DICT_META):
        return _typed_dict(value, annotation, path)
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return _model(value, annotation, path)
    if origin in (
        list,
        collections.abc.Iterable,
        collections.abc.Sequence,
        typing.Iterable,
        typing.Sequence,
        typing.List,  # noqa: UP006
    ):
        if not isinstance(value, list):
            return [f"{path}: expected a list, got {type(value).__name__}"]
        out: list[str] = []
        for i, item in enumerate(value):
            out += conform(item, args[0] if args else Any, f"{path}[{i}]")
        return out
    if origin in (dict, collections.abc.Mapping, typing.Dict):  # noqa: UP006
        if not isinstance(value, dict):
            return [f"{path}: expected a dict, got {type(value).__name__}"]
        out = []
        for key, item in value.items():
            out += conform(key, args[0] if args else Any, f"{path}.<key>")
            out += conform(item, args[1] if args else Any, f"{path}.{key}")
        return out
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        allowed = {m.value for m in annotation} | set(annotation)
        return [] if value in allowed else [f"{path}: {value!r} is not a {annotation.__name__}"]
    if annotation is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return [] if ok else [f"{path}: expected a number, got {value!r}"]
    if annotation is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return [] if ok else [f"{path}: expected an int, got {value!r}"]
    if isinstance(annotation, type):
        if isinstance(value, annotation):
            return []
        return [f"{path}: expected {annotation.__name__}, got {type(value).__name__}"]
    return [f"{path}: cannot check against {annotation!r}"]


def _typed_dict(value: Any, cls: type, path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: expected a {cls.__name__} dict, got {type(value).__name__}"]
    hints = _hints(cls)
    total = getattr(cls, "__total__", True)
    out = [f"{path}: unknown key {key!r} for {cls.__name__}" for key in value if key not in hints]
    for key, hint in hints.items():
        inner, required = _strip(hint)
        if required is None:
            required = total
        if key not in value:
            if required:
                out.append(f"{path}: {cls.__name__} needs key {key!r}")
            continue
        out += conform(value[key], inner, f"{path}.{key}")
    return out


def _model(value: Any, cls: type[pydantic.BaseModel], path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: expected a {cls.__name__} dict, got {type(value).__name__}"]
    fields = {}
    for name, field in cls.model_fields.items():
        fields[name] = field
        if field.alias:
            fields[field.alias] = field
    out = []
    for key, item in value.items():
        field = fields.get(key)
        if field is None:
            out.append(f"{path}: unknown field {key!r} for {cls.__name__}")
            continue
        out += conform(item, field.annotation, f"{path}.{key}")
    for name, field in cls.model_fields.items():
        if field.is_required() and name not in value and field.alias not in value:
            out.append(f"{path}: {cls.__name__} needs field {name!r}")
    return out
