"""A session whose load fails (the store cannot write what the load decides): every caller
is told the store's error, nothing acknowledged is lost, and the next call loads it again."""

from __future__ import annotations

import asyncio
import re
import shlex
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from harness import WAIT, RuntimeFactory, make_runtime
from hypothesis import given, settings
from hypothesis import strategies as st

from actors import AskTimeout, Runtime, ScriptedModel, SessionGone, Settings, hang, reply
from runtime import (
    Category,
    CorruptRow,
    MessageAdded,
    Status,
    StoreError,
    TurnStarted,
    new_message,
)
from runtime.store import MemoryStore, SQLiteStore
from runtime.testing import check_invariants

__all__ = ["make_runtime"]


class WriteFailingStore(MemoryStore):
    """A memory store that refuses every write while ``failing`` is set (a full disk)."""

    failing = False

    def append(self, events: Any) -> Any:
        if self.failing:
            raise StoreError("Cannot write: database or disk is full (injected).")
        return super().append(events)


def _with_pending_input() -> WriteFailingStore:
    """A store holding session ``s`` with one input waiting: loading it starts a turn (a
    write)."""
    store = WriteFailingStore()
    at = datetime.now(UTC)
    message = new_message(
        Category.USER_QUESTION, id="u1", session_id="s", created_at=at, sender="Chii",
        content="one",
    )  # fmt: skip
    store.append([MessageAdded(session_id="s", seq=1, at=at, message=message)])
    return store


def _contents(store: MemoryStore) -> list[str]:
    return [m.content for m in store.load_state("s")]


class TestALoadThatCannotWrite:
    def test_every_caller_gets_the_store_error_and_the_next_call_loads_again(
        self, make_runtime: RuntimeFactory
    ) -> None:
        """ask (no timeout), send, stream and wait_idle on a session whose load cannot write
        raise the StoreError at once (ask once hung for ever, send said the session "kept
        stopping"); none of their inputs is stored; once the store writes again the session
        loads and answers, the waiting input too."""
        store = _with_pending_input()
        store.failing = True
        rt = make_runtime(model=ScriptedModel(lambda request: reply("ok")), store=store)
        with pytest.raises(StoreError, match="disk is full"):
            rt.ask("s", "two", timeout=WAIT)
        with pytest.raises(StoreError, match="disk is full"):
            rt.send("s", "three")
        with pytest.raises(StoreError, match="disk is full"):
            rt.wait_idle("s", timeout=WAIT)

        async def streamed() -> list[Any]:
            return [event async for event in rt.stream("s", "four")]

        with pytest.raises(StoreError, match="disk is full"):
            asyncio.run(asyncio.wait_for(streamed(), WAIT))
        assert _contents(store) == ["one"]
        assert rt.live_sessions() == []

        store.failing = False
        answer = rt.ask("s", "five", timeout=WAIT)
        assert answer.text == "ok"
        state = rt.wait_idle("s", timeout=WAIT)
        assert [m.content for m in state if m.role.value == "user"] == ["one", "five"]
        assert all(m.status is not Status.PENDING_AGENT for m in state)
        check_invariants(rt.timeline("s"))

    def test_asks_waiting_while_the_load_fails_are_all_told(
        self, make_runtime: RuntimeFactory
    ) -> None:
        """Asks queued at an actor that is still loading are failed with the load's error,
        not left waiting (several callers at once, as in a chat with a full disk)."""
        store = _with_pending_input()
        store.failing = True
        rt = make_runtime(model=ScriptedModel(lambda request: reply("ok")), store=store)
        waiters = [rt._start_ask("s", f"q{i}", {}, None, what="ask") for i in range(5)]
        for waiter in waiters:
            assert waiter.wait(WAIT), "an ask was left waiting after its session's load failed"
            with pytest.raises(StoreError):
                waiter.result()
        assert _contents(store) == ["one"]


class GatedStore(MemoryStore):
    """A memory store whose reads wait for ``gate`` (a session that loads slowly)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def __contains__(self, session_id: object) -> bool:
        assert self.gate.wait(WAIT), "the test never opened the gate"
        return super().__contains__(session_id)


class TestAnAskThatTimesOutBeforeItsInputIsStored:
    def test_the_timeout_says_the_input_is_not_stored_yet(
        self, make_runtime: RuntimeFactory
    ) -> None:
        """An ask that times out while its session still loads says so (it once said "its
        turn goes on" of an input not even stored); the input is stored once it loads."""
        store = GatedStore()
        rt = make_runtime(model=ScriptedModel(lambda request: reply("ok")), store=store)
        with pytest.raises(
            AskTimeout,
            match=r"^Session 's' did not store the input within 0\.05 s \(it is still loading, "
            r"or the store is slow\); the input is stored and answered once the session gets to "
            r"it \(raise the timeout\)\.$",
        ):
            rt.ask("s", "slow", timeout=0.05)
        store.gate.set()
        state = rt.wait_idle("s", timeout=WAIT)
        assert next((m.content, m.status) for m in state) == ("slow", Status.PROCESSED)


class TestARuntimeOnAStoreThatCannotBeWritten:
    def test_it_does_not_start_and_says_why(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A runtime on a SQLite store it cannot write (a read-only file, folder or file
        system) refuses to start, saying so and how to fix it (it once started, then every
        session failed on its first write, or a read-only folder raised PermissionError
        for the runner lock); the store is left as it was."""
        db = tmp_path / "amber.db"
        with SQLiteStore(db) as store:
            store.append(_with_pending_input().events("s"))
        connect = sqlite3.connect

        def read_only(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
            if not kwargs.get("uri"):  # as SQLite opens a file it cannot write
                database, kwargs["uri"] = f"{Path(database).resolve().as_uri()}?mode=ro", True
            return connect(database, *args, **kwargs)

        monkeypatch.setattr(sqlite3, "connect", read_only)
        rt = Runtime(model=ScriptedModel(lambda request: reply("ok")), store=db)
        with pytest.raises(
            StoreError,
            match=r"^Cannot run a runtime on '.*amber\.db': a runtime writes its store, and its "
            r"file or its folder cannot be written \(attempt to write a readonly database: permissions, "
            r"an immutable file, or a read-only file system\)\. Make the file and its folder "
            r"writable, or copy the store \(with its -wal file, if any\) to a writable folder; "
            r"the amber commands that read a store work on it\.$",
        ):
            rt.start()
        rt.stop()
        assert not (tmp_path / "amber.db.runner").exists()
        monkeypatch.undo()
        with SQLiteStore(db) as store:
            assert store.load_state("s").seq == 1


class TestASessionThatCannotGoOn:
    def test_its_asks_fail_with_one_sentence(self, make_runtime: RuntimeFactory) -> None:
        """A session whose store stops taking writes mid-turn (the turn cannot even be
        failed) fails its asks with SessionGone quoting the store's error once, without a
        doubled full stop (it ended "... was stored.."); the session loads again later."""
        store = WriteFailingStore()
        calls: list[Any] = []

        def fill_the_disk(request: Any) -> Any:
            calls.append(request)
            if len(calls) == 1:
                store.failing = True  # before the model's first chunk is stored
            return reply("stored")

        rt = make_runtime(model=ScriptedModel(fill_the_disk), store=store)
        with pytest.raises(SessionGone) as raised:
            rt.ask("s", "hello", timeout=WAIT)
        assert str(raised.value) == (
            "Session 's' failed: Cannot write: database or disk is full (injected)."
        )
        store.failing = False
        rt.wait_passivated("s", timeout=WAIT)
        assert rt.ask("s", "again", timeout=WAIT).text == "stored"


_OPS = st.lists(
    st.sampled_from(["fail", "heal", "send", "ask", "drop", "wait"]), min_size=1, max_size=12
)


class TestWhateverFails:
    @settings(max_examples=25, deadline=None)
    @given(ops=_OPS)
    def test_no_call_hangs_and_the_store_holds_what_was_acknowledged(self, ops: list[str]) -> None:
        """Sends, asks, waits and reloads of a session while its store refuses writes at
        any moment: no call hangs; an input whose call returned (or answered) is stored; one
        whose call raised StoreError is not (a session that stopped, SessionGone, may hold
        it); once the store writes again, every stored input is answered."""
        store = _with_pending_input()
        with Runtime(
            model=ScriptedModel(lambda request: reply("ok")),
            store=store,
            settings=Settings(passivate_after=None),
        ) as rt:
            kept, refused = {"one"}, set()
            for n, op in enumerate(ops):
                text = f"{op} {n}"
                try:
                    if op == "fail":
                        store.failing = True
                    elif op == "heal":
                        store.failing = False
                    elif op == "send":
                        rt.send("s", text)
                        kept.add(text)
                    elif op == "ask":
                        answer = rt.ask("s", text, timeout=WAIT)
                        kept.add(text)
                        assert answer.input.content == text
                    elif op == "drop":
                        rt.router.drop("s")
                    else:
                        rt.wait_idle("s", timeout=WAIT)
                except StoreError:
                    refused.add(text)
                except SessionGone:
                    pass
            store.failing = False
            state = rt.wait_idle("s", timeout=WAIT)
        inputs = {m.content for m in state if m.role.value == "user"}
        assert kept <= inputs
        assert not refused & inputs
        assert all(m.status is not Status.PENDING_AGENT for m in state)


class TurnStartFailingStore(MemoryStore):
    """A memory store that refuses, while ``failing`` is set, the writes that start a turn."""

    failing = False

    def append(self, events: Any) -> Any:
        events = list(events)
        if self.failing and any(isinstance(e, TurnStarted) for e in events):
            raise StoreError("Cannot write: database or disk is full (injected).")
        return super().append(events)


class TestATurnThatCannotStart:
    def test_the_session_reloads_instead_of_leaving_its_input_waiting(
        self, make_runtime: RuntimeFactory
    ) -> None:
        """An input that interrupts a turn is stored, but the write that starts its turn
        fails: the session once stayed live with the input waiting and nothing to start it
        (wait_idle never returned). It stops (its waiters are told) and the next call loads
        it again, which answers the input."""
        store = TurnStartFailingStore()
        called = threading.Event()

        def model(request: Any) -> Any:
            if not called.is_set():
                called.set()
                return hang()
            return reply("ok")

        rt = make_runtime(model=ScriptedModel(model), store=store)
        rt.send("s", "first")
        assert called.wait(WAIT)
        store.failing = True
        second = rt.send("s", "second")  # stored; the turn it starts cannot be
        assert rt.wait_passivated("s", timeout=WAIT), "the session stayed live, stuck"
        store.failing = False
        state = rt.wait_idle("s", timeout=WAIT)
        assert state.message(second.id).status is Status.PROCESSED
        check_invariants(rt.timeline("s"))


class TestASessionWhoseSnapshotIsDamaged:
    def test_its_callers_are_told_exactly_how_to_mend_it(self, tmp_path: Path) -> None:
        """A runtime fails a session whose snapshot is damaged (by design: a damaged row is
        an error, and the log is read whole only by ``amber recover --rebuild``); the error
        says the log is intact and what to run, on this store, to mend it. Run as said, the
        session loads again with every event kept."""
        from cli_support import amber

        db = tmp_path / "my store.db"
        with Runtime(model=ScriptedModel([], fallback=reply("ok")),
                     store=SQLiteStore(db, snapshot_every=5)) as rt:  # fmt: skip
            for n in range(3):
                rt.ask("s", f"q{n}", timeout=WAIT)
        with sqlite3.connect(db) as conn:
            (seq,) = conn.execute("SELECT seq FROM snapshots WHERE session_id = 's'").fetchone()
            conn.execute("UPDATE snapshot_chunks SET body = X'7B7D' WHERE part = 'messages'")
        conn.close()
        with (
            Runtime(model=ScriptedModel([], fallback=reply("ok")), store=db) as rt,
            pytest.raises(CorruptRow) as raised,
        ):
            rt.ask("s", "again", timeout=WAIT)
        assert (raised.value.session_id, raised.value.seq) == ("s", seq)
        assert re.fullmatch(
            rf"Session 's' snapshot at seq {seq} is corrupt: messages chunk 0 does not match "
            r"its digest: it was changed after it was written\. The session's event log is "
            r"intact \(a snapshot is derived from it\), but a runtime loads the session from its "
            r"snapshot, so every call for it fails until the snapshot is rebuilt: stop the "
            r"runtime, run \"amber recover --rebuild --db .*\" \(store\.rebuild\(\)\), and start "
            r"it again\.",
            str(raised.value),
        ), str(raised.value)
        command = re.search(r"run \"([^\"]*)\" \(", str(raised.value))
        assert command is not None
        words = shlex.split(command.group(1))
        assert words[:3] == ["amber", "recover", "--rebuild"]
        assert amber(*words[1:]).exit_code == 0
        with Runtime(model=ScriptedModel([], fallback=reply("ok")), store=db) as rt:
            assert rt.ask("s", "again", timeout=WAIT).text == "ok"
            state = rt.wait_idle("s", timeout=WAIT)
        assert [m.content for m in state if m.role.value == "user"] == ["q0", "q1", "q2", "again"]

    def test_a_path_with_a_space_is_quoted_once(self, tmp_path: Path) -> None:
        """A store path with a space is quoted for the shell inside the command, and the
        command is not wrapped in the same quotes (which would end at the path's)."""
        from actors._damage import load_error

        damaged = CorruptRow(
            "Session 's' snapshot at seq 4 is corrupt: messages chunk 0 does not match its "
            "digest. Snapshots are rebuilt from the event log by 'amber recover --rebuild' "
            "(store.rebuild()).",
            session_id="s",
            seq=4,
        )
        path = tmp_path / "my store.db"
        with SQLiteStore(path) as store:
            told = str(load_error(damaged, store))
        assert f"""run "amber recover --rebuild --db '{path}'" (store.rebuild())""" in told, told
        command = re.search(r'run "([^"]*)" \(', told)
        assert command is not None
        assert shlex.split(command.group(1)) == ["amber", "recover", "--rebuild", "--db", str(path)]

    def test_every_call_is_told_the_same(self, tmp_path: Path) -> None:
        """Calls that read the store themselves (``state``, ``wait_idle``, ``call_store``)
        get the same error as those through the session's actor (``ask``): the one that
        names this store in the rebuild command, not the store's own text."""
        db = tmp_path / "a.db"
        with Runtime(model=ScriptedModel([], fallback=reply("ok")),
                     store=SQLiteStore(db, snapshot_every=5)) as rt:  # fmt: skip
            for n in range(3):
                rt.ask("s", f"q{n}", timeout=WAIT)
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE snapshot_chunks SET body = X'7B7D' WHERE part = 'messages'")
        conn.close()
        told: dict[str, str] = {}
        with Runtime(model=ScriptedModel([], fallback=reply("ok")), store=db) as rt:
            calls: dict[str, Any] = {
                "state": lambda: rt.state("s"),
                "wait_idle": lambda: rt.wait_idle("s", timeout=WAIT),
                "call_store": lambda: rt.call_store(lambda s: s.load_state("s")),
                "ask": lambda: rt.ask("s", "again", timeout=WAIT),
            }
            for name, call in calls.items():
                with pytest.raises(CorruptRow) as raised:
                    call()
                told[name] = str(raised.value)
        assert f"--db {db}" in told["ask"], told["ask"]
        assert told == dict.fromkeys(calls, told["ask"])

    def test_a_damaged_summary_row_names_the_store_and_the_stop(self, tmp_path: Path) -> None:
        """Another derived row's error (a summary row) names the store in its command and
        says to stop the runtime around the rebuild; other errors are left as they are."""
        from actors._damage import load_error

        damaged = CorruptRow(
            "Session 's': its summary row has seq 'x', which is not a seq. Rebuild the summary "
            "with 'amber recover --rebuild'.",
            session_id="s",
        )
        with SQLiteStore(tmp_path / "a.db") as store:
            error = load_error(damaged, store)
            other = StoreError("Cannot write: database or disk is full.")
            assert load_error(other, store) is other
        assert isinstance(error, CorruptRow)
        assert (error.session_id, error.seq, error.__cause__) == ("s", None, damaged)
        assert str(error) == (
            "Session 's': its summary row has seq 'x', which is not a seq. Rebuild the summary "
            f"with 'amber recover --rebuild --db {tmp_path / 'a.db'}'. Stop the runtime before, "
            "and start it again after: a rebuild holds the store's write lock while it "
            "replays every session's log, so other writes wait for it (or fail, once they "
            "have waited too long)."
        )
