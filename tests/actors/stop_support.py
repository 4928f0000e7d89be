"""What the tests of a runtime's stop share: a hang guard, a log line to wait for, and the
tool results a model read."""

from __future__ import annotations

import logging
import threading

from runtime import ModelRequest, ToolResultPart

WAIT = 60.0
"""Seconds an actor answer may take before the test fails (a hang guard, not a judge)."""


class Said(logging.Handler):
    """Sets ``event`` when a record whose message contains ``text`` is logged (or someone
    else sets it)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
        self.event = threading.Event()
        self.said: list[str] = []
        """The messages that contained ``text``."""

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.said.append(record.getMessage())
            self.event.set()


def tool_results(request: ModelRequest) -> list[str]:
    """The texts of the tool results ``request``'s view holds, synthesized ones left out."""
    return [
        part.text
        for message in request.view.messages
        for part in message.parts
        if isinstance(part, ToolResultPart) and not part.synthesized
    ]
