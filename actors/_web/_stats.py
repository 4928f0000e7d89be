"""The numbers behind the viewer's charts and totals, computed from states.

Pure functions of ``runtime`` values. Per turn: its latency split into model
time (the audit rows' durations), tool time (the tool results' measured
durations) and the rest (the runner's own work, waiting, delivery), tokens in
and out, and cost. Per session: the same summed. Over a timeline: how many
messages had each status at each seq.

Cost is read from the model-call audit: provider models price each call with
the runtime's price table when it finishes (``AuditRow.cost_usd``); a row
without one (a scripted model, an unknown price) has an unknown cost
(``None``, shown as "—"), never a guess.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs

from runtime import STATUS_ORDER, AuditRow, SessionState, Status, Timeline

__all__ = [
    "SessionTotals",
    "StatusSeries",
    "TurnStats",
    "call_cost",
    "session_totals",
    "status_series",
    "stored_series",
    "turn_stats",
]


def call_cost(row: AuditRow) -> float | None:
    """The cost of one model call in US dollars, if its audit row records one.

    Rows of models that do not price their calls (the scripted model) have
    none: ``None``.
    """
    cost = getattr(row, "cost_usd", None)
    if isinstance(cost, int | float) and not isinstance(cost, bool) and math.isfinite(cost):
        return float(cost)
    return None


def _sum_costs(rows: Sequence[AuditRow]) -> float | None:
    costs = [call_cost(row) for row in rows]
    known = [c for c in costs if c is not None]
    return sum(known) if known else None


@attrs.frozen(kw_only=True)
class TurnStats:
    """One turn's figures."""

    turn_id: str
    """The turn."""
    status: str
    """``active``, or how it ended."""
    started_seq: int
    """Seq of its ``turn_started``."""
    ended_seq: int | None
    """Seq of the event that ended it."""
    duration_ms: float | None
    """Its wall time as the runner measured it (None while active, or unmeasured)."""
    model_ms: float
    """Time in model calls (sum of the audit rows' durations)."""
    tool_ms: float
    """Time in tools (sum of the tool results' measured durations; parallel tools overlap)."""
    calls: int
    """Model calls."""
    tools: int
    """Tool results."""
    tool_errors: int
    """Tool results that are errors."""
    tokens_in: int
    """Input tokens of its model calls."""
    tokens_out: int
    """Output tokens of its model calls."""
    cost: float | None
    """Cost of its model calls, when recorded."""

    @property
    def other_ms(self) -> float:
        """The rest of the turn's time: the runner, waiting, delivery (0 when not measured)."""
        if self.duration_ms is None:
            return 0.0
        return max(0.0, self.duration_ms - self.model_ms - self.tool_ms)


def turn_stats(state: SessionState) -> list[TurnStats]:
    """Every turn of ``state`` with its figures, in start order."""
    calls: dict[str, list[AuditRow]] = {}
    for row in state.model_calls():
        calls.setdefault(row.turn_id, []).append(row)
    tool_ms: dict[str, float] = {}
    tools: dict[str, int] = {}
    errors: dict[str, int] = {}
    for message in state.messages:
        if message.tool_call_id is None or message.turn_id is None:
            continue
        owner = message.turn_id
        tools[owner] = tools.get(owner, 0) + 1
        errors[owner] = errors.get(owner, 0) + int(message.is_error)
        ms = message.metadata.get("duration_ms")
        if isinstance(ms, int | float) and not isinstance(ms, bool) and ms >= 0:
            tool_ms[owner] = tool_ms.get(owner, 0.0) + float(ms)
    out = []
    for turn in state.turn_list():
        rows = calls.get(turn.id, [])
        out.append(
            TurnStats(
                turn_id=turn.id,
                status=str(turn.status),
                started_seq=turn.started_seq,
                ended_seq=turn.ended_seq,
                duration_ms=turn.duration_ms,
                model_ms=sum(row.duration_ms or 0.0 for row in rows),
                tool_ms=tool_ms.get(turn.id, 0.0),
                calls=len(rows),
                tools=tools.get(turn.id, 0),
                tool_errors=errors.get(turn.id, 0),
                tokens_in=sum(row.usage.input_tokens for row in rows if row.usage),
                tokens_out=sum(row.usage.output_tokens for row in rows if row.usage),
                cost=_sum_costs(rows),
            )
        )
    return out


@attrs.frozen(kw_only=True)
class SessionTotals:
    """A session's figures at one state."""

    turns: int
    """Turns started (forks count the source's)."""
    messages: int
    """Messages (rolled-back ones included)."""
    calls: int
    """Model calls."""
    tokens_in: int
    """Input tokens of every model call."""
    tokens_out: int
    """Output tokens of every model call."""
    cost: float | None
    """Cost of every model call that records one; None when none does."""

    @property
    def tokens(self) -> int:
        """Input plus output tokens."""
        return self.tokens_in + self.tokens_out


def session_totals(state: SessionState) -> SessionTotals:
    """The totals of ``state``."""
    rows = state.model_calls()
    return SessionTotals(
        turns=len(state.turns) + (state.active_turn is not None),
        messages=len(state.messages),
        calls=len(rows),
        tokens_in=sum(row.usage.input_tokens for row in rows if row.usage),
        tokens_out=sum(row.usage.output_tokens for row in rows if row.usage),
        cost=_sum_costs(rows),
    )


@attrs.frozen(kw_only=True)
class StatusSeries:
    """Message counts by status at sampled seqs."""

    seqs: tuple[int, ...]
    """The sampled seqs, ascending (the first and the last always among them)."""
    counts: dict[Status, tuple[int, ...]]
    """For each status some message had: its count at each sampled seq."""
    stored: bool = False
    """True when sampled at the session's stored states (``stored_series``), not evenly."""


def status_series(timeline: Timeline, *, points: int = 240) -> StatusSeries:
    """How many messages had each status, at up to ``points`` evenly spaced seqs."""
    first, last = timeline.first_seq, timeline.last_seq
    span = last - first
    if span <= points:
        seqs = list(range(first, last + 1))
    else:
        seqs = sorted({first + round(i * span / (points - 1)) for i in range(points)})
    return _series(seqs, [timeline.at(seq).counts for seq in seqs], stored=False)


def stored_series(
    stored: Sequence[tuple[int, tuple[int, ...]]], head: SessionState, *, points: int = 240
) -> StatusSeries:
    """How many messages had each status at seq 0, at the stored states ``stored`` (``(seq,
    counts in STATUS_ORDER)``: a store's ``stored_counts``, read without replaying) and at
    ``head``; at most ``points`` of them, evenly picked, the first and the last kept."""
    samples = {0: (0,) * len(STATUS_ORDER)}
    samples.update((seq, counts) for seq, counts in stored if seq < head.seq)
    samples[head.seq] = head.counts
    seqs = sorted(samples)
    if len(seqs) > points:
        seqs = [seqs[round(i * (len(seqs) - 1) / (points - 1))] for i in range(points)]
    return _series(seqs, [samples[seq] for seq in seqs], stored=True)


def _series(seqs: Sequence[int], counts: Sequence[Sequence[int]], *, stored: bool) -> StatusSeries:
    """The series of ``counts`` (each in ``STATUS_ORDER``) at ``seqs``: the statuses some
    sample has, in that order."""
    return StatusSeries(
        seqs=tuple(seqs),
        counts={
            status: tuple(sample[i] for sample in counts)
            for i, status in enumerate(STATUS_ORDER)
            if any(sample[i] for sample in counts)
        },
        stored=stored,
    )
