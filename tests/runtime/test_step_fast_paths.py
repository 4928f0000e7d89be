"""The step path's fast paths (issue 16) give exactly what the general paths give.

A step builds a message (``new_message``), an event (``MessageAdded``) and
the state after it (``Timeline.append``). Each has a fast path for the common
case; these properties pin every one of them to its general path, valid
input and invalid input alike (the same value, or the same error).
"""

from __future__ import annotations

import pickle
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from typing import Any
from unittest import mock
from zoneinfo import ZoneInfo

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyrsistent import pvector
from pyrsistent._pvector import BRANCH_FACTOR, PythonPVector, python_pvector

import runtime._message as message_module
import runtime._state as state_module
from runtime import (
    Category,
    Message,
    MessageAdded,
    MessageType,
    Role,
    SessionState,
    Status,
    Timeline,
    ToolCall,
    apply,
    new_message,
)
from runtime._checks import EVENT_CHECKS, MESSAGE_CHECKS
from runtime._replace import _compile, replacer
from runtime._state import appended, build_state, new_vector
from runtime.testing import messages

T0 = datetime(2026, 5, 27, 12, 50, tzinfo=UTC)


class _Str(str):
    """A str subclass: never accepted at a glance, judged by the validators."""


class _Int(int):
    """An int subclass, likewise."""


class _Time(datetime):
    """A datetime subclass, likewise."""


_ascii = st.text(alphabet=st.characters(codec="ascii"), max_size=6)
_strings = st.one_of(
    _ascii,
    st.text(max_size=6),
    st.sampled_from(["\ud800", "a\udcffb"]),  # lone surrogates: not storable text
    st.sampled_from(["\n", "a\x00", "\x1b[0m"]),  # control characters: no session id
    st.sampled_from(["", "é", "x" * 257]),
    _ascii.map(_Str),
    st.integers(-2, 2),
    st.none(),
    st.binary(max_size=2),
)


class _NoOffset(tzinfo):
    """A tzinfo that gives no offset: a datetime with it is naive."""

    def utcoffset(self, dt: datetime | None) -> timedelta | None:
        return None


_times = st.one_of(
    st.just(T0),
    st.just(T0.replace(tzinfo=timezone(timedelta(hours=-3)))),
    st.just(T0.replace(tzinfo=timezone(timedelta(0), "Z"))),  # zero offset, not the singleton
    st.just(T0.replace(tzinfo=_NoOffset())),
    st.just(T0.astimezone(ZoneInfo("Europe/Paris"))),
    st.just(T0.replace(tzinfo=None)),
    st.just(_Time(2026, 1, 1, tzinfo=UTC)),
    st.just(_Time(2026, 1, 1)),
    st.just(date(2026, 1, 1)),
    st.just("2026-01-01T00:00:00Z"),
)
_seqs = st.one_of(
    st.none(),
    st.integers(-1, 5),
    st.sampled_from([2**63 - 1, 2**63, True, 1.0, _Int(3), "1"]),
)
_flags = st.sampled_from([True, False, 0, 1, None])
_pairs = st.one_of(
    st.just((Role.USER, MessageType.TEXT)),
    st.just((Role.ASSISTANT, MessageType.THOUGHT)),
    st.sampled_from([(r, t) for r in Role for t in MessageType]),
)


def outcome(build: Any) -> tuple[Any, ...]:
    """What ``build()`` gives: the value, or the error's class and words."""
    try:
        return ("made", build())
    except Exception as error:
        return ("raised", type(error), str(error))


def general(build: Any) -> tuple[Any, ...]:
    """``outcome(build)`` with the one-expression check off: every field's validator runs."""
    with mock.patch.object(message_module, "_at_a_glance", return_value=False):
        return outcome(build)


_CANDIDATES: dict[str, st.SearchStrategy[Any]] = {
    **dict.fromkeys(
        (
            "id",
            "session_id",
            "content",
            "sender",
            "chatbot_id",
            "channel_id",
            "parent_id",
            "turn_id",
            "tool_call_id",
            "error_type",
        ),
        _strings,
    ),
    "created_at": _times,
    "tool_call": st.sampled_from([None, ToolCall(id="c", name="sh"), "c"]),
    "is_error": _flags,
    "event_seq": _seqs,
    "active": _flags,
}
_VALID: dict[str, Any] = {"id": "m1", "session_id": "s", "created_at": T0, "sender": "U"}


@st.composite
def message_fields(draw: st.DrawFn, names: tuple[str, ...] = tuple(_CANDIDATES)) -> dict[str, Any]:
    """Valid fields of a text message with one or two of ``names`` drawn at random (valid
    or not): a bad value is seldom alone when every field is drawn."""
    fields = dict(_VALID)
    for name in draw(st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True)):
        fields[name] = draw(_CANDIDATES[name])
    return fields


class TestMessageFieldCheck:
    @settings(max_examples=1000)
    @given(
        fields=message_fields(),
        pair=_pairs,
        status=st.sampled_from(list(Status)),
    )
    def test_same_as_the_field_validators(
        self, fields: dict[str, Any], pair: tuple[Role, MessageType], status: Status
    ) -> None:
        """Message accepts and refuses what the field validators, run one by one in field
        order, accept and refuse, with the same error."""
        fields = {**fields, "role": pair[0], "type": pair[1], "status": status}
        assert outcome(lambda: Message(**fields)) == general(lambda: Message(**fields))

    @given(messages())
    def test_valid_messages_pass_at_a_glance_or_by_validators(self, message: Message) -> None:
        """Every message runtime.testing makes is accepted by both paths, equal."""
        fields = {f.alias or f.name: getattr(message, f.name) for f in attrs.fields(Message)}
        assert outcome(lambda: Message(**fields)) == ("made", message)
        assert general(lambda: Message(**fields)) == ("made", message)


class TestNewMessage:
    @settings(max_examples=1000)
    @given(
        category=st.sampled_from(
            [c for c in Category if c not in (Category.TOOL_CALL, Category.TOOL_RESULT)]
        ),
        fields=message_fields(("id", "session_id", "created_at", "content", "sender")),
        sender=st.sampled_from(
            [None, "Notification", _Str("Notification"), "System", "Cronjob", "Amber"]
        ),
        fixed_sender=st.sampled_from([False, False, False, True]),
    )
    def test_trusted_path_same_as_message(
        self, category: Category, fields: dict[str, Any], sender: str | None, fixed_sender: bool
    ) -> None:
        """Without metadata or other fields new_message takes its trusted path; with
        ``metadata={}`` (the same message) it builds through Message: both give the
        same message or raise the same error."""
        if fixed_sender:
            fields = {**fields, "sender": sender}
        fast = outcome(lambda: new_message(category, **fields))
        assert fast == outcome(lambda: new_message(category, metadata={}, **fields))
        assert fast == general(lambda: new_message(category, metadata={}, **fields))
        if fast[0] == "made":
            made = fast[1]
            assert type(made) is Message
            assert hash(made) == hash(new_message(category, metadata={}, **fields))


class TestReplacer:
    @given(
        messages(),
        st.sampled_from(list(Status)),
        st.none() | st.integers(min_value=1, max_value=10**6),
    )
    def test_same_as_evolve(self, message: Message, status: Status, seq: int | None) -> None:
        """replacer() copies like attrs.evolve() and leaves the original untouched."""
        before = attrs.evolve(message)
        stamp = replacer(Message, "event_seq", "status")
        changed = stamp(message, seq, status)
        expected = attrs.evolve(message, event_seq=seq, status=status)
        assert changed == expected
        assert hash(changed) == hash(expected)
        assert type(changed) is Message
        assert message == before

    @given(messages(), st.integers(min_value=1, max_value=10**6))
    def test_descriptor_fallback_same(self, message: Message, seq: int) -> None:
        """The fallback that stores through the slots' descriptors (for a Python that
        refuses the class assignment) copies the same."""
        names = [f.name for f in attrs.fields(Message)]
        values = ["_v0" if name == "event_seq" else f"old.{name}" for name in names]
        stamp = _compile(Message, names, "old, _v0", values, by_class_assignment=False)
        assert stamp(message, seq) == replacer(Message, "event_seq")(message, seq)
        assert type(stamp(message, seq)) is Message

    def test_copies_are_ordinary_frozen_values(self) -> None:
        """A copy's type is the class itself: it refuses changes, pickles and hashes as any."""
        message = new_message(Category.REPLY, id="m", session_id="s", created_at=T0, content="hi")
        copy = replacer(Message, "event_seq")(message, 4)
        assert type(copy) is Message
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            copy.content = "changed"  # type: ignore[misc]
        assert pickle.loads(pickle.dumps(copy)) == copy
        assert hash(copy) == hash(attrs.evolve(message, event_seq=4))

    def test_state_same_as_evolve(self) -> None:
        """On a SessionState (fields without validators) too."""
        state = SessionState.empty("s")
        changed = replacer(SessionState, "seq", "updated_at")(state, 3, T0)
        assert changed == attrs.evolve(state, seq=3, updated_at=T0)

    def test_unknown_field(self) -> None:
        """A name that is not a field, or one given twice, is refused with the fields named."""
        with pytest.raises(ValueError, match=r"^replacer\(\) takes distinct field names of "):
            replacer(Message, "seq")
        with pytest.raises(ValueError, match=r"got 'status', 'status'\.$"):
            replacer(Message, "status", "status")


class TestMessageAdded:
    @given(
        st.lists(
            messages(category=Category.USER_QUESTION) | messages(category=Category.REPLY),
            max_size=8,
            unique_by=lambda m: m.id,
        )
    )
    def test_state_is_what_its_messages_make(self, added: list[Message]) -> None:
        """Each state a timeline appends equals the state derived from its messages from
        scratch, and each stored message is the added one stamped with its seq."""
        timeline = Timeline.start("s")
        for n, message in enumerate(added, 1):
            message = attrs.evolve(message, parent_id=None, turn_id=None, event_seq=None)
            event = MessageAdded(session_id="s", seq=n, at=T0, message=message)
            before = timeline
            timeline = timeline.append(event)
            state = timeline.head
            assert state == apply(before.head, event)
            assert state.messages[-1] == attrs.evolve(message, event_seq=n)
            assert event.message is message
            rebuilt = build_state(
                session_id="s",
                seq=n,
                updated_at=T0,
                messages=state.messages,
                turns=state.turn_list(),
            )
            assert state == rebuilt
            assert [timeline.at(k) for k in range(n + 1)] == [before.at(k) for k in range(n)] + [
                state
            ]


class TestUtcCheck:
    @settings(max_examples=300)
    @given(value=_times, checks=st.sampled_from([EVENT_CHECKS, MESSAGE_CHECKS]))
    def test_same_as_the_general_check(self, value: Any, checks: Any) -> None:
        """The identity check of UTC accepts and refuses what the general check does (any
        datetime, any tzinfo), with the same error."""
        field = attrs.fields(MessageAdded).at
        event = object.__new__(MessageAdded)
        assert outcome(lambda: checks.aware(event, field, value)) == outcome(
            lambda: checks.any_aware(event, field, value)
        )


def general_event(**fields: Any) -> MessageAdded:
    """``MessageAdded(**fields)`` by attrs' own ``__init__``: every field's validator runs."""
    event = object.__new__(MessageAdded)
    event.__attrs_init__(**fields)
    return event


_event_messages = st.one_of(
    messages(),
    st.builds(lambda m: attrs.evolve(m, session_id="s"), messages()),
    st.builds(lambda m: attrs.evolve(m, session_id=_Str("s")), messages()),
    st.sampled_from([None, "m", object()]),
)


class TestMessageAddedEvent:
    @settings(max_examples=1000)
    @given(
        message=_event_messages,
        session_id=st.one_of(st.just("s"), st.just(_Str("s")), _strings),
        seq=_seqs,
        at=_times,
        same=st.sampled_from(["", "", "session_id", "at", "both"]),
    )
    def test_same_as_the_field_validators(
        self, message: Any, session_id: Any, seq: Any, at: Any, same: str
    ) -> None:
        """MessageAdded accepts and refuses what attrs' __init__, running each field's
        validator, accepts and refuses, with the same error; when the event repeats its
        message's session id or time (the fast path) as when it does not."""
        if isinstance(message, Message) and same in ("session_id", "both"):
            session_id = message.session_id
        if isinstance(message, Message) and same in ("at", "both"):
            at = message.created_at
        fields = {"session_id": session_id, "seq": seq, "at": at, "message": message}
        fast = outcome(lambda: MessageAdded(**fields))
        assert fast == outcome(lambda: general_event(**fields))
        if fast[0] == "made":
            event = fast[1]
            assert type(event) is MessageAdded
            assert [getattr(event, f.name) for f in attrs.fields(MessageAdded)] == [
                session_id,
                seq,
                at,
                message,
            ]
            assert hash(event) == hash(general_event(**fields))

    def test_a_step_takes_the_fast_path(self) -> None:
        """A step's event (its message's session id and time) is built without attrs'
        __init__, and is an ordinary frozen value."""
        message = new_message(Category.REPLY, id="m", session_id="s", created_at=T0)
        with mock.patch.object(MessageAdded, "__attrs_init__") as general:
            event = MessageAdded(session_id="s", seq=1, at=T0, message=message)
        general.assert_not_called()
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            event.seq = 2  # type: ignore[misc]
        assert pickle.loads(pickle.dumps(event)) == event
        assert attrs.evolve(event, seq=2) == general_event(
            session_id="s", seq=2, at=T0, message=message
        )


_vectors = st.lists(st.integers(), max_size=80).flatmap(
    lambda items: st.sampled_from(
        [new_vector(items), pvector(items), new_vector(items).evolver().persistent()]
    )
)


class TestAppended:
    @settings(max_examples=300)
    @given(vector=_vectors, item=st.integers(), more=st.integers(0, 40))
    def test_same_as_append(self, vector: Any, item: int, more: int) -> None:
        """appended() gives what PVector.append gives (the same items, the same trie: its
        nodes shared, its slots equal), and the vector it was given is unchanged, for any
        tail (empty, with room, full) and vector (pure-Python or C)."""
        for n in range(more):
            vector = appended(vector, n)  # vectors of every length, built by appended()
        before = list(vector)
        made, expected = appended(vector, item), vector.append(item)
        assert type(made) is type(expected)
        assert made == expected
        assert list(made) == [*before, item]
        assert list(vector) == before
        if type(made) is PythonPVector:
            slots = ("_count", "_shift", "_tail", "_tail_offset")
            assert [getattr(made, s) for s in slots] == [getattr(expected, s) for s in slots]
            assert made._root == expected._root
            assert made._tail is not vector._tail
            if len(vector._tail) < BRANCH_FACTOR:
                assert made._root is vector._root  # the trie shared, as append shares it

    def test_knows_this_pyrsistent(self) -> None:
        """The fast path is on: the installed pyrsistent's vector has the slots it writes."""
        assert state_module._PYTHON_VECTOR is PythonPVector
        assert type(appended(new_vector([1]), 2)) is PythonPVector


def _same_trie(made: Any, expected: Any) -> None:
    """The same slots and the same nodes: lists where the other has lists, the same items."""
    slots = ("_count", "_shift", "_tail_offset")
    assert type(made) is type(expected) is PythonPVector
    assert [getattr(made, s) for s in slots] == [getattr(expected, s) for s in slots]

    def walk(a: Any, b: Any) -> None:
        assert type(a) is type(b) is list
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            if type(y) is list:
                walk(x, y)
            else:
                assert x is y

    walk(made._root, expected._root)
    walk(made._tail, expected._tail)


class TestNewVector:
    @settings(max_examples=200)
    @given(
        count=st.one_of(
            st.integers(0, 3 * BRANCH_FACTOR),
            st.integers(0, BRANCH_FACTOR**2 + 3 * BRANCH_FACTOR),
            st.sampled_from([BRANCH_FACTOR**3 + k for k in (-1, 0, 1, BRANCH_FACTOR)]),
        ),
        kind=st.sampled_from([list, tuple, iter]),
    )
    def test_the_trie_python_pvector_builds(self, count: int, kind: Any) -> None:
        """new_vector builds, from a list or any iterable, the trie pyrsistent's own
        python_pvector builds from the same items, node for node (full leaves in the trie,
        the last one too; a level more whenever the root overflows)."""
        items = [object() for _ in range(count)]
        made = new_vector(kind(items))
        _same_trie(made, python_pvector(items))
        assert list(made) == items

    def test_empty(self) -> None:
        """No items: pyrsistent's own empty vector, as before."""
        assert new_vector() is python_pvector()
        assert new_vector([]) is python_pvector([])
