"""Amber's property-testing kit, the pure half: Hypothesis strategies and invariant checks.

Needs Hypothesis (``pip install 'amber[testing]'``). Importing it does not
import ``actors``, ``pykka`` or ``trio``: it works on values (messages,
events, timelines). The half that drives a real ``Runtime`` (the
``LifecycleMachine``, fixtures, contract tests) is ``actors.testing``.
"""

from . import _requires  # noqa: F401  (first: without Hypothesis, say which extra to install)
from ._answers import answers as answers
from ._answers import model_responses as model_responses
from ._answers import tool_uses as tool_uses
from ._answers import turn_plans as turn_plans
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
from ._ledger import DeliveryLedger as DeliveryLedger
from ._ledger import DeliveryReport as DeliveryReport
from ._parts import FakeChannel as FakeChannel
from ._parts import FakeTool as FakeTool
from ._parts import PlanModel as PlanModel
from ._parts import Report as Report
from ._parts import ScriptModel as ScriptModel
from ._parts import SimAdapter as SimAdapter
from ._parts import SimModel as SimModel
from ._parts import SimTool as SimTool
from ._parts import ToolBehaviour as ToolBehaviour
from ._parts import ToolRun as ToolRun
from ._parts import fake_tools as fake_tools
from ._plans import PLAN_KEY as PLAN_KEY
from ._plans import Answer as Answer
from ._plans import RaiseError as RaiseError
from ._plans import Say as Say
from ._plans import SayNothing as SayNothing
from ._plans import Stall as Stall
from ._plans import TurnPlan as TurnPlan
from ._plans import UseTools as UseTools
from ._plans import plan_for as plan_for
from ._saved import FAILURES_ENV as FAILURES_ENV
from ._saved import RestartableMemoryStore as RestartableMemoryStore
from ._saved import failure_path as failure_path
from ._saved import inspect_commands as inspect_commands
from ._saved import save_sessions as save_sessions
from ._schema import arguments_for as arguments_for
from ._schema import invalid_arguments_for as invalid_arguments_for
from ._seeded import Prng as Prng
from ._seeded import SimRun as SimRun
from ._seeded import simulate as simulate
from ._simulator import INVALID_INPUTS as INVALID_INPUTS
from ._simulator import SimulationMachine as SimulationMachine
from ._simulator import invalid_input as invalid_input
from ._simulator import simulation_machine as simulation_machine
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
from ._world import EPOCH as EPOCH
from ._world import Simulation as Simulation

__all__ = [
    "EPOCH",
    "FAILURES_ENV",
    "FINAL_INPUT_STATUSES",
    "INVALID_INPUTS",
    "INVARIANTS",
    "PLAN_KEY",
    "PROVIDERS",
    "STATE_CHECKS",
    "Answer",
    "DeliveryLedger",
    "DeliveryReport",
    "FakeChannel",
    "FakeTool",
    "IllegalEvent",
    "InvariantViolation",
    "PastStates",
    "PlanModel",
    "Prng",
    "RaiseError",
    "Report",
    "RestartableMemoryStore",
    "Say",
    "SayNothing",
    "ScriptModel",
    "SimAdapter",
    "SimModel",
    "SimRun",
    "SimTool",
    "Simulation",
    "SimulationMachine",
    "Stall",
    "TimelineChecker",
    "ToolBehaviour",
    "ToolRun",
    "TurnPlan",
    "UseTools",
    "answers",
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
    "failure_path",
    "fake_tools",
    "illegal_events",
    "inspect_commands",
    "invalid_arguments_for",
    "invalid_input",
    "json_values",
    "messages",
    "mixed_session_events",
    "model_responses",
    "plan_for",
    "save_sessions",
    "session_events",
    "simulate",
    "simulation_machine",
    "timelines",
    "tool_calls",
    "tool_uses",
    "turn_plans",
    "user_inputs",
]
