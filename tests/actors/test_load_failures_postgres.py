"""A session whose load fails on a shared PostgreSQL store gives its lease back at once, so
another worker may run it, and its callers still get the store's error.

Two runtimes in one process stand for two workers. The workers' poll is an hour: only
what the failing load does explains a lease given back. Waits poll the store until what
is awaited is there; their 60 s bounds are hang guards, never a verdict.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from psycopg import sql

from actors import Runtime, ScriptedModel, Settings
from actors._drafts import user_draft
from actors._ids import utc_now
from actors._leasing import LeaseKeeper, store_input
from runtime import CorruptRow, SessionState, StoreError, TurnSettings, reply
from runtime.store import PostgresStore

SETTINGS = Settings(lease_ttl=30.0, lease_poll=3600.0, passivate_after=None)


class LoadFailingStore(PostgresStore):
    """A PostgreSQL store whose ``load_state`` fails (a damaged row, a read that failed);
    ``tried`` is set at the first try."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tried = threading.Event()

    def load_state(self, session_id: str, *args: Any, **kwargs: Any) -> SessionState:
        self.tried.set()
        raise StoreError(f"Cannot read session {session_id!r} (injected).")


@pytest.fixture
def schema(postgres_dsn: str, pg_schema: Callable[[], str]) -> str:
    return pg_schema()


@pytest.fixture
def runtimes() -> Iterator[list[Runtime]]:
    made: list[Runtime] = []
    yield made
    for rt in made:
        rt.stop()


def _start(made: list[Runtime], store: PostgresStore, answer: str, **options: Any) -> Runtime:
    rt = Runtime(model=ScriptedModel([], fallback=reply(answer)), store=store, settings=SETTINGS,
                 **options)  # fmt: skip
    made.append(rt)
    return rt.start()


def _held_by(dsn: str, schema: str, session_id: str) -> str | None:
    with PostgresStore(dsn, schema=schema) as store:
        lease = store.lease(session_id)
    return None if lease is None or lease.expires_at <= datetime.now(UTC) else lease.owner


def _wait_for(what: Callable[[], bool], why: str) -> None:
    deadline = time.monotonic() + 60  # a hang guard
    while not what():
        assert time.monotonic() < deadline, f"not within 60 s: {why}"
        time.sleep(0.02)


def _store_input(dsn: str, schema: str, session_id: str, text: str) -> None:
    """Store an input as a front end does (nobody runs the session yet)."""
    draft = user_draft("send", session_id, text, {"sender": "Chii"}, utc_now, SETTINGS.input_limits)
    with PostgresStore(dsn, schema=schema) as store:
        store_input(store, session_id, draft, settings=TurnSettings(), at=utc_now())


class TestALoadThatFails:
    def test_the_caller_gets_the_error_and_another_worker_may_run_the_session(
        self, runtimes: list[Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """A send whose session cannot be loaded raises the StoreError, as on SQLite; the
        lease its claim took is given back (it was held, and renewed, until a poll), so
        another runtime runs the session at once."""
        failing = _start(runtimes, LoadFailingStore(postgres_dsn, schema=schema), "never")
        _store_input(postgres_dsn, schema, "s", "first")
        with pytest.raises(StoreError, match=r"^Cannot read session 's' \(injected\)\.$"):
            failing.send("s", "second", sender="Chii")
        _wait_for(lambda: _held_by(postgres_dsn, schema, "s") is None, "the lease is given back")
        assert failing.live_sessions() == []
        other = _start(runtimes, PostgresStore(postgres_dsn, schema=schema), "answered")
        assert other.ask("s", "third", sender="Chii", timeout=60).text == "answered"
        state = other.wait_idle("s", timeout=60)
        assert [m.content for m in state if m.role.value == "user"] == ["first", "third"]

    def test_a_worker_leaves_it_to_the_others(
        self, runtimes: list[Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """A worker that picks up a session with input waiting and cannot load it gives the
        lease back: the session does not sit held by it, and another worker's poll runs
        it."""
        _store_input(postgres_dsn, schema, "s", "waiting")
        store = LoadFailingStore(postgres_dsn, schema=schema)
        worker = _start(runtimes, store, "never", resume="all")
        assert store.tried.wait(60), "the worker did not pick the session up"  # a hang guard
        _wait_for(lambda: _held_by(postgres_dsn, schema, "s") is None, "the lease is given back")
        assert worker.live_sessions() == []
        other = _start(runtimes, PostgresStore(postgres_dsn, schema=schema), "answered",
                       resume="all")  # fmt: skip
        state = other.wait_idle("s", timeout=60)
        assert [m.content for m in state if m.role.value == "assistant"] == ["answered"]

    def test_giving_the_lease_back_is_not_announced(
        self, runtimes: list[Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """The lease of a session that could not be loaded is given back without a NOTIFY:
        two workers that both fail to load it (a damaged row) would otherwise hand it to
        each other as fast as they can. The others take it at their next poll."""
        failing = _start(runtimes, LoadFailingStore(postgres_dsn, schema=schema), "never")
        _store_input(postgres_dsn, schema, "s", "first")
        with PostgresStore(postgres_dsn, schema=schema) as other:
            listener = other.listener()
            try:
                with pytest.raises(StoreError, match="injected"):
                    failing.send("s", "hi", sender="Chii")
                _wait_for(
                    lambda: _held_by(postgres_dsn, schema, "s") is None, "the lease is given back"
                )
                _store_input(postgres_dsn, schema, "t", "after")  # notified after the release
                assert listener.wait(60) == {"t"}  # 60 s: a hang guard
            finally:
                listener.close()


class TestADamagedSnapshot:
    def test_the_error_says_how_to_mend_it_on_the_workers_store(
        self, runtimes: list[Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """A session whose snapshot is damaged fails its callers (a damaged row is an
        error); the error names the schema and what to stop, run and start again. Done as
        it says, the session loads again."""
        from click.testing import CliRunner

        from actors._cli import cli

        with Runtime(model=ScriptedModel([], fallback=reply("ok")), settings=SETTINGS,
                     store=PostgresStore(postgres_dsn, schema=schema, snapshot_every=2)) as rt:  # fmt: skip
            for n in range(2):
                rt.ask("s", f"q{n}", sender="Chii", timeout=60)
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
            assert conn.execute(
                "UPDATE snapshot_chunks SET body = %s WHERE part = 'messages'", (b"{}",)
            ).rowcount
        failing = _start(runtimes, PostgresStore(postgres_dsn, schema=schema), "ok")
        with pytest.raises(CorruptRow) as raised:
            failing.ask("s", "again", sender="Chii", timeout=60)
        assert re.fullmatch(
            r"Session 's' snapshot at seq \d+ is corrupt: messages chunk 0 does not match its "
            r"digest: it was changed after it was written\. The session's event log is intact "
            r"\(a snapshot is derived from it\), but a runtime loads the session from its "
            r"snapshot, so every call for it fails until the snapshot is rebuilt: stop the "
            r"workers and runtimes on this store, run 'AMBER_PG_SCHEMA=amber_test_\w+ amber "
            r"recover --rebuild --db URL' with the workers' postgresql:// URL "
            r"\(store\.rebuild\(\)\), and start them again\.",
            str(raised.value),
        ), str(raised.value)
        told = {"ask": str(raised.value)}
        front = Runtime(store=PostgresStore(postgres_dsn, schema=schema), settings=SETTINGS,
                        run_sessions=False)  # fmt: skip
        runtimes.append(front)
        front.start()
        for name, call in {
            "state": lambda: failing.state("s"),
            "front end's wait_idle": lambda: front.wait_idle("s", timeout=60),
            "front end's state": lambda: front.state("s"),
        }.items():
            with pytest.raises(CorruptRow) as raised_too:
                call()
            told[name] = str(raised_too.value)
        assert told == dict.fromkeys(told, told["ask"])  # every call is told the same
        failing.stop()
        front.stop()
        assert f"AMBER_PG_SCHEMA={schema} " in str(raised.value)
        mended = CliRunner(env={"AMBER_PG_SCHEMA": schema, "AMBER_DB": None}).invoke(
            cli, ["recover", "--rebuild", "--db", postgres_dsn], catch_exceptions=False
        )
        assert mended.exit_code == 0, mended.output
        rt = _start(runtimes, PostgresStore(postgres_dsn, schema=schema), "ok")
        assert rt.ask("s", "again", sender="Chii", timeout=60).text == "ok"


class TestADamagedSummaryRow:
    def test_a_worker_starts_and_runs_the_other_sessions(
        self, runtimes: list[Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """One session's summary row edited by another program: a worker (resume='all')
        once refused to start (its listing of the sessions to pick up raised that session's
        CorruptRow, and so did every poll after). It starts and runs the session with input
        waiting; the damaged one is left out of its pickup, and a call for it raises the
        CorruptRow (it once went through, writing the row again unseen: the damage was gone
        from 'amber check'), until a rebuild writes the row again from its log."""
        _store_input(postgres_dsn, schema, "s", "damaged")
        _store_input(postgres_dsn, schema, "t", "waiting")
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
            assert conn.execute(
                "UPDATE sessions SET messages = messages + 5 WHERE session_id = 's'"
            ).rowcount
        worker = _start(runtimes, PostgresStore(postgres_dsn, schema=schema), "answered",
                        resume="all")  # fmt: skip
        state = worker.wait_idle("t", timeout=60)
        assert [m.content for m in state if m.role.value == "assistant"] == ["answered"]
        assert worker._keeper is not None
        worker._keeper.poll_now()  # a poll lists the sessions again: it once raised too
        assert _held_by(postgres_dsn, schema, "s") is None
        assert "s" not in worker.live_sessions()
        with pytest.raises(CorruptRow, match=r"^Session 's' seq 1: its summary row does not "):
            worker.send("s", "again", sender="Chii")
        front = Runtime(store=PostgresStore(postgres_dsn, schema=schema), settings=SETTINGS,
                        run_sessions=False)  # fmt: skip
        runtimes.append(front)
        front.start()
        with pytest.raises(CorruptRow, match=r"^Session 's' seq 1: its summary row does not "):
            front.send("s", "from a front end", sender="Chii")  # it once wrote the row again
        with PostgresStore(postgres_dsn, schema=schema) as store:
            assert [p.session_id for p in store.check().problems] == ["s"]
            store.rebuild()
        worker.send("s", "again", sender="Chii")
        state = worker.wait_idle("s", timeout=60)
        assert [m.content for m in state if m.role.value == "user"] == ["damaged", "again"]
        with PostgresStore(postgres_dsn, schema=schema) as store:
            assert store.session("s").messages == len(state.messages)


class DamagedStore(PostgresStore):
    """A PostgreSQL store whose sessions' events after the snapshot are damaged: their load
    raises ``CorruptRow`` (found only on load; the summary row is sound). ``tries``
    counts the loads."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tries = 0

    def load_state(self, session_id: str, *args: Any, **kwargs: Any) -> SessionState:
        self.tries += 1
        raise CorruptRow(f"Session {session_id!r} seq 2: event damaged (injected).",
                         session_id=session_id, seq=2)  # fmt: skip


class TestDamageFoundOnLoad:
    def test_a_worker_tries_it_once_per_head_not_at_every_poll(
        self,
        runtimes: list[Runtime],
        postgres_dsn: str,
        schema: str,
        caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """A worker that picked up a session whose load fails for damage took its lease,
        failed, logged and gave the lease back at every poll. Now it remembers the session
        with its head: its polls leave it alone (one warning) until the head changes, then
        it tries again; a send for it still raises the CorruptRow."""
        monkeypatch.setattr(LeaseKeeper, "_woken", lambda self, ids: None)  # polls only
        _store_input(postgres_dsn, schema, "s", "waiting")
        store = DamagedStore(postgres_dsn, schema=schema)
        given_back = "the lease is given back"
        with caplog.at_level(logging.WARNING, logger="amber"):
            worker = _start(runtimes, store, "never", resume="all")  # its first poll
            keeper = worker._keeper
            assert keeper is not None
            _wait_for(lambda: store.tries == 1 and _held_by(postgres_dsn, schema, "s") is None,
                      given_back)  # fmt: skip
            for _ in range(3):
                keeper.poll_now()
                _wait_for(lambda: _held_by(postgres_dsn, schema, "s") is None, given_back)
            assert store.tries == 1
            said = [r.getMessage() for r in caplog.records]
            assert len([line for line in said if "could not be loaded" in line]) == 1, said
            _store_input(postgres_dsn, schema, "s", "more")  # the head changes: tried again
            keeper.poll_now()
            _wait_for(lambda: store.tries == 2 and _held_by(postgres_dsn, schema, "s") is None,
                      given_back)  # fmt: skip
            keeper.poll_now()
            _wait_for(lambda: _held_by(postgres_dsn, schema, "s") is None, given_back)
            assert store.tries == 2
            with pytest.raises(CorruptRow, match=r"event damaged \(injected\)"):
                worker.send("s", "again", sender="Chii")

    def test_an_edited_event_is_logged_once_across_polls(
        self,
        runtimes: list[Runtime],
        postgres_dsn: str,
        schema: str,
        caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """The same with real damage: an event row edited by another program (after the
        snapshot: none is written here). Polls of a worker log its load's failure once."""
        monkeypatch.setattr(LeaseKeeper, "_woken", lambda self, ids: None)  # polls only
        _store_input(postgres_dsn, schema, "s", "q0")
        _store_input(postgres_dsn, schema, "s", "waiting")
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
            conn.execute("ALTER TABLE events DISABLE TRIGGER events_append_only")
            assert conn.execute(
                "UPDATE events SET body = replace(body, 'q0', 'qX') WHERE session_id = 's'"
            ).rowcount
        with caplog.at_level(logging.WARNING, logger="amber"):
            worker = _start(runtimes, PostgresStore(postgres_dsn, schema=schema), "never",
                            resume="all")  # fmt: skip
            keeper = worker._keeper
            assert keeper is not None
            for _ in range(3):
                _wait_for(lambda: _held_by(postgres_dsn, schema, "s") is None, "given back")
                keeper.poll_now()
            _wait_for(lambda: _held_by(postgres_dsn, schema, "s") is None, "given back")
        said = [r.getMessage() for r in caplog.records if "could not be loaded" in r.getMessage()]
        assert len(said) == 1, said
        assert "CorruptRow" in said[0], said
