"""Asking a session: ``ask`` (threads), ``ask_async`` and ``stream`` (asyncio and trio).

A mixin of ``Runtime``: each call checks the input in the caller's thread
(``InvalidInput`` at once, nothing stored), tells the session actor an
``AskInput`` (no thread waits on the caller's behalf) and waits for the
input's ``Reply``. Cancelling an awaiting task, or stopping a stream early,
interrupts the turn that claims the input (or the one that will).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from runtime import ArtifactStore, InputLimits, Reply, UserInput

from ._answers import (
    AskInput,
    CancelAsk,
    ReplyStream,
    ReplyWaiter,
    StreamEvent,
    await_waiter,
    warn_blocking,
)
from ._drafts import session_id_of, user_draft
from ._errors import AskTimeout
from ._seconds import wait_limit

if TYPE_CHECKING:
    from ._effects import Effects
    from ._router import Router

__all__ = ["Asking"]


class Asking:
    """``ask``, ``ask_async`` and ``stream`` (mixed into ``Runtime``)."""

    router: Router
    clock: Callable[[], datetime]
    run_sessions: bool
    _effects: Effects | None

    def _limits(self) -> InputLimits:
        raise NotImplementedError

    def _artifacts(self) -> ArtifactStore | None:
        raise NotImplementedError

    def _check_running(self) -> None:
        raise NotImplementedError

    def ask(
        self, session_id: str, text: UserInput | str, *, timeout: float | None = 120.0,
        **fields: Any,
    ) -> Reply:  # fmt: skip
        """Send a person's message and wait for the turn that answers it.

        ``fields`` fill the other ``UserInput`` fields (``sender``,
        ``chatbot_id`` …), as for ``send``.

        Returns:
            The ``Reply``: its text, outcome (``processed``, ``interrupted``,
            ``error`` with a reason for people), the turn's messages, metrics and
            model calls.

        Raises:
            InvalidInput: the input breaks a rule; nothing was stored.
            InvalidConfig: ``timeout`` is not a positive number of seconds (at most 100
                years) or None, or ``ask`` was called on the effects loop (from an async tool: await
                ``ask_async`` there); nothing was stored.
            AskTimeout: no answer within ``timeout`` seconds (the turn goes on;
                ``interrupt`` stops it).
            RuntimeStopped: the runtime is not running, or stopped before the answer.

        Warns:
            RuntimeWarning: called on a running asyncio or trio loop, which it blocks
                (await ``ask_async`` there).
        """
        timeout = wait_limit(timeout, what="ask", nothing_done=True)
        if self._effects is not None:
            self._effects.refuse_blocking(
                "ask",
                "In an async tool, await rt.ask_async(...) instead, or rt.send(...) without "
                "waiting for the answer.",
            )
        warn_blocking("ask", "the turn answers", lambda _: "Await rt.ask_async(...) instead.")
        waiter = self._start_ask(session_id, text, fields, None, what="ask")
        if not waiter.wait(timeout):
            _abandon(waiter, session_id, timeout, front_end=not self.run_sessions)
        return waiter.result()

    async def ask_async(
        self, session_id: str, text: UserInput | str, *, timeout: float | None = None,
        **fields: Any,
    ) -> Reply:  # fmt: skip
        """``ask``, awaited from asyncio or trio (the loop never blocks on the runtime).

        Cancelling the awaiting task interrupts the turn that answers the input.

        Raises:
            InvalidInput: the input breaks a rule; nothing was stored.
            AskTimeout: no answer within ``timeout`` seconds (the turn goes on).
            InvalidConfig: awaited outside asyncio and trio, or ``timeout`` is not a
                positive number of seconds (at most 100 years) or None (nothing was stored).
        """
        timeout = wait_limit(timeout, what="ask_async", nothing_done=True)
        waiter = self._start_ask(session_id, text, fields, None, what="ask_async")
        try:
            resolved = await await_waiter(waiter, timeout)
        except BaseException:
            if not waiter.done:
                self._cancel_ask(session_id, waiter)
            raise
        if not resolved:
            _abandon(waiter, session_id, timeout, front_end=not self.run_sessions)
        return waiter.result()

    def stream(self, session_id: str, text: UserInput | str, **fields: Any) -> ReplyStream:
        """Send a person's message; iterate the turn's live events, then its ``Reply``.

        ``async for event in rt.stream("s1", "hi"):`` yields ``TextPiece`` and
        ``ReasoningPiece`` as the model streams, ``ToolCallStarted``,
        ``ApprovalNeeded`` and ``ToolResult`` as tools are called, and the
        ``Reply`` last. Works from asyncio and trio. To stop early and
        interrupt the turn deterministically, iterate inside
        ``async with rt.stream(...) as events:`` or call ``await events.aclose()``;
        a bare ``break`` interrupts only once the stream is garbage collected
        (at once when nothing else holds it, in CPython).

        Raises:
            InvalidInput: the input breaks a rule (when iteration starts); nothing was stored.
        """
        return ReplyStream(
            lambda sink: self._start_ask(session_id, text, fields, sink, what="stream"),
            lambda waiter: self._cancel_ask(session_id, waiter),
        )

    def _start_ask(
        self,
        session_id: str,
        text: UserInput | str,
        fields: dict[str, Any],
        sink: Callable[[StreamEvent], None] | None,
        *,
        what: str,
    ) -> ReplyWaiter:
        """Check the input (``what`` names the method called in ``InvalidInput``), tell
        the session an ``AskInput`` and return the waiter its ``Reply`` resolves."""
        session_id = session_id_of(session_id)
        draft = user_draft(
            what, session_id, text, fields, self.clock, self._limits(), artifacts=self._artifacts()
        )
        self._check_running()
        waiter = ReplyWaiter(sink)
        self.router.tell(session_id, AskInput(draft, waiter))
        return waiter

    def _cancel_ask(self, session_id: str, waiter: ReplyWaiter) -> None:
        waiter.cancelled = True
        try:
            self.router.tell(session_id, CancelAsk(waiter))
        except Exception:  # the runtime is stopping: the turn ends with it
            return


def _abandon(
    waiter: ReplyWaiter, session_id: str, timeout: float | None, *, front_end: bool = False
) -> None:
    """The caller's wait timed out: its session no longer keeps the ask (an ask nobody
    waits for would keep the session from passivating while its turn waits for approval).

    Raises:
        AskTimeout: unless the answer came just as the wait timed out.
    """
    waiter.abandoned = True
    if not waiter.done:
        raise _timeout(session_id, waiter, timeout, front_end=front_end)


def _timeout(
    session_id: str, waiter: ReplyWaiter, timeout: float | None, *, front_end: bool = False
) -> AskTimeout:
    if front_end and waiter.message is not None:  # the workers run the session
        return AskTimeout(
            f"Session {session_id!r} did not answer within {timeout} s; the input is stored "
            "for the workers and answered once one runs it (raise the timeout). Is a worker "
            "running on this store's schema? 'amber sessions' shows what waits, and "
            "Runtime.pending_approvals whether the turn waits for a person."
        )
    if waiter.message is None:  # the session is still loading, or the store is slow
        return AskTimeout(
            f"Session {session_id!r} did not store the input within {timeout} s (it is still "
            "loading, or the store is slow); the input is stored and answered once the session "
            "gets to it (raise the timeout)."
        )
    approvals = waiter.approvals
    if approvals:
        calls = " and ".join(f"{call_id!r} ({name})" for call_id, name in approvals.items())
        return AskTimeout(
            f"Session {session_id!r} did not answer within {timeout:g} s: its turn waits for a "
            f"person to approve tool call{'s' if len(approvals) > 1 else ''} {calls}. Decide "
            "it with Runtime.approve or Runtime.deny (Runtime.pending_approvals lists what "
            "waits), or stop the turn with Runtime.interrupt; the turn goes on."
        )
    return AskTimeout(
        f"Session {session_id!r} did not answer within {timeout} s; its turn goes on (raise the "
        "timeout, or stop the turn with Runtime.interrupt)."
    )
