"""``format_turn_metrics``: a reply's turn metrics on one line.

Its own module so that the command line (``amber timeline``) shows them
without importing the channel adapters (and pykka with them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

__all__ = ["format_turn_metrics"]


def _count(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return value


def _plural(n: float, one: str, many: str) -> str:
    return f"{n:,.0f} {one if n == 1 else many}"


def format_turn_metrics(metrics: object) -> str:
    """A one-line summary of a reply's ``turn_metrics`` (seed 000 §6.1).

    Reads ``session_turns``, ``context_tokens``, ``turn_tool_calls``,
    ``turn_tokens``, ``turn_time`` (seconds) and ``turn_cost_usd`` (with a
    ``+`` when ``turn_cost_partial``); missing or non-numeric entries are left
    out, so anything else gives ``""``.

    >>> format_turn_metrics({"session_turns": 3, "context_tokens": 8421, "turn_tool_calls": 1,
    ...                      "turn_tokens": 1042, "turn_time": 2.1})
    '3 turns · 8,421 ctx tokens · 1 tool call · 1,042 tokens · 2.1 s'
    """
    if not isinstance(metrics, Mapping):
        return ""
    parts: list[str] = []
    if (turns := _count(metrics.get("session_turns"))) is not None:
        parts.append(_plural(turns, "turn", "turns"))
    if (context := _count(metrics.get("context_tokens"))) is not None:
        parts.append(f"{context:,.0f} ctx tokens")
    if (calls := _count(metrics.get("turn_tool_calls"))) is not None:
        parts.append(_plural(calls, "tool call", "tool calls"))
    if (tokens := _count(metrics.get("turn_tokens"))) is not None:
        parts.append(_plural(tokens, "token", "tokens"))
    if (seconds := _count(metrics.get("turn_time"))) is not None:
        parts.append(f"{seconds:.1f} s")
    if (cost := _count(metrics.get("turn_cost_usd"))) is not None:
        partial = "+" if metrics.get("turn_cost_partial") is True else ""
        parts.append(f"${cost:.4f}{partial}" if cost >= 0.0001 else f"${cost:.6f}{partial}")
    return " · ".join(parts)
