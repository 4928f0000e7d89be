"""The delivery contract: what adapters were shown and what they reported, checked.

``DeliveryLedger`` records every announcement of a message that waits for
delivery and every ``delivered`` report of each adapter; ``check`` turns
them into the contract: an adapter reports a message delivered at most once
per time it was announced, only output that waits for delivery, only
messages of its platform that its channel shows or absorbs. The simulator
keeps one; so does ``actors.testing.ObservedRuntime``.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from typing import Any

import attrs

from .._article import article
from .._category import category_of
from .._message import Status
from .._state import SessionState
from .._updates import Update, awaits_delivery
from .._visibility import ChannelKind, Visibility, channel_rule
from ._violation import InvariantViolation

__all__ = ["DeliveryLedger", "DeliveryReport"]


@attrs.frozen(kw_only=True)
class DeliveryReport:
    """One ``delivered`` report of one adapter."""

    adapter: str
    """The adapter: its class, platform and runtime generation."""
    platform: str
    """The adapter's platform."""
    kind: ChannelKind
    """Its channel kind."""
    session_id: str
    """The session."""
    message_id: str
    """The message reported."""
    expected: Status
    """The status the adapter saw."""


class DeliveryLedger:
    """Announcements and delivery reports, as they were recorded.

    Args:
        lock: held around every change (a ``threading.Lock()`` when a real
            runtime's threads record into it; none is needed in the simulator).
    """

    def __init__(self, *, lock: contextlib.AbstractContextManager[Any] | None = None) -> None:
        self._lock = lock if lock is not None else contextlib.nullcontext()
        self._announced: Counter[tuple[str, str]] = Counter()
        self._reported: Counter[tuple[str, str, str]] = Counter()
        self._reports: list[DeliveryReport] = []
        self._checked = 0
        self._waiting: list[DeliveryReport] = []

    def announced(self, update: Update) -> None:
        """The gateway fanned out a new message that waits for delivery."""
        if update.is_new and awaits_delivery(update.message):
            with self._lock:
                self._announced[(update.session_id, update.message.id)] += 1

    def reported(self, report: DeliveryReport) -> None:
        """An adapter reported a delivery."""
        with self._lock:
            self._reports.append(report)

    def check(self, heads: dict[str, SessionState]) -> None:
        """Check the new reports of the sessions in ``heads`` against the delivery contract.

        A report of a session not in ``heads`` (or of a message its head does
        not have yet) waits for a later call.

        Raises:
            InvariantViolation: a report breaks the contract.
        """
        with self._lock:
            reports = self._waiting + self._reports[self._checked :]
            self._checked = len(self._reports)
            self._waiting = []
            # What the reports need of the counts, not a copy of them all (one a delivery).
            announced = {
                (r.session_id, r.message_id): self._announced[(r.session_id, r.message_id)]
                for r in reports
            }
        for position, report in enumerate(reports):
            state = heads.get(report.session_id)
            if state is None or report.message_id not in state:
                with self._lock:
                    self._waiting.append(report)
                continue
            key = (report.adapter, report.session_id, report.message_id)
            with self._lock:
                self._reported[key] += 1
                count = self._reported[key]
            try:
                _check_report(
                    report, state, count, announced[(report.session_id, report.message_id)]
                )
            except InvariantViolation:
                with self._lock:
                    self._waiting.extend(reports[position + 1 :])
                raise


def _check_report(report: DeliveryReport, state: SessionState, count: int, announced: int) -> None:
    message = state.message(report.message_id)
    category = category_of(message)
    who = f"adapter {report.adapter}"
    what = f"message {message.id!r} ({category.label})"

    def broken(number: int | None, rule: str, detail: str) -> InvariantViolation:
        head = f"Invariant {number} ({rule})" if number else f"Contract ({rule})"
        return InvariantViolation(
            f"{head} broken at seq {state.seq}: {detail}",
            invariant=number,
            name=rule,
            seq=state.seq,
            detail=detail,
            session_id=state.session_id,
            message_id=message.id,
        )

    if category.is_input or Status.DELIVERED not in category.spec.finals:
        raise broken(
            1, "only output waiting for delivery is reported delivered",
            f"{who} reported {what} delivered while it was {report.expected}; "
            f"{report.expected} -> delivered is not a change a {category.label} makes "
            "(inputs end by their turn, nudges stay responded)",
        )  # fmt: skip
    if report.expected not in (Status.PENDING, Status.RESPONDED):
        raise broken(
            1, "only output waiting for delivery is reported delivered",
            f"{who} reported {what} delivered from {report.expected}, a status it leaves only "
            "by its turn",
        )  # fmt: skip
    if count > max(1, announced):
        raise broken(
            1, "an adapter reports each message delivered exactly once",
            f"{who} reported {what} delivered {count} times, but it was announced "
            f"{announced} time(s); a second report would move a terminal status",
        )  # fmt: skip
    if message.chatbot_id != report.platform:
        raise broken(
            None, "an adapter delivers only its platform's messages",
            f"{who} reported {what} of platform {message.chatbot_id!r} delivered",
        )  # fmt: skip
    if channel_rule(report.kind, message).visibility is Visibility.HIDDEN:
        raise broken(
            None, "an adapter delivers only what its channel shows or absorbs",
            f"{who} reported {what} delivered, which {article(report.kind)} channel hides",
        )  # fmt: skip
