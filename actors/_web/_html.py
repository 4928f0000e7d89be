"""Rich text as HTML, and the small formatters the templates use.

The viewer describes events and diffs with the CLI's own functions
(``describe_event``, ``diff_view``), so a line reads the same in a browser as
in ``amber timeline``. Those return ``rich.text.Text``; ``rich_html`` turns
one into escaped HTML whose styles are CSS classes (``b`` bold, ``d`` dim,
``c-green`` a color, ``bg-grey23`` a background): the page's
Content-Security-Policy allows no inline styles. Control characters are
spelled out by the CLI already (``safe``); everything is escaped here.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from markupsafe import Markup, escape
from rich.console import Console, Group, RenderableType
from rich.style import Style
from rich.text import Text

__all__ = [
    "duration",
    "money",
    "number",
    "rich_html",
    "rich_lines",
    "utc_time",
]

_CONSOLE = Console(width=10_000, color_system="truecolor", force_terminal=True, highlight=False)
_CLASSES: dict[Style, str] = {}


def _classes(style: Style) -> str:
    cached = _CLASSES.get(style)
    if cached is not None:
        return cached
    names = []
    if style.bold:
        names.append("b")
    if style.dim:
        names.append("d")
    if style.italic:
        names.append("i")
    if style.color is not None and style.color.name and not style.color.name.startswith("#"):
        names.append(f"c-{style.color.name}")
    if style.bgcolor is not None and style.bgcolor.name and not style.bgcolor.name.startswith("#"):
        names.append(f"bg-{style.bgcolor.name}")
    result = " ".join(names)
    _CLASSES[style] = result
    return result


def rich_html(text: Text) -> Markup:
    """``text`` as HTML: escaped, with its styles as CSS classes."""
    if not text.spans and not text.style:
        return escape(text.plain)
    out = []
    for segment in text.render(_CONSOLE, end=""):
        if not segment.text:
            continue
        body = escape(segment.text)
        classes = _classes(segment.style) if segment.style else ""
        out.append(Markup('<span class="{}">{}</span>').format(classes, body) if classes else body)
    return Markup("").join(out)


def rich_lines(renderable: RenderableType) -> list[Markup]:
    """The lines of a ``Text`` or a ``Group`` of them (a ``diff_view``) as HTML."""
    parts: Iterable[RenderableType] = (
        renderable.renderables if isinstance(renderable, Group) else [renderable]
    )
    lines: list[Markup] = []
    for part in parts:
        if isinstance(part, Text):
            lines.extend(rich_html(line) for line in part.split("\n"))
        else:  # not produced by the CLI's line builders today
            lines.append(escape(str(part)))
    return lines


def utc_time(at: datetime | None, *, date: bool = True) -> str:
    """``2026-05-27 12:50:02.125`` (UTC), or ``-``."""
    if at is None:
        return "-"
    utc = at.astimezone(UTC)
    stamp = utc.strftime("%H:%M:%S.") + f"{utc.microsecond // 1000:03d}"
    return f"{utc:%Y-%m-%d} {stamp}" if date else stamp


def duration(ms: float | None) -> str:
    """``0.4 ms``, ``12 ms``, ``1.2 s``, ``3 min 4 s``; ``-`` when unknown."""
    if ms is None:
        return "-"
    if ms == 0:
        return "0 ms"
    if ms < 10:
        return f"{ms:.1f} ms"
    if ms < 1_000:
        return f"{ms:.0f} ms"
    seconds = ms / 1_000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes} min {rest} s"


def number(value: float | int) -> str:
    """``12,345``."""
    return f"{value:,.0f}"


def money(value: float | None) -> str:
    """``$0.0123``; ``—`` when unknown (no cost recorded)."""
    if value is None:
        return "—"
    return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"
