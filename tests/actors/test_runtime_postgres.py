"""``Runtime`` on a shared PostgreSQL store: leases, waking the owner, takeover with fencing.

Two runtimes in one process stand for two workers (the fault tests with real
processes are in test_worker_faults.py). Waits poll the store until what is
awaited is there; their 60 s bounds are hang guards, never a verdict.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import trio

from actors import (
    AskTimeout,
    FakePlatform,
    IdleTimeout,
    InvalidConfig,
    NotAwaitingApproval,
    OwnedElsewhere,
    Runtime,
    RuntimeStopped,
    ScriptedModel,
    Settings,
    SilentChannelAdapter,
    StoreBusy,
    tool,
)
from actors._answers import ReplyWaiter
from actors._drafts import user_draft
from actors._frontend import StateWait
from actors._ids import utc_now
from actors._leasing import store_input
from runtime import (
    ApprovalDecided,
    Category,
    InvalidInput,
    LeaseLost,
    ModelRequest,
    OrphanRecovered,
    Status,
    TurnSettings,
    UnknownSession,
    call,
    calls,
    category_of,
    hang,
    reply,
)
from runtime.store import PostgresStore
from tests.runtime.store.test_store_leases import colliding_names

SETTINGS = Settings(lease_ttl=30.0, lease_poll=3600.0, passivate_after=None)


@pytest.fixture
def schema(postgres_dsn: str, pg_schema: Callable[[], str]) -> str:
    return pg_schema()


@pytest.fixture
def open_rt(postgres_dsn: str, schema: str) -> Iterator[Callable[..., Runtime]]:
    made: list[Runtime] = []

    def make(model: ScriptedModel | None, **options: object) -> Runtime:
        options.setdefault("settings", SETTINGS)
        rt = Runtime(model=model, store=PostgresStore(postgres_dsn, schema=schema), **options)  # type: ignore[arg-type]
        made.append(rt)
        return rt.start()

    yield make
    for rt in made:
        rt.stop()


def replies(dsn: str, schema: str, session_id: str) -> list[str]:
    with PostgresStore(dsn, schema=schema) as store:
        if session_id not in store:
            return []
        state = store.load_state(session_id)
    return [m.content for m in state.messages if category_of(m) is Category.REPLY]


def wait_for(what: Callable[[], bool], why: str) -> None:
    deadline = time.monotonic() + 60  # a hang guard
    while not what():
        assert time.monotonic() < deadline, f"not within 60 s: {why}"
        time.sleep(0.02)


def test_the_sender_runs_a_free_session(
    open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
) -> None:
    """A runtime sent to a session nobody owns takes its lease and answers it."""
    rt = open_rt(ScriptedModel([reply("hello")]))
    rt.send("s", "hi", sender="Chii")
    rt.wait_idle("s", timeout=60)
    assert replies(postgres_dsn, schema, "s") == ["hello"]
    with PostgresStore(postgres_dsn, schema=schema) as store:
        lease = store.lease("s")
    assert lease is not None
    assert lease.owner == rt.runner


def test_input_from_another_process_wakes_the_owner(
    open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
) -> None:
    """B sends to a session A owns: B stores the input, A is woken by NOTIFY and answers."""
    a = open_rt(ScriptedModel([reply("first"), reply("second")]))
    b = open_rt(ScriptedModel([reply("never")]))
    a.send("s", "one", sender="Chii")
    a.wait_idle("s", timeout=60)
    message = b.send("s", "two", sender="Chii")
    assert message.status is Status.PENDING_AGENT
    assert b.live_sessions() == []
    wait_for(lambda: replies(postgres_dsn, schema, "s") == ["first", "second"], "A answers")
    # What needs the session's actor here is refused, saying where it runs.
    with pytest.raises(OwnedElsewhere, match="is run by another worker"):
        b.ask("s", "three?", sender="Chii", timeout=60)
    assert b.live_sessions() == []
    # A notification needs the actor too; the refusal does not advise posting it here.
    with pytest.raises(OwnedElsewhere, match="is run by another worker") as refused:
        b.post("s", Category.NOTIFICATION, "note")
    assert "posting a notification needs the session's actor" in str(refused.value)
    assert "Post it on the worker that runs the session" in str(refused.value)
    assert "stored for its owner" not in str(refused.value)
    assert b.live_sessions() == []


def test_a_worker_picks_up_waiting_input(
    open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
) -> None:
    """A worker (resume='all') loads a session whose input another runtime stored."""
    holder = open_rt(ScriptedModel([reply("held")]))
    holder.send("s", "one", sender="Chii")
    holder.wait_idle("s", timeout=60)
    worker = open_rt(ScriptedModel([reply("picked up")]), resume="all")
    holder.stop()  # gives its leases back
    # Input for a session nobody runs, stored by a runtime that does not take it (as
    # another process's runtime does when the session is owned elsewhere), announced.
    third = open_rt(ScriptedModel([reply("unused")]))
    third._keeper.store_input("s2", _draft("s2"))  # type: ignore[union-attr]
    wait_for(lambda: replies(postgres_dsn, schema, "s2") == ["picked up"], "the worker answers")
    assert "s2" in worker.live_sessions()


def _draft(session_id: str):  # type: ignore[no-untyped-def]
    from actors._drafts import user_draft
    from actors._ids import utc_now

    return user_draft(
        "send", session_id, "waiting", {"sender": "Chii"}, utc_now, Settings().input_limits
    )


def test_takeover_recovers_the_turn_and_fences_the_old_owner(
    open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
) -> None:
    """A's turn hangs; B, whose clock is past A's lease, takes the session over: the orphaned
    turn is recovered at once and answered by B, and A's late writes are all refused."""
    a = open_rt(ScriptedModel([hang()]))
    a.send("s", "question", sender="Chii")
    wait_for(lambda: a.state("s").active_turn is not None, "A's turn starts")
    later = lambda: datetime.now(UTC) + timedelta(hours=1)  # noqa: E731
    b = open_rt(ScriptedModel([reply("answered by B")]), clock=later)
    assert b._keeper is not None
    assert b._keeper.ensure("s")
    b.router.load("s")
    wait_for(lambda: replies(postgres_dsn, schema, "s") == ["answered by B"], "B answers")
    with PostgresStore(postgres_dsn, schema=schema) as store:
        seq = store.session("s").seq
        lease = store.lease("s")
    assert lease is not None
    assert (lease.owner, lease.token) == (b.runner, 2)
    # A's turn is still waiting on its model; interrupting it makes A write: refused.
    with pytest.raises(LeaseLost, match="its lease was taken over"):
        a.interrupt("s")
    a.stop()
    with PostgresStore(postgres_dsn, schema=schema) as store:
        assert store.session("s").seq == seq
        timeline = store.verify("s")
    questions = [m for m in timeline.head.messages if category_of(m) is Category.USER_QUESTION]
    assert [m.status for m in questions] == [Status.PROCESSED]


def test_a_lost_lease_stops_its_session_with_one_log_line(
    open_rt: Callable[..., Runtime], caplog: pytest.LogCaptureFixture
) -> None:
    """A's turn hangs; B takes the session over. A's renewal finds the lease lost and stops
    the session: one warning says so (no traceback), not one per write the store refused
    while the session shut down."""
    a = open_rt(ScriptedModel([hang()]))
    a.send("s", "question", sender="Chii")
    wait_for(lambda: a.state("s").active_turn is not None, "A's turn starts")
    later = lambda: datetime.now(UTC) + timedelta(hours=1)  # noqa: E731
    b = open_rt(ScriptedModel([hang()]), clock=later)
    assert b._keeper is not None
    assert b._keeper.ensure("s")
    keeper = a._keeper
    assert keeper is not None
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="amber"), keeper._renewing:
        keeper._renew()
    assert a.live_sessions() == []
    said = [
        (r.name, r.levelname, r.getMessage(), r.exc_info is not None)
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.name != "amber.tools"  # an earlier test's call
    ]
    assert said == [
        (
            "amber.leases",
            "WARNING",
            f"lost the lease of s to another worker ({b.runner!r} holds it now with token 2); "
            "stopped the session here, nothing more of it is stored here",
            False,
        )
    ]


def test_a_lease_lost_unnoticed_until_the_stop_is_one_log_line(
    open_rt: Callable[..., Runtime], caplog: pytest.LogCaptureFixture
) -> None:
    """A's turn hangs; B takes the session over and A stops before any renewal found out:
    the refused write of the stop is one warning without a traceback."""
    a = open_rt(ScriptedModel([hang()]))
    a.send("s", "question", sender="Chii")
    wait_for(lambda: a.state("s").active_turn is not None, "A's turn starts")
    later = lambda: datetime.now(UTC) + timedelta(hours=1)  # noqa: E731
    b = open_rt(ScriptedModel([hang()]), clock=later)
    assert b._keeper is not None
    assert b._keeper.ensure("s")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="amber"):
        a.stop()
    # An earlier test's abandoned sync call may end (and say so on amber.tools) meanwhile.
    warned = [r for r in caplog.records if r.levelno >= logging.WARNING and r.name != "amber.tools"]
    assert [(r.name, r.exc_info is not None) for r in warned] == [("amber.session", False)]
    (warning,) = [r.getMessage() for r in warned]
    assert warning.startswith("session s: stopped without recording it here: Cannot append")


class TestOneRunnerPerName:
    """A runtime that runs sessions holds its runner id on the store for as long as it runs:
    two of one name would take each other's leases (a lease is taken under the name, and
    an owner takes its own lease again), fencing each other's writes back and forth."""

    def test_a_second_runtime_of_one_name_is_refused(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """The second is refused at start, saying why and what to do; the first runs on,
        and once it stopped the name is free again."""
        first = open_rt(ScriptedModel([reply("hello")]), runner="worker-1")
        with pytest.raises(StoreBusy) as refused:
            open_rt(ScriptedModel([]), runner="worker-1")
        assert str(refused.value).startswith(
            "Another runtime runs sessions of this store as 'worker-1' (schema "
            f"{schema!r}): two of one name would take each other's leases over and over."
        )
        first.send("s", "hi", sender="Chii")
        first.wait_idle("s", timeout=60)
        assert replies(postgres_dsn, schema, "s") == ["hello"]
        first.stop()
        again = open_rt(ScriptedModel([]), runner="worker-1")
        assert again._keeper is not None

    def test_names_whose_old_32_bit_hashes_collide_both_run(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """Two names ``hashtext`` (the old key of a name's lock) maps to one value: both
        runtimes start and each answers its own session (the second was refused with
        ``StoreBusy``, as if the name were taken)."""
        with PostgresStore(postgres_dsn, schema=schema) as store:
            one, other = colliding_names(store)
        first = open_rt(ScriptedModel([reply("one")]), runner=one)
        second = open_rt(ScriptedModel([reply("other")]), runner=other)
        first.send("s1", "hi", sender="Chii")
        second.send("s2", "hi", sender="Chii")
        first.wait_idle("s1", timeout=60)
        second.wait_idle("s2", timeout=60)
        assert replies(postgres_dsn, schema, "s1") == ["one"]
        assert replies(postgres_dsn, schema, "s2") == ["other"]

    def test_a_front_end_takes_no_name(self, open_rt: Callable[..., Runtime]) -> None:
        """A front end (run_sessions=False) takes no lease, so it holds no name: one may share
        a worker's runner id."""
        open_rt(ScriptedModel([]), runner="worker-1")
        open_rt(None, runner="worker-1", run_sessions=False)


def test_a_stopping_worker_claims_no_session(
    open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
) -> None:
    """Once a worker stops, its intake is closed: while its sessions shut down, input that
    arrives for a session nobody runs is left for other workers (no lease is taken)."""
    worker = open_rt(ScriptedModel([]), resume="all")
    other = open_rt(ScriptedModel([]))
    keeper = worker._keeper
    assert keeper is not None
    seen: list[object] = []
    close = worker.router.close

    def close_with_input_arriving(why: str, **options: Any) -> None:
        other._keeper.store_input("s2", _draft("s2"))  # type: ignore[union-attr]
        keeper.poll_now()  # the worker's poll comes while it stops
        with PostgresStore(postgres_dsn, schema=schema) as store:
            seen.append(store.lease("s2"))
        close(why, **options)

    worker.router.close = close_with_input_arriving  # type: ignore[method-assign]
    worker.stop()
    assert seen == [None]
    with pytest.raises(RuntimeStopped, match=r"^The runtime is stopping"):
        keeper.ensure("s2")


class TestHandover:
    """A runtime that stops gives its sessions to the workers at once: giving a lease back
    is announced (NOTIFY), so a worker that could not take it a moment before, while the
    stopping runtime still held it, takes it now. The workers' poll is an hour here: only
    the notification can explain a prompt takeover."""

    @pytest.mark.parametrize("resume", ["none", "all"], ids=["front end", "worker"])
    def test_a_stopping_runtime_hands_its_turn_to_a_worker(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str, resume: str
    ) -> None:
        """A front end (or a worker, as on SIGTERM) stops while its turn runs: the turn
        gives its input back, and the worker that was woken by that write but could not
        take the lease yet takes it once it is given back, and answers."""
        stopping = open_rt(ScriptedModel([hang()]), resume=resume)
        stopping.send("s", "question", sender="Chii")
        wait_for(lambda: stopping.state("s").active_turn is not None, "the turn starts")
        worker = open_rt(ScriptedModel([reply("answered by the worker")]), resume="all")
        keeper, stopping_keeper = worker._keeper, stopping._keeper
        assert keeper is not None
        assert stopping_keeper is not None
        refused = threading.Event()
        ensure, give_back = keeper.ensure, stopping_keeper.stop

        def ensure_noting_refusals(session_id: str) -> bool:
            taken = ensure(session_id)
            if not taken:
                refused.set()
            return taken

        def give_back_once_refused() -> None:
            # The worker tried while the lease was held (the turn's last write woke it).
            assert refused.wait(60), "the worker was not woken by the stopping turn's write"
            give_back()

        keeper.ensure = ensure_noting_refusals  # type: ignore[method-assign]
        stopping_keeper.stop = give_back_once_refused  # type: ignore[method-assign]
        stopping.stop()
        wait_for(
            lambda: replies(postgres_dsn, schema, "s") == ["answered by the worker"],
            "the worker takes the session over",
        )
        assert held_by(postgres_dsn, schema, "s") == worker.runner

    def test_giving_a_lease_back_is_announced(self, postgres_dsn: str, schema: str) -> None:
        """``release`` notifies the channel with the session (another store hears it)."""
        with (
            PostgresStore(postgres_dsn, schema=schema) as owner,
            PostgresStore(postgres_dsn, schema=schema) as other,
        ):
            listener = other.listener()
            try:
                lease = owner.acquire(
                    "s", owner="a", now=datetime.now(UTC), ttl=timedelta(seconds=30)
                )
                assert lease is not None
                assert owner.release(lease)
                assert listener.wait(60) == {"s"}  # 60 s: a hang guard
            finally:
                listener.close()


class TestFrontEnd:
    """``Runtime(store=URL, run_sessions=False)``: stores input for the workers and reads
    their answers from the store; it needs no model, takes no lease and runs nothing."""

    def test_a_front_end_that_makes_the_store_warns(
        self, open_rt: Callable[..., Runtime], caplog: pytest.LogCaptureFixture
    ) -> None:
        """A front end on a schema that held no store (a mistyped name, say) warns, as a
        worker does: the input it stores there is answered by no worker (a trial's
        asks timed out silently). On a store the workers made, it says nothing."""
        with caplog.at_level("WARNING", logger="amber.runtime"):
            open_rt(None, run_sessions=False)
        assert "held no Amber store, so an empty one was made" in caplog.text
        caplog.clear()
        with caplog.at_level("WARNING", logger="amber.runtime"):
            open_rt(None, run_sessions=False)
        assert "held no Amber store" not in caplog.text

    def test_send_stores_input_for_the_workers(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
    ) -> None:
        worker = open_rt(ScriptedModel([reply("one"), reply("two")]), resume="all")
        front = open_rt(None, run_sessions=False)
        first = front.send("s", "hi", sender="Chii")
        assert first.status is Status.PENDING_AGENT
        state = front.wait_idle("s", timeout=60)  # read from the store, woken by NOTIFY
        assert [m.content for m in state.messages if category_of(m) is Category.REPLY] == ["one"]
        front.send("s", "again", sender="Chii")  # the worker holds the session now
        front.wait_idle("s", timeout=60)
        assert replies(postgres_dsn, schema, "s") == ["one", "two"]
        assert front.live_sessions() == []
        assert held_by(postgres_dsn, schema, "s") == worker.runner

    def test_ask_and_stream_read_the_answer_from_the_store(
        self, open_rt: Callable[..., Runtime]
    ) -> None:
        open_rt(ScriptedModel([reply("hello"), reply("streamed")]), resume="all")
        front = open_rt(None, run_sessions=False)
        answer = front.ask("s", "hi", sender="Chii", timeout=60)
        assert (answer.text, answer.input.content) == ("hello", "hi")

        async def stream() -> list[object]:
            return [item async for item in front.stream("s", "more", sender="Chii")]

        (only,) = trio.run(stream)  # the live pieces are the worker's: only the Reply
        assert only.text == "streamed"  # type: ignore[attr-defined]
        assert front.live_sessions() == []

    def test_a_bad_field_names_the_method_called(self, open_rt: Callable[..., Runtime]) -> None:
        """On a front end too, ``stream`` and ``ask_async`` name themselves in the
        ``InvalidInput`` for a keyword that is no ``UserInput`` field (they said ``ask()``);
        nothing is stored."""
        front = open_rt(None, run_sessions=False)

        async def stream() -> None:
            async for _ in front.stream("s", "hi", sendr="Chii"):
                pass

        async def ask_async() -> None:
            await front.ask_async("s", "hi", sendr="Chii")

        with pytest.raises(InvalidInput, match=r"^stream\(\) takes the fields of UserInput"):
            trio.run(stream)
        with pytest.raises(InvalidInput, match=r"^ask_async\(\) takes the fields of UserInput"):
            trio.run(ask_async)
        assert front.sessions() == []

    def test_an_ask_no_worker_answers_says_what_to_check(
        self, open_rt: Callable[..., Runtime]
    ) -> None:
        """No worker runs: the ask times out saying the input is stored for the workers
        and what to check. It said the turn goes on, and to stop it with interrupt (which
        a front end cannot do; there was no turn)."""
        front = open_rt(None, run_sessions=False)
        with pytest.raises(AskTimeout, match="stored for the workers") as raised:
            front.ask("s", "hi", sender="Chii", timeout=0.5)  # no worker: never answered
        assert "interrupt" not in str(raised.value)
        assert "Is a worker running" in str(raised.value)

    def test_calls_that_need_the_session_s_actor_say_so(
        self, open_rt: Callable[..., Runtime]
    ) -> None:
        front = open_rt(None, run_sessions=False)
        front.send("s", "hi", sender="Chii")
        with pytest.raises(OwnedElsewhere, match=r"run_sessions=False\): interrupt needs"):
            front.interrupt("s")
        with pytest.raises(OwnedElsewhere, match="is run by the workers") as refused:
            front.post("s", Category.NOTIFICATION, "note")
        # It names what failed, and does not say post works here without a "but".
        assert "posting a notification needs the session's actor" in str(refused.value)
        assert "post of any other category" in str(refused.value)
        with pytest.raises(IdleTimeout, match="the workers have not answered"):
            front.wait_idle("s", timeout=0.1)  # no worker runs: the input waits
        with pytest.raises(UnknownSession, match="has no stored input to wait for"):
            front.wait_idle("never", timeout=60)

    def test_a_wait_that_registers_after_stop_fails_at_once(
        self, open_rt: Callable[..., Runtime]
    ) -> None:
        """A wait_idle or ask that passed its running check just before stop() registers
        after stop failed the open waits: it fails with RuntimeStopped, not its timeout."""
        front = open_rt(None, run_sessions=False)
        front.send("s", "hi", sender="Chii")
        watch = front._watch
        assert watch is not None
        watch.stop("stopped for the test")  # what Runtime.stop() does first
        with pytest.raises(RuntimeStopped, match="stopped for the test"):
            watch.wait_state("s", StateWait(lambda state: False), timeout=10)
        waiter = ReplyWaiter()
        watch.watch_answer("s", "msg_none", waiter)
        assert waiter.done
        with pytest.raises(RuntimeStopped, match="stopped for the test"):
            waiter.result()

    def test_a_front_end_is_checked_when_made(self, tmp_path: Path) -> None:
        with pytest.raises(InvalidConfig, match="Runtime needs a model to run sessions"):
            Runtime(store=":memory:")
        with pytest.raises(InvalidConfig, match="resumes no sessions"):
            Runtime(store=":memory:", run_sessions=False, resume="all")
        with pytest.raises(InvalidConfig, match="run_sessions must be True or False"):
            Runtime(store=":memory:", run_sessions="no")  # type: ignore[arg-type]

    def test_a_front_end_on_a_sqlite_file_makes_no_file(self, tmp_path: Path) -> None:
        """A front end given a SQLite path (or ':memory:') is refused before any store is
        opened: no file is left behind."""
        for store in (str(tmp_path / "a.db"), tmp_path / "b.db", ":memory:"):
            with pytest.raises(
                InvalidConfig,
                match=r"^run_sessions=False makes a front end for workers that share a "
                r"PostgreSQL store, but .* is not shared .* Pass store='postgresql://…'",
            ):
                Runtime(store=store, run_sessions=False).start()
        assert list(tmp_path.iterdir()) == []


class GatedModel:
    """A model whose first call waits at a gate the test opens, then answers ``first``; the
    calls after it answer ``then`` at once. ``called`` is set when the first call waits."""

    name = "gated"

    def __init__(self, first: str, then: str) -> None:
        self.first = ScriptedModel([reply(first)])
        self.then = ScriptedModel([], fallback=reply(then))
        self.called = threading.Event()
        self.gate = threading.Event()
        self.calls = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        self.calls += 1
        model = self.then
        if self.calls == 1:
            model = self.first
            self.called.set()
            await trio.to_thread.run_sync(self.gate.wait, abandon_on_cancel=True)
        async for chunk in model.stream(request):
            yield chunk


def foreign_input(dsn: str, schema: str, session_id: str, text: str) -> None:
    """Store an input as another process does for a session it does not own."""
    draft = user_draft("send", session_id, text, {"sender": "Chii"}, utc_now, SETTINGS.input_limits)
    with PostgresStore(dsn, schema=schema) as store:
        store_input(store, session_id, draft, settings=TurnSettings(), at=utc_now())


def user_statuses(dsn: str, schema: str, session_id: str) -> list[tuple[str, Status]]:
    with PostgresStore(dsn, schema=schema) as store:
        state = store.load_state(session_id)
    return [(m.content, m.status) for m in state.messages if m.role.value == "user"]


def deaf(rt: Runtime) -> None:
    """The owner no longer hears the notifications of other processes' writes (as when
    they come late): it meets them only as a ``SeqConflict`` on its own next write."""
    rt._keeper._refresh = lambda session_id: None  # type: ignore[union-attr,method-assign]


class TestInputFromElsewhere:
    """The owner of a session meets input another process stored meanwhile."""

    def test_the_owner_stores_input_on_a_head_it_has_not_seen(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """An owner whose actor missed a foreign input stores the next one all the same
        (it reloads the session on the SeqConflict); both are answered."""
        a = open_rt(ScriptedModel([reply("first")], fallback=reply("later")))
        a.send("s", "one", sender="Chii")
        a.wait_idle("s", timeout=60)
        deaf(a)
        foreign_input(postgres_dsn, schema, "s", "two")
        message = a.send("s", "three", sender="Chii")
        a.wait_idle("s", timeout=60)
        statuses = user_statuses(postgres_dsn, schema, "s")
        assert [text for text, _ in statuses] == ["one", "two", "three"]
        assert a.state("s").message(message.id).content == "three"
        assert not [s for _, s in statuses if s in (Status.PENDING_AGENT, Status.PROCESSING)]
        assert replies(postgres_dsn, schema, "s")[-1] == "later"

    def test_a_turn_that_meets_foreign_input_is_answered_again(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """A running turn whose next write meets a foreign input (SeqConflict) does not
        leave the actor on a stale head: the session is reloaded, the turn recovered, and
        one turn answers both inputs."""
        model = GatedModel("lost", "answered")
        a = open_rt(model)
        deaf(a)
        try:
            a.send("s", "one", sender="Chii")
            assert model.called.wait(60)  # a hang guard
            foreign_input(postgres_dsn, schema, "s", "two")
        finally:
            model.gate.set()
        wait_for(lambda: replies(postgres_dsn, schema, "s") == ["answered"], "A answers")
        state = a.wait_idle("s", timeout=60)
        assert state.seq == store_seq(postgres_dsn, schema, "s")
        assert user_statuses(postgres_dsn, schema, "s") == [
            ("one", Status.PROCESSED),
            ("two", Status.PROCESSED),
        ]
        assert_interrupted_by_foreign_input(postgres_dsn, schema, "s")

    def test_a_busy_owner_adopts_foreign_input_when_notified(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """The NOTIFY of a foreign input makes a busy owner reload at once: the turn stuck
        on its model is recovered and a new one answers both inputs."""
        model = GatedModel("never", "answered")
        a = open_rt(model)
        try:
            a.send("s", "one", sender="Chii")
            assert model.called.wait(60)  # a hang guard
            foreign_input(postgres_dsn, schema, "s", "two")
            wait_for(lambda: replies(postgres_dsn, schema, "s") == ["answered"], "A answers")
        finally:
            model.gate.set()
        assert user_statuses(postgres_dsn, schema, "s") == [
            ("one", Status.PROCESSED),
            ("two", Status.PROCESSED),
        ]
        assert_interrupted_by_foreign_input(postgres_dsn, schema, "s")


def assert_interrupted_by_foreign_input(dsn: str, schema: str, session_id: str) -> None:
    """The owner's turn, recovered after the foreign write, says why truly. Before, its
    reason said its runner "is gone" (a trial: the runner was alive and had reloaded)."""
    with PostgresStore(dsn, schema=schema) as store:
        events = list(store.events(session_id))
    (recovered,) = [e for e in events if isinstance(e, OrphanRecovered)]
    assert "is gone" not in recovered.reason
    assert "another process wrote to the session" in recovered.reason


class TestUndeliveredOutput:
    def test_a_worker_without_adapters_leaves_it_alone(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """A session whose only work is output no adapter has delivered is not claimed,
        loaded and passivated again at every poll by a worker that has no adapter to
        deliver it (a trial saw one lease's token go from 3 to 62 in six minutes)."""
        worker = open_rt(ScriptedModel([reply("hi")]), resume="all", settings=APPROVING)
        worker.send("s", "hello", sender="Chii")
        worker.wait_idle("s", timeout=60)
        assert worker.wait_passivated("s", timeout=60)
        keeper = worker._keeper
        assert keeper is not None
        keeper.poll_now()  # gives the lease back
        with PostgresStore(postgres_dsn, schema=schema) as store:
            assert store.session("s").counts.get(Status.PENDING)  # the reply waits
        for _ in range(3):
            keeper.poll_now()
        assert worker.live_sessions() == []
        assert keeper.taken == 1

    def test_a_settled_wait_on_a_session_another_worker_runs_reads_the_store(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """A settled wait_idle on a worker that does not run the session, whose output
        waits for delivery, answers from the store: it does not raise OwnedElsewhere
        trying to load the session to deliver it (the owner's adapters deliver it)."""
        down = FakePlatform("wechat", fail_when=lambda *_: True)
        settings = Settings(lease_ttl=30.0, lease_poll=3600.0, delivery_retries=0)
        owner = open_rt(
            ScriptedModel([reply("hi")]), settings=settings,
            adapters=[SilentChannelAdapter.start(client=down)],
        )  # fmt: skip
        owner.send("s", "hello", chatbot_id="wechat", channel_id="c")
        owner.wait_idle("s", timeout=60, settled=False)
        other = open_rt(
            ScriptedModel([]), settings=settings,
            adapters=[SilentChannelAdapter.start(client=FakePlatform("wechat"))],
        )  # fmt: skip
        state = other.wait_idle("s", timeout=60)
        assert [m.status for m in state.messages][-1] is Status.PENDING
        assert other.live_sessions() == []
        assert held_by(postgres_dsn, schema, "s") == owner.runner


def store_seq(dsn: str, schema: str, session_id: str) -> int:
    with PostgresStore(dsn, schema=schema) as store:
        return store.session(session_id).seq


@tool(approval=True)
def pay(to: str) -> str:
    """Pays someone."""
    return f"paid {to}"


PAID: list[str] = []
"""Whom ``counted_pay`` paid (cleared by the tests that count)."""


@tool(approval=True, name="pay")
def counted_pay(to: str) -> str:
    """Pays someone."""
    PAID.append(to)
    return f"paid {to}"


APPROVING = Settings(lease_ttl=30.0, lease_poll=3600.0, passivate_after=0.2)


def decisions(dsn: str, schema: str, session_id: str) -> list[ApprovalDecided]:
    with PostgresStore(dsn, schema=schema) as store:
        return [e for e in store.events(session_id) if isinstance(e, ApprovalDecided)]


def held_by(dsn: str, schema: str, session_id: str) -> str | None:
    with PostgresStore(dsn, schema=schema) as store:
        lease = store.lease(session_id)
    return None if lease is None or lease.expires_at <= datetime.now(UTC) else lease.owner


class TestWaitingForApproval:
    """A session whose turn waits for a person to approve a tool call, on workers."""

    @pytest.fixture(autouse=True)
    def _paid(self) -> Iterator[None]:
        PAID.clear()
        yield
        PAID.clear()

    def waiting(
        self,
        open_rt: Callable[..., Runtime],
        *,
        passivate: bool = True,
        said: str = "",
        fields: dict[str, str] | None = None,
        **options: Any,
    ) -> tuple[Runtime, str]:
        """A worker whose session ``s`` waits for approval and (``passivate``) has
        passivated and given its lease back. ``said``: text the model says with the call
        (a reply, to be delivered to a chat platform when the input has ``fields`` that
        name one)."""
        settings = APPROVING if passivate else SETTINGS
        worker = open_rt(
            ScriptedModel([call("pay", {"to": "ana"}, text=said), reply("paid")]),
            tools=[counted_pay], resume="all", settings=settings, **options,
        )  # fmt: skip
        worker.send("s", "pay ana", sender="Chii", **(fields or {}))
        worker.wait_idle("s", timeout=60)
        if passivate:
            assert worker.wait_passivated("s", timeout=60)
            worker._keeper.poll_now()  # type: ignore[union-attr]  # gives the lease back
        (asked,) = worker.pending_approvals("s")
        assert asked.tool_call is not None
        return worker, asked.tool_call.id

    def test_is_not_picked_up_again_and_again(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """Passivated while it waits for approval, it is not claimed and loaded again by
        the worker's polls (nothing would run); its lease is given back."""
        worker, _ = self.waiting(open_rt)
        keeper = worker._keeper
        assert keeper is not None
        for _ in range(3):
            keeper.poll_now()
        assert worker.live_sessions() == []
        assert keeper.taken == 1
        with PostgresStore(postgres_dsn, schema=schema) as store:
            lease = store.lease("s")
        assert lease is not None
        assert lease.expires_at <= datetime.now(UTC)  # given back

    @pytest.mark.parametrize("platform", [None, "slack"], ids=["no adapter", "another platform"])
    def test_is_not_picked_up_for_output_no_adapter_here_delivers(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str, platform: str | None
    ) -> None:
        """The model said something with its call (a reply for a chat platform); a worker
        with no adapter for that platform cannot deliver it, so the session is still only
        waiting for a person: polls leave it alone, and a front end's wait_idle returns."""
        adapters = []
        if platform is not None:
            client = FakePlatform(platform)
            adapters.append(SilentChannelAdapter.start(client=client, platform=platform))
        worker, _ = self.waiting(
            open_rt, said="I will pay ana", fields={"chatbot_id": "wechat", "channel_id": "c"},
            adapters=adapters,
        )  # fmt: skip
        keeper = worker._keeper
        assert keeper is not None
        for _ in range(3):
            keeper.poll_now()
        assert worker.live_sessions() == []
        assert keeper.taken == 1
        front = open_rt(None, run_sessions=False)
        state = front.wait_idle("s", timeout=60)
        assert state.active_turn is not None
        assert [m.content for m in state.messages if category_of(m) is Category.REPLY] == [
            "I will pay ana"
        ]

    def test_a_worker_with_adapters_delivers_the_output_first(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """Output waiting for delivery is work for a worker with adapters: it picks the
        session up (its adapter sends the reply), then leaves it waiting for the person."""
        worker, _ = self.waiting(
            open_rt, said="I will pay ana", fields={"chatbot_id": "wechat", "channel_id": "c"},
            adapters=[SilentChannelAdapter.start(client=FakePlatform("wechat"))],
        )  # fmt: skip
        with PostgresStore(postgres_dsn, schema=schema) as store:
            state = store.load_state("s")
        assert [m.status for m in state.messages if category_of(m) is Category.REPLY] == [
            Status.DELIVERED
        ]
        keeper = worker._keeper
        assert keeper is not None
        taken = keeper.taken
        for _ in range(3):
            keeper.poll_now()
        assert keeper.taken == taken

    def test_input_brings_it_back(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """New input for a session waiting for approval is picked up by a worker: it
        interrupts the waiting turn and is answered."""
        self.waiting(open_rt)
        foreign_input(postgres_dsn, schema, "s", "never mind")
        wait_for(lambda: replies(postgres_dsn, schema, "s") == ["paid"], "the worker answers")
        assert PAID == []

    def test_a_decision_from_another_runtime_runs_it(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """Once the session passivated and its lease was given back, a runtime with the
        same tools approves the call: the tool runs and the turn ends there."""
        _, call_id = self.waiting(open_rt)
        front = open_rt(ScriptedModel([reply("paid by the front")]), tools=[counted_pay])
        front.approve("s", call_id, by="admin")
        front.wait_idle("s", timeout=60)
        assert replies(postgres_dsn, schema, "s") == ["paid by the front"]
        assert PAID == ["ana"]

    def test_an_approval_for_a_session_run_elsewhere_is_taken_by_its_owner(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """Approving on a runtime that does not run the session stores the decision; the
        worker that runs it (woken by its NOTIFY) takes it, runs the tool once and ends
        the turn. The front end claims nothing and runs nothing."""
        worker, call_id = self.waiting(open_rt, passivate=False)
        front = open_rt(ScriptedModel([]), tools=[counted_pay])
        front.approve("s", call_id, by="admin")
        wait_for(lambda: replies(postgres_dsn, schema, "s") == ["paid"], "the worker goes on")
        assert PAID == ["ana"]
        (decided,) = decisions(postgres_dsn, schema, "s")
        assert (decided.call_id, decided.approved, decided.by) == (call_id, True, "admin")
        assert front.live_sessions() == []
        assert held_by(postgres_dsn, schema, "s") == worker.runner
        with pytest.raises(NotAwaitingApproval, match="waits for approval"):
            front.approve("s", call_id, by="admin")  # taken: nothing waits any more

    def test_a_front_end_stores_the_decision_for_the_workers(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """A front end (run_sessions=False) with no model and no tool approves a call of a
        passivated session: it stores the decision, and a worker picks it up and runs it."""
        _, call_id = self.waiting(open_rt)
        front = open_rt(None, run_sessions=False)
        front.approve("s", call_id, by="admin")
        state = front.wait_idle("s", timeout=60)
        assert state.active_turn is None
        assert replies(postgres_dsn, schema, "s") == ["paid"]
        assert PAID == ["ana"]
        assert front.live_sessions() == []

    def test_a_denial_for_a_session_run_elsewhere_is_taken_by_its_owner(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """A denial from a runtime that does not run the session: the worker answers the
        call as denied (with the reason) and the model goes on; the tool never runs."""
        worker, call_id = self.waiting(open_rt, passivate=False)
        front = open_rt(ScriptedModel([]))
        front.deny("s", call_id, "not today", by="admin")
        wait_for(lambda: replies(postgres_dsn, schema, "s") == ["paid"], "the worker goes on")
        assert PAID == []
        (decided,) = decisions(postgres_dsn, schema, "s")
        assert (decided.approved, decided.reason, decided.by) == (False, "not today", "admin")
        results = [m for m in worker.state("s").messages if m.tool_call_id == call_id]
        assert [m.error_type for m in results] == ["denied"]

    @pytest.mark.parametrize("notified", [True, False], ids=["notified", "on-seq-conflict"])
    def test_a_busy_owner_takes_a_decision_without_stopping_what_runs(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str, notified: bool
    ) -> None:
        """The model asked for two tools at once: one runs (slowly), the other waits for
        approval. A decision stored from elsewhere meanwhile is adopted by the busy owner
        (only metadata changed), when notified or when its next write meets it: the
        running tool is not cancelled, the approved one runs, and one turn ends with both
        results."""
        gate, began = threading.Event(), threading.Event()

        @tool
        def fetch(what: str) -> str:
            """Fetches something, slowly."""
            began.set()
            gate.wait(60)  # a hang guard: the test opens it
            return f"fetched {what}"

        model = ScriptedModel([calls([("fetch", {"what": "bill"}), ("pay", {"to": "ana"})]),
                               reply("fetched and paid")])  # fmt: skip
        worker = open_rt(model, tools=[fetch, counted_pay], resume="all")
        front = open_rt(ScriptedModel([]))
        try:
            worker.send("s", "fetch the bill and pay ana", sender="Chii")
            assert began.wait(60)  # a hang guard
            wait_for(lambda: bool(worker.pending_approvals("s")), "pay waits for approval")
            (asked,) = worker.pending_approvals("s")
            assert asked.tool_call is not None
            if not notified:
                deaf(worker)
            front.approve("s", asked.tool_call.id, by="admin")
            if notified:
                wait_for(lambda: PAID == ["ana"], "the owner runs the approved call")
        finally:
            gate.set()
        wait_for(lambda: PAID == ["ana"], "the owner runs the approved call")
        state = worker.wait_idle("s", timeout=60)
        assert replies(postgres_dsn, schema, "s") == ["fetched and paid"]
        assert [turn.status.value for turn in state.turns.values()] == ["processed"]
        results = sorted(m.content for m in state.messages if m.tool_call_id is not None
                         and category_of(m) is Category.TOOL_RESULT)  # fmt: skip
        assert results == ["fetched bill", "paid ana"]

    @pytest.mark.parametrize("approved", [True, False], ids=["approve", "deny"])
    def test_a_passivated_session_with_a_stored_decision_is_picked_up(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str, approved: bool
    ) -> None:
        """A runtime without the tool decides a call of a session nobody runs: it does not
        claim it (it is no worker of the session) but stores the decision; a worker picks
        the session up, as it does one with input, and takes it."""
        worker, call_id = self.waiting(open_rt)
        front = open_rt(ScriptedModel([]))
        if approved:
            front.approve("s", call_id, by="admin")
        else:
            front.deny("s", call_id, "no", by="admin")
        assert front.live_sessions() == []
        wait_for(lambda: replies(postgres_dsn, schema, "s") == ["paid"], "a worker goes on")
        assert len(PAID) == (1 if approved else 0)
        (decided,) = decisions(postgres_dsn, schema, "s")
        assert (decided.approved, decided.by) == (approved, "admin")
        assert held_by(postgres_dsn, schema, "s") in (worker.runner, None)

    def test_a_second_decision_from_elsewhere_is_refused(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """A decision stored and not taken yet is not stored again, nor overridden: the
        second approve (or deny) says it was decided, by whom."""
        worker, call_id = self.waiting(open_rt, passivate=False)
        deaf(worker)  # the owner does not take it yet
        front = open_rt(ScriptedModel([]))
        other = open_rt(ScriptedModel([]))
        front.approve("s", call_id, by="ana")
        seq = store_seq(postgres_dsn, schema, "s")
        with pytest.raises(NotAwaitingApproval, match=r"was approved by 'ana' already"):
            other.approve("s", call_id, by="bo")
        with pytest.raises(NotAwaitingApproval, match=r"was approved by 'ana' already"):
            other.deny("s", call_id, by="bo")
        assert store_seq(postgres_dsn, schema, "s") == seq
        worker.router.reload("s")  # it hears of it at last
        wait_for(lambda: replies(postgres_dsn, schema, "s") == ["paid"], "the worker goes on")
        assert PAID == ["ana"]

    def test_racing_decisions_from_two_runtimes_run_the_tool_once(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """Two runtimes approve one call at once: one decision is stored, the other is
        refused (each try reads the head again after a SeqConflict); the tool runs once."""
        _, call_id = self.waiting(open_rt, passivate=False)
        fronts = [open_rt(ScriptedModel([])) for _ in range(2)]
        start = threading.Barrier(2)
        outcomes: list[str] = []

        def approve(rt: Runtime, by: str) -> None:
            start.wait(60)
            try:
                rt.approve("s", call_id, by=by)
                outcomes.append("stored")
            except NotAwaitingApproval:
                outcomes.append("refused")

        threads = [threading.Thread(target=approve, args=(rt, f"p{n}"))
                   for n, rt in enumerate(fronts)]  # fmt: skip
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert sorted(outcomes) == ["refused", "stored"]
        wait_for(lambda: replies(postgres_dsn, schema, "s") == ["paid"], "the worker goes on")
        assert PAID == ["ana"]
        assert len(decisions(postgres_dsn, schema, "s")) == 1

    def test_a_decision_after_the_turn_was_interrupted_is_refused(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """Once input ended the waiting turn, approving its call from elsewhere is refused
        and stores nothing."""
        _, call_id = self.waiting(open_rt, passivate=False)
        foreign_input(postgres_dsn, schema, "s", "never mind")
        wait_for(lambda: replies(postgres_dsn, schema, "s") == ["paid"], "the worker answers")
        seq = store_seq(postgres_dsn, schema, "s")
        front = open_rt(ScriptedModel([]))
        with pytest.raises(NotAwaitingApproval, match="or its turn ended"):
            front.approve("s", call_id, by="admin")
        assert store_seq(postgres_dsn, schema, "s") == seq
        assert PAID == []

    def test_a_worker_with_an_approval_timeout_picks_it_up(
        self, open_rt: Callable[..., Runtime], postgres_dsn: str, schema: str
    ) -> None:
        """A worker whose approval_timeout must deny the call in time does pick the
        session up: the call is denied and the turn goes on."""
        worker, _ = self.waiting(open_rt)
        worker.stop()
        timely = Settings(lease_ttl=30.0, lease_poll=3600.0, approval_timeout=0.1)
        open_rt(ScriptedModel([reply("not paid")]), tools=[pay], resume="all", settings=timely)
        wait_for(lambda: replies(postgres_dsn, schema, "s") == ["not paid"], "it is denied")
