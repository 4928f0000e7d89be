"""SVG charts, drawn here: stacked bars per turn, and stacked areas over seqs.

No chart library and no external service: each function returns an
``<svg>`` element as ``Markup``, sized by its ``viewBox`` so it scales with
the page. Colors come from CSS classes (``s-<series>``), tooltips from SVG
``<title>`` elements (no JavaScript), and every bar or column links to the
seq it stands for.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import attrs
from markupsafe import Markup, escape

__all__ = ["Bar", "Series", "area_chart", "bar_chart", "nice_ticks"]

_W, _H = 960, 240
"""The viewBox of every chart."""
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 12, 10, 26
"""Margins for the axes."""


@attrs.frozen(kw_only=True)
class Series:
    """One stacked series: its name in the legend and its CSS class."""

    name: str
    """Shown in the legend and tooltips."""
    css: str
    """The class that colors it (``s-model`` …)."""


@attrs.frozen(kw_only=True)
class Bar:
    """One bar (a turn): a value per series, stacked bottom up."""

    label: str
    """Shown under the axis (a few) and in the tooltip."""
    values: tuple[float, ...]
    """One value per series, in the chart's series order."""
    href: str
    """Where clicking the bar goes."""
    note: str = ""
    """More tooltip lines."""


def nice_ticks(top: float, count: int = 4) -> list[float]:
    """Round tick values from 0 to at least ``top`` (1, 2 or 5 times a power of ten apart)."""
    if not math.isfinite(top) or top <= 0:
        return [0.0, 1.0]
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    ticks = [0.0]
    while ticks[-1] < top:
        ticks.append(round(ticks[-1] + step, 12))
    return ticks


def _axis(ticks: list[float], fmt: Callable[[float], str], y: Callable[[float], float]) -> str:
    parts = []
    for tick in ticks:
        ty = y(tick)
        parts.append(
            f'<line class="grid" x1="{_LEFT}" x2="{_W - _RIGHT}" y1="{ty:.1f}" y2="{ty:.1f}"/>'
            f'<text class="tick" x="{_LEFT - 6}" y="{ty + 4:.1f}" text-anchor="end">'
            f"{escape(fmt(tick))}</text>"
        )
    return "".join(parts)


def bar_chart(
    bars: Sequence[Bar],
    series: Sequence[Series],
    *,
    fmt: Callable[[float], str],
    title: str,
) -> Markup:
    """Stacked bars, one per item of ``bars``, with a y axis formatted by ``fmt``."""
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    top = max((sum(bar.values) for bar in bars), default=0.0)
    ticks = nice_ticks(top)
    scale = plot_h / ticks[-1]

    def y(value: float) -> float:
        return _TOP + plot_h - value * scale

    slot = plot_w / max(1, len(bars))
    width = min(64.0, max(1.0, slot * 0.8))
    body = [_axis(ticks, fmt, y)]
    label_every = max(1, math.ceil(len(bars) / 8))
    for i, bar in enumerate(bars):
        x = _LEFT + i * slot + (slot - width) / 2
        tip = [bar.label] + [f"{s.name}: {fmt(v)}" for s, v in zip(series, bar.values, strict=True)]
        if bar.note:
            tip.append(bar.note)
        rects = [f"<title>{escape(chr(10).join(tip))}</title>"]
        # A full-height hit area, so short bars are easy to point at.
        rects.append(
            f'<rect class="hit" x="{x:.1f}" y="{_TOP}" width="{width:.1f}" height="{plot_h}"/>'
        )
        base = 0.0
        for s, value in zip(series, bar.values, strict=True):
            if value <= 0:
                continue
            rects.append(
                f'<rect class="{s.css}" x="{x:.1f}" y="{y(base + value):.1f}" '
                f'width="{width:.1f}" height="{value * scale:.1f}"/>'
            )
            base += value
        body.append(f'<a href="{escape(bar.href)}">{"".join(rects)}</a>')
        if i % label_every == 0:
            body.append(
                f'<text class="tick" x="{x + width / 2:.1f}" y="{_H - 8}" text-anchor="middle">'
                f"{escape(bar.label)}</text>"
            )
    return Markup(
        f'<svg class="chart" viewBox="0 0 {_W} {_H}" role="img" '
        f'aria-label="{escape(title)}">{"".join(body)}</svg>'
    )


def area_chart(
    xs: Sequence[int],
    series: Sequence[tuple[Series, Sequence[int]]],
    *,
    href: Callable[[int], str],
    title: str,
    tip: Callable[[int], str],
) -> Markup:
    """Stacked areas over ``xs`` (seqs); each column links to its seq."""
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    count = len(xs)
    totals = [sum(values[i] for _, values in series) for i in range(count)]
    ticks = nice_ticks(max(totals, default=0))
    scale = plot_h / ticks[-1]
    lo, hi = (xs[0], xs[-1]) if xs else (0, 1)
    span = max(1, hi - lo)

    def x(seq: int) -> float:
        return _LEFT + (seq - lo) / span * plot_w

    def y(value: float) -> float:
        return _TOP + plot_h - value * scale

    body = [_axis(ticks, lambda v: f"{v:,.0f}", y)]
    below = [0] * count
    for s, values in series:
        above = [b + v for b, v in zip(below, values, strict=True)]
        upper = " ".join(f"{x(xs[i]):.1f},{y(above[i]):.1f}" for i in range(count))
        lower = " ".join(f"{x(xs[i]):.1f},{y(below[i]):.1f}" for i in reversed(range(count)))
        body.append(
            f'<polygon class="{s.css}" points="{upper} {lower}"><title>{escape(s.name)}</title>'
            "</polygon>"
        )
        below = above
    for i, seq in enumerate(xs):
        left = x(xs[i - 1]) if i else x(seq)
        right = x(xs[i + 1]) if i + 1 < count else x(seq)
        x0, x1 = (left + x(seq)) / 2, (x(seq) + right) / 2
        body.append(
            f'<a href="{escape(href(seq))}"><rect class="hit" x="{x0:.1f}" y="{_TOP}" '
            f'width="{max(1.0, x1 - x0):.1f}" height="{plot_h}"><title>{escape(tip(i))}</title>'
            "</rect></a>"
        )
    for tick in nice_ticks(hi - lo, 6):
        if tick > span:
            break
        body.append(
            f'<text class="tick" x="{x(lo + round(tick)):.1f}" y="{_H - 8}" '
            f'text-anchor="middle">{lo + round(tick):,}</text>'
        )
    return Markup(
        f'<svg class="chart" viewBox="0 0 {_W} {_H}" role="img" '
        f'aria-label="{escape(title)}">{"".join(body)}</svg>'
    )
