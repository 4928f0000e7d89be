"""The viewer's figures (per turn, per session, statuses over seqs) and its SVG charts."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from web_support import agent_session  # (skips without the web extra)

from actors._web._charts import Bar, Series, area_chart, bar_chart, nice_ticks
from actors._web._stats import (
    call_cost,
    session_totals,
    status_series,
    stored_series,
    turn_stats,
)
from runtime import MessageAdded, ModelCallFinished, ModelCallStarted, replay


@pytest.fixture(scope="module")
def long_timeline() -> Any:
    return replay(agent_session(400, "c"))


class TestStats:
    def test_turn_figures_match_the_events(self, long_timeline: Any) -> None:
        """Per turn: model time and tokens are its calls', tool time its results' durations."""
        model_ms: dict[str, float] = {}
        tokens: dict[str, tuple[int, int]] = {}
        tool_ms: dict[str, float] = {}
        turn_of: dict[str, str] = {}
        for event in long_timeline.events():
            if isinstance(event, ModelCallStarted):
                turn_of[event.operation_id] = event.turn_id
            elif isinstance(event, ModelCallFinished):
                turn = turn_of[event.operation_id]
                model_ms[turn] = model_ms.get(turn, 0.0) + (event.duration_ms or 0.0)
                i, o = tokens.get(turn, (0, 0))
                assert event.usage is not None
                tokens[turn] = (i + event.usage.input_tokens, o + event.usage.output_tokens)
            elif isinstance(event, MessageAdded) and event.message.tool_call_id:
                turn = event.message.turn_id
                assert turn is not None
                tool_ms[turn] = tool_ms.get(turn, 0.0) + event.message.metadata["duration_ms"]
        stats = turn_stats(long_timeline.head)
        assert [s.turn_id for s in stats] == [t.id for t in long_timeline.head.turn_list()]
        for s in stats:
            assert math.isclose(s.model_ms, model_ms.get(s.turn_id, 0.0))
            assert math.isclose(s.tool_ms, tool_ms.get(s.turn_id, 0.0))
            assert (s.tokens_in, s.tokens_out) == tokens.get(s.turn_id, (0, 0))
            assert s.cost is None
            assert s.other_ms >= 0
        totals = session_totals(long_timeline.head)
        assert totals.tokens_in == sum(i for i, _ in tokens.values())
        assert totals.turns == len(stats)
        assert totals.cost is None

    def test_statuses_over_seqs_are_the_states_counts(self, long_timeline: Any) -> None:
        """Each sample is the state's status counts; the first and last seqs are sampled."""
        series = status_series(long_timeline, points=50)
        assert series.seqs[0] == 0
        assert series.seqs[-1] == long_timeline.last_seq
        assert len(series.seqs) <= 50
        for i, seq in enumerate(series.seqs):
            counts = long_timeline.at(seq).status_counts()
            assert {s: v[i] for s, v in series.counts.items() if v[i]} == counts

    @given(every=st.integers(1, 60), points=st.integers(2, 30))
    def test_statuses_at_stored_states_are_their_counts(
        self, long_timeline: Any, every: int, points: int
    ) -> None:
        """Sampled at stored states: seq 0, each stored state before the head (at most
        ``points`` in all, evenly picked) and the head, with their counts."""
        head = long_timeline.head
        stored = [(seq, long_timeline.at(seq).counts) for seq in range(every, head.seq + 1, every)]
        series = stored_series(stored, head, points=points)
        assert series.stored
        assert series.seqs[0] == 0
        assert series.seqs[-1] == head.seq
        assert len(series.seqs) <= points
        assert set(series.seqs) <= {0, head.seq, *(seq for seq, _ in stored)}
        for i, seq in enumerate(series.seqs):
            counts = long_timeline.at(seq).status_counts()
            assert {s: v[i] for s, v in series.counts.items() if v[i]} == counts

    def test_statuses_at_every_seq_are_the_even_series(self, long_timeline: Any) -> None:
        """With every seq stored, the series is the one sampled from the whole timeline."""
        head = long_timeline.head
        stored = [(seq, long_timeline.at(seq).counts) for seq in range(1, head.seq)]
        for points in (2, 7, 240, head.seq + 1):
            even = status_series(long_timeline, points=points)
            at_stored = stored_series(stored, head, points=points)
            assert len(at_stored.seqs) == min(points, head.seq + 1)
            if points > head.seq:
                assert (at_stored.seqs, at_stored.counts) == (even.seqs, even.counts)

    def test_cost_only_when_a_row_records_one(self) -> None:
        """A row without a cost has none; one with a finite number has it."""
        assert call_cost(SimpleNamespace(cost_usd=0.25)) == 0.25  # type: ignore[arg-type]
        for missing in (SimpleNamespace(), SimpleNamespace(cost_usd=None), SimpleNamespace(cost_usd=True),
                        SimpleNamespace(cost_usd=float("nan"))):  # fmt: skip
            assert call_cost(missing) is None  # type: ignore[arg-type]


class TestCharts:
    @given(st.floats(min_value=1e-6, max_value=1e12, allow_nan=False))
    def test_ticks_cover_the_top_in_round_steps(self, top: float) -> None:
        """Ticks start at 0, rise by one round step (1, 2 or 5 times a power of ten) and reach the top."""
        ticks = nice_ticks(top)
        assert ticks[0] == 0
        assert ticks[-1] >= top
        step = ticks[1]
        mantissa = step / 10 ** math.floor(math.log10(step))
        assert any(math.isclose(mantissa, m, rel_tol=1e-9) for m in (1, 2, 5, 10))
        assert len(ticks) <= 6

    def test_no_data_still_draws_an_axis(self) -> None:
        """Empty or zero charts draw an axis from 0 to 1, never divide by zero."""
        assert nice_ticks(0) == [0.0, 1.0]
        assert "<svg" in bar_chart([], [Series(name="x", css="s-x")], fmt=str, title="t")

    def test_bars_stack_link_and_escape(self) -> None:
        """A bar per item, a rect per non-zero value, a link each; text is escaped."""
        series = [Series(name="model", css="s-model"), Series(name="tools", css="s-tool")]
        bars = [
            Bar(label="<t1>", values=(3.0, 1.0), href="/session?s=a&at=1"),
            Bar(label="t2", values=(0.0, 2.0), href="/session?s=a&at=5", note='x"y'),
        ]
        svg = str(bar_chart(bars, series, fmt=lambda v: f"{v:g} ms", title="<Latency>"))
        assert svg.count("<a href=") == 2
        assert "/session?s=a&amp;at=5" in svg
        assert svg.count('class="s-model"') == 1
        assert svg.count('class="s-tool"') == 2
        assert "<t1>" not in svg
        assert "&lt;t1&gt;" in svg
        assert "&lt;Latency&gt;" in svg

    def test_areas_have_a_column_per_seq(self) -> None:
        """An area chart has one polygon per series and one linked column per sampled seq."""
        svg = str(
            area_chart(
                [0, 5, 10],
                [
                    (Series(name="a", css="st-a"), [0, 1, 2]),
                    (Series(name="b", css="st-b"), [1, 1, 0]),
                ],
                href=lambda seq: f"/session?s=x&at={seq}",
                title="statuses",
                tip=lambda i: f"sample {i}",
            )
        )
        assert svg.count("<polygon") == 2
        assert svg.count("<a href=") == 3
