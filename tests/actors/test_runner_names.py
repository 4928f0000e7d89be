"""A runtime whose name is taken while its listening connection is down stops itself.

The name of a runtime that runs sessions of a PostgreSQL store is held by an
advisory lock on its listening connection. When that connection drops, the lock
goes with it; a namesake that starts meanwhile gets the name, and the two would
take each other's leases over and over. The test stands in for the namesake
with a connection that waits for the name's lock: PostgreSQL grants it the
moment the listener's backend ends, before the runtime can reconnect.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from stop_support import WAIT, Said
from worker_procs import GUARD, Worker

from actors import (
    Runtime,
    RuntimeStopped,
    ScriptedModel,
    Settings,
    StoreBusy,
    _teardown,
    call,
    reply,
    tool,
)
from runtime import hang
from runtime.store import PostgresStore
from runtime.store._pg_schema import name_key

SETTINGS = Settings(lease_ttl=30.0, lease_poll=3600.0, passivate_after=None)


@pytest.fixture
def schema(postgres_dsn: str, pg_schema: Callable[[], str]) -> str:
    return pg_schema()


def wait_for(what: Callable[[], bool], why: str) -> None:
    deadline = time.monotonic() + 60  # a hang guard
    while not what():
        assert time.monotonic() < deadline, f"not within 60 s: {why}"
        time.sleep(0.02)


@pytest.fixture
def namesake(postgres_dsn: str, schema: str) -> Iterator[Callable[[str], None]]:
    """``take(name)``: end the listening connection that holds ``name`` and hold the name
    before its runtime reconnects (a connection queued on the name's lock gets it as the
    backend ends)."""
    holders: list[psycopg.Connection[object]] = []

    def take(name: str) -> None:
        key = name_key(schema, name)
        holder: psycopg.Connection[object] = psycopg.connect(postgres_dsn, autocommit=True)
        holders.append(holder)
        with psycopg.connect(postgres_dsn, autocommit=True) as admin:
            row = admin.execute(
                "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 "
                "AND classid = %s::oid AND objid = %s::oid AND granted",
                ((key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF),
            ).fetchone()
            assert row is not None, f"nobody holds the name {name!r}"
            waiter = threading.Thread(
                target=holder.execute, args=("SELECT pg_advisory_lock(%s::bigint)", (key,))
            )
            waiter.start()
            waiting = "SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted"
            wait_for(
                lambda: admin.execute(waiting, (holder.info.backend_pid,)).fetchone() is not None,
                "the namesake waits for the name",
            )
            admin.execute("SELECT pg_terminate_backend(%s)", (row[0],))
        waiter.join(60)
        assert not waiter.is_alive(), "the namesake did not get the name"

    yield take
    for holder in holders:
        holder.close()


def test_a_runtime_whose_name_was_taken_while_disconnected_stops(
    postgres_dsn: str, schema: str, namesake: Callable[[str], None]
) -> None:
    """It reconnects, finds its name held by another, and stops: its running turn gives
    its input back, its lease is given back, ``failed`` says why, and calls raise
    ``RuntimeStopped`` naming the cause (it used to log an error and run on beside its
    namesake, the two taking each other's leases)."""
    store = PostgresStore(postgres_dsn, schema=schema)
    rt = Runtime(model=ScriptedModel([hang()]), store=store, runner="w1", settings=SETTINGS)
    rt.start()
    try:
        rt.send("s", "question", sender="Chii")
        wait_for(lambda: rt.state("s").active_turn is not None, "the turn starts")
        namesake("w1")
        wait_for(lambda: not rt.running, "the runtime stops itself")
        assert isinstance(rt.failed, StoreBusy)
        assert str(rt.failed).startswith(
            f"Another runtime took the name 'w1' on this store (schema {schema!r}) while this "
            "one's connection to it was down; this one stopped, since two of one name would "
            "take each other's leases over and over."
        )
        with pytest.raises(RuntimeStopped) as refused:
            rt.send("s", "again", sender="Chii")
        assert "Another runtime took the name 'w1'" in str(refused.value)
    finally:
        rt.stop()
    with PostgresStore(postgres_dsn, schema=schema) as check:
        state = check.load_state("s")
        lease = check.lease("s")
    assert state.active_turn is None
    assert [m.status.value for m in state.messages] == ["pending_agent"]
    assert lease is not None
    assert lease.expires_at.year < 2000  # given back


def test_a_worker_whose_name_was_taken_while_disconnected_exits(
    postgres_dsn: str, schema: str, namesake: Callable[[str], None]
) -> None:
    """``amber worker`` stops its sessions, gives its leases back and exits with code 1,
    saying why on stderr."""
    worker = Worker(postgres_dsn, schema, "w1", "fast")
    try:
        namesake("w1")
        code = worker.proc.wait(GUARD)
    finally:
        worker.stop(signal.SIGKILL)
    said = " ".join(worker.text.split())
    assert code == 1, worker.text
    assert "amber: StoreBusy: Another runtime took the name 'w1' on this store" in said
    assert "Give each worker its own --name" in said


class TestNameLostDuringStart:
    def test_start_raises_the_store_busy_that_stopped_it(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The runner's name is lost while start() resumes sessions: the lease keeper says
        so (``failed``) and refuses the claim with RuntimeStopped. start() raised that
        RuntimeStopped; it raises the StoreBusy that caused it (the stop chained)."""
        db = tmp_path / "amber.db"
        with Runtime(model=ScriptedModel([hang()]), store=db) as first:
            first.send("s", "question")  # pending for the next runtime, whatever the stop finds
        rt = Runtime(model=ScriptedModel([reply("ok")]), store=db, resume="all")
        taken = StoreBusy("Another runtime took the name 'w1' on this store …")
        loads: list[str] = []

        def load(session_id: str) -> None:
            loads.append(session_id)
            rt._name_lost(taken)  # what the lease keeper's thread does, then its claim fails
            raise RuntimeStopped(f"The runtime stopped: {taken}")

        monkeypatch.setattr(rt.router, "load", load)
        with pytest.raises(StoreBusy) as raised:
            rt.start()
        assert loads  # the resume loop ran into it
        assert raised.value is taken
        assert isinstance(raised.value.__cause__, RuntimeStopped)
        assert not rt.running


class TestNameLostDuringAStop:
    def test_the_background_stop_defers_to_a_stop_already_running(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The name is lost while the user's own stop waits for a sync tool call: the stop
        the runtime starts in the background leaves the work to it, and returns at once
        with one log line. It used to wait its default 30 s for that stop and then die
        with a ``StopTimeout`` traceback on its thread."""
        started, release = threading.Event(), threading.Event()

        @tool
        def deploy() -> str:
            """Deploy."""
            started.set()
            assert release.wait(WAIT)
            return "deployed"

        background = threading.Event()  # the background stop returned
        stop = _teardown._stop_unless_begun

        def stop_and_say(rt: Runtime) -> None:
            try:
                stop(rt)
            finally:
                background.set()

        monkeypatch.setattr(_teardown, "_stop_unless_begun", stop_and_say)
        died: list[BaseException | None] = []
        monkeypatch.setattr(threading, "excepthook", lambda args: died.append(args.exc_value))
        caplog.set_level(logging.INFO, logger="amber")
        said = Said("waits for tool calls")
        logging.getLogger("amber").addHandler(said)
        rt = Runtime(model=ScriptedModel([call("deploy")]), store=tmp_path / "amber.db",
                     tools=[deploy]).start()  # fmt: skip
        user = threading.Thread(target=rt.stop, kwargs={"timeout": 2 * WAIT})
        try:
            rt.send("s", "deploy")
            assert started.wait(WAIT)
            user.start()
            assert said.event.wait(WAIT)  # the user's stop drains the call
            rt._name_lost(StoreBusy("Another runtime took the name 'w1' on this store …"))
            assert background.wait(2 * WAIT)  # a hang guard: it returns at once
            assert user.is_alive()  # the user's stop still waits for the call
        finally:
            release.set()
            user.join(WAIT)
            logging.getLogger("amber").removeHandler(said)
        assert not user.is_alive()
        assert died == []
        lines = [r.getMessage() for r in caplog.records if r.name == "amber.runtime"]
        assert [line for line in lines if "name" in line] == [
            "the runtime lost its name; the stop already under way stops it"
        ]
        assert all(r.exc_info is None for r in caplog.records)
