"""run_shell_command: a real subprocess under trio, with timeout, kill, output limits."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import trio

from actors._shell import shell_tool
from actors._toolbox import Toolbox
from actors._tools import InvalidTool, Tool, ToolOutcome

BOUND = 30.0
"""Seconds within which a killed command must be answered (real time). The commands
that must not be waited for run for 600 s, so the bound is a margin of 20 against a
loaded machine, not a guess at how fast it is."""


def invoke(t: Tool, command: str) -> ToolOutcome:
    return trio.run(t.invoke, {"command": command})


def gone(pid: int, within: float = BOUND) -> bool:
    """True once ``pid`` has exited (or is a zombie nobody reaped), polling up to ``within`` s."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.01)  # an OS process, not an actor: poll with a bound
    return False


class TestOutput:
    def test_stdout_and_stderr(self) -> None:
        """The answer has the two sections of seed 000; the summary is stdout's last line."""
        outcome = invoke(shell_tool(), "echo out; echo err >&2; echo last")
        assert outcome == ToolOutcome(
            content="=== STDOUT ===\nout\nlast\n=== STDERR ===\nerr\n",
            summary="last",
            duration_ms=outcome.duration_ms,
        )

    def test_seed_example(self) -> None:
        """A pytest run looks as in seed 000; the summary drops the '=====' ruler."""
        script = (
            "printf '%s\\n' 'collected 5 items' '' "
            "'tests/test_history.py ..... [100%]' '===== 5 passed in 0.42s ====='"
        )
        outcome = invoke(shell_tool(), script)
        assert outcome.content == (
            "=== STDOUT ===\ncollected 5 items\n\ntests/test_history.py ..... [100%]\n"
            "===== 5 passed in 0.42s =====\n=== STDERR ===\n"
        )
        assert outcome.summary == "5 passed in 0.42s"

    def test_output_without_final_newline(self) -> None:
        """A stream that does not end in a newline still leaves the next header on its own line."""
        outcome = invoke(shell_tool(), "printf 'a'; printf 'b' >&2")
        assert outcome.content == "=== STDOUT ===\na\n=== STDERR ===\nb"

    def test_long_summary_is_cut(self) -> None:
        """The summary is at most 200 characters."""
        outcome = invoke(shell_tool(), "printf '%0300d\\n' 0")
        assert outcome.summary == "0" * 199 + "…"

    def test_no_output(self) -> None:
        """No output at all: empty sections, summary '(no output)'."""
        outcome = invoke(shell_tool(), "true")
        assert (outcome.content, outcome.summary) == (
            "=== STDOUT ===\n=== STDERR ===\n",
            "(no output)",
        )

    def test_stdin_is_closed(self) -> None:
        """A command that reads stdin sees end of file instead of waiting forever."""
        # A cat waiting on stdin would end in the 600 s timeout, not print read-eof.
        assert invoke(shell_tool(timeout=600), "cat; echo read-eof").summary == "read-eof"

    def test_invalid_utf8_is_replaced(self) -> None:
        """Output is decoded as UTF-8 with replacement characters."""
        outcome = invoke(shell_tool(), "printf 'ok \\377\\n'")
        assert outcome.content.startswith("=== STDOUT ===\nok \ufffd\n")


class TestExit:
    def test_non_zero_exit(self) -> None:
        """A non-zero exit adds the exit line and is an exit_status error."""
        outcome = invoke(shell_tool(), "echo partial; echo oops >&2; exit 3")
        assert outcome == ToolOutcome(
            content="=== STDOUT ===\npartial\n=== STDERR ===\noops\n=== EXIT CODE 3 ===",
            is_error=True,
            error_type="exit_status",
            summary="exit code 3: partial",
            duration_ms=outcome.duration_ms,
        )

    def test_killed_by_a_signal(self) -> None:
        """A command killed by a signal says which."""
        outcome = invoke(shell_tool(), "kill -9 $$")
        assert outcome.content.endswith("=== EXIT CODE -9 (killed by SIGKILL) ===")
        assert outcome.summary == "exit code -9"

    def test_cannot_start(self, tmp_path: Path) -> None:
        """A command that cannot start (no such cwd) is an exception outcome, not a crash."""
        outcome = invoke(shell_tool(cwd=tmp_path / "missing"), "pwd")
        assert outcome.error_type == "exception"
        assert outcome.content == (
            f"The command could not start: [Errno 2] No such file or directory: "
            f"'{tmp_path / 'missing'}'."
        )


class TestTimeout:
    def test_timeout_kills_and_keeps_partial_output(self) -> None:
        """Past its timeout the command is killed; the answer keeps what it printed."""
        started = time.monotonic()
        outcome = invoke(shell_tool(timeout=0.3), "echo started; sleep 600; echo never")
        assert time.monotonic() - started < BOUND
        assert (outcome.is_error, outcome.error_type) == (True, "timeout")
        assert outcome.content == (
            "=== STDOUT ===\nstarted\n=== STDERR ===\n=== TIMED OUT after 0.3 s ===\n"
            "The command was killed (with everything it started); the output above is what it "
            "printed before that. Run a shorter or narrower command, or ask the user to raise "
            "the limit (shell_tool(timeout=...))."
        )
        assert outcome.summary == "timed out after 0.3 s: started"

    def test_timeout_kills_the_process_group(self, tmp_path: Path) -> None:
        """Children the shell started die with it."""
        pidfile = tmp_path / "pid"
        outcome = invoke(shell_tool(timeout=0.3), f"sleep 600 & echo $! > {pidfile}; wait")
        assert outcome.error_type == "timeout"
        assert gone(int(pidfile.read_text()))

    def test_cancellation_kills_the_process(self, tmp_path: Path) -> None:
        """Cancelling the run (an interrupt) kills the command and raises Cancelled promptly."""
        pidfile = tmp_path / "pid"
        sh = shell_tool(timeout=60)

        async def main() -> bool:
            with trio.move_on_after(0.3) as scope:
                await sh.invoke({"command": f"sleep 600 & echo $! > {pidfile}; wait"})
            return scope.cancelled_caught

        started = time.monotonic()
        assert trio.run(main)
        assert time.monotonic() - started < BOUND
        assert gone(int(pidfile.read_text()))

    def test_background_child_does_not_hold_the_answer(self, tmp_path: Path) -> None:
        """A background child that keeps the pipes open delays the answer by a short grace only."""
        pidfile = tmp_path / "pid"
        started = time.monotonic()
        outcome = invoke(shell_tool(timeout=600), f"sleep 600 & echo $! > {pidfile}; echo done")
        assert time.monotonic() - started < BOUND
        assert (outcome.error_type, outcome.summary) == (None, "done")
        os.kill(int(pidfile.read_text()), signal.SIGKILL)  # left running, as `cmd &` asks


class TestLimits:
    def test_truncation_keeps_both_streams(self) -> None:
        """Long stdout keeps its head and tail; stderr and the exit line survive."""
        outcome = invoke(shell_tool(max_output_chars=1000), "seq 1 100000; echo oops >&2; exit 1")
        assert outcome.truncated
        assert len(outcome.content) <= 1000
        assert outcome.content.startswith("=== STDOUT ===\n1\n2\n3\n")
        assert "…[truncated " in outcome.content
        assert outcome.content.endswith("99999\n100000\n=== STDERR ===\noops\n=== EXIT CODE 1 ===")

    def test_huge_output_is_bounded_and_counted(self) -> None:
        """Output far past the limit is not all kept in memory; the marker still counts the cut."""
        outcome = invoke(shell_tool(max_output_chars=200), "head -c 1000000 /dev/zero | tr '\\0' a")
        head, _, rest = outcome.content.partition("…[truncated ")
        count, _, tail = rest.partition(" chars]…")
        kept = head.count("a") + tail.count("a")
        cut = int(count)
        assert cut + kept == 1_000_000
        assert len(outcome.content) <= 200

    def test_both_streams_long(self) -> None:
        """When both streams are long each keeps a part."""
        outcome = invoke(shell_tool(max_output_chars=400), "seq 1 5000; seq 1 5000 >&2")
        out, err = outcome.content.split("=== STDERR ===\n")
        assert out.count("…[truncated") == 1
        assert err.count("…[truncated") == 1
        assert len(outcome.content) <= 400


class TestDefinition:
    def test_spec(self) -> None:
        """The tool takes one string, command; its description states the limit."""
        sh = shell_tool(timeout=12, cwd="/tmp")
        spec = sh.spec()
        assert spec.name == "run_shell_command"
        assert spec.parameters == {
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "The command line, run with /bin/sh -c, e.g. `ls -la`.",
                }
            },
            "required": ["command"],
            "additionalProperties": False,
        }
        assert spec.description.startswith("Run a command line with /bin/sh in /tmp ")
        assert "It is killed after 12 s." in spec.description
        assert sh.timeout == 17.0  # the command's limit plus the backstop

    def test_cwd_is_honoured(self, tmp_path: Path) -> None:
        """The command runs in cwd."""
        assert invoke(shell_tool(cwd=tmp_path), "pwd").summary == str(tmp_path)

    def test_env_replaces_the_environment(self) -> None:
        """env is the command's whole environment, as in subprocess."""
        env: Mapping[str, str] = {"PATH": os.environ["PATH"], "GREETING": "hello"}
        outcome = invoke(shell_tool(env=env), "echo $GREETING; echo ${AMBER_UNSET_VAR:-unset}")
        assert outcome.content.startswith("=== STDOUT ===\nhello\nunset\n")

    def test_off_unless_added(self) -> None:
        """Nothing has the shell tool until it is added; a name can be chosen."""
        assert "run_shell_command" not in Toolbox()
        box = Toolbox([shell_tool(name="sh")])
        assert box.names() == ("sh",)
        assert trio.run(box.run, "sh", '{"command": "echo hi"}').summary == "hi"

    @pytest.mark.parametrize("timeout", [0, -1, None])
    def test_bad_timeout(self, timeout: Any) -> None:
        """A shell tool needs a positive timeout."""
        with pytest.raises(
            InvalidTool,
            match=r"^The (shell tool 'run_shell_command' needs a timeout|timeout of tool 'run_shell_command' must be)",
        ):
            shell_tool(timeout=timeout)
