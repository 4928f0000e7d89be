"""``value_repr`` shows a value exactly as the ``__repr__`` attrs would generate for its class."""

from __future__ import annotations

import contextvars
import functools
import importlib
import pkgutil
import threading
from datetime import UTC, datetime
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import runtime
from runtime import (
    AuditStatus,
    Category,
    MessageAdded,
    ModelCallFinished,
    Timeline,
    ToolCall,
    TurnEnded,
    Usage,
    new_message,
)
from runtime._repr import value_repr

T0 = datetime(2026, 5, 27, 12, 50, tzinfo=UTC)

# The value classes ``amber show`` defines before it reads anything (docs/performance-long.md
# §4), and the store checker's reports: each shows itself with ``value_repr``, not a
# ``__repr__`` attrs compiles for it.
USING = {
    "runtime._audit": {"AuditCall", "AuditRow"},
    "runtime._category": {"CategorySpec"},
    "runtime._checks": {"Checks"},
    "runtime._events": {
        "Checked",
        "Event",
        "MessageAdded",
        "StatusChanged",
        "MetadataUpdated",
        "TurnStarted",
        "TurnEnded",
        "OrphanRecovered",
        "BranchImported",
        "RolledBack",
        "ModelCallStarted",
        "ModelCallFinished",
        "ApprovalRequested",
        "ApprovalDecided",
    },
    "runtime._lifecycle": {"Transition"},
    "runtime._message": {"ToolCall", "Attachment", "BrowserElement", "Usage", "Message"},
    "runtime._request": {"RequestRecord"},
    "runtime._retry": {"ModelRetry"},
    "runtime._state": {"SessionState"},
    "runtime._timeline": {"Timeline"},
    "runtime._turn": {"Turn"},
    "runtime.store._check": {"Problem", "CheckReport", "RebuildReport"},
    "runtime.store._entry": {"Entry"},
    "runtime.store._protocol": {"SessionInfo"},
    "runtime.store._snapshot": {"SnapshotPlan"},
}


def _users() -> list[type]:
    """Every class of the core whose own ``__repr__`` is ``value_repr``."""
    found = []
    for info in pkgutil.walk_packages(runtime.__path__, "runtime."):
        if info.name.startswith("runtime.store._postgres") or ".testing" in info.name:
            continue  # psycopg is optional; the testing kit defines no such class
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and value.__module__ == module.__name__
                and vars(value).get("__repr__") is value_repr
            ):
                found.append(value)
    return found


USERS = _users()


@functools.cache
def _reference(cls: type) -> type:
    """A class attrs makes with ``cls``'s fields, named as ``cls``, with attrs' own repr."""
    made = attrs.make_class(
        cls.__name__,
        {field.name: attrs.field(repr=field.repr, init=field.init) for field in attrs.fields(cls)},
        slots=True,
    )
    made.__qualname__ = cls.__qualname__
    return made


def _filled(cls: type, values: list[Any]) -> Any:
    """An instance of ``cls`` whose fields hold ``values`` (no converters or checks run)."""
    instance = object.__new__(cls)
    for field, value in zip(attrs.fields(cls), values, strict=True):
        object.__setattr__(instance, field.name, value)
    return instance


def test_the_classes_show_defines_use_it() -> None:
    """Each value class on ``amber show``'s path uses it, and no other class by mistake."""
    assert {(cls.__module__, cls.__name__) for cls in USERS} == {
        (module, name) for module, names in USING.items() for name in names
    }


def test_attrs_generates_no_repr_for_them() -> None:
    """attrs leaves the ``__repr__`` the class body defines alone (``auto_detect``)."""
    for cls in USERS:
        assert attrs.has(cls)
        assert cls.__repr__ is value_repr


_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.datetimes(timezones=st.just(UTC)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)


@pytest.mark.parametrize("cls", USERS, ids=lambda cls: f"{cls.__module__}.{cls.__name__}")
# Generation speed is not what this pins (AuditRow's draws tripped too_slow on a loaded host).
@settings(max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_same_text_as_attrs(cls: type, data: st.DataObject) -> None:
    """Any field values: the text attrs' generated ``__repr__`` shows for them."""
    values = [data.draw(_VALUES) for _ in attrs.fields(cls)]
    assert repr(_filled(cls, values)) == repr(_filled(_reference(cls), values))


@pytest.mark.parametrize("cls", USERS, ids=lambda cls: f"{cls.__module__}.{cls.__name__}")
def test_a_value_inside_itself_is_dots(cls: type) -> None:
    """attrs' recursion guard: the value shown again inside itself is ``...``."""
    fields = attrs.fields(cls)
    instance = _filled(cls, [None] * len(fields))
    reference = _filled(_reference(cls), [None] * len(fields))
    for value in (instance, reference):
        object.__setattr__(value, fields[-1].name, [value, 1])
    assert repr(instance) == repr(reference)
    assert "[..., 1]" in repr(instance) or fields[-1].repr is False


class _Meeting:
    """A field whose repr waits until the other thread's repr reaches it too."""

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties)

    def __repr__(self) -> str:
        self.barrier.wait(timeout=30)  # a guard against a hang, not a wait for time
        return "met"


@attrs.frozen
class _Holder:
    __repr__ = value_repr
    value: Any


@pytest.mark.parametrize("contexts", ["copied", "fresh"])
def test_threads_showing_one_value_at_once_each_see_it_whole(contexts: str) -> None:
    """Two threads show the same value at the same time, in contexts copied from one that
    showed a value before (as ``asyncio.to_thread`` and trio's ``to_thread`` copy them) or
    in fresh ones: each sees the whole text, not the other's ``...`` (the guard is per
    thread, as attrs' is)."""
    repr(_Holder(1))  # this thread's context has shown a value
    shown = _Holder(_Meeting(2))
    out: dict[int, str] = {}

    def show(n: int) -> None:
        out[n] = repr(shown)

    threads = []
    for n in (1, 2):
        if contexts == "copied":
            target: Any = functools.partial(contextvars.copy_context().run, show, n)
        else:
            target = functools.partial(show, n)
        threads.append(threading.Thread(target=target))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert out == {1: "_Holder(value=met)", 2: "_Holder(value=met)"}


@attrs.frozen
class _Unusual:
    """Every kind of field ``value_repr`` tells apart."""

    __repr__ = value_repr

    shown: int
    hidden: int = attrs.field(repr=False)
    custom: int = attrs.field(repr=lambda value: f"<{value} units>")
    later: int = attrs.field(init=False)


@attrs.frozen
class _UnusualByAttrs:
    shown: int
    hidden: int = attrs.field(repr=False)
    custom: int = attrs.field(repr=lambda value: f"<{value} units>")
    later: int = attrs.field(init=False)


@given(st.integers(), st.integers(), st.integers(), st.integers() | st.none())
def test_hidden_custom_and_unset_fields(shown: int, hidden: int, custom: int, later: Any) -> None:
    """``repr=False`` is left out, ``repr=callable`` used, an unset field shows ``NOTHING``."""
    ours = _filled(_Unusual, [shown, hidden, custom, later])
    theirs = _filled(_UnusualByAttrs, [shown, hidden, custom, later])
    expected = repr(theirs).replace("_UnusualByAttrs(", "_Unusual(")
    assert repr(ours) == expected
    if later is None:
        object.__delattr__(ours, "later")
        object.__delattr__(theirs, "later")
        assert repr(ours) == repr(theirs).replace("_UnusualByAttrs(", "_Unusual(")
        assert repr(ours).endswith("later=NOTHING)")


def test_real_values_as_before() -> None:
    """Values built as the core builds them: the text attrs showed before (pinned)."""
    message = new_message(
        Category.USER_QUESTION,
        id="msg_1",
        session_id="s",
        created_at=T0,
        content="hi",
        sender="ann",
    )
    at = "datetime.datetime(2026, 5, 27, 12, 50, tzinfo=datetime.timezone.utc)"
    assert repr(ToolCall(id="c1", name="echo", arguments={"x": [1, 2]})) == (
        "ToolCall(id='c1', name='echo', arguments=pmap({'x': pvector([1, 2])}), index=0)"
    )
    ended = TurnEnded(
        session_id="s",
        seq=3,
        at=T0,
        turn_id="t1",
        outcome="error",
        reason="boom",
        metrics={"a": 1},
        duration_ms=2.5,
    )
    assert repr(ended) == (
        f"TurnEnded(session_id='s', seq=3, at={at}, turn_id='t1', "
        "outcome=<TurnOutcome.ERROR: 'error'>, reason='boom', metrics=pmap({'a': 1}), "
        "duration_ms=2.5, partial=pvector([]), notice=None)"
    )
    finished = ModelCallFinished(
        session_id="s",
        seq=4,
        at=T0,
        operation_id="op",
        status=AuditStatus.COMPLETED,
        usage=Usage(input_tokens=3, output_tokens=4),
    )
    assert repr(finished).startswith(
        f"ModelCallFinished(session_id='s', seq=4, at={at}, operation_id='op', "
        "status=<AuditStatus.COMPLETED: 'completed'>, duration_ms=None, "
        "usage=Usage(input_tokens=3, output_tokens=4, cache_read_tokens=0, "
    )
    timeline = Timeline.start("s").append(
        MessageAdded(session_id="s", seq=1, at=T0, message=message)
    )
    shown = repr(timeline)
    assert shown.startswith("Timeline(base=SessionState(session_id='s', seq=0, updated_at=None")
    assert shown.endswith(", _count=1)")  # the event and state lists are repr=False
    assert repr(message).startswith(
        "Message(id='msg_1', session_id='s', role=<Role.USER: 'user'>, "
        "type=<MessageType.TEXT: 'text'>, status=<Status.PENDING_AGENT: 'pending_agent'>, "
        f"created_at={at}, content='hi', sender='ann', parent_id=None"
    )


def test_a_class_shown_once_is_not_kept_alive() -> None:
    """The cache of each class's fields holds no class alive: a class made at run time
    (a test's, a plugin's) and shown once is freed with its last reference."""
    import gc
    import weakref

    def make() -> type:
        @attrs.frozen
        class Passing:
            __repr__ = value_repr

            name: str

        return Passing

    cls = make()
    assert repr(cls(name="a")) == "Passing(name='a')"
    gone = weakref.ref(cls)
    del cls
    gc.collect()
    assert gone() is None
