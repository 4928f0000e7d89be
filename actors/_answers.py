"""Answers as values: a waiter for one input's ``Reply``, its live stream, async bridges.

``Runtime.ask`` tells the session actor an ``AskInput`` with a ``ReplyWaiter``
and returns once the waiter holds the ``Reply`` (the actor resolves it when
the input reaches a final status). ``ask_async`` and ``stream`` await the
same waiter from asyncio or trio: the actor's thread hands results to the
event loop with ``call_soon_threadsafe`` (asyncio) or ``run_sync_soon``
(trio), so no thread waits on anyone's behalf. The stream's events are typed
(``TextPiece``, ``ReasoningPiece``, ``ToolCallStarted``, ``ToolResult``,
``ApprovalNeeded``) and end with the ``Reply``.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any, NoReturn

import attrs
import trio

from runtime import Draft, Message, Reply

from ._errors import InvalidConfig

__all__ = [
    "ApprovalNeeded",
    "AskInput",
    "CancelAsk",
    "ReasoningPiece",
    "ReplyStream",
    "ReplyWaiter",
    "StreamEvent",
    "TextPiece",
    "ToolCallStarted",
    "ToolResult",
    "async_library",
    "await_waiter",
]


@attrs.frozen(kw_only=True)
class TextPiece:
    """A piece of the reply text, as it streams."""

    text: str
    """The piece."""


@attrs.frozen(kw_only=True)
class ReasoningPiece:
    """A piece of the model's reasoning, as it streams."""

    text: str
    """The piece."""


@attrs.frozen(kw_only=True)
class ToolCallStarted:
    """The model called a tool (recorded; it runs, or waits for approval)."""

    call_id: str
    """The tool call id."""
    name: str
    """The tool."""
    arguments: Any
    """Its arguments (a JSON object)."""
    message: Message
    """The tool-call message."""


@attrs.frozen(kw_only=True)
class ToolResult:
    """A tool call's result (an error result included)."""

    call_id: str
    """The tool call it answers."""
    name: str
    """The tool."""
    content: str
    """What the model reads."""
    is_error: bool
    """True when the call failed (or was denied)."""
    message: Message
    """The tool-result message."""


@attrs.frozen(kw_only=True)
class ApprovalNeeded:
    """A tool call waits for a person: approve or deny it (``Runtime.approve``/``deny``).

    A stream yields it right after the call's ``ToolCallStarted``."""

    call_id: str
    """The tool call id."""
    name: str
    """The tool."""
    arguments: Any
    """Its arguments."""


StreamEvent = TextPiece | ReasoningPiece | ToolCallStarted | ToolResult | ApprovalNeeded
"""What ``Runtime.stream`` yields before the ``Reply``."""


STOPPED_ASK = (
    "The runtime stopped before the turn answered; the input is kept (pending_agent) and "
    "answered when the session next runs: on its next input, or at the start of a runtime "
    "with resume='all'."
)
"""What an ask waiting when its session shuts down raises (``RuntimeStopped``)."""


class ReplyWaiter:
    """One input's answer, resolved by its session actor (any thread may wait on it)."""

    def __init__(self, sink: Callable[[StreamEvent], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._stored = threading.Event()
        self._result: Reply | None = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[], None]] = []
        self.sink = sink
        """Where the actor pushes the turn's live events (None: nobody streams)."""
        self.message: Message | None = None
        """The input as stored, once it is."""
        self.cancelled = False
        """True once the caller stopped waiting (its turn is interrupted)."""
        self.abandoned = False
        """True once the caller's wait timed out (the turn goes on, nobody waits for it)."""
        self.approvals: dict[str, str] = {}
        """The tool calls of its turn that wait for a person, id to tool name (for the
        message of an ``AskTimeout``); replaced whole by the actor, read by the caller."""

    @property
    def done(self) -> bool:
        """True once resolved (a reply or an error)."""
        return self._done.is_set()

    def stored(self, message: Message) -> None:
        """The actor stored the input."""
        self.message = message
        self._stored.set()

    def resolve(self, reply: Reply) -> None:
        """The input's turn ended: ``reply`` is the answer."""
        self._finish(reply, None)

    def fail(self, error: BaseException) -> None:
        """The input could not be stored, or its session stopped."""
        self._finish(None, error)

    def _finish(self, reply: Reply | None, error: BaseException | None) -> None:
        with self._lock:
            if self._done.is_set():
                return
            self._result, self._error = reply, error
            self._done.set()
            self._stored.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def add_callback(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` (from the resolving thread) once resolved; at once if it is."""
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(callback)
                return
        callback()

    def result(self) -> Reply:
        """The reply (once resolved).

        Raises:
            the error the waiter was failed with.
        """
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    def wait(self, timeout: float | None) -> bool:
        """Block until resolved or ``timeout`` seconds passed; True if resolved."""
        return self._done.wait(timeout)

    def wait_stored(self, timeout: float | None) -> bool:
        """Block until the input is stored (or the waiter failed); True if so."""
        return self._stored.wait(timeout)


@attrs.frozen(eq=False)
class AskInput:
    """Told to a session actor: store ``draft`` and resolve ``waiter`` with its reply."""

    draft: Draft
    """The validated input."""
    waiter: ReplyWaiter
    """Where its answer goes."""


@attrs.frozen(eq=False)
class CancelAsk:
    """Told to a session actor: the caller of ``waiter`` stopped waiting; interrupt its turn."""

    waiter: ReplyWaiter
    """The abandoned ask."""


def running_library() -> str | None:
    """``asyncio`` or ``trio``: the event loop running in this thread, or None."""
    with contextlib.suppress(RuntimeError):
        asyncio.get_running_loop()
        return "asyncio"
    with contextlib.suppress(RuntimeError):
        trio.lowlevel.current_trio_token()
        return "trio"
    return None


def async_library() -> str:
    """``asyncio`` or ``trio``: the event loop running in this thread.

    Raises:
        InvalidConfig: no event loop runs here (use the sync ``ask``).
    """
    library = running_library()
    if library is None:
        raise InvalidConfig(
            "ask_async() and stream() are awaited from asyncio or trio; no event loop runs in "
            "this thread. Call Runtime.ask() from plain threads."
        )
    return library


def in_a_thread(what: str) -> Callable[[str], str]:
    """For ``warn_blocking``: run the blocking ``Runtime.{what}()`` in a worker thread."""

    def instead(library: str) -> str:
        if library == "asyncio":
            return f"Run it in a thread: await asyncio.to_thread(rt.{what}, ...)."
        return f"Run it in a thread: await trio.to_thread.run_sync(lambda: rt.{what}(...))."

    return instead


def warn_blocking(what: str, until: str, instead: Callable[[str], str]) -> None:
    """Warn that the blocking ``Runtime.{what}()`` was called on a running asyncio or trio
    loop (the program's: the effects loop refuses it): it blocks that loop until ``until``.
    ``instead(library)`` says what to write; the warning points at the caller's caller."""
    library = running_library()
    if library is not None:
        warnings.warn(
            f"Runtime.{what}() was called on a running {library} loop: it blocks the loop "
            f"until {until}, so the loop's other tasks (and a sync tool that waits on the "
            f"loop) stall meanwhile. {instead(library)}",
            RuntimeWarning,
            stacklevel=3,
        )


async def await_waiter(waiter: ReplyWaiter, timeout: float | None) -> bool:
    """Await ``waiter`` on the running loop, up to ``timeout`` seconds; True if resolved."""
    if async_library() == "asyncio":
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(_set_future, future)

        waiter.add_callback(wake)
        if timeout is None:
            await future
            return True
        try:
            async with asyncio.timeout(timeout):
                await future
        except TimeoutError:
            return False
        return True
    token = trio.lowlevel.current_trio_token()
    event = trio.Event()

    def wake_trio() -> None:
        with contextlib.suppress(trio.RunFinishedError):
            token.run_sync_soon(event.set)

    waiter.add_callback(wake_trio)
    if timeout is not None and _autojump_clock():
        # The runtime's threads take real time: on a mock clock that jumps when every task
        # waits (pytest-trio's autojump_clock), a deadline would run out at once. (A mock
        # clock moved only by hand keeps the deadline: the test moves time on purpose.)
        timer = threading.Timer(timeout, wake_trio)
        timer.daemon = True
        timer.start()
        try:
            await event.wait()
        finally:
            timer.cancel()
        return waiter.done
    with trio.move_on_after(math.inf if timeout is None else timeout):
        await event.wait()
    return event.is_set()


def _autojump_clock() -> bool:
    """Whether this trio run keeps time on a ``trio.testing.MockClock`` that jumps by itself
    (``trio.testing`` is imported then)."""
    testing = sys.modules.get("trio.testing")
    clock = trio.lowlevel.current_clock()
    return (
        testing is not None
        and isinstance(clock, testing.MockClock)
        and clock.autojump_threshold != math.inf
    )


def _set_future(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


_END = object()


class _Channel:
    """Items pushed from any thread, read in order on the running loop."""

    def __init__(self) -> None:
        self.library = async_library()
        if self.library == "asyncio":
            self._loop = asyncio.get_running_loop()
            self._queue: asyncio.Queue[Any] = asyncio.Queue()
        else:
            self._token = trio.lowlevel.current_trio_token()
            self._send, self._receive = trio.open_memory_channel[Any](math.inf)

    def push(self, item: Any) -> None:
        """From any thread."""
        if self.library == "asyncio":
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._queue.put_nowait, item)
        else:
            with contextlib.suppress(trio.RunFinishedError):
                self._token.run_sync_soon(self._send.send_nowait, item)

    async def get(self) -> Any:
        """The next item."""
        if self.library == "asyncio":
            return await self._queue.get()
        return await self._receive.receive()


class ReplyStream:
    """The live events of one ask, then its ``Reply`` (what ``Runtime.stream`` returns).

    An async iterator (``async for event in rt.stream(...)``) and an async
    context manager. The ask starts with the first ``__anext__``. Leaving the
    ``async with`` block, ``aclose()``, or an exception (or cancellation) out
    of ``__anext__`` interrupts the turn that answers the input, if it has not
    answered yet. A plain ``break`` does not call the stream: the turn is
    interrupted only when the stream is garbage collected, at once for
    ``async for event in rt.stream(...)`` in CPython, but not while a variable
    still holds it. For a deterministic end write ``async with rt.stream(...)
    as events: async for event in events: ...``.
    """

    def __init__(
        self,
        start: Callable[[Callable[[StreamEvent], None]], ReplyWaiter],
        cancel: Callable[[ReplyWaiter], None],
    ) -> None:
        self._start = start
        self._cancel = cancel
        self._channel: _Channel | None = None
        self._waiter: ReplyWaiter | None = None
        self._finished = False

    def __aiter__(self) -> ReplyStream:
        return self

    def __iter__(self) -> NoReturn:
        # InvalidConfig is a TypeError, what iterating a non-iterable raises.
        raise InvalidConfig(
            "rt.stream() is async: iterate it with `async for event in rt.stream(...)` "
            "(or `async with rt.stream(...) as events: async for event in events`) in an "
            "asyncio or trio task; nothing was sent. From sync code call rt.ask(...) for the "
            "reply, with rt.subscribe(on_delta=...) for the pieces as they stream."
        )

    async def __anext__(self) -> StreamEvent | Reply:
        if self._finished:
            raise StopAsyncIteration
        if self._channel is None:
            self._channel = channel = _Channel()
            self._waiter = waiter = self._start(channel.push)
            waiter.add_callback(lambda: channel.push(_END))
        assert self._waiter is not None
        try:
            item = await self._channel.get()
        except BaseException:
            self._stop()
            raise
        if item is _END:
            self._finished = True
            return self._waiter.result()
        return item  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        """Stop iterating: the turn is interrupted if it has not answered yet."""
        self._stop()

    async def __aenter__(self) -> ReplyStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop()

    def _stop(self) -> None:
        self._finished = True
        waiter = self._waiter
        if waiter is not None and not waiter.done and not waiter.cancelled:
            self._cancel(waiter)

    def __del__(self) -> None:
        # ``break`` out of ``async for rt.stream(...)`` drops the last reference: stop the
        # turn then (a stream held in a variable waits for ``aclose`` or ``async with``).
        self._stop()
