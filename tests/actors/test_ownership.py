"""Who owns a session: resume policies, scoped adapters, the runner lock, recovery after a kill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from cli_support import Recorded, amber, recorded  # noqa: F401  (the fixture)

from actors import CliAdapter, Runtime, ScriptedModel, Settings, reply
from actors._ownership import StoreBusy
from runtime import NotAStore, Status
from runtime.store import MemoryStore, SQLiteStore

WAIT = 60.0


def forked(recorded: Recorded, tmp_path: Path) -> Path:  # noqa: F811
    """A copy of the demo store with a fork whose question is pending (seq 16)."""
    db = recorded.copy(tmp_path)
    result = amber("fork", "demo", "--at", 16, "--as", "demo-retry", "--db", db)
    assert result.exit_code == 0, result.output
    with SQLiteStore(db) as store:
        state = store.load_state("demo-retry")
    assert [m.status for m in state][-1] is Status.PENDING_AGENT
    return db


def fork_state(db: Path) -> list[Status]:
    with SQLiteStore(db) as store:
        return [m.status for m in store.load_state("demo-retry")]


class TestTheFork:
    def test_chat_does_not_answer_a_fork(self, recorded: Recorded, tmp_path: Path) -> None:  # noqa: F811
        """`amber fork demo --at 16`, then `amber chat`: the chat never answers the fork's
        pending question (it did: "You said: And what's the weather in Tokyo?")."""
        db = forked(recorded, tmp_path)
        before = fork_state(db)
        result = amber("chat", "--db", db, "--no-stream", input="/exit\n")
        assert result.exit_code == 0, result.output
        assert "You said: And what's the weather" not in result.output
        assert fork_state(db) == before

    def test_demo_does_not_collide_with_a_fork(self, recorded: Recorded, tmp_path: Path) -> None:  # noqa: F811
        """`amber fork`, then `amber demo` on the same store: the demo writes its own new
        session and leaves the fork alone (it resumed it and failed on colliding ids)."""
        db = forked(recorded, tmp_path)
        before = fork_state(db)
        result = amber("demo", "--db", db)
        assert result.exit_code == 0, result.output
        assert "Session  demo-2" in result.output
        assert fork_state(db) == before
        assert amber("replay", "--all", "--verify", "--db", db).exit_code == 0

    def test_resume_continues_the_fork_on_purpose(
        self,
        recorded: Recorded,  # noqa: F811
        tmp_path: Path,
    ) -> None:
        """`amber resume demo-retry` answers the fork's question, and only that session."""
        db = forked(recorded, tmp_path)
        result = amber("resume", "demo-retry", "--db", db)
        assert result.exit_code == 0, result.output
        assert "Resuming demo-retry: 1 input(s) waiting." in result.output
        assert "You said: And what's the weather in Tokyo?" in result.output
        assert Status.PENDING_AGENT not in fork_state(db)
        again = amber("resume", "demo-retry", "--db", db)
        assert "Nothing to resume" in again.output
        assert amber("resume", "nope", "--db", db).exit_code == 3

    def test_chat_session_continues_a_fork(self, recorded: Recorded, tmp_path: Path) -> None:  # noqa: F811
        """`amber chat --session demo-retry` answers its pending question on purpose."""
        db = forked(recorded, tmp_path)
        result = amber("chat", "--session", "demo-retry", "--db", db, "--no-stream",
                       input="/exit\n")  # fmt: skip
        assert "You said: And what's the weather in Tokyo?" in result.output
        assert Status.PENDING_AGENT not in fork_state(db)


class TestResumePolicy:
    def test_none_leaves_pending_sessions_untouched(self, tmp_path: Path) -> None:
        """The default policy: a starting runtime loads no stored session."""
        db = tmp_path / "amber.db"
        with Runtime(model=ScriptedModel([reply("a")]), store=db) as rt:
            rt.send("mine", "hi")
            rt.wait_idle("mine", timeout=WAIT)
        with SQLiteStore(db) as store:
            store.append(_pending_input(store, "theirs"))
        with Runtime(model=ScriptedModel([reply("b")]), store=db) as rt:
            assert rt.live_sessions() == []
            assert rt.state("theirs").message(_last_id(rt, "theirs")).status is (
                Status.PENDING_AGENT
            )

    def test_all_and_ids_resume_what_they_name(self, tmp_path: Path) -> None:
        """``resume="all"`` answers every waiting session; ids answer only those."""
        db = tmp_path / "amber.db"
        with SQLiteStore(db) as store:
            for session in ("a", "b"):
                store.append(_pending_input(store, session))
        with Runtime(model=ScriptedModel([], fallback=reply("ok")), store=db,
                     resume=["a"]) as rt:  # fmt: skip
            assert rt.live_sessions() == ["a"]
            assert not rt.wait_idle("a", timeout=WAIT).queued
        with SQLiteStore(db) as store:
            assert store.load_state("b").queued
        with Runtime(model=ScriptedModel([], fallback=reply("ok")), store=db,
                     resume="all") as rt:  # fmt: skip
            assert not rt.wait_idle("b", timeout=WAIT).queued

    @pytest.mark.parametrize("bad", ["some", 3, ["a", ""]])
    def test_a_bad_policy_is_refused(self, bad: object) -> None:
        """Anything but 'all', 'none' or session ids is a clear error."""
        from actors import InvalidConfig

        with pytest.raises(InvalidConfig, match=r"resume"):
            Runtime(model=ScriptedModel([]), store=":memory:", resume=bad)  # type: ignore[arg-type]


class TestScopedAdapters:
    def test_a_cli_adapter_draws_only_its_sessions(self, tmp_path: Path) -> None:
        """``CliAdapter(sessions=[...])`` shows and delivers its sessions only."""
        import io

        from rich.console import Console

        out = io.StringIO()
        adapter = CliAdapter.start(console=Console(file=out, width=100), sessions=["mine"])
        model = ScriptedModel([], fallback=reply("an answer"))
        with Runtime(model=model, store=":memory:", adapters=[adapter]) as rt:
            rt.send("mine", "hi", chatbot_id="cli")
            rt.send("other", "hello", chatbot_id="cli")
            mine = rt.wait_idle("mine", timeout=WAIT)
            other = rt.wait_idle("other", timeout=WAIT)
        assert [m.status for m in mine][-1] is Status.DELIVERED
        assert [m.status for m in other][-1] is Status.PENDING  # nobody draws it
        assert out.getvalue().count("an answer") == 1


class TestRunnerLock:
    def test_one_runtime_runs_a_sqlite_store(self, tmp_path: Path) -> None:
        """A second runtime on the same file is refused, naming the first; readers are fine."""
        db = tmp_path / "amber.db"
        with Runtime(model=ScriptedModel([]), store=db):
            second = Runtime(model=ScriptedModel([]), store=db)
            with pytest.raises(StoreBusy, match=rf"run by another runtime \(pid {os.getpid()}"):
                second.start()
            assert amber("sessions", "--db", db).exit_code == 0
        with Runtime(model=ScriptedModel([]), store=db):  # released on stop
            pass

    def test_two_runtimes_of_one_process_are_told_so(self, tmp_path: Path) -> None:
        """The second Runtime on a file this process runs is told the first is in this
        process, and how to go on."""
        db = tmp_path / "amber.db"
        with (
            Runtime(model=ScriptedModel([]), store=db),
            pytest.raises(
                StoreBusy,
                match=r"; one runtime runs a SQLite store at a time, and that one runs in this "
                r"process: stop it \(rt\.stop\(\), or leave its with block\) before starting "
                r"another on the file, or give each runtime a file of its own\.$",
            ),
        ):
            Runtime(model=ScriptedModel([]), store=db).start()

    def test_a_store_object_run_by_another_runtime_is_refused(self, tmp_path: Path) -> None:
        """A SQLiteStore another Runtime runs, handed to a second one: StoreBusy, and the
        first goes on (the refused start closed the store under it: StoreClosed)."""
        store = SQLiteStore(tmp_path / "amber.db")
        model = ScriptedModel([], fallback=reply("hi"))
        with Runtime(model=model, store=store, settings=Settings(passivate_after=None)) as rt:
            with pytest.raises(
                StoreBusy,
                match=r"^The store '.*amber\.db' is run by another Runtime of this process "
                r"\(runner_\w+\); one runtime runs a store at a time\. Stop that one first "
                r"\(rt\.stop\(\), or leave its with block\), or give this runtime a store of its "
                r"own\.$",
            ):
                Runtime(model=ScriptedModel([]), store=store).start()
            assert rt.ask("s1", "hello", timeout=WAIT).text == "hi"

    def test_a_memory_store_run_by_another_runtime_is_refused(self) -> None:
        """Two runtimes on one MemoryStore each ran the session on its own, silently apart."""
        store = MemoryStore()
        with (
            Runtime(model=ScriptedModel([]), store=store),
            pytest.raises(StoreBusy, match=r"^The store <.*> is run by another Runtime"),
        ):
            Runtime(model=ScriptedModel([]), store=store).start()
        with Runtime(model=ScriptedModel([]), store=store):  # released on stop
            pass

    def test_a_refused_runtime_stops_the_adapters_handed_to_it(self, tmp_path: Path) -> None:
        """``with Runtime(adapters=[...])`` that cannot start (the store is busy, or is not a
        store): the adapters handed over are stopped, so no thread keeps the process alive
        (``amber chat``, ``demo`` and ``resume`` hung after printing StoreBusy)."""
        from io import StringIO

        from rich.console import Console

        db = tmp_path / "amber.db"
        not_a_store = tmp_path / "notes.txt"
        not_a_store.write_text("not a store")
        with Runtime(model=ScriptedModel([]), store=db):
            adapter = CliAdapter.start(console=Console(file=StringIO()), sessions=["s"])
            refused = Runtime(model=ScriptedModel([]), store=db, adapters=[adapter])
            with pytest.raises(StoreBusy), refused:
                pass
            assert not adapter.is_alive()
        adapter = CliAdapter.start(console=Console(file=StringIO()), sessions=["s"])
        refused = Runtime(model=ScriptedModel([]), store=not_a_store, adapters=[adapter])
        with pytest.raises(NotAStore), refused:
            pass
        assert not adapter.is_alive()

    def test_the_same_file_through_another_path_is_refused(self, tmp_path: Path) -> None:
        """The lock is the file's, not the path's: through a symlink, or a path with ``..``
        in it, the second runtime is refused too (a user found a symlink let it in; the
        first then failed every append with SeqConflict)."""
        (tmp_path / "sub").mkdir()
        db = tmp_path / "amber.db"
        link = tmp_path / "link.db"
        link.symlink_to(db)
        others = [link, tmp_path / "sub" / ".." / "amber.db"]
        with Runtime(model=ScriptedModel([]), store=db):
            for other in others:
                second = Runtime(model=ScriptedModel([]), store=other)
                with pytest.raises(StoreBusy, match="run by another runtime"):
                    second.start()
        with (
            Runtime(model=ScriptedModel([]), store=link),  # the other way round
            pytest.raises(StoreBusy, match="run by another runtime"),
        ):
            Runtime(model=ScriptedModel([]), store=db).start()


class TestRecoveryAfterAKill:
    def test_a_message_after_a_sigkill_is_answered_without_waiting(self, tmp_path: Path) -> None:
        """A runtime killed mid-turn (SIGKILL), then a new one: the next message is answered
        at once; the dead runner's turn is recovered first, not after ``recover_after``."""
        db = tmp_path / "amber.db"
        ready = tmp_path / "ready"
        code = textwrap.dedent(f"""
            import pathlib, trio
            from actors import Runtime, ScriptedModel, call, reply, tool

            @tool(timeout=None)
            async def wait_forever() -> str:
                \"\"\"Blocks.\"\"\"
                pathlib.Path({str(ready)!r}).write_text("started")
                await trio.sleep_forever()

            rt = Runtime(model=ScriptedModel([call("wait_forever")]), store={str(db)!r},
                         tools=[wait_forever]).start()
            rt.send("s", "first")
            trio.run(trio.sleep_forever)
        """)
        process = subprocess.Popen([sys.executable, "-c", code])
        try:
            deadline = time.monotonic() + WAIT
            while not ready.exists():
                assert process.poll() is None, "the runtime died on its own"
                assert time.monotonic() < deadline, "the tool never started"
                time.sleep(0.01)
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait()
        with SQLiteStore(db) as store:
            assert store.load_state("s").active_turn_id is not None
        settings = Settings(recover_after=3600)
        with Runtime(model=ScriptedModel([], fallback=reply("answered")), store=db,
                     settings=settings) as rt:  # fmt: skip
            started = time.monotonic()
            rt.send("s", "second")
            state = rt.wait_idle("s", timeout=WAIT)
            assert time.monotonic() - started < WAIT
        assert [m.content for m in state][-1] == "answered"
        assert [t.status.value for t in state.turn_list()][:1] == ["recovered"]


def _pending_input(store: SQLiteStore, session: str) -> list[object]:
    from datetime import UTC, datetime

    from runtime import Category, MessageAdded, new_message

    message = new_message(Category.USER_QUESTION, id=f"msg_{session}", session_id=session,
                          created_at=datetime.now(UTC), sender="u", content="waiting")  # fmt: skip
    return [MessageAdded(session_id=session, seq=1, at=datetime.now(UTC), message=message)]


def _last_id(rt: Runtime, session: str) -> str:
    return [m.id for m in rt.state(session)][-1]
