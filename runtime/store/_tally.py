"""A session's cost as its summary row keeps it: exact, and updated by the rows that changed.

``amber sessions`` lists each session's cost without loading its state, so the
summary row holds it. Adding each call's cost as it finishes would round at every
step, and the sum would depend on the order calls finished in (a rebuild adds them
in sequence order): the row keeps the exact sum (a ``Fraction``: every float is
one) and rounds it once when read, which is what ``session_cost`` gives (an exact
sum rounded once) in any order.

An append touches only the rows a batch started or finished: the rows added after
the previous head's last, and the rows that were running in it (a row that is not
running never changes, ``_reduce_audit``). So ``Tally.after`` costs what the
batch changed, however many calls the session made.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction

import attrs
import orjson

from .._audit import AuditRow
from .._session_cost import SessionCost
from .._state import SessionState
from ._summaries import parse_cost

__all__ = ["Tally"]


@attrs.frozen
class Tally:
    """The exact cost of a session's model calls, and how many are priced and unpriced."""

    usd: Fraction = Fraction(0)
    """The sum of the recorded costs, exactly."""
    priced: int = 0
    """Calls with a recorded cost."""
    unpriced: int = 0
    """Calls with usage but no recorded cost."""

    @classmethod
    def of(cls, head: SessionState) -> Tally:
        """The tally of every audit row of ``head``."""
        return cls().plus(head.audit.values())

    def after(self, before: SessionState, head: SessionState) -> Tally:
        """This tally (``before``'s) updated to ``head``, a later state of the same session:
        by the rows added since and the rows running in ``before``; by every row of
        ``head`` when its row vector is not the reducer's (a state built by hand)."""
        old, new = before.audit_rows, head.audit_rows
        if len(old) != len(before.audit) or len(new) != len(head.audit) or len(new) < len(old):
            return Tally.of(head)
        running = [before.audit[key] for key in before.audit_running]
        changed = [head.audit[row.source_key] for row in running]
        return self.minus(running).plus([*changed, *new[len(old) :]])

    def plus(self, rows: Iterable[AuditRow]) -> Tally:
        """This tally with ``rows`` added."""
        usd, priced, unpriced = self.usd, self.priced, self.unpriced
        for row in rows:
            if row.cost_usd is not None:
                usd += Fraction(row.cost_usd)
                priced += 1
            elif row.usage is not None:
                unpriced += 1
        return Tally(usd, priced, unpriced)

    def minus(self, rows: Iterable[AuditRow]) -> Tally:
        """This tally with ``rows`` taken out."""
        out = Tally().plus(rows)
        return Tally(self.usd - out.usd, self.priced - out.priced, self.unpriced - out.unpriced)

    def cost(self) -> SessionCost:
        """The cost, rounded once (equal to ``session_cost`` of the same rows)."""
        return SessionCost(usd=float(self.usd), priced=self.priced, unpriced=self.unpriced)

    def to_text(self) -> str:
        """The summary row's ``cost`` column: ``["<numerator>/<denominator>", priced,
        unpriced]``."""
        exact = f"{self.usd.numerator}/{self.usd.denominator}"
        return orjson.dumps([exact, self.priced, self.unpriced]).decode()

    @classmethod
    def from_text(cls, text: object) -> Tally:
        """A tally from its column.

        Raises:
            ValueError: the text is not a tally.
        """
        numerator, denominator, priced, unpriced = parse_cost(text)
        return cls(Fraction(numerator, denominator), priced, unpriced)
