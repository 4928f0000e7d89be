"""Tool arguments from a JSON schema: ``arguments_for`` and ``invalid_arguments_for``.

Covers the schemas ``@tool`` derives (and most hand-written ones): objects
with ``properties``/``required``/``additionalProperties``, arrays, strings,
numbers, integers, booleans, null, ``enum``, ``const``, ``anyOf``/``oneOf``,
local ``$ref``s into ``$defs``, and the usual bounds. Anything else draws
any JSON value, so an unusual schema still gives arguments to try.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

from .._article import article
from ._strategies import INT64_MAX, INT64_MIN, json_values

__all__ = ["arguments_for", "invalid_arguments_for"]

_KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8)


def arguments_for(
    schema: Mapping[str, Any], *, text: st.SearchStrategy[str] | None = None
) -> st.SearchStrategy[dict[str, Any]]:
    """Argument objects that fit ``schema`` (a tool's ``parameters``).

    Optional properties are sometimes left out; strings stay short so runs
    stay fast; integers fit in 64 bits (what JSON stores can write) unless the
    schema's bounds allow only larger ones.

    Args:
        schema: the object schema.
        text: draws strings that have no length bounds (default: any text
            up to 20 characters); a few fixed strings draw much faster.

    Raises:
        ValueError: ``schema`` is not an object schema.
    """
    if schema.get("type") != "object":
        raise ValueError(
            f"arguments_for() takes an object schema (a tool's parameters); got {dict(schema)!r}."
        )
    return _object(schema, _Context(schema.get("$defs", {}), text), depth=0)


def invalid_arguments_for(
    schema: Mapping[str, Any], *, text: st.SearchStrategy[str] | None = None
) -> st.SearchStrategy[Any]:
    """Arguments that do not fit ``schema``: a required one missing, one of the wrong type,
    an unknown one (when ``additionalProperties`` is false), or not an object at all.

    A tool must answer each with an ``invalid_arguments`` error, never by raising.
    """
    properties: Mapping[str, Any] = schema.get("properties", {})
    required = [name for name in schema.get("required", []) if name in properties]
    valid = arguments_for(schema, text=text)
    options: list[st.SearchStrategy[Any]] = [
        st.one_of(st.lists(json_values(3), max_size=3), _integers(None, None), st.text(max_size=5)),
    ]
    if required:
        options.append(
            st.tuples(valid, st.sampled_from(required)).map(
                lambda pair: {k: v for k, v in pair[0].items() if k != pair[1]}
            )
        )
    typed = [name for name, sub in properties.items() if _wrong_value(sub) is not None]
    if typed:
        options.append(
            st.tuples(valid, st.sampled_from(typed)).map(
                lambda pair: {**pair[0], pair[1]: _wrong_value(properties[pair[1]])}
            )
        )
    if schema.get("additionalProperties") is False:
        options.append(
            st.tuples(valid, _KEYS.filter(lambda k: k not in properties), json_values(2)).map(
                lambda triple: {**triple[0], triple[1]: triple[2]}
            )
        )
    return st.one_of(options)


def _wrong_value(schema: Mapping[str, Any]) -> Any:
    """A value no sensible reading of ``schema`` accepts (None: cannot tell)."""
    kind = schema.get("type")
    if kind in ("integer", "number"):
        return "not a number"
    if kind == "boolean":
        return {"not": "a boolean"}
    if kind in ("string", "array"):
        return {"not": article(kind)}
    if kind == "object":
        return ["not an object"]
    return None


class _Context:
    def __init__(self, defs: Mapping[str, Any], text: st.SearchStrategy[str] | None) -> None:
        self.defs = defs
        self.text = text


def _resolve(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        found: Mapping[str, Any] = defs.get(ref.removeprefix("#/$defs/"), {})
        return found
    return schema


def _value(schema: Mapping[str, Any], context: _Context, depth: int) -> st.SearchStrategy[Any]:
    schema = _resolve(schema, context.defs)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(list(schema["enum"]))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return st.one_of([_value(option, context, depth) for option in schema[key]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([_value({**schema, "type": k}, context, depth) for k in kind])
    if kind == "string":
        if context.text is not None and "minLength" not in schema and "maxLength" not in schema:
            return context.text
        low = schema.get("minLength", 0)
        return st.text(min_size=low, max_size=max(low, min(schema.get("maxLength", 20), 20)))
    if kind == "integer":
        return _integers(_bound(schema, "minimum"), _bound(schema, "maximum"))
    if kind == "number":
        return st.floats(
            min_value=_bound(schema, "minimum"),
            max_value=_bound(schema, "maximum"),
            allow_nan=False,
            allow_infinity=False,
        )
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        low = schema.get("minItems", 0)
        items = schema.get("items", {})
        high = max(low, min(schema.get("maxItems", 3), 3 if depth < 3 else low))
        return st.lists(_value(items, context, depth + 1), min_size=low, max_size=high)
    if kind == "object":
        return _object(schema, context, depth + 1)
    return json_values(4)


def _integers(low: Any, high: Any) -> st.SearchStrategy[int]:
    """Integers between the schema's bounds that fit in 64 bits (a JSON store, orjson among
    them, cannot write larger ones); past 64 bits only when the schema allows nothing else."""
    lo = INT64_MIN if low is None else max(low, INT64_MIN)
    hi = INT64_MAX if high is None else min(high, INT64_MAX)
    if lo > hi:
        return st.integers(min_value=low, max_value=high)
    return st.integers(min_value=lo, max_value=hi)


def _bound(schema: Mapping[str, Any], key: str) -> Any:
    value = schema.get(key)
    exclusive = schema.get("exclusive" + key.capitalize())
    if exclusive is not None:
        return exclusive + (1 if key == "minimum" else -1)
    return value


def _object(
    schema: Mapping[str, Any], context: _Context, depth: int
) -> st.SearchStrategy[dict[str, Any]]:
    properties: Mapping[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    fixed = {
        name: _value(properties[name], context, depth) for name in properties if name in required
    }
    optional = {
        name: _value(sub, context, depth)
        for name, sub in properties.items()
        if name not in required
    }
    return st.fixed_dictionaries(fixed, optional=optional)
