"""Stopping a command that runs a ``Runtime`` cleanly on SIGTERM and SIGHUP.

``amber worker``, ``amber chat``, ``amber resume`` and ``amber demo`` run
sessions: killed by a signal's default action, the process would leave the
running turn active (an orphan the next start recovers) and a sync tool call in
flight marked "may have run". Under :func:`stop_signals` the signals are caught
instead: the command stops its runtime (``Runtime.stop()`` drains the running
sync calls), says in one line that it stopped and why (:func:`say_stopped`), and
exits 0, as ``amber worker`` always did. The worker waits on ``event``; the
others wait in a prompt or ``wait_idle``, which :meth:`StopSignals.guarded`
leaves by raising :class:`StopSignal` there. ``amber web`` uses the handler to
shut its server down.

The kernel may deliver a process's signal to any thread that does not block it.
A handler always runs in the main thread, but the syscall of the thread that got
the signal is interrupted (a database call interrupted so hung the worker):
:meth:`StopSignals.running` starts the runtime with the signals blocked in the
main thread, so every thread it starts inherits the mask, then unblocks them
here, where they are handled.

A signal the process ignores when the command starts (SIGHUP under ``nohup``)
stays ignored.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from .._runtime import Runtime

__all__ = ["STOP_SIGNALS", "StopSignal", "StopSignals", "say_stopped", "stop_signals"]

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""The signals that stop a command running sessions: ``kill``, systemd, docker stop
(SIGTERM), and the terminal closing (SIGHUP)."""


class StopSignal(BaseException):
    """Raised in the main thread, inside :meth:`StopSignals.raising`, when a stop signal
    arrives: it leaves what the command was waiting for (a prompt, ``wait_idle``) as
    ``KeyboardInterrupt`` would, and the runtime's ``with`` then stops it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class StopSignals:
    """The stop signals' handler for one command, and what it received."""

    def __init__(self, signals: tuple[int, ...]) -> None:
        self.signals = frozenset(signals)
        """The signals handled (those the process did not ignore)."""
        self.received: int | None = None
        """The first stop signal received, or None."""
        self.event = threading.Event()
        """Set when a stop signal arrives."""
        self._raising = False

    @property
    def name(self) -> str:
        """The received signal's name (``SIGTERM``), or "" before one arrives."""
        return "" if self.received is None else signal.Signals(self.received).name

    def handle(self, signum: int, _frame: FrameType | None) -> None:
        """The signal handler: note the signal, set ``event``, and raise
        :class:`StopSignal` once if :meth:`raising` is on."""
        if self.received is None:
            self.received = signum
        self.event.set()
        if self._raising:
            self._raising = False  # once: a second signal never cuts the stop short
            raise StopSignal(signum)

    @contextlib.contextmanager
    def sparing_threads(self) -> Iterator[None]:
        """Block the signals in this thread for the block's length: the threads started
        in it inherit the mask, so the signals come to this thread only, once unblocked."""
        signal.pthread_sigmask(signal.SIG_BLOCK, self.signals)
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, self.signals)

    @contextlib.contextmanager
    def running(self, runtime: Runtime) -> Iterator[Runtime]:
        """``with runtime``, started with the signals blocked in its threads."""
        with self.sparing_threads():
            runtime.start()  # stops what it started when it fails
        try:
            yield runtime
        finally:
            runtime.stop()

    @contextlib.contextmanager
    def guarded(self, runtime: Runtime) -> Iterator[Runtime]:
        """:meth:`running` the runtime with :meth:`raising` on inside: a stop signal leaves
        the block, and the runtime then stops."""
        with self.running(runtime) as started, self.raising():
            yield started

    @contextlib.contextmanager
    def raising(self) -> Iterator[None]:
        """In the block, a stop signal raises :class:`StopSignal` in the main thread (at
        once on entry if one came before); after it, signals are only noted."""
        if self.received is not None:
            raise StopSignal(self.received)
        self._raising = True
        try:
            yield
        finally:
            self._raising = False


@contextlib.contextmanager
def stop_signals(*extra: int) -> Iterator[StopSignals]:
    """Handle SIGTERM and SIGHUP (and ``extra``) for the block; a :class:`StopSignal`
    leaving it ends there (check ``received``). The previous handlers come back after.

    Off the main thread (a test driving the CLI from a thread) nothing is handled:
    Python takes signal handlers in the main thread only.
    """
    wanted = (*STOP_SIGNALS, *extra)
    if threading.current_thread() is not threading.main_thread():
        yield StopSignals(())
        return
    handled = tuple(s for s in wanted if signal.getsignal(s) is not signal.SIG_IGN)
    stop = StopSignals(handled)
    previous = {signum: signal.signal(signum, stop.handle) for signum in handled}
    try:
        yield stop
    except StopSignal:
        pass
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)


def say_stopped(command: str, stop: StopSignals, then: str) -> None:
    """One line on stderr: ``amber COMMAND`` stopped on the signal, cleanly; ``then`` says
    how to go on. Nothing when the terminal is gone (SIGHUP)."""
    with contextlib.suppress(OSError):
        click.echo(
            f"amber {command}: stopped by {stop.name}; the runtime stopped cleanly (every event "
            f"is on disk). {then}",
            err=True,
        )
