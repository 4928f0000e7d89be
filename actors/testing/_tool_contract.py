"""The tool contract: ``check_tool_call`` runs one call the way the runtime does, and
``ToolContract`` is the test class that draws the calls (docs/tools.md).

    class TestWordCount(ToolContract):
        tool = word_count
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Literal

import attrs
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.testing import arguments_for, invalid_arguments_for
from runtime.testing._options import with_article as _a

from .._errors import InvalidConfig
from .._tools import Tool, ToolOutcome, tool
from ._bridge import as_tool
from ._contracts import _contract, _run_property

__all__ = ["ToolContract", "check_tool_call"]

_DEFAULT_LIMIT = 30.0
"""Seconds a call of a tool without a ``timeout`` may take."""
_MOCK_BACKSTOP = 10.0
"""Real seconds past a call's limit and grace before a call on the mock clock is taken as
blocking real time."""
_START_BOUND = 60.0
"""Real seconds a call's thread and event loop may take to start (never counted as the
tool's: a busy machine can take over a second)."""


def _in_thread(
    fn: Callable[[], Any],
    timeout: float,
    ended: threading.Event | None = None,
    began: threading.Event | None = None,
) -> tuple[bool, Any, BaseException | None]:
    """Run ``fn`` in a daemon thread; (finished, value, error). A call that never ends is left.

    The wait ends when ``fn`` ends, ``timeout`` seconds after ``began`` is set (``fn`` sets
    it when the work to time starts; up to ``_START_BOUND`` seconds are allowed for that),
    or when something else sets ``ended``.
    """
    box: dict[str, Any] = {}
    ended = ended or threading.Event()

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc
        finally:
            box["done"] = True
            ended.set()

    thread = threading.Thread(target=target, name="amber-contract", daemon=True)
    thread.start()
    if began is not None:
        deadline = time.monotonic() + _START_BOUND
        while not (began.wait(0.05) or ended.is_set()) and time.monotonic() < deadline:
            pass
    ended.wait(timeout)
    return bool(box.get("done")), box.get("value"), box.get("error")


Clock = Literal["real", "mock", "auto"]
CLOCKS: tuple[Clock, ...] = ("real", "mock", "auto")


def _on_mock_clock(tool_: Tool, clock: Clock, where: str) -> bool:
    if clock not in CLOCKS:
        raise InvalidConfig(
            f"{where} must be one of 'real', 'mock', 'auto' (got {clock!r}, "
            f"{_a(type(clock).__name__)})."
        )
    if clock == "auto":
        return bool(getattr(getattr(tool_, "_signature", None), "is_async", False))
    return clock == "mock"


def check_tool_call(
    tool_: Tool | Callable[..., Any],
    arguments: Mapping[str, Any] | Any,
    *,
    cancel_after: float | None = None,
    grace: float = 1.0,
    expect_error: str | None = None,
    clock: Clock = "real",
) -> ToolOutcome | None:
    """Run one call of ``tool_`` the way the runtime does and check the tool contract.

    The call must end within the tool's ``timeout`` plus ``grace`` with a
    ``ToolOutcome`` (errors included) whose summary is one line of at most
    200 characters and whose content respects ``max_output_chars``. With
    ``cancel_after``, the call is cancelled after that many seconds and must
    end (return, or let ``trio.Cancelled`` through) within ``grace``. Time counts from the
    call's start (not from starting its thread and event loop, which a busy machine slows).

    Args:
        tool_: the tool (or a plain function, wrapped with ``tool``).
        arguments: the model's arguments.
        cancel_after: cancel the call after this many seconds.
        grace: how long past its limit (or its cancellation) a call may take.
        expect_error: the ``error_type`` the outcome must have.
        clock: ``real`` (the default) runs the call on the real clock; ``mock`` on
            trio's ``MockClock`` with autojump, so its sleeps and time limits cost no
            real time and the limits above are simulated seconds (for async tools that
            sleep, poll or time out; a sync tool runs in a thread, which the mock clock
            does not wait for: it jumps to the time limit); ``auto``: ``mock`` for
            async tools, ``real`` for sync ones.

    Returns:
        The outcome (None when the call was cancelled before it ended).

    Raises:
        InvariantViolation: the call broke the contract.
        InvalidConfig: ``clock`` is none of the three.
        InvalidArgument: ``tool_`` is neither a ``Tool`` nor a function.
    """
    tool_ = as_tool("check_tool_call", tool_)
    rule = "a tool answers every call with a result or an error, cancellation included"
    name = f"tool {tool_.name!r} called with {arguments!r}"
    mock = _on_mock_clock(tool_, clock, "check_tool_call() option 'clock'")
    tool_, runs = _watched(tool_)

    began = threading.Event()  # the call starts: its time counts from here
    began_at: list[float] = []

    async def call() -> ToolOutcome | None:
        began_at.append(time.monotonic())
        began.set()
        if cancel_after is None:
            return await tool_.invoke(arguments)
        with trio.move_on_after(cancel_after):
            return await tool_.invoke(arguments)
        return None

    limit = (tool_.timeout or _DEFAULT_LIMIT) if cancel_after is None else cancel_after
    hung, ended = threading.Event(), threading.Event()

    async def watched() -> ToolOutcome | None:
        # On the mock clock time jumps to the next deadline whenever every task waits.
        # The watchdog's is the last moment the call may end, so a call that would not
        # end (a shielded wait, a loop of sleeps) is found at once, in simulated time.
        async with trio.open_nursery() as nursery:

            async def watchdog() -> None:
                await trio.sleep(limit + grace)
                hung.set()
                ended.set()

            nursery.start_soon(watchdog)
            outcome = await call()
            nursery.cancel_scope.cancel()
        return outcome

    def run() -> ToolOutcome | None:
        if not mock:
            return trio.run(call)
        result: ToolOutcome | None = trio.run(
            watched, clock=trio.testing.MockClock(autojump_threshold=0)
        )
        return result

    # On the mock clock the real-time limit is only a backstop for a call that blocks real
    # time (the verdict is the watchdog's, in simulated time): _MOCK_BACKSTOP real seconds
    # more, so a loaded machine never makes a prompt tool look hung (seen at load 16). Only
    # the call's own time counts: starting the thread and trio can take over a second on a
    # busy machine, which made a prompt tool look hung on the real clock too.
    started = time.monotonic()
    backstop = limit + grace + (_MOCK_BACKSTOP if mock else 0.0)
    finished, outcome, error = _in_thread(run, backstop, ended, began)
    took = time.monotonic() - (began_at[0] if began_at else started)
    if hung.is_set() or not finished:
        what = "its cancellation" if cancel_after is not None else "its time limit"
        if cancel_after is None and tool_.timeout is None:
            what = (
                f"the contract's default limit of {_DEFAULT_LIMIT:g} s (the tool has "
                "timeout=None; give it a limit with @tool(timeout=...), which the contract "
                "then checks)"
            )
        spent = f"{limit + grace:.1f} s in all, simulated" if hung.is_set() else (
            f"{took:.1f} s in all, real time: it blocks its thread" if mock else
            f"{took:.1f} s in all"
        )  # fmt: skip
        raise _contract(
            rule, f"{name} was still running {grace} s after {what} ({spent}); a tool "
            "must stop at its limit and when cancelled (async: reach an await; no shielding)",
        )  # fmt: skip
    if runs is not None and runs.still_running(grace):
        how = "cancelled" if cancel_after is not None else "stopped at its time limit"
        raise _contract(
            rule, f"{name} was {how}, but its function was still running in its worker thread "
            f"{grace} s later: a sync tool cannot be cancelled; it keeps running in its thread "
            "(holding what it holds, using a thread of trio's pool) until it returns, after "
            "its turn has moved on. Make it async (trio, or a client with timeouts such as "
            "httpx.AsyncClient), or bound its blocking calls with a timeout shorter than the "
            "tool's (socket, subprocess and HTTP client timeouts)",
        )  # fmt: skip
    if error is not None:
        raise _contract(
            rule, f"{name} raised {type(error).__name__}: {error}; failures must come back as a "
            "ToolOutcome with is_error (Tool.invoke does this for a plain function)",
        ) from error  # fmt: skip
    if outcome is None:
        return None
    if not isinstance(outcome, ToolOutcome):
        raise _contract(rule, f"{name} returned {outcome!r}, not a ToolOutcome")
    if not isinstance(outcome.content, str):
        raise _contract(rule, f"{name} answered content {outcome.content!r}, not a str")
    if len(outcome.content) > tool_.max_output_chars + 64:
        raise _contract(
            rule, f"{name} answered {len(outcome.content)} characters, over its limit of "
            f"{tool_.max_output_chars}",
        )  # fmt: skip
    summary = outcome.summary
    if summary is not None and ("\n" in summary or len(summary) > 200):
        raise _contract(rule, f"{name} has a summary that is not one line of <= 200 characters")
    if expect_error is not None and (not outcome.is_error or outcome.error_type != expect_error):
        raise _contract(
            rule, f"{name} should be refused with error_type {expect_error!r}; it answered "
            f"is_error={outcome.is_error}, error_type={outcome.error_type!r}: "
            f"{outcome.content[:200]!r}",
        )  # fmt: skip
    return outcome


class _Runs:
    """When a sync tool's function starts and returns, in its worker thread."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.returned = threading.Event()

    def still_running(self, grace: float) -> bool:
        """True if the function started and does not return within ``grace`` seconds."""
        return self.started.is_set() and not self.returned.wait(grace)


def _watched(tool_: Tool) -> tuple[Tool, _Runs | None]:
    """For a sync tool the runtime runs in a thread: a copy whose function says when it
    starts and returns (the runtime abandons the thread when the call is cancelled)."""
    signature = getattr(tool_, "_signature", None)
    if (
        signature is None
        or signature.is_async
        or type(tool_)._call is not Tool._call
        or not attrs.has(type(tool_))
    ):
        return tool_, None
    runs = _Runs()
    function = tool_.function

    def watched(*args: Any, **kwargs: Any) -> Any:
        runs.started.set()
        try:
            return function(*args, **kwargs)
        finally:
            runs.returned.set()

    return attrs.evolve(tool_, function=watched), runs


def _as_tool(value: Tool | Callable[..., Any]) -> Tool:
    return value if isinstance(value, Tool) else tool(value)


class ToolContract:
    """Tests that your tool answers every call (subclass it as ``TestMyTool``; set ``tool``).

    - valid arguments (drawn from its schema) get an outcome, never an exception;
    - invalid arguments get an ``invalid_arguments`` error;
    - a call cancelled at a random moment ends promptly;
    - the outcome respects the output limit and the one-line summary.
    """

    tool: ClassVar[Tool | Callable[..., Any]]
    """The tool under test."""
    examples: ClassVar[int | None] = None
    """Hypothesis examples per property (None: ``settings``' max_examples, or 25)."""
    settings: ClassVar[settings | None] = None
    """Hypothesis settings for every property, as for the kit's machines (health checks off
    and no deadline unless you chose one; failures saved in the example database)."""
    grace: ClassVar[float] = 1.0
    """Seconds past its limit or its cancellation a call may take."""
    cancel_delays: ClassVar[Sequence[float]] = (0.0, 0.001, 0.01, 0.05)
    """When calls are cancelled, in seconds after they start."""
    clock: ClassVar[Clock] = "real"
    """``real``, or ``mock``: calls run on trio's ``MockClock`` with autojump, so a tool
    that sleeps, backs off or times out costs no real time and ``grace`` and
    ``cancel_delays`` are simulated seconds (async tools; see ``check_tool_call``);
    ``auto``: ``mock`` for an async tool, ``real`` for a sync one."""

    def _tool(self) -> Tool:
        owner = type(self)
        where = f"{owner.__name__}.tool (ToolContract.tool)"
        if not hasattr(owner, "tool"):
            raise InvalidConfig(
                f"{owner.__name__} has no tool to test: set {where} in the class body, "
                "e.g. `tool = word_count` (a function decorated with @tool, or a plain function)."
            )
        given_tool = owner.tool
        if not isinstance(given_tool, Tool) and not callable(given_tool):
            raise InvalidConfig(
                f"{where} must be a tool (a function decorated with @tool, or a plain function); "
                f"got {given_tool!r}, {_a(type(given_tool).__name__)}: set `tool = price`, "
                "the function itself, not its name."
            )
        try:
            made = _as_tool(given_tool)
        except InvalidConfig as exc:
            raise InvalidConfig(f"{where} cannot be made a tool: {exc}") from None
        _on_mock_clock(made, self.clock, f"{owner.__name__}.clock (ToolContract.clock)")
        return made

    def test_valid_arguments_get_an_outcome(self) -> None:
        """Arguments that fit the schema get a ToolOutcome (a result or an error), not a raise."""
        tool_ = self._tool()

        @given(arguments_for(tool_.parameters))
        def prop(arguments: dict[str, Any]) -> None:
            check_tool_call(tool_, arguments, grace=self.grace, clock=self.clock)

        _run_property(self, ToolContract, "test_valid_arguments_get_an_outcome", prop)

    def test_invalid_arguments_get_an_invalid_arguments_error(self) -> None:
        """Arguments that break the schema are refused with ``invalid_arguments``."""
        tool_ = self._tool()

        @given(invalid_arguments_for(tool_.parameters))
        def prop(arguments: Any) -> None:
            check_tool_call(
                tool_,
                arguments,
                grace=self.grace,
                expect_error="invalid_arguments",
                clock=self.clock,
            )

        _run_property(
            self, ToolContract, "test_invalid_arguments_get_an_invalid_arguments_error", prop
        )

    def test_cancelled_calls_end_promptly(self) -> None:
        """A call cancelled at any moment ends within ``grace`` seconds (cancelled, or a result)."""
        tool_ = self._tool()

        @given(arguments_for(tool_.parameters), st.sampled_from(list(self.cancel_delays)))
        def prop(arguments: dict[str, Any], delay: float) -> None:
            check_tool_call(
                tool_, arguments, cancel_after=delay, grace=self.grace, clock=self.clock
            )

        _run_property(self, ToolContract, "test_cancelled_calls_end_promptly", prop)
