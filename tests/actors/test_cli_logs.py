"""The runtime's warnings on an interactive command's console (actors/_cli/_logs.py)."""

from __future__ import annotations

import io
import logging

from rich.console import Console

from actors._cli._logs import warnings_on


def console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=200, highlight=False, color_system=None), out


def test_warnings_are_dim_lines_on_the_console() -> None:
    """A warning of an amber logger is printed on the console, not raw on stderr."""
    screen, out = console()
    with warnings_on(screen):
        logging.getLogger("amber.tools").warning("tool %r is slow", "lookup")
    assert out.getvalue() == "  warning: tool 'lookup' is slow\n"


def test_failed_turns_are_left_to_the_adapter() -> None:
    """A warning about a failed turn is not printed again: its crash notice is shown."""
    screen, out = console()
    with warnings_on(screen):
        logging.getLogger("amber.session").warning(
            "session s: turn failed: boom", extra={"amber_turn_id": "turn_1"}
        )
        logging.getLogger("amber.session").info("not a warning")
    assert out.getvalue() == ""


def test_the_logger_is_as_it_was_after() -> None:
    """Leaving the block removes the handler and restores propagation."""
    logger = logging.getLogger("amber")
    handlers, propagate = list(logger.handlers), logger.propagate
    screen, _ = console()
    with warnings_on(screen):
        assert len(logger.handlers) == len(handlers) + 1
        assert logger.propagate is False
    assert logger.handlers == handlers
    assert logger.propagate is propagate
