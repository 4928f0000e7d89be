"""``ToolOutcome``: what one tool run gave back, a failure included (DESIGN §7).

A tool's failure, timeout or bad arguments are outcomes, never exceptions
that reach the session: the turn machine records every outcome as a tool
result the model reads.
"""

from __future__ import annotations

import types
from collections.abc import Mapping

import attrs

__all__ = ["ERROR_TYPES", "ToolOutcome"]

ERROR_TYPES: Mapping[str, str] = types.MappingProxyType(
    {
        "invalid_arguments": "the arguments are not a JSON object that fits the tool's schema",
        "unknown_tool": "the model called a tool the toolbox does not have",
        "timeout": (
            "the tool did not finish within its time limit and was stopped (an async tool) or "
            "left running in its thread (a sync tool): it may have run, in part or in full"
        ),
        "exception": "the tool raised an exception",
        "exit_status": "a shell command exited with a non-zero status",
        "denied": "a person denied the call (its tool needs approval), or no one answered in time",
    }
)
"""The ``error_type`` values Amber gives a failed tool run, with what each means."""


@attrs.frozen(kw_only=True)
class ToolOutcome:
    """What one tool run gave back; a failure is an outcome too, never an exception."""

    content: str
    """What the model reads: the result as text, or the error explained."""
    is_error: bool = False
    """True when the run failed."""
    error_type: str | None = attrs.field(default=None)
    """Why it failed (a key of ``ERROR_TYPES``); None when it did not."""
    summary: str | None = None
    """A one-line summary (at most 200 characters) for the UI and message metadata."""
    duration_ms: float = 0.0
    """How long the run took, in milliseconds (set by ``Tool.invoke``)."""
    truncated: bool = False
    """True when ``content`` was cut to the tool's output limit."""

    @error_type.validator
    def _check_error_type(self, _: attrs.Attribute[str | None], value: str | None) -> None:
        if self.is_error != (value is not None) or value == "":
            raise ValueError(
                "A ToolOutcome has an error_type exactly when is_error is True "
                f"(got is_error={self.is_error!r}, error_type={value!r}); "
                "pass both or neither."
            )
