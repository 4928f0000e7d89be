"""What a session's model calls cost, as recorded in their audit rows (pure, light).

Apart from the price tables (``runtime._cost``), which the commands that only read
a session's summary do not need.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

__all__ = ["SessionCost", "session_cost"]


@attrs.frozen(kw_only=True)
class SessionCost:
    """What a session's model calls cost, from their audit rows."""

    usd: float
    """The sum of the calls' recorded costs, in US dollars."""
    priced: int
    """Calls with a recorded cost."""
    unpriced: int
    """Calls with usage but no recorded cost (the sum is then a lower bound)."""

    @property
    def complete(self) -> bool:
        """True when every call that used tokens has a cost."""
        return self.unpriced == 0


def session_cost(rows: Any) -> SessionCost:
    """The cost of ``rows`` (``state.model_calls()``, or one turn's) as recorded in them.

    The sum is exact, then rounded once (``math.fsum``): the same in any order, so a
    summary that adds each call's cost as it finishes agrees with it to the last bit.
    """
    costs: list[float] = []
    unpriced = 0
    for row in rows:
        cost = getattr(row, "cost_usd", None)
        if cost is not None:
            costs.append(cost)
        elif getattr(row, "usage", None) is not None:
            unpriced += 1
    return SessionCost(usd=math.fsum(costs), priced=len(costs), unpriced=unpriced)
