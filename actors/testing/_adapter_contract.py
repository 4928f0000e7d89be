"""The adapter contract: ``check_adapter_updates`` tells a started adapter a session's
updates and checks what it reports delivered, and ``AdapterContract`` is the test class that
draws the sessions (docs/adapters.md).

    class TestSlackAdapter(AdapterContract):
        def make_adapter(self):
            return SlackAdapter.start(client=FakeSlack())
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar

import attrs
import pykka
from hypothesis import given, settings

from runtime import (
    ChannelKind,
    Event,
    MessageAdded,
    Status,
    StatusChanged,
    Timeline,
    TurnEnded,
    Update,
    Visibility,
    awaits_delivery,
    category_of,
    channel_rule,
    diff,
)
from runtime.testing import session_events
from runtime.testing._options import with_article as _a

from .._errors import InvalidConfig
from ._contracts import _contract, _run_property

__all__ = ["AdapterContract", "check_adapter_updates", "updates_of"]


def describe_events(log: Sequence[Event]) -> str:
    """One line per event of a session: seq, kind and what it adds or changes."""
    lines = []
    for event in log:
        parts = [f"{event.seq:>3} {type(event).__name__}"]
        if isinstance(event, MessageAdded):
            message = event.message
            parts.append(f"{category_of(message).label} {message.id} {message.status}")
            if message.turn_id:
                parts.append(f"in {message.turn_id}")
            parts.append(repr(message.content[:60]))
        elif isinstance(event, StatusChanged):
            parts.append(f"{event.message_id}: {event.expected} -> {event.status}")
        elif isinstance(event, TurnEnded):
            parts.append(f"{event.turn_id} {event.outcome}")
            for message in (*event.partial, *([event.notice] if event.notice else [])):
                parts.append(f"+{category_of(message).label} {message.id} {message.content[:60]!r}")
        else:
            for field in ("turn_id", "to_seq", "message_id"):
                if hasattr(event, field):
                    parts.append(f"{field}={getattr(event, field)!r}")
        lines.append(" ".join(parts))
    return "\n".join(lines)


class _Session:
    """A drawn session's events, shown one a line in a failure report (a ``Timeline``'s repr
    shows only its empty base state)."""

    def __init__(self, log: Sequence[Event]) -> None:
        self.log = log

    def __repr__(self) -> str:
        body = describe_events(self.log).replace("\n", "\n    ")
        return f"<the session's events:\n    {body}\n>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))  # Hypothesis's printer would list every field of every event


def updates_of(timeline: Timeline, *, platform: str, channel_id: str = "general") -> list[Update]:
    """The ``Update``s a session actor announces for ``timeline``, as seen on ``platform``.

    Every message joining is an update (``previous=None``), every status
    change another; messages are moved to ``platform``/``channel_id``.
    """
    out: list[Update] = []
    previous = timeline.base
    for state in timeline.states():
        if state is previous:
            continue
        change = diff(previous, state)
        for message in change.added:
            out.append(
                Update(
                    session_id=state.session_id,
                    seq=state.seq,
                    message=attrs.evolve(message, chatbot_id=platform, channel_id=channel_id),
                )
            )
        for status in change.status_changes:
            message = state.message(status.message_id)
            assert isinstance(status.before, Status)
            out.append(
                Update(
                    session_id=state.session_id,
                    seq=state.seq,
                    message=attrs.evolve(message, chatbot_id=platform, channel_id=channel_id),
                    previous=status.before,
                )
            )
        previous = state
    return out


class _Sink:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reports: list[tuple[str, str, Status]] = []

    def delivered(self, session_id: str, message_id: str, expected: Status) -> None:
        with self.lock:
            self.reports.append((session_id, message_id, expected))


def check_adapter_updates(
    ref: pykka.ActorRef[Any], updates: Sequence[Update], *, timeout: float = 10.0
) -> None:
    """Tell ``updates`` to a started adapter and check the delivery contract.

    Every new message that waits for delivery and that the adapter's channel
    shows or absorbs is reported delivered exactly once, with the status it
    was announced with; nothing else is reported (no inputs, nudges, hidden
    messages, status changes or replays); the adapter survives every update.

    Raises:
        InvariantViolation: naming the message and what went wrong.
    """
    rule = "an adapter reports each output it shows or absorbs delivered exactly once"
    proxy = ref.proxy()
    platform = proxy.platform.get(timeout=timeout)
    kind = ChannelKind(proxy.kind.get(timeout=timeout))
    sink = _Sink()
    proxy.attach(sink).get(timeout=timeout)
    for update in updates:
        ref.tell(update)
    try:
        proxy.platform.get(timeout=timeout)  # a barrier: every update before it is handled
    except pykka.ActorDeadError:
        raise _contract(
            rule, "the adapter died while handling updates (an exception out of on_receive?)"
        ) from None
    expected: dict[str, Status] = {}
    labels: dict[str, str] = {}
    for update in updates:
        message = update.message
        labels[message.id] = f"{message.id!r} ({category_of(message).label}, {message.status})"
        if (
            update.is_new
            and message.chatbot_id == platform
            and awaits_delivery(message)
            and channel_rule(kind, message).visibility is not Visibility.HIDDEN
        ):
            expected.setdefault(message.id, message.status)
    with sink.lock:
        reports = list(sink.reports)
    counts = Counter(message_id for _, message_id, _ in reports)
    for _, message_id, status in reports:
        if message_id not in expected:
            raise _contract(
                rule, f"the adapter reported message {labels.get(message_id, message_id)} "
                "delivered, but it never waited for this adapter to deliver it",
            )  # fmt: skip
        if counts[message_id] > 1:
            raise _contract(
                rule, f"the adapter reported message {labels[message_id]} delivered "
                f"{counts[message_id]} times",
            )  # fmt: skip
        if status is not expected[message_id]:
            raise _contract(
                rule, f"the adapter reported message {labels[message_id]} delivered from "
                f"{status}, but it was announced {expected[message_id]}",
            )  # fmt: skip
    missing = [labels[m] for m in expected if m not in counts]
    if missing:
        raise _contract(rule, f"the adapter never reported {', '.join(missing)} delivered")


class AdapterContract:
    """Tests that your adapter keeps the delivery contract (subclass as ``TestMyAdapter``).

    Implement ``make_adapter`` to start your adapter (with a fake client);
    the tests feed it the updates of random sessions — every category,
    interrupts, partial output, replays — and check each output it shows or
    absorbs is reported delivered exactly once, and nothing else.
    """

    examples: ClassVar[int | None] = None
    """Hypothesis examples per property (None: ``settings``' max_examples, or 25)."""
    settings: ClassVar[settings | None] = None
    """Hypothesis settings for the property, as for the kit's machines (health checks off
    and no deadline unless you chose one; failures saved in the example database)."""
    max_steps: ClassVar[int] = 30
    """Events per drawn session."""

    def make_adapter(self) -> pykka.ActorRef[Any]:
        """Start and return your adapter actor (stopped by the test)."""
        raise NotImplementedError("Subclasses of AdapterContract implement make_adapter().")

    def test_reports_each_output_exactly_once(self) -> None:
        """Random sessions: every shown or absorbed output is reported once, nothing else."""
        owner = type(self)
        if owner.make_adapter is AdapterContract.make_adapter:
            raise InvalidConfig(
                f"{owner.__name__} has no make_adapter(): define it in the class body to start "
                "and return your adapter, e.g. `def make_adapter(self): return "
                "SlackAdapter.start(client=FakeSlack())` (AdapterContract.make_adapter)."
            )

        self._started().stop()  # a misuse is named once, before any example

        @given(session_events(max_steps=self.max_steps, rich=True).map(_Session))
        def prop(session: _Session) -> None:
            timeline = Timeline.start(session.log[0].session_id).extend(session.log)
            ref = self._started()
            try:
                platform = ref.proxy().platform.get(timeout=10)
                check_adapter_updates(ref, updates_of(timeline, platform=platform))
            finally:
                ref.stop()

        _run_property(self, AdapterContract, "test_reports_each_output_exactly_once", prop)

    def _started(self) -> pykka.ActorRef[Any]:
        ref = self.make_adapter()
        if not isinstance(ref, pykka.ActorRef):
            got = f"{ref!r}, {_a(type(ref).__name__)}"
            hint = (
                f"call {type(ref).__name__}.start(...) (it returns the ActorRef)"
                if isinstance(ref, pykka.Actor)
                else "start your adapter with YourAdapter.start(...) and return what it returns"
            )
            raise InvalidConfig(
                f"{type(self).__name__}.make_adapter() must return the ActorRef of a started "
                f"adapter (AdapterContract.make_adapter); got {got}: {hint}."
            )
        return ref
