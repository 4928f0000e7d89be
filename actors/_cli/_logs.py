"""The runtime's warnings on an interactive command's console.

Without a handler Python prints an ``amber.*`` warning raw on stderr, in the
middle of a chat. ``amber chat``, ``resume`` and ``demo`` print them as dim
lines on their console instead, and leave out the warnings about a failed
turn: the CLI adapter shows that turn's crash notice and its detail already.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from rich.console import Console
from rich.text import Text

__all__ = ["warnings_on"]


class _ConsoleHandler(logging.Handler):
    def __init__(self, console: Console) -> None:
        super().__init__(logging.WARNING)
        self._console = console

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "amber_turn_id", None) is not None:
            return  # a failed turn: its crash notice is on the console already
        try:
            text = record.getMessage()
        except Exception:  # a broken log call must not break the chat
            self.handleError(record)
            return
        self._console.print(Text(f"  warning: {text}", style="dim"), soft_wrap=True)


@contextlib.contextmanager
def warnings_on(console: Console) -> Iterator[None]:
    """Print the ``amber`` loggers' warnings on ``console`` while the block runs."""
    logger = logging.getLogger("amber")
    handler = _ConsoleHandler(console)
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
