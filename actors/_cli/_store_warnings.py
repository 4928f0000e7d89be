"""The store's warnings on stderr while a command has it open (``open_store``).

Imported only when the first warning is logged (``runtime._log.before_first_record``)
or when ``logging`` is loaded already: a read of a sound store imports no ``logging``.
"""

from __future__ import annotations

import logging

import click

from runtime import storable_text

from ._hints import name_store

__all__ = ["StoreWarnings"]


class StoreWarnings(logging.Handler):
    """Print the store's warnings on stderr, each once, as one ``amber: warning:`` line
    naming the store ``db`` in the command that mends it."""

    def __init__(self, db: str) -> None:
        super().__init__(logging.WARNING)
        self._db = db
        self._said: set[str] = set()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = name_store(record.getMessage(), self._db)
        except Exception:  # a broken log call must not break the command
            self.handleError(record)
            return
        if text not in self._said:
            self._said.add(text)
            click.echo(f"amber: warning: {storable_text(text)}", err=True)
