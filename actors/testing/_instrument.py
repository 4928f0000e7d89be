"""Instrumented tools and models: every call recorded, faults injected on demand.

``InstrumentedTool`` wraps a ``Tool`` (its own ``invoke`` runs, overrides
included) and records each call in a ``CallLedger``: when it started, and
whether it returned an outcome, was cancelled, or broke the tool contract
(raised, or returned something that is not a ``ToolOutcome``). Armed
``ToolFault``s make the next calls of a tool fail, time out or run slowly
without touching the tool's code. ``ObservedModel`` does the same for a
model's streams.
"""

from __future__ import annotations

import contextlib
import enum
import itertools
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Mapping
from typing import Any

import attrs
import trio

from runtime import Chunk, ModelError, ModelRequest

from .._errors import ModelFailure
from .._model import Model
from .._tools import Tool, ToolOutcome

__all__ = [
    "CallLedger",
    "CallRecord",
    "InstrumentedTool",
    "ModelFault",
    "ObservedModel",
    "ToolFault",
]


class ToolFault(enum.Enum):
    """A fault the machine makes a tool's next call suffer."""

    RAISE = "raise"
    """The call fails as if the tool raised (an ``exception`` error result)."""
    TIMEOUT = "timeout"
    """The call fails as if it ran past its limit (a ``timeout`` error result)."""
    SLOW = "slow"
    """The call waits (cancellably) before the tool runs: a window for interrupts."""


class ModelFault(enum.Enum):
    """A fault the machine makes a model's next call suffer."""

    FAIL = "fail"
    """The call raises before streaming anything."""
    FAIL_MID_STREAM = "fail_mid_stream"
    """The call raises after its first chunk."""
    SLOW = "slow"
    """The call waits (cancellably) before streaming."""


@attrs.define(eq=False)
class CallRecord:
    """One call of a tool or a model."""

    number: int
    """Order of the call (1, 2, …)."""
    what: str
    """``tool 'name'`` or ``model``."""
    arguments: Any
    """The tool's arguments (or the model request's turn id)."""
    started: float
    """``time.monotonic()`` at the start."""
    ended: float | None = None
    """When it ended (None while running)."""
    how: str = "running"
    """``returned``, ``cancelled``, ``raised`` or ``running``."""
    problem: str | None = None
    """What the call did against its contract, if anything."""


class CallLedger:
    """A thread-safe record of calls: what runs now, what broke a contract."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._numbers = itertools.count(1)
        self._running: dict[int, CallRecord] = {}
        self.problems: list[CallRecord] = []
        """Calls that broke their contract, in order."""
        self.calls = 0
        """Calls started."""
        self.cancelled = 0
        """Calls cancelled."""

    def begin(self, what: str, arguments: Any) -> CallRecord:
        """Record the start of a call."""
        with self._lock:
            record = CallRecord(next(self._numbers), what, arguments, time.monotonic())
            self._running[record.number] = record
            self.calls += 1
            return record

    def end(self, record: CallRecord, how: str, problem: str | None = None) -> None:
        """Record how a call ended."""
        with self._lock:
            record.ended = time.monotonic()
            record.how = how
            record.problem = problem
            self._running.pop(record.number, None)
            if how == "cancelled":
                self.cancelled += 1
            if problem is not None:
                self.problems.append(record)
            self._lock.notify_all()

    def running(self) -> list[CallRecord]:
        """Calls not ended yet, oldest first."""
        with self._lock:
            return sorted(self._running.values(), key=lambda r: r.number)

    def wait_quiet(self, timeout: float) -> list[CallRecord]:
        """Wait until no call runs; returns those still running after ``timeout``."""
        with self._lock:
            self._lock.wait_for(lambda: not self._running, timeout)
            return sorted(self._running.values(), key=lambda r: r.number)


class _Faults:
    """Faults armed per target, taken first in, first out."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queues: dict[str, deque[Any]] = {}

    def arm(self, target: str, fault: Any) -> None:
        with self._lock:
            self._queues.setdefault(target, deque()).append(fault)

    def take(self, target: str) -> Any:
        with self._lock:
            queue = self._queues.get(target)
            return queue.popleft() if queue else None

    def clear(self) -> None:
        with self._lock:
            self._queues.clear()


@attrs.frozen(kw_only=True, eq=False)
class InstrumentedTool(Tool):
    """A ``Tool`` that runs ``inner.invoke`` under a ``CallLedger``, with armed faults.

    Made by ``InstrumentedTool.wrap(tool, ledger)``; ``arm(fault)`` makes the
    next call suffer ``fault``.
    """

    inner: Tool = attrs.field(repr=False)
    """The tool it wraps."""
    ledger: CallLedger = attrs.field(repr=False)
    """Where calls are recorded."""
    faults: _Faults = attrs.field(repr=False, factory=_Faults)
    slow_seconds: float = 0.05
    """How long a ``SLOW`` fault waits."""

    @classmethod
    def wrap(
        cls, tool: Tool, ledger: CallLedger, *, slow_seconds: float = 0.05
    ) -> InstrumentedTool:
        """Wrap ``tool`` (its name, schema and limits are kept)."""
        fields = {str(a.alias): getattr(tool, a.name) for a in attrs.fields(Tool)}
        return cls(**fields, inner=tool, ledger=ledger, slow_seconds=slow_seconds)

    def arm(self, fault: ToolFault) -> None:
        """Make the next call (not yet started) suffer ``fault``."""
        self.faults.arm(self.name, fault)

    async def invoke(self, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Run the wrapped tool (or the armed fault) and record how the call ended."""
        record = self.ledger.begin(f"tool {self.name!r}", dict(arguments))
        fault = self.faults.take(self.name)
        try:
            if fault is ToolFault.RAISE:
                outcome: Any = ToolOutcome(
                    content=f"InjectedFault: the kit made this call of {self.name!r} fail",
                    is_error=True,
                    error_type="exception",
                )
            elif fault is ToolFault.TIMEOUT:
                outcome = ToolOutcome(
                    content=f"Tool {self.name!r} did not finish within its time limit "
                    "(injected by the kit).",
                    is_error=True,
                    error_type="timeout",
                )
            else:
                if fault is ToolFault.SLOW:
                    await trio.sleep(self.slow_seconds)
                outcome = await self.inner.invoke(arguments)
        except trio.Cancelled:
            self.ledger.end(record, "cancelled")
            raise
        except BaseException as exc:
            self.ledger.end(
                record,
                "raised",
                f"invoke raised {type(exc).__name__}: {exc}; a tool answers every call with a "
                "ToolOutcome (errors included) and lets only cancellation through",
            )
            raise
        problem = None
        if not isinstance(outcome, ToolOutcome):
            problem = f"invoke returned {outcome!r}, not a ToolOutcome"
        self.ledger.end(record, "returned", problem)
        return outcome  # type: ignore[no-any-return]


class ObservedModel:
    """A ``Model`` that streams ``inner`` under a ``CallLedger``, with armed ``ModelFault``s."""

    def __init__(self, inner: Model, ledger: CallLedger, *, slow_seconds: float = 0.05) -> None:
        self.inner = inner
        self.ledger = ledger
        self.slow_seconds = slow_seconds
        self._faults = _Faults()
        self._lock = threading.Lock()
        self.answered = 0
        """Calls of the inner model that ended, answered or raised (the kit's own faults and
        cancelled calls not counted)."""
        self.bugs: list[BaseException] = []
        """What those calls raised that is no provider or transport error (see
        ``is_model_bug``), in order."""

    def arm(self, fault: ModelFault) -> None:
        """Make the next model call suffer ``fault``."""
        self._faults.arm("model", fault)

    async def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        """Stream the wrapped model's answer, faults applied."""
        record = self.ledger.begin("model", request.turn_id)
        fault = self._faults.take("model")
        how = "returned"
        try:
            if fault is ModelFault.FAIL:
                raise ModelFailure("the kit made this model call fail")
            if fault is ModelFault.SLOW:
                await trio.sleep(self.slow_seconds)
            count = 0
            # aclosing: the inner stream is closed when this one ends, however it ends.
            async with contextlib.aclosing(self.inner.stream(request)) as stream:  # type: ignore[type-var]
                async for chunk in stream:
                    yield chunk
                    count += 1
                    if fault is ModelFault.FAIL_MID_STREAM and count == 1:
                        raise ModelFailure("the kit made this model call fail mid-stream")
        except trio.Cancelled:
            how = "cancelled"
            raise
        except GeneratorExit:
            how = "cancelled"
            raise
        except Exception as exc:
            how = "raised"  # a model failure is a legal outcome: the turn ends in error
            if fault not in (ModelFault.FAIL, ModelFault.FAIL_MID_STREAM) and is_model_bug(exc):
                with self._lock:
                    self.bugs.append(exc)
            raise
        finally:
            # Counted before the ledger says the call ended: a check waiting on the ledger
            # then sees the count and the exception together.
            if how != "cancelled" and fault not in (ModelFault.FAIL, ModelFault.FAIL_MID_STREAM):
                with self._lock:
                    self.answered += 1
            self.ledger.end(record, how)


_TRANSPORT_MODULES = frozenset(
    {"httpx", "httpcore", "aiohttp", "requests", "urllib3", "ssl", "openai", "anthropic", "grpc"}
)
"""Where the exceptions of HTTP clients and provider SDKs come from."""


def is_model_bug(exc: BaseException) -> bool:
    """True for what a model raises that no provider or transport gives: not an Amber
    ``ModelError`` (or ``ModelFailure``), not an ``OSError`` (connections, timeouts), not an
    exception of an HTTP client or provider SDK. A ``TypeError`` or ``KeyError`` is a bug."""
    if isinstance(exc, ModelError | ModelFailure | OSError):
        return False
    return type(exc).__module__.split(".")[0] not in _TRANSPORT_MODULES
