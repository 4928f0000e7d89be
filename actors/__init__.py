"""Amber's actors and effects: pykka actors own state, trio runs effects.

``Runtime`` is what a chat bot embeds: it owns the store thread, the trio
effects loop, the ``Gateway``, one actor per tool and one per live session.
Models stream ``Chunk`` values (``ScriptedModel`` for tests and demos); tools
are ``@tool`` functions; adapters show messages on a channel and report
delivery. Everything a session does is an event in ``runtime``'s pure core.
"""

# Names load on first use (PEP 562), so that importing a submodule (the ``amber``
# command line, say) does not start pykka, trio and every SDK wrapper; type
# checkers read the imports below.
import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from runtime import ERROR_TYPES as ERROR_TYPES
    from runtime import AmberError as AmberError
    from runtime import AssembledCall as AssembledCall
    from runtime import Chunk as Chunk
    from runtime import Delay as Delay
    from runtime import Delta as Delta
    from runtime import DeltaKind as DeltaKind
    from runtime import Fail as Fail
    from runtime import Hang as Hang
    from runtime import InvalidInput as InvalidInput
    from runtime import MessageFinish as MessageFinish
    from runtime import MessageStart as MessageStart
    from runtime import ModelRequest as ModelRequest
    from runtime import ModelResponse as ModelResponse
    from runtime import ReasoningDelta as ReasoningDelta
    from runtime import Reply as Reply
    from runtime import Response as Response
    from runtime import StoreError as StoreError
    from runtime import StreamAssembler as StreamAssembler
    from runtime import StreamError as StreamError
    from runtime import TextDelta as TextDelta
    from runtime import ToolCallDelta as ToolCallDelta
    from runtime import ToolOutcome as ToolOutcome
    from runtime import ToolSpec as ToolSpec
    from runtime import UnknownSession as UnknownSession
    from runtime import Update as Update
    from runtime import awaits_delivery as awaits_delivery
    from runtime import call as call
    from runtime import calls as calls
    from runtime import empty as empty
    from runtime import error as error
    from runtime import hang as hang
    from runtime import reply as reply

    from ._adapter import Adapter as Adapter
    from ._adapter import DeliverySink as DeliverySink
    from ._answers import ApprovalNeeded as ApprovalNeeded
    from ._answers import ReasoningPiece as ReasoningPiece
    from ._answers import ReplyStream as ReplyStream
    from ._answers import StreamEvent as StreamEvent
    from ._answers import TextPiece as TextPiece
    from ._answers import ToolCallStarted as ToolCallStarted
    from ._answers import ToolResult as ToolResult
    from ._channels import LiveChannelAdapter as LiveChannelAdapter
    from ._channels import SilentChannelAdapter as SilentChannelAdapter
    from ._channels import split_text as split_text
    from ._cli_adapter import CliAdapter as CliAdapter
    from ._effects import EffectHandle as EffectHandle
    from ._effects import Effects as Effects
    from ._errors import AlreadyStarted as AlreadyStarted
    from ._errors import AskTimeout as AskTimeout
    from ._errors import EffectsStopped as EffectsStopped
    from ._errors import IdleTimeout as IdleTimeout
    from ._errors import InvalidConfig as InvalidConfig
    from ._errors import MissingSDK as MissingSDK
    from ._errors import ModelFailure as ModelFailure
    from ._errors import ModelTimeout as ModelTimeout
    from ._errors import NotAwaitingApproval as NotAwaitingApproval
    from ._errors import OwnedElsewhere as OwnedElsewhere
    from ._errors import RuntimeStopped as RuntimeStopped
    from ._errors import ScriptExhausted as ScriptExhausted
    from ._errors import SessionGone as SessionGone
    from ._errors import StopTimeout as StopTimeout
    from ._gateway import Gateway as Gateway
    from ._gateway import Subscription as Subscription
    from ._ids import Clock as Clock
    from ._ids import utc_now as utc_now
    from ._metrics import format_turn_metrics as format_turn_metrics
    from ._model import Model as Model
    from ._ownership import Resume as Resume
    from ._ownership import StoreBusy as StoreBusy
    from ._platform import ChatPlatform as ChatPlatform
    from ._platform import FakePlatform as FakePlatform
    from ._platform import PlatformAction as PlatformAction
    from ._platform import PlatformActionKind as PlatformActionKind
    from ._platform import PlatformError as PlatformError
    from ._platform import PlatformMessage as PlatformMessage
    from ._router import Router as Router
    from ._runtime import Runtime as Runtime
    from ._scripted import ScriptedModel as ScriptedModel
    from ._session import SessionActor as SessionActor
    from ._settings import Settings as Settings
    from ._shell import shell_tool as shell_tool
    from ._tool_actor import ToolStats as ToolStats
    from ._toolbox import Toolbox as Toolbox
    from ._tools import InvalidTool as InvalidTool
    from ._tools import Tool as Tool
    from ._tools import tool as tool

_SOURCES: dict[str, str] = {
    "ERROR_TYPES": "runtime",
    "AmberError": "runtime",
    "AssembledCall": "runtime",
    "Chunk": "runtime",
    "Delay": "runtime",
    "Delta": "runtime",
    "DeltaKind": "runtime",
    "Fail": "runtime",
    "Hang": "runtime",
    "InvalidInput": "runtime",
    "MessageFinish": "runtime",
    "MessageStart": "runtime",
    "ModelRequest": "runtime",
    "ModelResponse": "runtime",
    "ReasoningDelta": "runtime",
    "Reply": "runtime",
    "Response": "runtime",
    "StreamAssembler": "runtime",
    "StoreError": "runtime",
    "StreamError": "runtime",
    "TextDelta": "runtime",
    "ToolCallDelta": "runtime",
    "ToolOutcome": "runtime",
    "ToolSpec": "runtime",
    "UnknownSession": "runtime",
    "Update": "runtime",
    "awaits_delivery": "runtime",
    "call": "runtime",
    "calls": "runtime",
    "empty": "runtime",
    "error": "runtime",
    "hang": "runtime",
    "reply": "runtime",
    "Adapter": "._adapter",
    "DeliverySink": "._adapter",
    "ApprovalNeeded": "._answers",
    "ReasoningPiece": "._answers",
    "ReplyStream": "._answers",
    "StreamEvent": "._answers",
    "TextPiece": "._answers",
    "ToolCallStarted": "._answers",
    "ToolResult": "._answers",
    "LiveChannelAdapter": "._channels",
    "SilentChannelAdapter": "._channels",
    "format_turn_metrics": "._metrics",
    "split_text": "._channels",
    "CliAdapter": "._cli_adapter",
    "EffectHandle": "._effects",
    "Effects": "._effects",
    "AlreadyStarted": "._errors",
    "AskTimeout": "._errors",
    "EffectsStopped": "._errors",
    "IdleTimeout": "._errors",
    "InvalidConfig": "._errors",
    "MissingSDK": "._errors",
    "ModelFailure": "._errors",
    "ModelTimeout": "._errors",
    "NotAwaitingApproval": "._errors",
    "OwnedElsewhere": "._errors",
    "RuntimeStopped": "._errors",
    "ScriptExhausted": "._errors",
    "SessionGone": "._errors",
    "StopTimeout": "._errors",
    "Gateway": "._gateway",
    "Subscription": "._gateway",
    "Clock": "._ids",
    "utc_now": "._ids",
    "Model": "._model",
    "Resume": "._ownership",
    "StoreBusy": "._ownership",
    "ChatPlatform": "._platform",
    "FakePlatform": "._platform",
    "PlatformAction": "._platform",
    "PlatformActionKind": "._platform",
    "PlatformError": "._platform",
    "PlatformMessage": "._platform",
    "Router": "._router",
    "Runtime": "._runtime",
    "ScriptedModel": "._scripted",
    "SessionActor": "._session",
    "Settings": "._settings",
    "shell_tool": "._shell",
    "ToolStats": "._tool_actor",
    "Toolbox": "._toolbox",
    "InvalidTool": "._tools",
    "Tool": "._tools",
    "tool": "._tools",
}
"""Public name -> the module it is defined in (relative to this package, or ``runtime``)."""


def __getattr__(name: str) -> _typing.Any:
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(source, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "ERROR_TYPES",
    "Adapter",
    "AlreadyStarted",
    "AmberError",
    "ApprovalNeeded",
    "AskTimeout",
    "AssembledCall",
    "ChatPlatform",
    "Chunk",
    "CliAdapter",
    "Clock",
    "Delay",
    "DeliverySink",
    "Delta",
    "DeltaKind",
    "EffectHandle",
    "Effects",
    "EffectsStopped",
    "Fail",
    "FakePlatform",
    "Gateway",
    "Hang",
    "IdleTimeout",
    "InvalidConfig",
    "InvalidInput",
    "InvalidTool",
    "LiveChannelAdapter",
    "MessageFinish",
    "MessageStart",
    "MissingSDK",
    "Model",
    "ModelFailure",
    "ModelRequest",
    "ModelResponse",
    "ModelTimeout",
    "NotAwaitingApproval",
    "OwnedElsewhere",
    "PlatformAction",
    "PlatformActionKind",
    "PlatformError",
    "PlatformMessage",
    "ReasoningDelta",
    "ReasoningPiece",
    "Reply",
    "ReplyStream",
    "Response",
    "Resume",
    "Router",
    "Runtime",
    "RuntimeStopped",
    "ScriptExhausted",
    "ScriptedModel",
    "SessionActor",
    "SessionGone",
    "Settings",
    "SilentChannelAdapter",
    "StopTimeout",
    "StoreBusy",
    "StoreError",
    "StreamAssembler",
    "StreamError",
    "StreamEvent",
    "Subscription",
    "TextDelta",
    "TextPiece",
    "Tool",
    "ToolCallDelta",
    "ToolCallStarted",
    "ToolOutcome",
    "ToolResult",
    "ToolSpec",
    "ToolStats",
    "Toolbox",
    "UnknownSession",
    "Update",
    "awaits_delivery",
    "call",
    "calls",
    "empty",
    "error",
    "format_turn_metrics",
    "hang",
    "reply",
    "shell_tool",
    "split_text",
    "tool",
    "utc_now",
]
