"""``amber worker``: real worker processes on a PostgreSQL store.

The default run has one worker answering input another process stored. The
fault tests (``slow``) SIGKILL a worker mid-turn (its sessions go on on
another worker once their leases expire, every input answered once),
SIGSTOP one past its lease (its late appends are all refused by the fencing
token), and restart PostgreSQL under running workers (a private server made
for the test: they reconnect and go on). Waits poll the store; their bounds
are hang guards.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pg_server import PrivateServer, binaries
from worker_procs import GUARD, Worker, replies, send, wait_until

from actors._cli import cli
from runtime import Category, Status, category_of
from runtime.store import PostgresStore


@pytest.fixture
def schema(postgres_dsn: str, pg_schema: Callable[[], str]) -> str:
    return pg_schema()


@pytest.fixture
def workers() -> list[Worker]:
    started: list[Worker] = []
    yield started  # type: ignore[misc]
    for worker in started:
        if worker.proc.poll() is None:
            worker.proc.send_signal(signal.SIGCONT)
        worker.stop(signal.SIGKILL)


def answered_once(store: PostgresStore, session_id: str) -> bool:
    state = store.load_state(session_id)
    questions = [m for m in state.messages if category_of(m) is Category.USER_QUESTION]
    return len(replies(state)) == 1 and all(m.status is Status.PROCESSED for m in questions)


def test_a_worker_answers_input_stored_elsewhere(
    postgres_dsn: str, schema: str, workers: list[Worker]
) -> None:
    """Input stored by another process wakes the worker, which answers it; SIGTERM stops it
    cleanly and gives its leases back."""
    with PostgresStore(postgres_dsn, schema=schema) as store:
        worker = Worker(postgres_dsn, schema, "w1", "fast")
        workers.append(worker)
        send(store, "s", "hello?")
        wait_until(lambda: replies(store.load_state("s")) == ["from w1"], "w1 answers")
        assert worker.stop() == 0
        lease = store.lease("s")
        assert lease is not None
        assert lease.owner == "w1"
        assert lease.expires_at.year < 2000  # given back (expired at once)
        store.verify("s")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_stop_signal_is_named(
    postgres_dsn: str, schema: str, workers: list[Worker], signum: signal.Signals
) -> None:
    """SIGTERM, and SIGHUP (the terminal closing), stop the worker cleanly (exit 0); its log
    says which signal stopped it."""
    worker = Worker(postgres_dsn, schema, "w1", "fast")
    workers.append(worker)
    assert worker.stop(signum) == 0, worker.text
    assert f"amber worker w1 stopping ({signum.name})\n" in worker.text


def test_a_second_worker_of_one_name_is_refused(
    postgres_dsn: str, schema: str, workers: list[Worker]
) -> None:
    """Two workers started with one --name would take each other's leases over and over:
    the second exits at once (code 1) saying so and what to do; the first runs on."""
    with PostgresStore(postgres_dsn, schema=schema) as store:
        first = Worker(postgres_dsn, schema, "w1", "fast")
        workers.append(first)
        environment = {**os.environ, "AMBER_PG_SCHEMA": schema, "WORKER_MODEL": "fast"}
        second = subprocess.run(
            [
                sys.executable, "-c", "from actors._cli import main; raise SystemExit(main())",
                "worker", "--db", postgres_dsn, "--app", "worker_app:make_app", "--name", "w1",
            ],
            cwd=Path(__file__).parent, env=environment, capture_output=True, text=True,
            timeout=GUARD,
        )  # fmt: skip
        assert second.returncode == 1, second.stderr
        said = second.stderr
        assert "amber: StoreBusy: Another runtime runs sessions of this store as 'w1'" in said
        assert "Give each worker its own --name" in " ".join(second.stderr.split())
        send(store, "s", "hello?")
        wait_until(lambda: replies(store.load_state("s")) == ["from w1"], "w1 answers")
        assert first.proc.poll() is None


def test_a_worker_runs_from_a_config_file(
    postgres_dsn: str, schema: str, workers: list[Worker], tmp_path: Path
) -> None:
    """``amber worker --config FILE``: the file's [worker] table gives every option."""
    config = tmp_path / "worker.toml"
    config.write_text(
        f'[worker]\ndb = "{postgres_dsn}"\napp = "worker_app:make_app"\n'
        'lease_ttl = 2\npoll = 0.5\nname = "from-config"\n',
        encoding="utf-8",
    )
    with PostgresStore(postgres_dsn, schema=schema) as store:
        worker = Worker(postgres_dsn, schema, "from-config", "fast", config=config)
        workers.append(worker)
        send(store, "c", "hello?")
        wait_until(lambda: replies(store.load_state("c")) == ["from from-config"], "answers")
        assert worker.stop() == 0
        lease = store.lease("c")
        assert lease is not None
        assert lease.owner == "from-config"


def test_a_worker_on_a_schema_without_a_store_says_it_made_one(
    postgres_dsn: str, schema: str, pg_schema: Callable[[], str], workers: list[Worker]
) -> None:
    """A mistyped $AMBER_PG_SCHEMA left the worker idle on a new, empty store without a
    word: it warns, saying how to point it at the store, and still runs (a new
    deployment's first worker makes its store)."""
    with PostgresStore(postgres_dsn, schema=schema) as store:
        send(store, "s", "hello?")  # the real store, with work waiting
    typo = pg_schema()  # a name no store has (dropped after the test)
    worker = Worker(postgres_dsn, typo, "w1", "fast")
    workers.append(worker)
    text = worker.text
    assert f"amber worker: warning: Schema {typo!r} of the PostgreSQL database" in text
    assert "holds no Amber store (it does not exist)" in text
    assert "If your store is in another schema, set AMBER_PG_SCHEMA to it" in text
    assert f"The worker made an empty store in {typo!r}" in text
    assert worker.stop() == 0
    with PostgresStore(postgres_dsn, schema=typo) as made:
        assert made.list_sessions() == []


class TestConfigErrors:
    """A worker config that cannot be used is refused before anything starts."""

    def run(self, tmp_path: Path, text: str | None, *extra: str) -> Any:
        config = tmp_path / "worker.toml"
        if text is not None:
            config.write_text(text, encoding="utf-8")
        return CliRunner().invoke(cli, ["worker", "--config", str(config), *extra])

    def test_missing_file(self, tmp_path: Path) -> None:
        result = self.run(tmp_path, None)
        assert result.exit_code == 3
        assert "No worker config at" in result.output

    @pytest.mark.parametrize(
        ("text", "said"),
        [
            ("worker = [", "Cannot read the worker config"),
            ('db = "x"\n', "has no [worker] table"),
            ('[worker]\nmodel = "m"\n', "unknown key 'model'"),
            ('[worker]\npoll = "soon"\n', "poll must be a number of seconds (got 'soon')"),
            ("[worker]\nname = 7\n", "name must be a string (got 7)"),
        ],
    )
    def test_bad_config(self, tmp_path: Path, text: str, said: str) -> None:
        result = self.run(tmp_path, text)
        assert result.exit_code == 2, result.output
        assert said in result.output

    @pytest.mark.parametrize("value", ["100000", "86400.5", "0.5"])
    def test_a_lease_ttl_out_of_range(self, value: str) -> None:
        """A lease ttl outside 1 to 86400 s (a day) exits 2 naming the option and the range,
        before anything is opened or imported."""
        result = CliRunner().invoke(
            cli,
            [
                "worker", "--db", "postgresql://nobody@127.0.0.1:1/none", "--app", "no_such:app",
                "--lease-ttl", value,
            ],
        )  # fmt: skip
        assert result.exit_code == 2, result.output
        assert (
            f"--lease-ttl must be a number of seconds from 1 to 86400; got {value!r}"
            in " ".join(result.output.split())
        )

    def test_a_lease_ttl_out_of_range_in_the_file(self, tmp_path: Path) -> None:
        """The same range holds for the config file's ``lease_ttl``."""
        result = self.run(tmp_path, "[worker]\nlease_ttl = 100000\n")
        assert result.exit_code == 2, result.output
        assert "lease_ttl must be a number of seconds from 1 to 86400; got 100000" in " ".join(
            result.output.split()
        )

    def test_the_file_gives_the_options_and_the_command_line_wins(self, tmp_path: Path) -> None:
        text = '[worker]\ndb = "from-file.db"\napp = "worker_app:make_app"\n'
        result = self.run(tmp_path, text)
        assert result.exit_code == 2
        assert "got 'from-file.db'" in result.output
        result = self.run(tmp_path, text, "--db", "from-command-line.db")
        assert "got 'from-command-line.db'" in result.output


@pytest.mark.slow
def test_sigkill_mid_turn_another_worker_takes_over(
    postgres_dsn: str, schema: str, workers: list[Worker]
) -> None:
    """Three workers, 200 sessions with turns in flight on one of them; SIGKILL it: the other
    two take its sessions over once the leases expire, recover the orphaned turns and answer
    every input exactly once; nothing is lost or duplicated, and every log verifies."""
    sessions = [f"s{i:03d}" for i in range(200)]
    with PostgresStore(postgres_dsn, schema=schema) as store:
        doomed = Worker(postgres_dsn, schema, "doomed", "hang")
        workers.append(doomed)
        for sid in sessions:
            send(store, sid, f"question for {sid}")

        def all_in_flight() -> bool:
            infos = {info.session_id: info for info in store.list_sessions()}
            return all(sid in infos and infos[sid].active_turn_id for sid in sessions)

        wait_until(all_in_flight, "every turn starts on the doomed worker")
        workers.append(Worker(postgres_dsn, schema, "w2", "fast"))
        workers.append(Worker(postgres_dsn, schema, "w3", "fast"))
        doomed.proc.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        wait_until(lambda: all(answered_once(store, sid) for sid in sessions), "takeover")
        took = time.monotonic() - killed
        owners = {store.lease(sid).owner for sid in sessions}  # type: ignore[union-attr]
        assert owners <= {"w2", "w3"}
        for sid in sessions:
            timeline = store.verify(sid)
            assert [e.seq for e in timeline.events()] == list(range(1, timeline.last_seq + 1))
            assert replies(timeline.head)[0] in ("from w2", "from w3")
        assert store.check().ok
    print(f"takeover of 200 sessions after SIGKILL: {took:.2f} s (lease ttl 2 s)")


@pytest.mark.slow
def test_sigstop_past_the_lease_late_appends_are_refused(
    postgres_dsn: str, schema: str, workers: list[Worker]
) -> None:
    """A worker paused (SIGSTOP) mid-turn past its lease; another takes over and answers;
    the paused one, resumed (SIGCONT), tries to store its answers: 0 accepted."""
    sessions = [f"p{i}" for i in range(5)]
    with PostgresStore(postgres_dsn, schema=schema) as store:
        paused = Worker(postgres_dsn, schema, "paused", "slow", WORKER_DELAY="4")
        workers.append(paused)
        for sid in sessions:
            send(store, sid, f"question for {sid}")
        wait_until(
            lambda: all(
                (info := store.session(sid)) is not None and info.active_turn_id
                for sid in sessions
                if sid in store
            ) and all(sid in store for sid in sessions),
            "the paused worker's turns start",
        )  # fmt: skip
        paused.proc.send_signal(signal.SIGSTOP)
        try:
            workers.append(Worker(postgres_dsn, schema, "taker", "fast"))
            wait_until(lambda: all(answered_once(store, sid) for sid in sessions), "takeover")
        finally:
            paused.proc.send_signal(signal.SIGCONT)
        heads = {sid: store.session(sid).seq for sid in sessions}

        def refused(text: str) -> bool:
            return all(
                f"Cannot append to session '{sid}'" in text or f"lost the lease of {sid}" in text
                for sid in sessions
            )

        paused.wait_for(refused, "the resumed worker hears that its leases were taken")
        assert paused.stop() == 0
        accepted = 0
        for sid in sessions:
            state = store.load_state(sid)
            accepted += state.seq - heads[sid]
            assert "from paused" not in replies(state)
            store.verify(sid)
        assert accepted == 0


@pytest.fixture
def private_server() -> Iterator[PrivateServer]:
    bin_dir = binaries()
    if bin_dir is None:
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl) to make a private server")
    # Not under pytest's tmp folder: the server's user must reach it (pytest's is private).
    root = Path(tempfile.mkdtemp(prefix="amber-pg-"))
    try:
        server = PrivateServer(root, bin_dir)
        yield server
        server.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
def test_postgres_restarts_under_running_workers(
    private_server: PrivateServer, workers: list[Worker]
) -> None:
    """Two workers answer sessions; the server restarts (every connection cut, notifications
    lost): the workers stay up, reconnect and answer what arrives after, each input once;
    every log verifies."""
    dsn, schema = private_server.dsn, "amber"
    before, after = [f"b{i}" for i in range(6)], [f"a{i}" for i in range(6)]
    with PostgresStore(dsn, schema=schema) as store:
        workers.append(Worker(dsn, schema, "w1", "fast"))
        workers.append(Worker(dsn, schema, "w2", "fast"))
        for sid in before:
            send(store, sid, f"question for {sid}")
        wait_until(lambda: all(answered_once(store, sid) for sid in before), "answers before")
    private_server.restart()
    with PostgresStore(dsn, schema=schema) as store:
        for sid in after:
            send(store, sid, f"question for {sid}")
        wait_until(lambda: all(answered_once(store, sid) for sid in after), "answers after")
        for sid in before + after:
            timeline = store.verify(sid)
            assert [e.seq for e in timeline.events()] == list(range(1, timeline.last_seq + 1))
            assert len(replies(timeline.head)) == 1
        assert store.check().ok
    for worker in workers:
        assert worker.proc.poll() is None, f"worker {worker.name} died:\n{worker.text}"
