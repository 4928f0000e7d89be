"""``run_shell_command``: a real shell tool, off unless a user adds it.

``shell_tool()`` makes a ``Tool`` that runs the model's command line with
``/bin/sh`` in a subprocess under trio and answers as seed 000 shows::

    === STDOUT ===
    …
    === STDERR ===
    …

plus ``=== EXIT CODE n ===`` (and ``is_error``) when the command fails. The
command runs in its own process group with stdin closed; on timeout or
cancellation the whole group is killed, and a timeout answer keeps the output
printed so far. Output is read as it comes, kept to a bounded head and tail,
and decoded as UTF-8 with replacement characters.

Nothing registers this tool by default: a shell lets the model do anything
the user running Amber can do, so a user who wants it adds ``shell_tool()``
to the runtime's tools explicitly.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
from collections.abc import Mapping

import trio

from ._tool_text import clip, excerpt
from ._tools import InvalidTool, Tool, ToolOutcome, _check_timeout, tool

__all__ = ["shell_tool"]

_STDOUT = "=== STDOUT ===\n"
_STDERR = "=== STDERR ===\n"
# After the shell exits, a background child may still hold its pipes open; read
# for this long more, then answer without waiting for the child.
_DRAIN_GRACE = 0.5
# The tool's own limit is a backstop behind the command's, which answers first
# with the partial output.
_BACKSTOP = 5.0
# Bytes that continue a UTF-8 sequence; deleting them from bytes leaves one per character.
_CONTINUATION = bytes(range(0x80, 0xC0))
_SUMMARY_CHARS = 200


def shell_tool(
    *,
    timeout: float = 60.0,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    max_output_chars: int = 20_000,
    name: str = "run_shell_command",
    approval: bool = False,
) -> Tool:
    """Make the ``run_shell_command`` tool; it is off unless you add it to your tools.

    The model sends ``{"command": "..."}``; the command runs with ``/bin/sh -c``
    as the user running Amber, with stdin closed, in its own process group.
    Its answer is ``=== STDOUT ===`` and ``=== STDERR ===`` sections; a
    non-zero exit adds ``=== EXIT CODE n ===`` and makes the result an error
    (``error_type="exit_status"``); a command that runs past ``timeout`` is
    killed with its process group and answered as a ``timeout`` error that
    keeps the output printed so far. Nothing enables this tool for you:
    pass ``shell_tool()`` among the runtime's tools to let the model use it.

    Args:
        timeout: Seconds the command may run before it is killed.
        cwd: The working directory; the current one when None.
        env: The whole environment of the command (as in ``subprocess``, it
            replaces the inherited one; include ``PATH``); inherited when None.
        max_output_chars: Longer answers keep the head and tail of each stream.
        name: The name the model calls the tool by.
        approval: Each command waits for a person to approve it before it runs
            (``Runtime.approve``/``deny``; ``amber chat --shell`` asks on the terminal).

    Returns:
        The tool. Its own ``timeout`` is a few seconds longer than the
        command's, as a backstop.
    """
    limit = _check_timeout(name, timeout)
    if limit is None:
        raise InvalidTool(
            f"The shell tool {name!r} needs a timeout in seconds (got None); "
            "a command without a limit could run forever."
        )
    directory = None if cwd is None else os.fspath(cwd)
    environment = None if env is None else dict(env)
    where = f" in {directory}" if directory is not None else ""

    async def run_shell_command(command: str) -> ToolOutcome:
        """Run a shell command.

        Args:
            command: The command line, run with /bin/sh -c, e.g. `ls -la`.
        """
        return await _run(
            command,
            timeout=limit,
            cwd=directory,
            env=environment,
            limit=max_output_chars,
        )

    return tool(
        run_shell_command,
        name=name,
        description=(
            f"Run a command line with /bin/sh{where} and return its standard output and "
            f"standard error, and its exit code when it fails. stdin is closed, so the command "
            f"cannot be interactive. It is killed after {limit:g} s. Long output keeps only "
            "its beginning and end, so filter it (grep, head, tail) when you can."
        ),
        timeout=limit + _BACKSTOP,
        max_output_chars=max_output_chars,
        approval=approval,
    )


class _Capture:
    """One output stream, kept to a bounded head and tail."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._head = bytearray()
        self._tail = bytearray()
        self._dropped = 0  # characters (not bytes) between head and tail

    def add(self, chunk: bytes | bytearray) -> None:
        room = self._limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        self._tail += chunk
        if len(self._tail) > self._limit:
            cut = len(self._tail) - self._limit
            self._dropped += len(bytes(self._tail[:cut]).translate(None, _CONTINUATION))
            del self._tail[:cut]

    async def drain(self, stream: trio.abc.ReceiveStream) -> None:
        async with stream:
            async for chunk in stream:
                self.add(chunk)

    def parts(self) -> tuple[str, str, int]:
        """Head text, tail text and how many characters were dropped between them."""
        decode = functools.partial(bytes.decode, encoding="utf-8", errors="replace")
        return decode(bytes(self._head)), decode(bytes(self._tail)), self._dropped


async def _run(
    command: str, *, timeout: float, cwd: str | None, env: dict[str, str] | None, limit: int
) -> ToolOutcome:
    # Each stream keeps up to 4 bytes per character it could show (UTF-8's widest).
    out, err = _Capture(4 * limit), _Capture(4 * limit)
    returncode: int | None = None
    with trio.move_on_after(timeout) as scope:
        async with trio.open_nursery() as nursery:
            try:
                process: trio.Process = await nursery.start(
                    functools.partial(
                        trio.run_process,
                        command,
                        shell=True,
                        check=False,
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        cwd=cwd,
                        env=env,
                        start_new_session=True,
                        deliver_cancel=_kill_group,
                    )
                )
            except (OSError, ValueError) as exc:  # no such cwd, a NUL in the command, …
                return ToolOutcome(
                    content=f"The command could not start: {exc}.",
                    is_error=True,
                    error_type="exception",
                )
            assert process.stdout is not None
            assert process.stderr is not None
            async with trio.open_nursery() as readers:
                readers.start_soon(out.drain, process.stdout)
                readers.start_soon(err.drain, process.stderr)
                await process.wait()
                readers.cancel_scope.deadline = min(
                    readers.cancel_scope.deadline, trio.current_time() + _DRAIN_GRACE
                )
            returncode = process.returncode
    return _outcome(out, err, returncode, timeout if scope.cancelled_caught else None, limit)


async def _kill_group(process: trio.Process) -> None:
    """Kill the shell and everything it started (trio's default signals the shell only)."""
    with contextlib.suppress(ProcessLookupError):  # already gone
        os.killpg(process.pid, signal.SIGKILL)


def _outcome(
    out: _Capture, err: _Capture, returncode: int | None, timed_out: float | None, limit: int
) -> ToolOutcome:
    if timed_out is not None:
        ending = (
            f"=== TIMED OUT after {timed_out:g} s ===\n"
            "The command was killed (with everything it started); the output above is what "
            "it printed before that. Run a shorter or narrower command, or ask the user to "
            "raise the limit (shell_tool(timeout=...))."
        )
    elif returncode:
        ending = f"=== EXIT CODE {returncode}{_signal_note(returncode)} ==="
    else:
        ending = ""
    budget = max(0, limit - len(_STDOUT) - len(_STDERR) - len(ending) - 3)
    out_head, out_tail, out_dropped = out.parts()
    err_head, err_tail, err_dropped = err.parts()
    out_size = len(out_head) + out_dropped + len(out_tail)
    err_size = len(err_head) + err_dropped + len(err_tail)
    # Each stream gets what it needs up to half the budget; the other gets the rest.
    half = budget // 2
    if out_size <= half:
        out_budget = out_size
    elif err_size <= budget - half:
        out_budget = budget - err_size
    else:
        out_budget = half
    stdout, out_cut = clip(out_head, out_tail, out_dropped, out_budget)
    stderr, err_cut = clip(err_head, err_tail, err_dropped, budget - out_budget)
    content = _STDOUT + _line(stdout) + _STDERR + (_line(stderr) + ending if ending else stderr)
    summary = _last_line(stdout) or _last_line(stderr)
    if timed_out is not None:
        summary = f"timed out after {timed_out:g} s" + (f": {summary}" if summary else "")
    elif returncode:
        summary = f"exit code {returncode}" + (f": {summary}" if summary else "")
    return ToolOutcome(
        content=content,
        is_error=timed_out is not None or bool(returncode),
        error_type="timeout" if timed_out is not None else "exit_status" if returncode else None,
        summary=excerpt(summary or "(no output)", _SUMMARY_CHARS),
        truncated=bool(out_cut or err_cut),
    )


def _line(text: str) -> str:
    """``text`` ending in a newline, so the next section starts on its own line."""
    return text if not text or text.endswith("\n") else text + "\n"


def _last_line(text: str) -> str | None:
    """The last line with words in it, without rulers such as pytest's '=====' framing."""
    for line in reversed(text.splitlines()):
        words = line.strip().strip("=").strip()
        if words:
            return words
    return None


def _signal_note(returncode: int) -> str:
    if returncode >= 0:
        return ""
    try:
        return f" (killed by {signal.Signals(-returncode).name})"
    except ValueError:
        return f" (killed by signal {-returncode})"
