"""The message lifecycle: TRANSITIONS, check_transition and is_terminal (DESIGN §3)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import attrs
import pytest

from runtime import (
    TRANSITIONS,
    Category,
    Driver,
    IllegalTransition,
    Message,
    OrphanRecovered,
    Status,
    StatusChanged,
    ToolCall,
    TurnEnded,
    TurnStarted,
    check_transition,
    is_terminal,
    new_message,
)

T0 = datetime(2026, 5, 27, 12, 50, tzinfo=UTC)
S = Status
C = Category

INPUTS = frozenset({C.USER_QUESTION, C.CRON_PROMPT, C.COMPACTION_REQUEST, C.BACKGROUND_ALERT})

# DESIGN §3, written out: (from, to) -> (categories it applies to, driving event).
_ENDS = frozenset({Driver.TURN_ENDED, Driver.ORPHAN_RECOVERED})
LEGAL: dict[tuple[Status, Status], tuple[frozenset[Category], frozenset[Driver]]] = {
    (S.PENDING_AGENT, S.PROCESSING): (INPUTS, frozenset({Driver.TURN_STARTED})),
    (S.PROCESSING, S.PROCESSED): (INPUTS, frozenset({Driver.TURN_ENDED})),
    (S.PROCESSING, S.INTERRUPTED): (INPUTS, frozenset({Driver.TURN_ENDED})),
    (S.PROCESSING, S.ERROR): (INPUTS, frozenset({Driver.TURN_ENDED})),
    (S.PROCESSING, S.PENDING_AGENT): (INPUTS, frozenset({Driver.ORPHAN_RECOVERED})),
    (S.PENDING, S.DELIVERED): (
        frozenset({C.REPLY, C.NOTIFICATION, C.CRASH_NOTICE}),
        frozenset({Driver.STATUS_CHANGED}),
    ),
    (S.RESPONDED, S.DELIVERED): (
        frozenset({C.THOUGHT, C.TOOL_CALL, C.TOOL_RESULT}),
        frozenset({Driver.STATUS_CHANGED}),
    ),
    # An interrupted turn's unanswered calls, and (OrphanRecovered.calls_interrupted) a
    # dead one's.
    (S.RESPONDED, S.INTERRUPTED): (frozenset({C.TOOL_CALL}), _ENDS),
    (S.DELIVERED, S.INTERRUPTED): (frozenset({C.TOOL_CALL}), _ENDS),
}

# Statuses each category can still leave; every other status is terminal for it.
NON_TERMINAL: dict[Category, set[Status]] = {
    C.USER_QUESTION: {S.PENDING_AGENT, S.PROCESSING},
    C.CRON_PROMPT: {S.PENDING_AGENT, S.PROCESSING},
    C.COMPACTION_REQUEST: {S.PENDING_AGENT, S.PROCESSING},
    C.BACKGROUND_ALERT: {S.PENDING_AGENT, S.PROCESSING},
    C.THOUGHT: {S.RESPONDED},
    C.TOOL_CALL: {S.RESPONDED, S.DELIVERED},
    C.TOOL_RESULT: {S.RESPONDED},
    C.REPLY: {S.PENDING},
    C.NOTIFICATION: {S.PENDING},
    C.CRASH_NOTICE: {S.PENDING},
    C.NUDGE: set(),
    C.SYSTEM_PROMPT: set(),
}


def exact(text: str) -> str:
    """A regex matching exactly ``text``."""
    return f"^{re.escape(text)}$"


def message(category: Category, status: Status, **fields: Any) -> Message:
    """A message of ``category`` moved (directly) to ``status``."""
    extra: dict[str, Any] = {}
    if category is C.USER_QUESTION:
        extra["sender"] = "Chii"
    if category is C.TOOL_CALL:
        extra["tool_call"] = ToolCall(id="call_1", name="sh")
    if category is C.TOOL_RESULT:
        extra.update(sender="sh", tool_call_id="call_1")
    built = new_message(category, id="msg_1", session_id="sess", created_at=T0, **extra)
    return attrs.evolve(built, status=status, **fields)


class TestTransitionsTable:
    def test_pairs_match_design(self) -> None:
        """TRANSITIONS holds exactly the status changes DESIGN §3 lists."""
        assert set(TRANSITIONS) == {
            ("pending_agent", "processing"),
            ("processing", "processed"),
            ("processing", "interrupted"),
            ("processing", "error"),
            ("processing", "pending_agent"),
            ("pending", "delivered"),
            ("responded", "delivered"),
            ("responded", "interrupted"),
            ("delivered", "interrupted"),
        }

    @pytest.mark.parametrize("pair", list(LEGAL), ids=lambda p: f"{p[0]}->{p[1]}")
    def test_categories_and_driver(self, pair: tuple[Status, Status]) -> None:
        """Each change applies to the categories DESIGN §3 names, driven by the right event."""
        categories, drivers = LEGAL[pair]
        rule = TRANSITIONS[pair]
        assert rule.categories == categories
        assert rule.drivers == drivers
        assert rule.driver in drivers

    def test_drivers_name_event_classes(self) -> None:
        """Each Driver's value is the name of the event class that performs it."""
        assert {d.value for d in Driver} == {
            cls.__name__ for cls in (TurnStarted, TurnEnded, OrphanRecovered, StatusChanged)
        }


class TestCheckTransition:
    @pytest.mark.parametrize(
        ("pair", "category"),
        [
            (pair, category)
            for pair, (cats, _) in LEGAL.items()
            for category in sorted(cats, key=lambda c: c.name)
        ],
        ids=lambda v: f"{v[0]}->{v[1]}" if isinstance(v, tuple) else v.name,
    )
    def test_accepts_legal_change(self, pair: tuple[Status, Status], category: Category) -> None:
        """A legal change with each of its drivers passes and returns the message's category."""
        frm, to = pair
        for driver in LEGAL[pair][1]:
            assert check_transition(message(category, frm), to, driver) is category

    def test_everything_else_is_rejected(self) -> None:
        """Every (category, from, to, driver) outside DESIGN §3 raises, naming all four."""
        accepted = 0
        for category in Category:
            for frm in Status:
                subject = message(category, frm)
                for to in Status:
                    for driver in Driver:
                        rule = LEGAL.get((frm, to))
                        legal = rule is not None and category in rule[0] and driver in rule[1]
                        if legal:
                            check_transition(subject, to, driver)
                            accepted += 1
                            continue
                        prefix = re.escape(
                            f"Cannot move message 'msg_1' ({category.label}) from {frm} to {to}"
                        )
                        with pytest.raises(IllegalTransition, match=f"^{prefix}[ :]"):
                            check_transition(subject, to, driver)
        assert accepted == sum(len(cats) * len(drivers) for cats, drivers in LEGAL.values())

    def test_terminal_status(self) -> None:
        """Leaving a terminal status says it is terminal for the category."""
        with pytest.raises(
            IllegalTransition,
            match=exact(
                "Cannot move message 'msg_1' (user question) from processed to pending_agent: "
                "processed is terminal for a user question."
            ),
        ):
            check_transition(
                message(C.USER_QUESTION, S.PROCESSED), S.PENDING_AGENT, Driver.ORPHAN_RECOVERED
            )

    def test_delivered_reply_is_terminal(self) -> None:
        """A delivered reply can never be interrupted."""
        with pytest.raises(
            IllegalTransition,
            match=exact(
                "Cannot move message 'msg_1' (reply) from delivered to interrupted: delivered "
                "is terminal for a reply."
            ),
        ):
            check_transition(message(C.REPLY, S.DELIVERED), S.INTERRUPTED, Driver.TURN_ENDED)

    def test_wrong_driver(self) -> None:
        """A StatusChanged cannot claim input: only TurnStarted does."""
        with pytest.raises(
            IllegalTransition,
            match=exact(
                "Cannot move message 'msg_1' (user question) from pending_agent to processing "
                "with StatusChanged: only TurnStarted makes that change."
            ),
        ):
            check_transition(
                message(C.USER_QUESTION, S.PENDING_AGENT), S.PROCESSING, Driver.STATUS_CHANGED
            )

    def test_wrong_driver_for_recovery(self) -> None:
        """Putting processing input back in the queue is OrphanRecovered's job alone."""
        with pytest.raises(
            IllegalTransition,
            match=exact(
                "Cannot move message 'msg_1' (cron prompt) from processing to pending_agent "
                "with TurnEnded: only OrphanRecovered makes that change."
            ),
        ):
            check_transition(
                message(C.CRON_PROMPT, S.PROCESSING), S.PENDING_AGENT, Driver.TURN_ENDED
            )

    def test_wrong_driver_for_an_unanswered_call(self) -> None:
        """A turn's end or its recovery interrupts a call; a delivery report cannot."""
        with pytest.raises(
            IllegalTransition,
            match=exact(
                "Cannot move message 'msg_1' (tool call) from delivered to interrupted with "
                "StatusChanged: only TurnEnded or OrphanRecovered makes that change."
            ),
        ):
            check_transition(
                message(C.TOOL_CALL, S.DELIVERED), S.INTERRUPTED, Driver.STATUS_CHANGED
            )

    def test_wrong_category(self) -> None:
        """responded -> delivered is for intermediates; a reply cannot take it."""
        with pytest.raises(
            IllegalTransition,
            match=exact(
                "Cannot move message 'msg_1' (reply) from responded to delivered: responded is "
                "terminal for a reply."
            ),
        ):
            check_transition(message(C.REPLY, S.RESPONDED), S.DELIVERED, Driver.STATUS_CHANGED)

    def test_nudge_is_never_delivered(self) -> None:
        """A nudge stays responded (DESIGN §2: responded -> responded)."""
        with pytest.raises(
            IllegalTransition,
            match=exact(
                "Cannot move message 'msg_1' (nudge) from responded to delivered: responded is "
                "terminal for a nudge."
            ),
        ):
            check_transition(message(C.NUDGE, S.RESPONDED), S.DELIVERED, Driver.STATUS_CHANGED)

    def test_lists_the_allowed_exits(self) -> None:
        """An illegal target from a non-terminal status lists where the message may go."""
        with pytest.raises(
            IllegalTransition,
            match=exact(
                "Cannot move message 'msg_1' (tool call) from responded to processed: from "
                "responded a tool call may only go to delivered, interrupted."
            ),
        ):
            check_transition(message(C.TOOL_CALL, S.RESPONDED), S.PROCESSED, Driver.TURN_ENDED)

    def test_only_tool_calls_are_interrupted_from_responded(self) -> None:
        """A thought left responded by an interrupted turn is not interrupted."""
        with pytest.raises(
            IllegalTransition,
            match=exact(
                "Cannot move message 'msg_1' (thought) from responded to interrupted: from "
                "responded a thought may only go to delivered."
            ),
        ):
            check_transition(message(C.THOUGHT, S.RESPONDED), S.INTERRUPTED, Driver.TURN_ENDED)

    def test_rolled_back_message(self) -> None:
        """A rolled-back message keeps its status even for an otherwise legal change."""
        with pytest.raises(
            IllegalTransition,
            match=exact(
                "Cannot move message 'msg_1' (reply) from pending to delivered: it was rolled "
                "back, and rolled-back messages keep the status they had."
            ),
        ):
            check_transition(
                message(C.REPLY, S.PENDING, active=False), S.DELIVERED, Driver.STATUS_CHANGED
            )

    @pytest.mark.parametrize("pair", list(LEGAL), ids=lambda p: f"{p[0]}->{p[1]}")
    def test_rolled_back_rejects_every_legal_change(self, pair: tuple[Status, Status]) -> None:
        """No legal change applies to a rolled-back message of any category it covers."""
        categories, drivers = LEGAL[pair]
        for category in categories:
            for driver in drivers:
                with pytest.raises(IllegalTransition, match=r"it was rolled back"):
                    check_transition(message(category, pair[0], active=False), pair[1], driver)


class TestIsTerminal:
    @pytest.mark.parametrize("category", list(Category), ids=lambda c: c.name)
    def test_per_category(self, category: Category) -> None:
        """A status is terminal for a category iff the category has no way out of it."""
        terminal = {status for status in Status if is_terminal(category, status)}
        assert terminal == set(Status) - NON_TERMINAL[category]

    @pytest.mark.parametrize("category", list(Category), ids=lambda c: c.name)
    def test_turn_outcomes_are_terminal(self, category: Category) -> None:
        """processed, interrupted and error are terminal for every category."""
        for status in (S.PROCESSED, S.INTERRUPTED, S.ERROR):
            assert is_terminal(category, status)

    def test_delivered(self) -> None:
        """Delivered is terminal for replies, but not for tool calls (they may be interrupted)."""
        assert is_terminal(C.REPLY, S.DELIVERED)
        assert not is_terminal(C.TOOL_CALL, S.DELIVERED)

    @pytest.mark.parametrize("category", list(Category), ids=lambda c: c.name)
    def test_initial_status_is_terminal_only_for_static_categories(
        self, category: Category
    ) -> None:
        """Only nudges and the system prompt are finished the moment they are added."""
        static = category in (C.NUDGE, C.SYSTEM_PROMPT)
        assert is_terminal(category, category.spec.initial) is static
