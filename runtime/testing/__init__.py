"""Amber's property-testing kit: Hypothesis strategies and invariant checks.

Needs Hypothesis (``pip install 'amber[testing]'``). Importing it does not
import ``actors``, ``pykka`` or ``trio``.
"""

from ._audit_checks import check_audit as check_audit
from ._invariants import InvariantViolation as InvariantViolation
from ._invariants import check_invariants as check_invariants
from ._invariants import check_lifecycle as check_lifecycle
from ._invariants import check_phased_order as check_phased_order
from ._invariants import check_provider_view as check_provider_view
from ._invariants import check_replay as check_replay
from ._invariants import check_seq as check_seq
from ._invariants import check_single_turn as check_single_turn
from ._invariants import check_tool_pairing as check_tool_pairing
from ._strategies import attachments as attachments
from ._strategies import browser_elements as browser_elements
from ._strategies import events as events
from ._strategies import json_values as json_values
from ._strategies import messages as messages
from ._strategies import session_events as session_events
from ._strategies import timelines as timelines
from ._strategies import tool_calls as tool_calls
from ._strategies import user_inputs as user_inputs

__all__ = [
    "InvariantViolation",
    "attachments",
    "browser_elements",
    "check_audit",
    "check_invariants",
    "check_lifecycle",
    "check_phased_order",
    "check_provider_view",
    "check_replay",
    "check_seq",
    "check_single_turn",
    "check_tool_pairing",
    "events",
    "json_values",
    "messages",
    "session_events",
    "timelines",
    "tool_calls",
    "user_inputs",
]
