"""``runtime._log``: the ``amber.*`` loggers, with ``logging`` imported on the first record."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from runtime._log import LazyLogger, before_first_record


def _warn_here(log: LazyLogger) -> None:
    log.warning("%s went %s", "it", "wrong", extra={"amber_note": 7})


class TestLazyLogger:
    def test_the_record_is_the_loggers(self, caplog: pytest.LogCaptureFixture) -> None:
        """A record goes to ``logging.getLogger(name)`` with its level, text, extra, and the
        caller's file, line and function, as ``Logger.warning`` called there writes it."""
        log = LazyLogger("amber.test_log")
        with caplog.at_level("WARNING", logger="amber.test_log"):
            _warn_here(log)
            logging.getLogger("amber.test_log").warning("%s went %s", "it", "wrong")
        lazy, direct = caplog.records
        assert (lazy.name, lazy.levelno, lazy.getMessage()) == (
            "amber.test_log", logging.WARNING, "it went wrong"
        )  # fmt: skip
        assert (lazy.filename, lazy.funcName) == ("test_log.py", "_warn_here")
        assert lazy.lineno == _warn_here.__code__.co_firstlineno + 1
        assert lazy.amber_note == 7  # type: ignore[attr-defined]
        assert (direct.name, direct.levelno, direct.getMessage()) == (
            lazy.name, lazy.levelno, lazy.getMessage()
        )  # fmt: skip
        assert log.logger is logging.getLogger("amber.test_log")

    def test_hooks_run_once_before_the_first_record(self, caplog: pytest.LogCaptureFixture) -> None:
        """A hook runs just before the next record (it can attach the handler that sees it),
        once; a cancelled one never runs."""
        log = LazyLogger("amber.test_log")
        seen: list[str] = []

        class Catch(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                seen.append(record.getMessage())

        handler = Catch()
        ran: list[str] = []
        cancelled = before_first_record(lambda: ran.append("cancelled"))
        cancel = before_first_record(
            lambda: (ran.append("attach"), logging.getLogger("amber.test_log").addHandler(handler))
        )
        cancelled()
        try:
            assert ran == []
            _warn_here(log)
            _warn_here(log)
        finally:
            logging.getLogger("amber.test_log").removeHandler(handler)
        cancel()  # after it ran: nothing to do
        assert ran == ["attach"]
        assert seen == ["it went wrong", "it went wrong"]


def test_the_store_does_not_import_logging() -> None:
    """Importing the stores (and the time travel that warns) loads no ``logging``; the first
    warning does."""
    code = (
        "import sys\n"
        "import runtime.store, runtime.store._travel\n"
        "print('logging' in sys.modules)\n"
        "from runtime._log import LazyLogger\n"
        "LazyLogger('amber.x').warning('w')\n"
        "print('logging' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.split() == ["False", "True"]
    assert result.stderr == "w\n"  # logging's last resort, as before
