"""Amber's property-testing kit, the half that drives a real ``Runtime``.

``LifecycleMachine`` (and ``lifecycle_machine``) run your tools, adapters
and model inside a runtime under random traffic, checking DESIGN §11 after
every step; ``ToolContract`` and ``AdapterContract`` are test classes that
pin the contracts of your own parts; the pytest plugin (loaded by the
``amber`` entry point) gives fixtures. The pure half — strategies and
invariant checks over values — is ``runtime.testing``.
"""

from runtime.testing import FAILURES_ENV as FAILURES_ENV
from runtime.testing import PLAN_KEY as PLAN_KEY
from runtime.testing import Answer as Answer
from runtime.testing import DeliveryLedger as DeliveryLedger
from runtime.testing import DeliveryReport as DeliveryReport
from runtime.testing import RaiseError as RaiseError
from runtime.testing import RestartableMemoryStore as RestartableMemoryStore
from runtime.testing import Say as Say
from runtime.testing import SayNothing as SayNothing
from runtime.testing import TurnPlan as TurnPlan
from runtime.testing import UseTools as UseTools
from runtime.testing import answers as answers
from runtime.testing import model_responses as model_responses
from runtime.testing import tool_uses as tool_uses
from runtime.testing import turn_plans as turn_plans

from ._adapter_contract import AdapterContract as AdapterContract
from ._adapter_contract import check_adapter_updates as check_adapter_updates
from ._adapter_contract import updates_of as updates_of
from ._bridge import sim_adapter as sim_adapter
from ._bridge import sim_model as sim_model
from ._bridge import sim_tool as sim_tool
from ._bridge import simulation_machine as simulation_machine
from ._instrument import CallLedger as CallLedger
from ._instrument import CallRecord as CallRecord
from ._instrument import InstrumentedTool as InstrumentedTool
from ._instrument import ModelFault as ModelFault
from ._instrument import ObservedModel as ObservedModel
from ._instrument import ToolFault as ToolFault
from ._machine import LifecycleMachine as LifecycleMachine
from ._machine_factory import lifecycle_machine as lifecycle_machine
from ._observe import ObservedRuntime as ObservedRuntime
from ._plans import PlannedModel as PlannedModel
from ._tool_contract import ToolContract as ToolContract
from ._tool_contract import check_tool_call as check_tool_call

__all__ = [
    "FAILURES_ENV",
    "PLAN_KEY",
    "AdapterContract",
    "Answer",
    "CallLedger",
    "CallRecord",
    "DeliveryLedger",
    "DeliveryReport",
    "InstrumentedTool",
    "LifecycleMachine",
    "ModelFault",
    "ObservedModel",
    "ObservedRuntime",
    "PlannedModel",
    "RaiseError",
    "RestartableMemoryStore",
    "Say",
    "SayNothing",
    "ToolContract",
    "ToolFault",
    "TurnPlan",
    "UseTools",
    "answers",
    "check_adapter_updates",
    "check_tool_call",
    "lifecycle_machine",
    "model_responses",
    "sim_adapter",
    "sim_model",
    "sim_tool",
    "simulation_machine",
    "tool_uses",
    "turn_plans",
    "updates_of",
]
