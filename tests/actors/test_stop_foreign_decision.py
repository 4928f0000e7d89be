"""A runtime stop meets what another process stored for the session meanwhile.

1. While the stop waits for a sync tool call (the drain), a front end stores a decision on
   another call of the turn, which waits for approval (``store_decision``). The owner
   adopts it (told of it: ``resync``; or at its write of the drained result). Before, it
   took the decision and ran the approved tool in the middle of the stop. Now the decision
   stays stored, the call waits, and the next start takes it.
2. A stop with nothing to wait for records its end at once; input stored from elsewhere
   just before makes that write meet a ``SeqConflict``. Before, the reload left the turn
   active in the store with nothing of the stop recorded; now the stop's end is recorded
   on the reloaded head, as in any stop.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
from stop_support import WAIT, Said

from actors import Runtime, ScriptedModel, Settings, tool
from actors._elsewhere import store_decision
from actors._ids import utc_now
from actors._session_sync import StoreSync
from runtime import (
    ApprovalDecided,
    Event,
    Input,
    ModelRequest,
    OrphanRecovered,
    Status,
    Stopping,
    TurnStarted,
    calls,
    reply,
)
from runtime._clean import MAY_HAVE_RUN
from runtime.store import PostgresStore, SQLiteStore
from tests.actors.test_runtime_postgres import SETTINGS as PG_SETTINGS
from tests.actors.test_runtime_postgres import deaf
from tests.actors.test_stop_drain_foreign import _store_input


class _Approved:
    """A model that calls ``slow`` (a sync tool, held until released) and ``guarded`` (it
    waits for approval) at once, then replies; and the stop that drains ``slow`` while a
    decision on ``guarded`` is stored from elsewhere."""

    def __init__(self) -> None:
        self.started, self.release = threading.Event(), threading.Event()
        self.requests: list[ModelRequest] = []
        self.ran: list[str] = []

        @tool
        def slow() -> str:
            """Slow."""
            self.started.set()
            assert self.release.wait(WAIT)
            return "slow done"

        @tool(approval=True)
        def guarded() -> str:
            """Guarded."""
            self.ran.append("guarded")
            return "guarded done"

        self.tools = [slow, guarded]

    def model(self) -> ScriptedModel:
        def answer(request: ModelRequest) -> Any:
            self.requests.append(request)
            first = len(self.requests) == 1
            return calls([("slow", {}), ("guarded", {})]) if first else reply("ok")

        return ScriptedModel(answer)

    def stop(self, rt: Runtime, decide: Callable[[str], None]) -> None:
        """``slow`` runs and ``guarded`` waits; ``stop`` drains ``slow``; ``decide`` stores
        the approval of ``guarded`` from elsewhere; ``slow`` ends; the stop returns."""
        said = Said("waits for tool calls")
        amber = logging.getLogger("amber")
        level = amber.level
        amber.setLevel(logging.INFO)  # the line waited for is logged at INFO
        amber.addHandler(said)
        stopper = threading.Thread(target=lambda: rt.stop(timeout=WAIT))
        try:
            rt.send("s", "run both", sender="Chii")
            assert self.started.wait(WAIT)  # stored with guarded's request, in one step
            (waiting,) = rt.pending_approvals("s")
            assert waiting.tool_call is not None
            stopper.start()
            assert said.event.wait(WAIT)  # the stop waits for slow
            decide(waiting.tool_call.id)
            self.release.set()
            stopper.join(WAIT)
            assert not stopper.is_alive()
        finally:
            self.release.set()
            amber.removeHandler(said)
            amber.setLevel(level)
            rt.stop()

    def check(self, events: list[Event], rt: Callable[[], Runtime]) -> None:
        """No decision taken during the stop, no tool run, the turn left waiting; the next
        start takes the stored approval, runs the call once and goes on with the turn."""
        assert [e for e in events if isinstance(e, ApprovalDecided | OrphanRecovered)] == []
        assert (self.ran, len(self.requests)) == ([], 1)
        with rt() as second:
            state = second.wait_idle("s", timeout=WAIT)
        assert self.ran == ["guarded"]
        assert [m.content for m in state][-1] == "ok"
        assert [m for m in state if MAY_HAVE_RUN in m.metadata] == []


class TestADecisionStoredDuringTheDrain:
    def test_is_taken_at_the_next_start_not_during_the_stop(self, tmp_path: Path) -> None:
        """SQLite: the decision is written to the file from elsewhere; the owner meets it at
        its write of slow's result."""
        db = tmp_path / "amber.db"
        app = _Approved()
        settings = Settings(passivate_after=None)

        def decide(call_id: str) -> None:
            with SQLiteStore(db) as store:
                store_decision(store, "s", call_id, True, None, "Chii", at=utc_now())

        rt = Runtime(model=app.model(), store=db, tools=app.tools, settings=settings)
        app.stop(rt.start(), decide)
        with SQLiteStore(db) as store:
            events = list(store.events("s"))
        app.check(events, lambda: Runtime(model=app.model(), store=db, tools=app.tools))

    def test_the_log_says_it_was_left_for_the_next_start(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The owner reads the stored decision during the drain but takes none: its log
        says the decision was left for the next start, not that it was adopted."""
        db = tmp_path / "amber.db"
        app = _Approved()

        def decide(call_id: str) -> None:
            with SQLiteStore(db) as store:
                store_decision(store, "s", call_id, True, None, "Chii", at=utc_now())

        rt = Runtime(model=app.model(), store=db, tools=app.tools,
                     settings=Settings(passivate_after=None))  # fmt: skip
        with caplog.at_level(logging.INFO, logger="amber.session"):
            app.stop(rt.start(), decide)
        said = [r.getMessage() for r in caplog.records if r.name == "amber.session"]
        assert [line for line in said if "adopted" in line] == []
        assert [line for line in said if "left for the next start" in line] == [
            "session s: 1 decision(s) stored from elsewhere left for the next start (a stop "
            "is draining the turn; the calls wait on)"
        ]

    @pytest.mark.parametrize("heard", [False, True], ids=["at-its-write", "notified"])
    def test_on_postgresql(
        self, heard: bool, postgres_dsn: str, pg_schema: Callable[[], str]
    ) -> None:
        """A front end stores the decision; the owner meets it at its write of slow's result,
        or (``notified``) adopts it when told of it (``resync``)."""
        schema = pg_schema()
        app = _Approved()
        rt = Runtime(
            model=app.model(),
            store=PostgresStore(postgres_dsn, schema=schema),
            tools=app.tools,
            settings=PG_SETTINGS,
        )
        rt.start()
        keeper = rt._keeper
        assert keeper is not None
        refresh = keeper._refresh
        deaf(rt)

        def decide(call_id: str) -> None:
            with PostgresStore(postgres_dsn, schema=schema) as store:
                store_decision(store, "s", call_id, True, None, "Chii", at=utc_now())
            if heard:
                refresh("s")  # what the owner does on the NOTIFY

        app.stop(rt, decide)
        with PostgresStore(postgres_dsn, schema=schema) as store:
            events = list(store.events("s"))
        app.check(
            events,
            lambda: Runtime(
                model=app.model(),
                store=PostgresStore(postgres_dsn, schema=schema),
                tools=app.tools,
                settings=PG_SETTINGS,
            ),
        )


class TestAStopWithNothingToWaitFor:
    def test_its_end_is_recorded_after_the_reload(self, tmp_path: Path) -> None:
        """An async call runs (the stop cancels it; nothing to wait for); input is stored in
        the file from elsewhere just before the stop's end is written. The turn is given
        back, the call named and marked may-have-run; no model call; the input waits for
        the next start, which answers both."""
        db = tmp_path / "amber.db"
        started = threading.Event()
        requests: list[ModelRequest] = []

        def answer(request: ModelRequest) -> Any:
            requests.append(request)
            return calls([("fetch", {})]) if len(requests) == 1 else reply("ok")

        @tool
        async def fetch() -> str:
            """Fetch."""
            started.set()
            await trio.sleep_forever()
            return "fetched"  # pragma: no cover - cancelled

        settings = Settings(passivate_after=None)
        step = StoreSync._step
        stored = threading.Event()

        def foreign_first(self: StoreSync, input: Input, **options: Any) -> Any:
            if isinstance(input, Stopping) and not stored.is_set():
                _store_input(db, settings)  # just before the stop's end is written
                stored.set()
            return step(self, input, **options)

        rt = Runtime(model=ScriptedModel(answer), store=db, tools=[fetch], settings=settings)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(StoreSync, "_step", foreign_first)
            rt.start()
            try:
                rt.send("s", "fetch", sender="Chii")
                assert started.wait(WAIT)
                rt.stop(timeout=WAIT)
            finally:
                rt.stop()
        assert stored.is_set()
        assert len(requests) == 1
        with SQLiteStore(db) as store:
            events = list(store.events("s"))
            head = store.load_state("s")
        assert len([e for e in events if isinstance(e, TurnStarted)]) == 1
        (recovered,) = [e for e in events if isinstance(e, OrphanRecovered)]
        assert recovered.reason is not None
        assert recovered.reason.startswith("the runtime stopped while tool call ")
        assert "(fetch) still ran; it may have run" in recovered.reason
        (called,) = [m for m in head if m.tool_call is not None]
        assert called.metadata[MAY_HAVE_RUN] is True
        assert [(m.content, m.status) for m in head if m.role.value == "user"] == [
            ("fetch", Status.PENDING_AGENT),
            ("and then?", Status.PENDING_AGENT),
        ]
        with Runtime(model=ScriptedModel(answer), store=db, tools=[fetch]) as second:
            state = second.wait_idle("s", timeout=WAIT)
        assert [m.content for m in state][-1] == "ok"
        assert len(requests) == 2
