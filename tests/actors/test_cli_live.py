"""``amber demo`` and ``amber chat``: real runtimes, real tools, real Ctrl-C.

The demo runs end to end in a fresh directory, through click's runner and
as its own process; chat is driven through click's runner with typed input,
and as a process that gets SIGINT while a tool runs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import Output, amber
from rich.console import Console

from actors._cli import ExitCode
from actors._cli._chat import ChatLoop
from runtime import MessageType, Status
from runtime.store import SQLiteStore

AMBER = [sys.executable, "-c", "from actors._cli import main; raise SystemExit(main())"]
"""The ``amber`` console script, run with this interpreter."""


class TestDemo:
    def test_end_to_end_in_a_fresh_directory(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """`amber demo` tells the story, stores it in ./amber.db and says how to inspect it."""
        monkeypatch.chdir(tmp_path)
        result = amber("demo")
        assert result.exit_code == 0, result.output
        out = result.output
        for expected in [
            "you: What is 2**100? Compute it, don't guess.",
            "🛠️ run_shell_command",
            "1267650600228229401496703205376",
            "❌ weather (exception)",
            "ConnectionError: weather service unreachable for 'Tokyo'",
            "🛠️ write_report",
            "you: Actually, stop: one line is enough.",
            "⏹ write_report interrupted",
            "Session  demo",
            "Turns    4 (1 interrupted, 3 processed)",
            "Messages 15 (10 delivered, 3 processed, 2 interrupted)",
            "Inspect it: amber inspect demo --db amber.db",
            "amber timeline demo --db amber.db",
            "amber replay demo --verify --db amber.db",
        ]:
            assert expected in out
        assert out.index("⏹ write_report interrupted") < out.index("Sure. In one line")
        with SQLiteStore(tmp_path / "amber.db") as store:
            state = store.load_state("demo")
        assert state.message("msg_5be1ef79_000036").status is Status.INTERRUPTED
        # The weather tool fails at once, so its result and its call's delivery race: its id
        # (msg_…_000024 most runs, 25 in some) is not pinned; it is found by its tool.
        (weather,) = [
            m for m in state.messages if m.type is MessageType.TOOL_RESULT and m.sender == "weather"
        ]
        assert weather.is_error

    def test_hints_name_the_interrupt(self, tmp_path: Path) -> None:
        """The diff hint points at the interrupt, and running it shows the interrupt."""
        db = tmp_path / "x.db"
        out = amber("demo", "--db", db).output
        hint = next(line for line in out.splitlines() if "what the interrupt changed" in line)
        command = hint.split()[1:6]  # diff demo A B --db
        assert command[:2] == ["diff", "demo"]
        shown = amber(*command[:4], "--db", db)
        assert "status: processing → interrupted" in shown.output

    def test_runs_again_under_a_new_id(self, tmp_path: Path) -> None:
        """A second run in the same store is demo-2; an explicit id that exists exits 5."""
        db = tmp_path / "amber.db"
        assert amber("demo", "--db", db).exit_code == 0
        second = amber("demo", "--db", db)
        assert "Session  demo-2" in second.output
        taken = amber("demo", "--session", "demo", "--db", db)
        assert taken.exit_code == ExitCode.CONFLICT
        assert "already has a session 'demo'" in taken.stderr

    def test_refuses_a_file_that_is_not_a_store(self, tmp_path: Path) -> None:
        """The demo never writes into a file that is not an Amber store."""
        path = tmp_path / "notes.txt"
        path.write_text("keep me\n")
        result = amber("demo", "--db", path)
        assert result.exit_code == ExitCode.BAD_STORE
        assert path.read_text() == "keep me\n"

    def test_as_a_process(self, tmp_path: Path) -> None:
        """The console script's main job runs in a fresh directory, then time travel works."""
        env = {**os.environ, "COLUMNS": "100", "PYTHONIOENCODING": "utf-8"}
        env.pop("AMBER_DB", None)
        demo = subprocess.run(
            [*AMBER, "demo"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
        )
        assert demo.returncode == 0, demo.stderr
        assert "Inspect it: amber inspect demo --db amber.db" in demo.stdout
        verify = subprocess.run(
            [*AMBER, "replay", "demo", "--verify"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert verify.returncode == 0, verify.stderr
        assert "Verified: 1 session(s)." in verify.stdout


class TestChat:
    def test_a_conversation(self, tmp_path: Path) -> None:
        """Typed lines become turns; /exit leaves; the session is stored."""
        db = tmp_path / "chat.db"
        result = amber("chat", "--db", db, "--no-stream", input="hello\nhelp\n/exit\n")
        assert result.exit_code == 0
        assert "You said: hello" in result.output
        assert "scripted stand-in model" in result.output
        assert f"Bye. Stored in {db}: amber timeline chat --db {db}" in result.output
        with SQLiteStore(db) as store:
            state = store.load_state("chat")
        inputs = [m for m in state.messages if m.role == "user"]
        assert [m.content for m in inputs] == ["hello", "help"]
        assert {m.status for m in inputs} == {Status.PROCESSED}

    def test_end_of_input_leaves_and_a_session_continues(self, tmp_path: Path) -> None:
        """Ctrl-D (end of input) exits 0; --session continues a stored session."""
        db = tmp_path / "chat.db"
        assert amber("chat", "--db", db, input="one\n").exit_code == 0
        again = amber("chat", "--session", "chat", "--db", db, input="two\n")
        assert again.exit_code == 0
        assert "session chat (continuing, 2 messages)" in again.output
        new = amber("chat", "--db", db, input="")
        assert "session chat-2 (new)" in new.output

    def test_tools(self, tmp_path: Path) -> None:
        """`sleep N` calls the slow tool; `$ cmd` runs only with --shell."""
        db = tmp_path / "chat.db"
        off = amber("chat", "--db", db, "--no-stream", input="$ echo hi\nsleep 0.01\n")
        assert "The shell tool is off" in off.output
        assert "Done: waited 0.01 s" in off.output
        on = amber("chat", "--shell", "--db", db, "--no-stream", input="$ echo hi-there\ny\n")
        assert "🛠️ run_shell_command" in on.output
        assert "approve run_shell_command(command='echo hi-there')? [y/N]" in on.output
        assert "Done: hi-there" in on.output

    def test_a_denied_command_never_runs(self, tmp_path: Path) -> None:
        """`--shell` asks `approve? [y/N]` for each command; no (or Enter) denies it."""
        db = tmp_path / "chat.db"
        marker = tmp_path / "ran"
        result = amber("chat", "--shell", "--db", db, "--no-stream",
                       input=f"$ touch {marker}\n\n")  # fmt: skip
        assert result.exit_code == 0, result.output
        assert "approve run_shell_command" in result.output
        assert "It failed" in result.output
        assert "denied" in result.output
        assert not marker.exists()
        with SQLiteStore(db) as store:
            kinds = [e.kind for e in store.events("chat")]
        assert "approval_requested" in kinds
        assert "approval_decided" in kinds

    def test_ctrl_c_at_the_prompt_twice_leaves(self) -> None:
        """The first Ctrl-C at the prompt warns, the second leaves."""
        presses: list[str] = []

        def read(prompt: str) -> str:
            presses.append(prompt)
            raise KeyboardInterrupt

        console = Console(file=open(os.devnull, "w"))  # noqa: SIM115
        loop = ChatLoop(rt=None, session="s", console=console, read=read)  # type: ignore[arg-type]
        loop.run()
        console.file.close()
        assert presses == ["you> ", "you> "]


@pytest.fixture
def chat_process(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Output, Path]]:
    """`amber chat` as a process with piped stdin and stdout."""
    db = tmp_path / "chat.db"
    env = {**os.environ, "COLUMNS": "100", "PYTHONIOENCODING": "utf-8"}
    proc = subprocess.Popen(
        [*AMBER, "chat", "--no-stream", "--db", str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
    )
    output = Output(proc.stdout)
    try:
        yield proc, output, db
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        output.join()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()


class TestChatCtrlC:
    def test_first_interrupts_the_turn_second_leaves(
        self, chat_process: tuple[subprocess.Popen[bytes], Output, Path]
    ) -> None:
        """SIGINT while a tool runs interrupts the turn; a second one exits 0 cleanly."""
        proc, out, db = chat_process
        out.wait_for("you> ")
        assert proc.stdin is not None
        proc.stdin.write(b"sleep 60\n")
        proc.stdin.flush()
        out.wait_for("🛠️ wait")
        proc.send_signal(signal.SIGINT)
        out.wait_for("⏹ interrupted (Ctrl-C again to leave)")
        out.wait_for("you> ", count=2)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=120) == 0, out.text
        out.wait_for("Bye. Stored in")
        assert "Traceback" not in out.text
        with SQLiteStore(db) as store:
            state = store.load_state("chat")
        question = next(m for m in state.messages if m.content == "sleep 60")
        assert question.status is Status.INTERRUPTED
        assert state.active_turn is None
