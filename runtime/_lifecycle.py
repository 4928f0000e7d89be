"""The message lifecycle (DESIGN §3) as one table.

Each legal status change names the categories it applies to and the event that
drives it. Claims, turn ends and orphan recovery are turn bookkeeping: only
``TurnStarted``, ``TurnEnded`` and ``OrphanRecovered`` may make them, so that
"a user message is processing iff its turn is active" holds by construction.
``StatusChanged`` makes the rest (deliveries).

A status with no way out for a category is terminal for it.
"""

from __future__ import annotations

import enum

import attrs

from ._category import INPUT_CATEGORIES, Category, category_of
from ._errors import IllegalTransition
from ._message import Message, Status
from ._repr import value_repr

__all__ = ["TRANSITIONS", "Driver", "Transition", "check_transition", "is_terminal"]


class Driver(enum.Enum):
    """The event kind that performs a transition."""

    TURN_STARTED = "TurnStarted"
    """A turn claims pending input."""
    TURN_ENDED = "TurnEnded"
    """A turn settles what it claimed and its unanswered tool calls."""
    ORPHAN_RECOVERED = "OrphanRecovered"
    """Recovery puts a dead turn's input back in the queue (and may interrupt its calls)."""
    STATUS_CHANGED = "StatusChanged"
    """An adapter reports a delivery."""


@attrs.frozen
class Transition:
    """One legal status change."""

    __repr__ = value_repr

    categories: frozenset[Category]
    """Categories it applies to."""
    driver: Driver
    """The event that performs it."""
    also: frozenset[Driver] = frozenset()
    """Other events that may perform it too."""

    @property
    def drivers(self) -> frozenset[Driver]:
        """Every event that may perform it (``driver`` and ``also``)."""
        return self.also | {self.driver}


_OUTBOUND = frozenset({Category.REPLY, Category.NOTIFICATION, Category.CRASH_NOTICE})
_INTERMEDIATE = frozenset({Category.THOUGHT, Category.TOOL_CALL, Category.TOOL_RESULT})
_CALL = frozenset({Category.TOOL_CALL})
_RECOVERY = frozenset({Driver.ORPHAN_RECOVERED})

TRANSITIONS: dict[tuple[Status, Status], Transition] = {
    (Status.PENDING_AGENT, Status.PROCESSING): Transition(INPUT_CATEGORIES, Driver.TURN_STARTED),
    (Status.PROCESSING, Status.PROCESSED): Transition(INPUT_CATEGORIES, Driver.TURN_ENDED),
    (Status.PROCESSING, Status.INTERRUPTED): Transition(INPUT_CATEGORIES, Driver.TURN_ENDED),
    (Status.PROCESSING, Status.ERROR): Transition(INPUT_CATEGORIES, Driver.TURN_ENDED),
    (Status.PROCESSING, Status.PENDING_AGENT): Transition(
        INPUT_CATEGORIES, Driver.ORPHAN_RECOVERED
    ),
    (Status.PENDING, Status.DELIVERED): Transition(_OUTBOUND, Driver.STATUS_CHANGED),
    (Status.RESPONDED, Status.DELIVERED): Transition(_INTERMEDIATE, Driver.STATUS_CHANGED),
    # A call left unanswered by an interrupted turn, or by a dead one whose recovery
    # says so (``OrphanRecovered.calls_interrupted``).
    (Status.RESPONDED, Status.INTERRUPTED): Transition(_CALL, Driver.TURN_ENDED, _RECOVERY),
    (Status.DELIVERED, Status.INTERRUPTED): Transition(_CALL, Driver.TURN_ENDED, _RECOVERY),
}
"""Every legal status change: ``(from, to) -> Transition``."""


def _exits(category: Category, status: Status) -> list[Status]:
    return [
        to
        for (frm, to), rule in TRANSITIONS.items()
        if frm is status and category in rule.categories
    ]


def is_terminal(category: Category, status: Status) -> bool:
    """True when a message of ``category`` can never leave ``status``."""
    return not _exits(category, status)


def _order(driver: Driver) -> int:
    return list(Driver).index(driver)


def check_transition(message: Message, to: Status, driver: Driver) -> Category:
    """Check that ``driver`` may move ``message`` to status ``to``.

    Returns:
        The message's category.

    Raises:
        IllegalTransition: naming the message, its category, the status it has,
            the one asked for, and what is allowed instead.
    """
    category = category_of(message)
    frm = message.status
    rule = TRANSITIONS.get((frm, to))
    if rule is None or category not in rule.categories:
        exits = _exits(category, frm)
        allowed = (
            f"from {frm} a {category.label} may only go to {', '.join(exits)}"
            if exits
            else f"{frm} is terminal for a {category.label}"
        )
        raise IllegalTransition(
            f"Cannot move message {message.id!r} ({category.label}) from {frm} to {to}: {allowed}."
        )
    if rule.driver is not driver and driver not in rule.also:
        makers = " or ".join(d.value for d in (rule.driver, *sorted(rule.also, key=_order)))
        raise IllegalTransition(
            f"Cannot move message {message.id!r} ({category.label}) from {frm} to {to} with "
            f"{driver.value}: only {makers} makes that change."
        )
    if not message.active:
        raise IllegalTransition(
            f"Cannot move message {message.id!r} ({category.label}) from {frm} to {to}: it was "
            "rolled back, and rolled-back messages keep the status they had."
        )
    return category
