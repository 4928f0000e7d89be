"""Amber's property-testing kit, the pure half: Hypothesis strategies and invariant checks.

Needs Hypothesis (``pip install 'amber[testing]'``). Importing it does not
import ``actors``, ``pykka`` or ``trio``: it works on values (messages,
events, timelines). The half that drives a real ``Runtime`` (the
``LifecycleMachine``, fixtures, contract tests) is ``actors.testing``.
"""

from ._audit_checks import check_audit as check_audit
from ._checker import TimelineChecker as TimelineChecker
from ._illegal import IllegalEvent as IllegalEvent
from ._illegal import illegal_events as illegal_events
from ._illegal import mixed_session_events as mixed_session_events
from ._invariants import FINAL_INPUT_STATUSES as FINAL_INPUT_STATUSES
from ._invariants import STATE_CHECKS as STATE_CHECKS
from ._invariants import PastStates as PastStates
from ._invariants import check_invariants as check_invariants
from ._invariants import check_lifecycle as check_lifecycle
from ._invariants import check_phased_order as check_phased_order
from ._invariants import check_replay as check_replay
from ._invariants import check_seq as check_seq
from ._invariants import check_settled as check_settled
from ._invariants import check_single_turn as check_single_turn
from ._invariants import check_tool_pairing as check_tool_pairing
from ._invariants import check_turn_ends as check_turn_ends
from ._schema import arguments_for as arguments_for
from ._schema import invalid_arguments_for as invalid_arguments_for
from ._strategies import attachments as attachments
from ._strategies import browser_elements as browser_elements
from ._strategies import events as events
from ._strategies import json_values as json_values
from ._strategies import messages as messages
from ._strategies import session_events as session_events
from ._strategies import timelines as timelines
from ._strategies import tool_calls as tool_calls
from ._strategies import user_inputs as user_inputs
from ._views import PROVIDERS as PROVIDERS
from ._views import check_provider_view as check_provider_view
from ._views import check_provider_views as check_provider_views
from ._violation import INVARIANTS as INVARIANTS
from ._violation import InvariantViolation as InvariantViolation

__all__ = [
    "FINAL_INPUT_STATUSES",
    "INVARIANTS",
    "PROVIDERS",
    "STATE_CHECKS",
    "IllegalEvent",
    "InvariantViolation",
    "PastStates",
    "TimelineChecker",
    "arguments_for",
    "attachments",
    "browser_elements",
    "check_audit",
    "check_invariants",
    "check_lifecycle",
    "check_phased_order",
    "check_provider_view",
    "check_provider_views",
    "check_replay",
    "check_seq",
    "check_settled",
    "check_single_turn",
    "check_tool_pairing",
    "check_turn_ends",
    "events",
    "illegal_events",
    "invalid_arguments_for",
    "json_values",
    "messages",
    "mixed_session_events",
    "session_events",
    "timelines",
    "tool_calls",
    "user_inputs",
]
