"""The ``amber.*`` loggers, with ``logging`` imported when something is logged.

``import logging`` costs a read-only command ~18 M instructions (~5 ms) before it
prints anything, and a sound store logs nothing. A module on such a command's path
says ``log = LazyLogger("amber.store")`` instead of ``logging.getLogger``: the
first record imports ``logging`` and goes to ``logging.getLogger(name)`` with the
same level, text, ``extra`` and caller (file, line, function) it had before, so an
embedder's handlers and ``caplog`` see no difference.

A program that prints the warnings its own way (the CLI's ``open_store``) need not
import ``logging`` to attach its handler up front: ``before_first_record`` runs a
hook just before the first record a ``LazyLogger`` emits.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging

__all__ = ["LazyLogger", "before_first_record"]

_pending: list[Callable[[], None]] = []
"""Hooks to run before the next record (``before_first_record``), each once."""


def before_first_record(hook: Callable[[], None]) -> Callable[[], None]:
    """Run ``hook`` (once) just before the next record a ``LazyLogger`` emits, so that it
    can attach a handler without importing ``logging`` before anything is logged.

    Returns a function that cancels the hook if it has not run yet (a no-op after).
    """
    _pending.append(hook)

    def cancel() -> None:
        with contextlib.suppress(ValueError):
            _pending.remove(hook)

    return cancel


def _run_pending() -> None:
    while True:
        try:
            hook = _pending.pop(0)
        except IndexError:
            return
        hook()


class LazyLogger:
    """``logging.getLogger(name)`` for the methods Amber's modules call, with ``logging``
    imported on the first record."""

    __slots__ = ("_logger", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        """The logger's name, as ``logging.getLogger`` takes it (``amber.store``)."""
        self._logger: logging.Logger | None = None

    @property
    def logger(self) -> logging.Logger:
        """The ``logging.Logger`` itself (importing ``logging`` if it is not yet)."""
        if self._logger is None:
            import logging

            self._logger = logging.getLogger(self.name)
        return self._logger

    def warning(self, msg: object, *args: object, stacklevel: int = 1, **kwargs: Any) -> None:
        """``Logger.warning``: the record names this method's caller, as it would without
        the stand-in."""
        if _pending:
            _run_pending()
        self.logger.warning(msg, *args, stacklevel=stacklevel + 1, **kwargs)

    def __repr__(self) -> str:
        return f"<LazyLogger {self.name}>"
