"""A stop's drain goes on when another process writes to the session meanwhile.

While ``Runtime.stop`` waits for a turn's sync tool calls, a front end (or another
process writing the SQLite file) stores input for the session; the write of a drained
call's result then meets it (``SeqConflict``) and the session is reloaded. The reload
must not end the drain: no turn starts (the input waits for the next start), the result
in hand is recorded, the other calls are still waited for, and the turn is given back
as in any drained stop.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from stop_support import WAIT, Said, tool_results

from actors import Runtime, ScriptedModel, Settings, tool
from actors._drafts import user_draft
from actors._ids import utc_now
from actors._leasing import store_input
from actors._session_sync import StoreSync
from runtime import (
    Event,
    Input,
    ModelRequest,
    OrphanRecovered,
    SessionState,
    Status,
    Stopping,
    ToolDone,
    TurnSettings,
    TurnStarted,
    calls,
    reply,
)
from runtime._clean import MAY_HAVE_RUN
from runtime._shutdown import RESTARTS
from runtime.store import PostgresStore, SQLiteStore
from tests.actors.test_runtime_postgres import SETTINGS as PG_SETTINGS
from tests.actors.test_runtime_postgres import deaf, foreign_input


class _TwoCalls:
    """A model that calls two sync tools, ``alpha`` and ``beta``, at once (then replies),
    each held until released; and the stop that drains them while input is stored from
    elsewhere."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.started = {"alpha": threading.Event(), "beta": threading.Event()}
        self.release = {"alpha": threading.Event(), "beta": threading.Event()}
        self.requests: list[ModelRequest] = []
        self.stepped = threading.Event()  # the session stepped alpha's result
        self._alpha: list[str] = []
        step = StoreSync._step

        def watched(actor: StoreSync, input: Input, **options: Any) -> Any:
            try:
                return step(actor, input, **options)
            finally:
                if isinstance(input, ToolDone) and input.call_id in self._alpha:
                    self.stepped.set()

        monkeypatch.setattr(StoreSync, "_step", watched)

        @tool
        def alpha() -> str:
            """Alpha."""
            self.started["alpha"].set()
            assert self.release["alpha"].wait(WAIT)
            return "alpha done"

        @tool
        def beta() -> str:
            """Beta."""
            self.started["beta"].set()
            assert self.release["beta"].wait(WAIT)
            return "beta done"

        self.tools = [alpha, beta]

    def model(self) -> ScriptedModel:
        def answer(request: ModelRequest) -> Any:
            self.requests.append(request)
            first = len(self.requests) == 1
            return calls([("alpha", {}), ("beta", {})]) if first else reply("ok")

        return ScriptedModel(answer)

    def stop(self, rt: Runtime, foreign: Callable[[], None]) -> None:
        """Both calls run; ``stop`` drains them; ``foreign`` stores input from elsewhere;
        alpha ends (its result is stepped), then beta; the stop returns."""
        said = Said("waits for tool calls")
        logging.getLogger("amber").addHandler(said)
        stopper = threading.Thread(target=lambda: rt.stop(timeout=WAIT))
        try:
            rt.send("s", "run both", sender="Chii")
            assert self.started["alpha"].wait(WAIT)
            assert self.started["beta"].wait(WAIT)
            self._alpha.extend(
                m.tool_call.id
                for m in rt.state("s")
                if m.tool_call is not None and m.tool_call.name == "alpha"
            )
            stopper.start()
            assert said.event.wait(WAIT)  # the stop waits for both calls
            foreign()
            self.release["alpha"].set()
            assert self.stepped.wait(WAIT)
            assert len(self.requests) == 1  # no model call (no new turn) during the stop
            self.release["beta"].set()
            stopper.join(WAIT)
            assert not stopper.is_alive()
        finally:
            self.release["alpha"].set()
            self.release["beta"].set()
            logging.getLogger("amber").removeHandler(said)
            rt.stop()

    def check(self, events: list[Event], head: SessionState) -> None:
        """What the stop stored: both results, no call marked, the turn given back as in a
        drained stop, no second turn, both inputs pending."""
        assert len(self.requests) == 1
        assert len([e for e in events if isinstance(e, TurnStarted)]) == 1
        called = {m.tool_call.name: m.tool_call.id for m in head if m.tool_call is not None}
        assert sorted(called) == ["alpha", "beta"]
        results = {
            name: [r.content for r in head if r.tool_call_id == call_id]
            for name, call_id in called.items()
        }
        assert results == {"alpha": ["alpha done"], "beta": ["beta done"]}
        assert [m for m in head if MAY_HAVE_RUN in m.metadata] == []
        (recovered,) = [e for e in events if isinstance(e, OrphanRecovered)]
        assert recovered.reason == RESTARTS
        assert [(m.content, m.status) for m in head if m.role.value == "user"] == [
            ("run both", Status.PENDING_AGENT),
            ("and then?", Status.PENDING_AGENT),
        ]


class TestAForeignWriteDuringTheDrain:
    def test_the_drain_goes_on_and_no_turn_starts(
        self,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        """Two sync calls drain; input is stored in the file from elsewhere; then the first
        call ends, and the write of its result meets that input. Its result is recorded,
        the model is not called, the second call is still waited for and its result is
        stored too, and the turn is given back with no call marked may-have-run; the
        input stays pending for the next start, which answers it. Before, the reload
        recovered the turn at once (the second call marked may-have-run, its result
        dropped) and started a new turn, calling the model, in the middle of the stop."""
        db = tmp_path / "amber.db"
        caplog.set_level(logging.INFO, logger="amber")
        two = _TwoCalls(monkeypatch)
        settings = Settings(passivate_after=None)
        rt = Runtime(model=two.model(), store=db, tools=two.tools, settings=settings)
        two.stop(rt.start(), lambda: _store_input(db, settings))
        with SQLiteStore(db) as store:
            two.check(list(store.events("s")), store.load_state("s"))
        with Runtime(model=two.model(), store=db, tools=two.tools) as second:
            state = second.wait_idle("s", timeout=WAIT)
        assert tool_results(two.requests[-1]) == ["alpha done", "beta done"]
        assert [(m.content, m.status) for m in state if m.role.value == "user"] == [
            ("run both", Status.PROCESSED),
            ("and then?", Status.PROCESSED),
        ]
        assert [m.content for m in state][-1] == "ok"

    @pytest.mark.parametrize("heard", [False, True], ids=["at-its-write", "notified"])
    def test_on_postgresql(
        self,
        heard: bool,
        postgres_dsn: str,
        pg_schema: Callable[[], str],
        monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        """The same on PostgreSQL, for input a front end stores: the owner meets it at its
        write of alpha's result, or (``notified``) adopts it first when told of it
        (``resync``). Before, either recovered the turn and started a new one."""
        schema = pg_schema()
        caplog.set_level(logging.INFO, logger="amber")
        two = _TwoCalls(monkeypatch)
        store = PostgresStore(postgres_dsn, schema=schema)
        rt = Runtime(model=two.model(), store=store, tools=two.tools, settings=PG_SETTINGS)
        rt.start()
        keeper = rt._keeper
        assert keeper is not None
        refresh = keeper._refresh
        deaf(rt)  # told only when the test says so

        def foreign() -> None:
            foreign_input(postgres_dsn, schema, "s", "and then?")
            if heard:
                refresh("s")  # what the owner does on the NOTIFY

        two.stop(rt, foreign)
        with PostgresStore(postgres_dsn, schema=schema) as store:
            two.check(list(store.events("s")), store.load_state("s"))

    def test_the_stops_end_still_gives_the_turn_back(self, tmp_path: Path) -> None:
        """A sync call outlives the drain; input is stored from elsewhere just before the
        stop's end is recorded, which meets it. The turn is still given back, the call
        named and marked may-have-run, as in a stop without the foreign write; no turn
        starts. Before, the reload left the turn active in the store and recorded nothing
        of the stop (the next start recovered it as an orphan)."""
        db = tmp_path / "amber.db"
        started, release = threading.Event(), threading.Event()
        requests: list[ModelRequest] = []

        def answer(request: ModelRequest) -> Any:
            requests.append(request)
            return calls([("deploy", {})]) if len(requests) == 1 else reply("ok")

        @tool
        def deploy() -> str:
            """Deploy."""
            started.set()
            assert release.wait(WAIT)
            return "deployed"

        settings = Settings(passivate_after=None)
        step = StoreSync._step
        stored = threading.Event()

        def foreign_first(self: StoreSync, input: Input, **options: Any) -> Any:
            if isinstance(input, Stopping) and not input.draining and not stored.is_set():
                _store_input(db, settings)  # just before the stop's end is written
                stored.set()
            return step(self, input, **options)

        rt = Runtime(model=ScriptedModel(answer), store=db, tools=[deploy], settings=settings)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(StoreSync, "_step", foreign_first)
            rt.start()
            try:
                rt.send("s", "deploy", sender="Chii")
                assert started.wait(WAIT)
                rt.stop(timeout=1.0)  # the call outlives it
            finally:
                release.set()
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
        assert "(deploy) still ran; it may have run" in recovered.reason
        (called,) = [m for m in head if m.tool_call is not None]
        assert called.metadata[MAY_HAVE_RUN] is True
        assert [(m.content, m.status) for m in head if m.role.value == "user"] == [
            ("deploy", Status.PENDING_AGENT),
            ("and then?", Status.PENDING_AGENT),
        ]


def _store_input(db: Path, settings: Settings) -> None:
    """Store input for session s in the file, as another process does."""
    draft = user_draft("send", "s", "and then?", {"sender": "Chii"}, utc_now,
                       settings.input_limits)  # fmt: skip
    with SQLiteStore(db) as store:
        store_input(store, "s", draft, settings=TurnSettings(), at=utc_now())
