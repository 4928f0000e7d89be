"""Tool calls of a turn whose owner meets a foreign write (input another process stored
for the session) while they run here, on PostgreSQL (DESIGN §10) and on a SQLite file.

The owner adopts a foreign input as it adopts a local one: the running turn is given
back and the next turn answers both inputs. A call whose result the owner already holds
is answered with it; a call still running in this process is interrupted as a local
input interrupts it, and its result, when it comes, is said to be dropped.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from stop_support import WAIT, Said, tool_results

from actors import Runtime, ScriptedModel, tool
from actors._drafts import user_draft
from actors._ids import utc_now
from actors._leasing import store_input
from actors._session_sync import StoreSync
from runtime import (
    ModelRequest,
    OrphanRecovered,
    Status,
    ToolDone,
    ToolOutcome,
    ToolResultPart,
    TurnSettings,
    call,
    reply,
)
from runtime._clean import MAY_HAVE_RUN
from runtime.store import PostgresStore, SQLiteStore
from tests.actors.test_runtime_postgres import (
    SETTINGS,
    deaf,
    foreign_input,
    replies,
    user_statuses,
    wait_for,
)
from tests.runtime import test_machine


@pytest.fixture
def schema(postgres_dsn: str, pg_schema: Callable[[], str]) -> str:
    return pg_schema()


@pytest.fixture
def open_rt(postgres_dsn: str, schema: str) -> Iterator[Callable[..., Runtime]]:
    made: list[Runtime] = []

    def make(model: ScriptedModel, **options: object) -> Runtime:
        store = PostgresStore(postgres_dsn, schema=schema)
        rt = Runtime(model=model, store=store, settings=SETTINGS, **options)  # type: ignore[arg-type]
        made.append(rt)
        return rt.start()

    yield make
    for rt in made:
        rt.stop()


def _model() -> ScriptedModel:
    """Deploys unless the view shows the deployment's result already."""
    return ScriptedModel(lambda r: reply("Done.") if tool_results(r) else call("deploy"))


def _recovered(dsn: str, schema: str) -> OrphanRecovered:
    with PostgresStore(dsn, schema=schema) as store:
        events = list(store.events("s"))
    (recovered,) = [e for e in events if isinstance(e, OrphanRecovered)]
    return recovered


class TestAResultInHand:
    def test_is_recorded_when_its_write_meets_a_foreign_input(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """The tool ends after another process stored input for the session; the owner's
        write of its result meets that input (``SeqConflict``), and the owner reloads the
        session and gives the turn back. The result it holds is stored first, as the
        call's answer: the call is not marked may-have-run, the next turn's model reads
        the result, and the tool does not run again. Before, the reload dropped the
        result, marked the call may-have-run, and the model called the tool again."""
        ran: list[str] = []

        @tool
        def deploy() -> str:
            """Deploy."""
            ran.append("deploy")
            if len(ran) == 1:  # meanwhile, a front end stores input for the session
                foreign_input(postgres_dsn, schema, "s", "and then?")
            return "deployed"

        rt = open_rt(_model(), tools=[deploy])
        deaf(rt)  # it meets the input at its next write, not through a NOTIFY first
        rt.send("s", "deploy", sender="Chii")
        wait_for(lambda: replies(postgres_dsn, schema, "s") == ["Done."], "the owner answers")
        state = rt.wait_idle("s", timeout=WAIT)
        assert ran == ["deploy"]
        (called,) = [m for m in state if m.tool_call is not None]
        assert called.tool_call is not None
        assert MAY_HAVE_RUN not in called.metadata
        (result,) = [m for m in state if m.tool_call_id == called.tool_call.id]
        assert result.content == "deployed"
        assert user_statuses(postgres_dsn, schema, "s") == [
            ("deploy", Status.PROCESSED),
            ("and then?", Status.PROCESSED),
        ]
        recovered = _recovered(postgres_dsn, schema)
        assert "another process wrote to the session" in recovered.reason
        assert "may have run" not in recovered.reason
        assert recovered.seq > result.event_seq

    def test_is_recorded_on_a_sqlite_file_written_from_elsewhere(self, tmp_path: Path) -> None:
        """The same on SQLite, where the runtime meets input stored in its file by another
        process only at its next write."""
        db = tmp_path / "amber.db"
        ran: list[str] = []

        @tool
        def deploy() -> str:
            """Deploy."""
            ran.append("deploy")
            if len(ran) == 1:
                draft = user_draft("send", "s", "and then?", {"sender": "Chii"}, utc_now,
                                   SETTINGS.input_limits)  # fmt: skip
                with SQLiteStore(db) as store:
                    store_input(store, "s", draft, settings=TurnSettings(), at=utc_now())
            return "deployed"

        with Runtime(model=_model(), store=db, tools=[deploy], settings=SETTINGS) as rt:
            rt.send("s", "deploy", sender="Chii")
            state = rt.wait_idle("s", timeout=WAIT)
        assert ran == ["deploy"]
        (called,) = [m for m in state if m.tool_call is not None]
        assert called.tool_call is not None
        assert MAY_HAVE_RUN not in called.metadata
        (result,) = [m for m in state if m.tool_call_id == called.tool_call.id]
        assert result.content == "deployed"
        assert [m.content for m in state if m.role.value == "user"] == ["deploy", "and then?"]
        assert [m.content for m in state][-1] == "Done."


def _answers_any_result() -> ScriptedModel:
    """Rolls out unless the view shows a result for the deployment, made up or not."""

    def answer(request: ModelRequest) -> Any:
        parts = [p for m in request.view.messages for p in m.parts]
        return (
            reply("Done.")
            if any(isinstance(p, ToolResultPart) for p in parts)
            else call("roll_out")
        )

    return ScriptedModel(answer)


class TestACallStillRunning:
    def test_is_given_up_with_the_turn_and_its_late_result_is_logged(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """Another process stores input while a sync tool of the owner's turn runs; the
        NOTIFY makes the owner reload at once, as a local input interrupts the turn at
        once: the turn is given back, the running call is marked may-have-run, and the
        next turn answers both inputs without waiting for the tool. The reason says the
        call may still run here and that its result is not recorded; when the result
        comes, a warning says it was dropped. Before, the reason said only that the call
        "had started", and the result was dropped without a word."""
        started, release = threading.Event(), threading.Event()
        ran: list[str] = []

        @tool
        def roll_out() -> str:
            """Roll out."""
            ran.append("roll_out")
            started.set()
            assert release.wait(WAIT)
            return "deployed"

        dropped = Said("tool roll_out: ")
        logging.getLogger("amber").addHandler(dropped)
        try:
            rt = open_rt(_answers_any_result(), tools=[roll_out])
            rt.send("s", "roll_out", sender="Chii")
            assert started.wait(WAIT)
            foreign_input(postgres_dsn, schema, "s", "and then?")
            wait_for(lambda: replies(postgres_dsn, schema, "s") == ["Done."], "the owner answers")
            release.set()
            assert dropped.event.wait(WAIT)
        finally:
            release.set()
            logging.getLogger("amber").removeHandler(dropped)
        state = rt.wait_idle("s", timeout=WAIT)
        assert ran == ["roll_out"]
        (called,) = [m for m in state if m.tool_call is not None]
        assert called.tool_call is not None
        assert called.metadata[MAY_HAVE_RUN] is True
        assert called.status is Status.INTERRUPTED
        assert [m for m in state if m.tool_call_id == called.tool_call.id] == []
        recovered = _recovered(postgres_dsn, schema)
        assert "another process wrote to the session" in recovered.reason
        assert recovered.reason.endswith(
            f"tool call {called.tool_call.id} (roll_out) had no result when the session was "
            "reloaded: it may have run or still run here, and a result that comes is not "
            "recorded, so check before running it again"
        )
        assert user_statuses(postgres_dsn, schema, "s") == [
            ("roll_out", Status.PROCESSED),
            ("and then?", Status.PROCESSED),
        ]


class TestALateResult:
    def test_that_no_turn_waits_for_is_logged(self, caplog: pytest.LogCaptureFixture) -> None:
        """A result that reaches the session after its turn stopped waiting for it (the
        cancel raced the tool's end) is not recorded, and a warning says so; one the turn
        waits for is not logged."""
        d = test_machine.Driver()
        test_machine.TestReloadAfterAForeignWrite()._calling(d)  # c1 and c2 run
        sync = StoreSync()
        sync.session_id, sync._machine = "s", d.machine
        caplog.set_level(logging.INFO, logger="amber")
        sync._say_if_dropped(ToolDone(call_id="c1", outcome=ToolOutcome(content="42"), **d.stamp()))
        assert [r for r in caplog.records if r.name == "amber.session"] == []
        d.send("stop")  # interrupts the turn: c1 and c2 are marked may-have-run
        sync._machine = d.machine
        sync._say_if_dropped(ToolDone(call_id="c1", outcome=ToolOutcome(content="42"), **d.stamp()))
        assert [r.getMessage() for r in caplog.records if r.name == "amber.session"] == [
            "session s: tool call c1 (lookup) ended after its turn stopped waiting for it; its "
            "result is not recorded: '42'"
        ]
