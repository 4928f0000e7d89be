"""Approval decisions stored for a session's owner by a process that does not run it.

Kept apart from the turn operations so that readers (``amber timeline``, the
web viewer) can name a stored decision without importing the turn machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._message import Message

__all__ = ["DECISION_KEY", "decision_metadata", "stored_decision"]

DECISION_KEY = "approval_decision"
"""Metadata key of a tool-call message that carries a decision stored for the session's
owner by a process that does not run it (``{"approved": bool, "reason"?: str, "by"?:
str}``, set with a ``MetadataUpdated``). It only asks: the owner, when it (re)loads the
session, takes the decision (``ApprovalDecided``, then the tool runs or the call is
denied), so a call is decided, and run, by the one runner of the session."""


def decision_metadata(approved: bool, reason: str | None, by: str | None) -> dict[str, Any]:
    """The metadata that stores a decision for the session's owner (``DECISION_KEY``)."""
    decision: dict[str, Any] = {"approved": approved}
    if reason is not None:
        decision["reason"] = reason
    if by is not None:
        decision["by"] = by
    return {DECISION_KEY: decision}


def stored_decision(message: Message) -> tuple[bool, str | None, str | None] | None:
    """``(approved, reason, by)`` stored on a tool-call message for the owner, or None (no
    decision, or a value under ``DECISION_KEY`` that is not one: it is ignored)."""
    value = message.metadata.get(DECISION_KEY)
    if not isinstance(value, Mapping):
        return None
    approved, reason, by = value.get("approved"), value.get("reason"), value.get("by")
    if not isinstance(approved, bool):
        return None
    return (
        approved,
        reason if isinstance(reason, str) else None,
        by if isinstance(by, str) else None,
    )
