"""Amber's pure core: messages, lifecycle, events, the reducer, the timeline and projections.

Nothing here starts a thread, reads a clock or does I/O (the stores aside):
time and ids arrive inside events, and ``apply`` is deterministic. ``runtime``
never imports ``actors``, ``pykka`` or ``trio``.
"""

# Names load on first use (PEP 562): ``from runtime import Message`` imports
# ``runtime._message`` and what it needs, not every module of the core, so a
# command that reads one state (``amber show``) does not pay for the stream
# assembler, the providers' payloads or the testing scripts. Type checkers read
# the imports below; a test pins them, ``_EXPORTS`` and ``__all__`` to one another.
import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from ._artifacts import ArtifactStore as ArtifactStore
    from ._assembly import Assembly as Assembly
    from ._assembly import StreamAssembler as StreamAssembler
    from ._audit import AUDIT_CLOSED_BY as AUDIT_CLOSED_BY
    from ._audit import AuditCall as AuditCall
    from ._audit import AuditRow as AuditRow
    from ._audit import AuditStatus as AuditStatus
    from ._audit import model_calls as model_calls
    from ._category import AGENT_SENDER as AGENT_SENDER
    from ._category import INPUT_CATEGORIES as INPUT_CATEGORIES
    from ._category import Category as Category
    from ._category import CategorySpec as CategorySpec
    from ._category import category_of as category_of
    from ._category import new_message as new_message
    from ._chunks import Chunk as Chunk
    from ._chunks import MessageFinish as MessageFinish
    from ._chunks import MessageStart as MessageStart
    from ._chunks import ReasoningDelta as ReasoningDelta
    from ._chunks import RequestSent as RequestSent
    from ._chunks import TextDelta as TextDelta
    from ._chunks import ToolCallDelta as ToolCallDelta
    from ._clean import IMAGE_MEDIA_TYPES as IMAGE_MEDIA_TYPES
    from ._clean import NOTIFICATION_PREFIX as NOTIFICATION_PREFIX
    from ._clean import clean_history as clean_history
    from ._codec import from_data as from_data
    from ._codec import from_json as from_json
    from ._codec import to_data as to_data
    from ._codec import to_json as to_json
    from ._commands import Announce as Announce
    from ._commands import CallModel as CallModel
    from ._commands import CancelRun as CancelRun
    from ._commands import ClearTimer as ClearTimer
    from ._commands import Command as Command
    from ._commands import Decision as Decision
    from ._commands import Passivate as Passivate
    from ._commands import ResumeSoon as ResumeSoon
    from ._commands import RunTool as RunTool
    from ._commands import SetTimer as SetTimer
    from ._commands import StreamDelta as StreamDelta
    from ._commands import Warn as Warn
    from ._cost import Price as Price
    from ._cost import PriceTable as PriceTable
    from ._cost import call_cost as call_cost
    from ._diff import AuditChange as AuditChange
    from ._diff import FieldChange as FieldChange
    from ._diff import StateDiff as StateDiff
    from ._diff import TurnChange as TurnChange
    from ._diff import diff as diff
    from ._errors import AmberError as AmberError
    from ._errors import AuditConflict as AuditConflict
    from ._errors import ContextLengthError as ContextLengthError
    from ._errors import CorruptRow as CorruptRow
    from ._errors import DecodeError as DecodeError
    from ._errors import DuplicateMessage as DuplicateMessage
    from ._errors import EventRejected as EventRejected
    from ._errors import ForeignEvent as ForeignEvent
    from ._errors import IllegalTransition as IllegalTransition
    from ._errors import InvalidArgument as InvalidArgument
    from ._errors import InvalidEvent as InvalidEvent
    from ._errors import InvalidInput as InvalidInput
    from ._errors import InvalidMessage as InvalidMessage
    from ._errors import LeaseLost as LeaseLost
    from ._errors import MissingArtifact as MissingArtifact
    from ._errors import ModelAuthError as ModelAuthError
    from ._errors import ModelError as ModelError
    from ._errors import ModelRateLimited as ModelRateLimited
    from ._errors import ModelRequestError as ModelRequestError
    from ._errors import ModelStreamBroken as ModelStreamBroken
    from ._errors import ModelUnavailable as ModelUnavailable
    from ._errors import NotAStore as NotAStore
    from ._errors import PriceError as PriceError
    from ._errors import ProjectionError as ProjectionError
    from ._errors import ReplayMismatch as ReplayMismatch
    from ._errors import SchemaVersionError as SchemaVersionError
    from ._errors import SeqConflict as SeqConflict
    from ._errors import SeqMismatch as SeqMismatch
    from ._errors import SeqOutOfRange as SeqOutOfRange
    from ._errors import SessionExists as SessionExists
    from ._errors import StatusConflict as StatusConflict
    from ._errors import StoreClosed as StoreClosed
    from ._errors import StoreError as StoreError
    from ._errors import StreamError as StreamError
    from ._errors import TurnConflict as TurnConflict
    from ._errors import UnknownMessage as UnknownMessage
    from ._errors import UnknownSession as UnknownSession
    from ._errors import UnknownTurn as UnknownTurn
    from ._errors import UnmatchedToolResult as UnmatchedToolResult
    from ._events import EVENT_TYPES as EVENT_TYPES
    from ._events import ApprovalDecided as ApprovalDecided
    from ._events import ApprovalRequested as ApprovalRequested
    from ._events import BranchImported as BranchImported
    from ._events import Event as Event
    from ._events import MessageAdded as MessageAdded
    from ._events import MetadataUpdated as MetadataUpdated
    from ._events import ModelCallFinished as ModelCallFinished
    from ._events import ModelCallStarted as ModelCallStarted
    from ._events import OrphanRecovered as OrphanRecovered
    from ._events import RolledBack as RolledBack
    from ._events import StatusChanged as StatusChanged
    from ._events import TurnEnded as TurnEnded
    from ._events import TurnOutcome as TurnOutcome
    from ._events import TurnStarted as TurnStarted
    from ._events import reports_error as reports_error
    from ._history import session_history as session_history
    from ._input import InputLimits as InputLimits
    from ._input import UserInput as UserInput
    from ._input import check_session_id as check_session_id
    from ._input import validate_input as validate_input
    from ._inputs import ApprovalGiven as ApprovalGiven
    from ._inputs import Delivered as Delivered
    from ._inputs import Draft as Draft
    from ._inputs import Input as Input
    from ._inputs import InputArrived as InputArrived
    from ._inputs import Interrupt as Interrupt
    from ._inputs import Loaded as Loaded
    from ._inputs import ModelChunk as ModelChunk
    from ._inputs import ModelEnded as ModelEnded
    from ._inputs import OutputPosted as OutputPosted
    from ._inputs import Resume as Resume
    from ._inputs import RunnerFailed as RunnerFailed
    from ._inputs import Stopping as Stopping
    from ._inputs import TimerFired as TimerFired
    from ._inputs import ToolDone as ToolDone
    from ._json import FrozenJSON as FrozenJSON
    from ._json import canonical as canonical
    from ._json import freeze as freeze
    from ._json import thaw as thaw
    from ._lifecycle import TRANSITIONS as TRANSITIONS
    from ._lifecycle import Driver as Driver
    from ._lifecycle import Transition as Transition
    from ._lifecycle import check_transition as check_transition
    from ._lifecycle import is_terminal as is_terminal
    from ._machine import SessionMachine as SessionMachine
    from ._machine import TurnRun as TurnRun
    from ._machine import TurnSettings as TurnSettings
    from ._message import Attachment as Attachment
    from ._message import BrowserElement as BrowserElement
    from ._message import Message as Message
    from ._message import MessageType as MessageType
    from ._message import Role as Role
    from ._message import Status as Status
    from ._message import ToolCall as ToolCall
    from ._message import Usage as Usage
    from ._openai_responses import to_openai_responses as to_openai_responses
    from ._outcome import ERROR_TYPES as ERROR_TYPES
    from ._outcome import ToolOutcome as ToolOutcome
    from ._parts import MODEL_CALL as MODEL_CALL
    from ._parts import MODEL_PARTS as MODEL_PARTS
    from ._parts import MODEL_PROVIDER as MODEL_PROVIDER
    from ._parts import CallSegment as CallSegment
    from ._parts import ReasoningSegment as ReasoningSegment
    from ._parts import ResponseMetadata as ResponseMetadata
    from ._parts import ResponsePart as ResponsePart
    from ._parts import TextSegment as TextSegment
    from ._parts import response_metadata as response_metadata
    from ._payloads import PAYLOAD_BUILDERS as PAYLOAD_BUILDERS
    from ._payloads import PayloadBuilder as PayloadBuilder
    from ._payloads import build_payload as build_payload
    from ._providers import to_anthropic as to_anthropic
    from ._providers import to_gemini as to_gemini
    from ._providers import to_openai as to_openai
    from ._reducer import INTERRUPTED_MARK as INTERRUPTED_MARK
    from ._reducer import apply as apply
    from ._replay import RebuiltRequest as RebuiltRequest
    from ._replay import find_call as find_call
    from ._replay import rebuild_request as rebuild_request
    from ._replay import request_record as request_record
    from ._replay import views_of as views_of
    from ._reply import FINAL_INPUT as FINAL_INPUT
    from ._reply import Reply as Reply
    from ._reply import reply_of as reply_of
    from ._request import RequestRecord as RequestRecord
    from ._request import digest as digest
    from ._retry import ModelRetry as ModelRetry
    from ._script import Delay as Delay
    from ._script import Fail as Fail
    from ._script import Hang as Hang
    from ._script import Response as Response
    from ._script import Script as Script
    from ._script import ScriptStep as ScriptStep
    from ._script import call as call
    from ._script import calls as calls
    from ._script import empty as empty
    from ._script import error as error
    from ._script import hang as hang
    from ._script import reply as reply
    from ._segments import Segment as Segment
    from ._segments import SegmentKind as SegmentKind
    from ._segments import ToolState as ToolState
    from ._segments import ui_segments as ui_segments
    from ._session_cost import SessionCost as SessionCost
    from ._session_cost import session_cost as session_cost
    from ._state import STATUS_ORDER as STATUS_ORDER
    from ._state import SessionState as SessionState
    from ._state import added_seq as added_seq
    from ._state import inherited as inherited
    from ._storable import INT_MAX as INT_MAX
    from ._storable import INT_MIN as INT_MIN
    from ._storable import MAX_DEPTH as MAX_DEPTH
    from ._storable import MAX_EVENT_BYTES as MAX_EVENT_BYTES
    from ._storable import MAX_SEQ as MAX_SEQ
    from ._storable import MAX_SESSION_ID_CHARS as MAX_SESSION_ID_CHARS
    from ._storable import storable_text as storable_text
    from ._stream import AssembledCall as AssembledCall
    from ._stream import ModelRequest as ModelRequest
    from ._stream import ModelResponse as ModelResponse
    from ._stream import ToolSpec as ToolSpec
    from ._timeline import Timeline as Timeline
    from ._timeline import replay as replay
    from ._timeline import verify as verify
    from ._turn import Turn as Turn
    from ._turn import TurnStatus as TurnStatus
    from ._turnloop import step as step
    from ._updates import Delta as Delta
    from ._updates import DeltaKind as DeltaKind
    from ._updates import Update as Update
    from ._updates import awaits_delivery as awaits_delivery
    from ._view import ImagePart as ImagePart
    from ._view import ModelView as ModelView
    from ._view import ReasoningPart as ReasoningPart
    from ._view import TextPart as TextPart
    from ._view import ToolResultPart as ToolResultPart
    from ._view import ToolUsePart as ToolUsePart
    from ._view import ViewMessage as ViewMessage
    from ._view import ViewPart as ViewPart
    from ._view import ViewPrefix as ViewPrefix
    from ._view import ViewRole as ViewRole
    from ._view_cache import ViewCache as ViewCache
    from ._view_cache import cached_view as cached_view
    from ._visibility import CHANNEL_RULES as CHANNEL_RULES
    from ._visibility import ChannelKind as ChannelKind
    from ._visibility import ChannelRule as ChannelRule
    from ._visibility import Presentation as Presentation
    from ._visibility import Visibility as Visibility
    from ._visibility import channel_rule as channel_rule
    from ._visibility import visibility as visibility
    from ._window import TokenCounter as TokenCounter
    from ._window import Window as Window
    from ._window import approx_tokens as approx_tokens

# fmt: off
_EXPORTS: dict[str, str] = {
    "_artifacts": "ArtifactStore",
    "_assembly": "Assembly StreamAssembler",
    "_audit": "AUDIT_CLOSED_BY AuditCall AuditRow AuditStatus model_calls",
    "_category": "AGENT_SENDER INPUT_CATEGORIES Category CategorySpec category_of new_message",
    "_chunks": (
        "Chunk MessageFinish MessageStart ReasoningDelta RequestSent TextDelta ToolCallDelta"
    ),
    "_clean": "IMAGE_MEDIA_TYPES NOTIFICATION_PREFIX clean_history",
    "_codec": "from_data from_json to_data to_json",
    "_commands": (
        "Announce CallModel CancelRun ClearTimer Command Decision Passivate ResumeSoon "
        "RunTool SetTimer StreamDelta Warn"
    ),
    "_cost": "Price PriceTable call_cost",
    "_diff": "AuditChange FieldChange StateDiff TurnChange diff",
    "_errors": (
        "AmberError AuditConflict ContextLengthError CorruptRow DecodeError "
        "DuplicateMessage EventRejected ForeignEvent IllegalTransition InvalidArgument "
        "InvalidEvent InvalidInput InvalidMessage LeaseLost MissingArtifact ModelAuthError "
        "ModelError ModelRateLimited ModelRequestError ModelStreamBroken ModelUnavailable "
        "NotAStore PriceError ProjectionError ReplayMismatch SchemaVersionError "
        "SeqConflict SeqMismatch SeqOutOfRange SessionExists StatusConflict StoreClosed "
        "StoreError StreamError TurnConflict UnknownMessage UnknownSession UnknownTurn "
        "UnmatchedToolResult"
    ),
    "_events": (
        "EVENT_TYPES ApprovalDecided ApprovalRequested BranchImported Event MessageAdded "
        "MetadataUpdated ModelCallFinished ModelCallStarted OrphanRecovered RolledBack "
        "StatusChanged TurnEnded TurnOutcome TurnStarted reports_error"
    ),
    "_history": "session_history",
    "_input": "InputLimits UserInput check_session_id validate_input",
    "_inputs": (
        "ApprovalGiven Delivered Draft Input InputArrived Interrupt Loaded ModelChunk "
        "ModelEnded OutputPosted Resume RunnerFailed Stopping TimerFired ToolDone"
    ),
    "_json": "FrozenJSON canonical freeze thaw",
    "_lifecycle": "TRANSITIONS Driver Transition check_transition is_terminal",
    "_machine": "SessionMachine TurnRun TurnSettings",
    "_message": "Attachment BrowserElement Message MessageType Role Status ToolCall Usage",
    "_openai_responses": "to_openai_responses",
    "_outcome": "ERROR_TYPES ToolOutcome",
    "_parts": (
        "MODEL_CALL MODEL_PARTS MODEL_PROVIDER CallSegment ReasoningSegment "
        "ResponseMetadata ResponsePart TextSegment response_metadata"
    ),
    "_payloads": "PAYLOAD_BUILDERS PayloadBuilder build_payload",
    "_providers": "to_anthropic to_gemini to_openai",
    "_reducer": "INTERRUPTED_MARK apply",
    "_replay": "RebuiltRequest find_call rebuild_request request_record views_of",
    "_reply": "FINAL_INPUT Reply reply_of",
    "_request": "RequestRecord digest",
    "_retry": "ModelRetry",
    "_script": "Delay Fail Hang Response Script ScriptStep call calls empty error hang reply",
    "_segments": "Segment SegmentKind ToolState ui_segments",
    "_session_cost": "SessionCost session_cost",
    "_state": "STATUS_ORDER SessionState added_seq inherited",
    "_storable": (
        "INT_MAX INT_MIN MAX_DEPTH MAX_EVENT_BYTES MAX_SEQ MAX_SESSION_ID_CHARS "
        "storable_text"
    ),
    "_stream": "AssembledCall ModelRequest ModelResponse ToolSpec",
    "_timeline": "Timeline replay verify",
    "_turn": "Turn TurnStatus",
    "_turnloop": "step",
    "_updates": "Delta DeltaKind Update awaits_delivery",
    "_view": (
        "ImagePart ModelView ReasoningPart TextPart ToolResultPart ToolUsePart ViewMessage "
        "ViewPart ViewPrefix ViewRole"
    ),
    "_view_cache": "ViewCache cached_view",
    "_visibility": (
        "CHANNEL_RULES ChannelKind ChannelRule Presentation Visibility channel_rule "
        "visibility"
    ),
    "_window": "TokenCounter Window approx_tokens",
}
"""Each module of this package -> the public names it defines (space-separated)."""

__all__ = [
    "AGENT_SENDER", "AUDIT_CLOSED_BY", "CHANNEL_RULES", "ERROR_TYPES", "EVENT_TYPES", "FINAL_INPUT",
    "IMAGE_MEDIA_TYPES", "INPUT_CATEGORIES", "INTERRUPTED_MARK", "INT_MAX", "INT_MIN", "MAX_DEPTH",
    "MAX_EVENT_BYTES", "MAX_SEQ", "MAX_SESSION_ID_CHARS", "MODEL_CALL", "MODEL_PARTS",
    "MODEL_PROVIDER", "NOTIFICATION_PREFIX", "PAYLOAD_BUILDERS", "STATUS_ORDER", "TRANSITIONS",
    "AmberError", "Announce", "ApprovalDecided", "ApprovalGiven", "ApprovalRequested",
    "ArtifactStore", "AssembledCall", "Assembly", "Attachment", "AuditCall", "AuditChange",
    "AuditConflict", "AuditRow", "AuditStatus", "BranchImported", "BrowserElement", "CallModel",
    "CallSegment", "CancelRun", "Category", "CategorySpec", "ChannelKind", "ChannelRule", "Chunk",
    "ClearTimer", "Command", "ContextLengthError", "CorruptRow", "Decision", "DecodeError", "Delay",
    "Delivered", "Delta", "DeltaKind", "Draft", "Driver", "DuplicateMessage", "Event",
    "EventRejected", "Fail", "FieldChange", "ForeignEvent", "FrozenJSON", "Hang",
    "IllegalTransition", "ImagePart", "Input", "InputArrived", "InputLimits", "Interrupt",
    "InvalidArgument", "InvalidEvent", "InvalidInput", "InvalidMessage", "LeaseLost", "Loaded",
    "Message", "MessageAdded", "MessageFinish", "MessageStart", "MessageType", "MetadataUpdated",
    "MissingArtifact", "ModelAuthError", "ModelCallFinished", "ModelCallStarted", "ModelChunk",
    "ModelEnded", "ModelError", "ModelRateLimited", "ModelRequest", "ModelRequestError",
    "ModelResponse", "ModelRetry", "ModelStreamBroken", "ModelUnavailable", "ModelView",
    "NotAStore", "OrphanRecovered", "OutputPosted", "Passivate", "PayloadBuilder", "Presentation",
    "Price", "PriceError", "PriceTable", "ProjectionError", "ReasoningDelta", "ReasoningPart",
    "ReasoningSegment", "RebuiltRequest", "ReplayMismatch", "Reply", "RequestRecord", "RequestSent",
    "Response", "ResponseMetadata", "ResponsePart", "Resume", "ResumeSoon", "Role", "RolledBack",
    "RunTool", "RunnerFailed", "SchemaVersionError", "Script", "ScriptStep", "Segment",
    "SegmentKind", "SeqConflict", "SeqMismatch", "SeqOutOfRange", "SessionCost", "SessionExists",
    "SessionMachine", "SessionState", "SetTimer", "StateDiff", "Status", "StatusChanged",
    "StatusConflict", "Stopping", "StoreClosed", "StoreError", "StreamAssembler", "StreamDelta",
    "StreamError", "TextDelta", "TextPart", "TextSegment", "Timeline", "TimerFired", "TokenCounter",
    "ToolCall", "ToolCallDelta", "ToolDone", "ToolOutcome", "ToolResultPart", "ToolSpec",
    "ToolState", "ToolUsePart", "Transition", "Turn", "TurnChange", "TurnConflict", "TurnEnded",
    "TurnOutcome", "TurnRun", "TurnSettings", "TurnStarted", "TurnStatus", "UnknownMessage",
    "UnknownSession", "UnknownTurn", "UnmatchedToolResult", "Update", "Usage", "UserInput",
    "ViewCache", "ViewMessage", "ViewPart", "ViewPrefix", "ViewRole", "Visibility", "Warn",
    "Window", "added_seq", "apply", "approx_tokens", "awaits_delivery", "build_payload",
    "cached_view", "call", "call_cost", "calls", "canonical", "category_of", "channel_rule",
    "check_session_id", "check_transition", "clean_history", "diff", "digest", "empty", "error",
    "find_call", "freeze", "from_data", "from_json", "hang", "inherited", "is_terminal",
    "model_calls", "new_message", "rebuild_request", "replay", "reply", "reply_of",
    "reports_error", "request_record", "response_metadata", "session_cost", "session_history",
    "step", "storable_text", "thaw", "to_anthropic", "to_data", "to_gemini", "to_json",
    "to_openai",
    "to_openai_responses", "ui_segments", "validate_input", "verify", "views_of", "visibility",
]
# fmt: on

_SOURCES: dict[str, str] = {
    name: "." + module for module, names in _EXPORTS.items() for name in names.split()
}
"""Public name -> the module of this package that defines it."""


def __getattr__(name: str) -> _typing.Any:
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(source, __name__), name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
