"""The codec's general path: a cattrs converter with strict hooks (``from_data``'s decoder).

Imported by ``runtime._codec`` on first need only: encoding the common values
(events of plain fields, messages, turns, states) and decoding the store's
common rows do not need cattrs, and a command that reads one state should not
pay for importing it and registering its hooks. Decoding is strict: unknown
keys, missing fields, wrong types and unknown event kinds raise ``DecodeError``
naming the path of the bad field (``$.message.status``).
"""

from __future__ import annotations

import enum
import functools
import math
import re
import reprlib
import typing
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.errors import IterableValidationNote
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn
from pyrsistent import pvector
from pyrsistent import typing as ptyping

from ._article import article
from ._audit import AuditRow, AuditStatus
from ._errors import DecodeError
from ._events import EVENT_TYPES, Event, TurnOutcome
from ._fast_data import message_data, turn_data
from ._json import canonical, freeze, freeze_map
from ._message import (
    Attachment,
    BrowserElement,
    Message,
    MessageType,
    Role,
    Status,
    ToolCall,
    Usage,
)
from ._state import SessionState, build_state, check_consistent
from ._storable import INT_MAX, INT_MIN, text_problem
from ._turn import Turn, TurnStatus

__all__ = ["structure", "unstructure"]

T = TypeVar("T")

_converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)


_MAX_PROBLEMS = 10
"""How many problems a ``DecodeError`` lists; the rest are counted."""
_FLOAT_INT = 2**53
"""The largest integer a float field takes (beyond it a float would not hold it exactly)."""
_short = reprlib.Repr()
_short.maxlevel, _short.maxstring, _short.maxother = 2, 60, 60
_short.maxlist = _short.maxdict = _short.maxtuple = _short.maxset = 3


def _got(value: object) -> str:
    """``value`` for an error message: short, and safe on any input (deep, huge, odd)."""
    if type(value) is int and not -(10**30) < value < 10**30:
        return f"an integer of {value.bit_length()} bits"
    try:
        return _short.repr(value)
    except Exception:  # a repr that fails must not hide the real problem
        return article(type(value).__name__)


def _strict_int(value: object, _: type) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an int, got {_got(value)}")
    if not INT_MIN <= value <= INT_MAX:
        raise ValueError(f"expected an int that fits in 64 bits, got {_got(value)}")
    return value


def _strict_str(value: object, _: type) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a str, got {_got(value)}")
    problem = text_problem(value)
    if problem is not None:
        raise ValueError(f"expected valid Unicode text, got {problem}")
    return value


def _strict_bool(value: object, _: type) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected true or false, got {_got(value)}")
    return value


def _strict_float(value: object, _: type) -> float:
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"expected a finite number, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected a number, got {_got(value)}")
    if not -_FLOAT_INT <= value <= _FLOAT_INT:
        # float() would round it: the value read would not be the value stored.
        raise ValueError(f"expected a number a float holds exactly, got {_got(value)}")
    return float(value)


def _strict_enum(value: object, kind: type[enum.Enum]) -> enum.Enum:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {_got(value)}")
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(repr(m.value) for m in kind)
        raise ValueError(
            f"{_got(value)} is not {article(kind.__name__)} (expected one of {allowed})"
        ) from None


# cattrs' defaults coerce ("1" -> 1, 1 -> "1"); a store row must decode exactly.
# The enums are registered too, or the ``str`` hook would catch them (StrEnum).
_converter.register_structure_hook(int, _strict_int)
_converter.register_structure_hook(str, _strict_str)
_converter.register_structure_hook(bool, _strict_bool)
_converter.register_structure_hook(float, _strict_float)
for _enum_type in (Role, MessageType, Status, TurnStatus, TurnOutcome, AuditStatus):
    _converter.register_structure_hook(_enum_type, _strict_enum)


def _structure_datetime(value: object, _: type) -> datetime:
    if not isinstance(value, str):
        raise TypeError(f"expected an ISO 8601 string with a UTC offset, got {_got(value)}")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"expected an ISO 8601 time, got {_got(value)}") from None
    if parsed.utcoffset() is None:
        raise ValueError(f"expected a UTC offset in {_got(value)} (like +00:00)")
    return parsed


_converter.register_unstructure_hook(datetime, datetime.isoformat)
_converter.register_structure_hook(datetime, _structure_datetime)


def _origin_is(kind: object) -> Callable[[Any], bool]:
    return lambda t: typing.get_origin(t) is kind


def _structure_map(value: object, _: type) -> Any:
    if type(value) is not dict:
        raise TypeError(f"expected an object, got {_got(value)}")
    return freeze_map(value)


# Maps are written with sorted keys: the JSON of a value is the same however
# the value was built (a pmap's order depends on its history and on hashing).
_converter.register_unstructure_hook_func(_origin_is(ptyping.PMap), canonical)
_converter.register_structure_hook_func(_origin_is(ptyping.PMap), _structure_map)


_MORE = "\x00more"


class _MoreProblems(Exception):
    """Stands for the problems of a list past the first ``_MAX_PROBLEMS``."""

    def __init__(self, count: int) -> None:
        super().__init__(f"{_MORE} {count} more item(s) that do not decode")
        self.count = count


def _structure_items(value: object, item_type: Any) -> list[Any]:
    """The items of a JSON list, strictly; errors name the index of each bad item.

    Only the first ``_MAX_PROBLEMS`` failures are kept (the rest are counted), so
    rejecting a long list costs time and memory in proportion to its length.
    """
    if type(value) is not list:
        raise TypeError(f"expected a list, got {_got(value)}")
    structure = _converter.get_structure_hook(item_type)
    items: list[Any] = []
    errors: list[Exception] = []
    more = 0
    for index, item in enumerate(value):
        try:
            items.append(structure(item, item_type))
        except Exception as exc:
            if len(errors) < _MAX_PROBLEMS:
                exc.__notes__ = [
                    *getattr(exc, "__notes__", []),
                    IterableValidationNote(f"Structuring item @ index {index}", index, item_type),
                ]
                errors.append(exc)
            else:
                more += 1
    if errors:
        if more:
            errors.append(_MoreProblems(more))
        raise cattrs.IterableValidationError("While structuring a list", errors, list)
    return items


def _structure_list(value: object, kind: Any) -> list[Any]:
    (item_type,) = typing.get_args(kind) or (Any,)
    if item_type is Any:
        return [freeze(item) for item in _structure_items(value, object)]
    return _structure_items(value, item_type)


def _unstructure_vector(value: Any) -> list[Any]:
    return [_converter.unstructure(item) for item in value]


def _structure_vector(value: object, kind: Any) -> Any:
    (item_type,) = typing.get_args(kind) or (Any,)
    if item_type is Any:
        if type(value) is not list:
            raise TypeError(f"expected a list, got {_got(value)}")
        return freeze(value)
    return pvector(_structure_items(value, item_type))


_converter.register_structure_hook_func(_origin_is(list), _structure_list)
_converter.register_unstructure_hook_func(_origin_is(ptyping.PVector), _unstructure_vector)
_converter.register_structure_hook_func(_origin_is(ptyping.PVector), _structure_vector)

# The hooks of the attrs classes are generated (code built and compiled) when a
# class is first encoded or decoded, not on import: a command that reads one
# state does not pay for every event kind's.
_PLAIN_CLASSES = (ToolCall, Attachment, BrowserElement, Usage, Message, Turn)
_converter.register_unstructure_hook_factory(
    lambda t: t in _PLAIN_CLASSES,
    lambda cls: make_dict_unstructure_fn(cls, _converter, _cattrs_omit_if_default=False),
)
_converter.register_structure_hook_factory(
    lambda t: t in _PLAIN_CLASSES,
    lambda cls: make_dict_structure_fn(cls, _converter, _cattrs_forbid_extra_keys=True),
)


_EVENT_STRUCTURE: dict[str, Callable[[Any, type[Event]], Event]] = {}
_EVENT_UNSTRUCTURE: dict[str, Callable[[Event], dict[str, Any]]] = {}
"""Each event kind's generated hooks, made on the kind's first use."""


def _event_structure(cls: type[Event]) -> Callable[[Any, type[Event]], Event]:
    made = _EVENT_STRUCTURE.get(cls.kind)
    if made is None:
        made = make_dict_structure_fn(cls, _converter, _cattrs_forbid_extra_keys=True)
        _EVENT_STRUCTURE[cls.kind] = made
    return made


def _event_unstructure(cls: type[Event]) -> Callable[[Event], dict[str, Any]]:
    made = _EVENT_UNSTRUCTURE.get(cls.kind)
    if made is None:
        made = make_dict_unstructure_fn(cls, _converter)
        _EVENT_UNSTRUCTURE[cls.kind] = made
    return made


def _unstructure_event(event: Event) -> dict[str, Any]:
    data = _event_unstructure(type(event))(event)
    return {"kind": event.kind, **data}


def _structure_event(value: object, wanted: type[Event]) -> Event:
    if type(value) is not dict:
        raise TypeError(f"expected an object with a 'kind', got {_got(value)}")
    data = dict(value)
    kind = data.pop("kind", None)
    cls = EVENT_TYPES.get(kind) if type(kind) is str else None
    if cls is None:
        raise ValueError(
            f"unknown event kind {_got(kind)}; expected one of {', '.join(sorted(EVENT_TYPES))}"
        )
    if not issubclass(cls, wanted):
        raise ValueError(f"expected {article(repr(wanted.kind))} event, got kind {kind!r}")
    return _event_structure(cls)(data, cls)


_converter.register_unstructure_hook_func(
    lambda t: isinstance(t, type) and issubclass(t, Event), _unstructure_event
)
_converter.register_structure_hook_func(
    lambda t: isinstance(t, type) and issubclass(t, Event), _structure_event
)


# A state's messages and turns: from their slots (``_fast_data``), else through cattrs.
def _message_data(m: Message) -> dict[str, Any]:
    fast = message_data(m)
    return fast if fast is not None else _converter.unstructure(m, Message)


def _turn_data(t: Turn) -> dict[str, Any]:
    fast = turn_data(t)
    return fast if fast is not None else _converter.unstructure(t, Turn)


def _unstructure_state(state: SessionState) -> dict[str, Any]:
    return {
        "session_id": state.session_id,
        "seq": state.seq,
        "updated_at": None if state.updated_at is None else state.updated_at.isoformat(),
        "messages": [_message_data(m) for m in state.messages],
        "turns": [_turn_data(t) for t in state.turn_list()],
        "audit": [_converter.unstructure(r, AuditRow) for r in state.model_calls()],
    }


@attrs.frozen(kw_only=True)
class _StateData:
    """The stored parts of a ``SessionState``; indexes are derived on decode."""

    session_id: str
    seq: int
    updated_at: datetime | None
    messages: list[Message]
    turns: list[Turn]
    audit: list[AuditRow] = attrs.field(factory=list)


@functools.cache
def _structure_state_data() -> Callable[[Any, type[_StateData]], _StateData]:
    return make_dict_structure_fn(_StateData, _converter, _cattrs_forbid_extra_keys=True)


def _structure_state(value: object, _: type) -> SessionState:
    if type(value) is not dict:
        raise TypeError(f"expected a state object, got {_got(value)}")
    data = _structure_state_data()(value, _StateData)
    state = build_state(
        session_id=data.session_id,
        seq=data.seq,
        updated_at=data.updated_at,
        messages=data.messages,
        turns=data.turns,
        audit=data.audit,
    )
    problems = check_consistent(state)
    if problems:
        shown = "; ".join(problems[:_MAX_PROBLEMS])
        if len(problems) > _MAX_PROBLEMS:
            shown += f"; and {len(problems) - _MAX_PROBLEMS} more"
        raise ValueError(f"inconsistent session state: {shown}")
    return state


_converter.register_unstructure_hook(SessionState, _unstructure_state)
_converter.register_structure_hook(SessionState, _structure_state)


def _explain(exc: BaseException) -> str:
    if isinstance(exc, (cattrs.ClassValidationError, cattrs.IterableValidationError)):
        lines = cattrs.transform_error(exc, path="$", format_exception=_format)
    else:
        lines = [f"{_format(exc, None)} @ $"]
    more = [line for line in lines if line.startswith(_MORE)]
    lines = [line for line in lines if not line.startswith(_MORE)]
    shown = [_field_path(line) for line in lines[:_MAX_PROBLEMS]]
    if len(lines) > _MAX_PROBLEMS:
        shown.append(f"and {len(lines) - _MAX_PROBLEMS} more problem(s)")
    return "; ".join(shown + [line.replace(_MORE, "and", 1) for line in more])


_OWN_CHECK = re.compile(r"^(?P<cls>[A-Z]\w*)\.(?P<field>\w+) must .* @ (?P<path>\$\S*)$", re.S)


def _field_path(line: str) -> str:
    """Point a class's own field check (raised from ``__init__``) at the field's path."""
    match = _OWN_CHECK.match(line)
    if match is None:
        return line
    return f"{line[: match.start('path')]}{match['path']}.{match['field']}".replace("$.$", "$")


def _format(exc: BaseException, _type: Any) -> str:
    if isinstance(exc, KeyError):
        return "required field missing"
    if isinstance(exc, cattrs.ForbiddenExtraKeysError):
        # Keys of plain data may be of any type (1, "x"): sorted by their repr.
        return f"unknown field(s) {_got(sorted(exc.extra_fields, key=repr))}"
    text = str(exc).rstrip(".") or type(exc).__name__
    return text if len(text) <= 300 else text[:299] + "…"


def unstructure(value: Any) -> Any:
    """``value`` as plain data, through cattrs (the general path of ``to_data``)."""
    return _converter.unstructure(value)


def structure(data: object, kind: type[T]) -> T:
    """Decode plain data into a ``kind`` through cattrs (``from_data``).

    Raises:
        DecodeError: naming the path of each bad field and what was expected.
    """
    try:
        return _converter.structure(data, kind)
    except Exception as exc:  # cattrs groups errors; report them all by path
        raise DecodeError(
            f"Cannot decode {getattr(kind, '__name__', kind)} from JSON: {_explain(exc)}."
        ) from exc


def _is_model_view(cls: Any) -> bool:
    # By name, so that the codec does not import the views (``runtime._view``) to know it.
    return (
        isinstance(cls, type)
        and cls.__qualname__ == "ModelView"
        and cls.__module__ == "runtime._view"
    )


def _unstructure_view(view: Any) -> dict[str, Any]:
    """A ``ModelView`` as data: its session, seq, messages (built if a ``ViewCache`` left them
    to be built on first read), ``truncated`` and ``tokens``. Not its ``prefix``: the start a
    cache shares between views, which does not count in its equality either."""
    return {
        "session_id": view.session_id,
        "seq": view.seq,
        "messages": _converter.unstructure(view.messages),
        "truncated": view.truncated,
        "tokens": view.tokens,
    }


_converter.register_unstructure_hook_func(_is_model_view, _unstructure_view)
