"""The ``amber`` commands against PostgreSQL: ``--db postgresql://…`` and ``amber migrate``.

Needs a server (skipped without one, failed in CI: tests/conftest.py); each
test gets a fresh schema through ``$AMBER_PG_SCHEMA``.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from cli_support import Recorded, amber, recorded  # noqa: F401  (recorded is a fixture)

from actors import Runtime, ScriptedModel, Settings
from runtime import TurnStatus, hang
from runtime.store import PostgresStore, SQLiteStore


@pytest.fixture
def pg(postgres_dsn: str, pg_schema: Callable[[], str], monkeypatch: pytest.MonkeyPatch) -> str:
    """The test server's URL, with ``$AMBER_PG_SCHEMA`` set to a fresh schema."""
    monkeypatch.setenv("AMBER_PG_SCHEMA", pg_schema())
    return postgres_dsn


def test_migrate_copies_every_session(recorded: Recorded, pg: str, tmp_path: Path) -> None:  # noqa: F811
    """Every session is copied with its whole log; reads and replay work on the copy."""
    result = amber("migrate", "--from", recorded.db, "--to", pg, "--json")
    assert result.exit_code == 0, result.output
    report = orjson.loads(result.output)
    with SQLiteStore(recorded.db) as source:
        ids = sorted(info.session_id for info in source.list_sessions())
        logs = {sid: source.events(sid) for sid in ids}
    assert report == {"copied": ids, "skipped": [], "conflicts": []}
    with PostgresStore(pg, schema=os.environ["AMBER_PG_SCHEMA"]) as target:
        assert {sid: target.events(sid) for sid in ids} == logs
    listed = amber("sessions", "--db", pg, "--json")
    assert listed.exit_code == 0, listed.output
    assert sorted(row["session_id"] for row in orjson.loads(listed.output)) == ids
    verified = amber("replay", "demo", "--verify", "--db", pg)
    assert verified.exit_code == 0, verified.output
    shown = amber("timeline", "demo", "--db", pg)
    assert shown.exit_code == 0, shown.output
    assert "turn_started" in shown.output


def test_migrate_again_skips_what_is_there(recorded: Recorded, pg: str) -> None:  # noqa: F811
    """A second run copies nothing and says the sessions are there with the same log."""
    assert amber("migrate", "--from", recorded.db, "--to", pg).exit_code == 0
    again = amber("migrate", "--from", recorded.db, "--to", pg, "--json")
    assert again.exit_code == 0, again.output
    assert orjson.loads(again.output)["copied"] == []


def test_migrate_back_to_sqlite(recorded: Recorded, pg: str, tmp_path: Path) -> None:  # noqa: F811
    """PostgreSQL to a new SQLite file: the same logs, event for event."""
    assert amber("migrate", "--from", recorded.db, "--to", pg).exit_code == 0
    back = tmp_path / "back.db"
    result = amber("migrate", "--from", pg, "--to", back)
    assert result.exit_code == 0, result.output
    with SQLiteStore(recorded.db) as a, SQLiteStore(back) as b:
        assert [i.session_id for i in a.list_sessions()] == [
            i.session_id for i in b.list_sessions()
        ]
        for info in a.list_sessions():
            assert a.events(info.session_id) == b.events(info.session_id)


def test_a_missing_schema_is_not_created_by_reads(pg: str) -> None:
    """Read commands never make a store: a schema without one is exit 4, named."""
    result = amber("sessions", "--db", pg)
    assert result.exit_code == 4
    assert "holds no Amber store" in result.output


def test_a_mistyped_schema_lists_the_stores_there_are(
    postgres_dsn: str, pg_schema: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A schema name that holds no store (a typo in ``$AMBER_PG_SCHEMA``) is exit 4 with the
    schemas that hold Amber stores, the closest first, and how to make a store there."""
    real = pg_schema()
    PostgresStore(postgres_dsn, schema=real).close()  # makes the store
    typo = real[:-1]
    monkeypatch.setenv("AMBER_PG_SCHEMA", typo)
    result = amber("sessions", "--db", postgres_dsn)
    assert result.exit_code == 4, result.output
    said = " ".join(result.output.split())
    assert (
        f"Schema {typo!r} of the PostgreSQL database that --db names holds no Amber store" in said
    )
    assert f"Schemas with an Amber store in this database: {real!r}" in said
    assert f"set AMBER_PG_SCHEMA to it (it is {typo!r})" in said
    assert "amber migrate" in said
    assert "amber import" in said


@pytest.mark.parametrize("command", ["sessions", "worker"])
def test_a_schema_postgres_would_cut_is_a_usage_error(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$AMBER_PG_SCHEMA over 63 bytes of UTF-8 (PostgreSQL cuts it, so two such names
    shared one schema) is exit 2 naming the variable, before anything connects."""
    monkeypatch.setenv("AMBER_PG_SCHEMA", "tenant_ä" + "ü" * 40)
    options = ("--app", "worker_app:make_app") if command == "worker" else ()
    result = amber(command, "--db", "postgresql://nobody@127.0.0.1:1/none", *options)
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert said.startswith(
        "amber: $AMBER_PG_SCHEMA: schema must be a PostgreSQL identifier of 1 to 63 bytes in "
        "UTF-8 (got 'tenant_ä"
    ), said
    assert "48 characters, 89 bytes); PostgreSQL cuts a longer name to 63 bytes" in said
    assert said.endswith("Set AMBER_PG_SCHEMA to another name."), said


def test_a_mistyped_schema_in_python_lists_the_stores_there_are(
    postgres_dsn: str, pg_schema: Callable[[], str]
) -> None:
    """``PostgresStore(create=False)`` on a schema with no store says the same, for Python."""
    from runtime import NotAStore

    real = pg_schema()
    PostgresStore(postgres_dsn, schema=real).close()
    typo = real[:-1]
    with pytest.raises(NotAStore) as info:
        PostgresStore(postgres_dsn, schema=typo, create=False)
    said = str(info.value)
    assert f"the schema {typo!r} is missing or empty" in said
    assert f"Schemas with an Amber store in this database: {real!r}" in said
    assert "'amber migrate --from FILE --to URL' or 'amber import FILE --db URL'" in said


def test_same_store_twice_is_refused(recorded: Recorded) -> None:  # noqa: F811
    """--from and --to must differ."""
    result = amber("migrate", "--from", recorded.db, "--to", recorded.db)
    assert result.exit_code == 2
    assert "name the same store" in result.output


def test_inspect_reads_a_postgres_store_lazily(recorded: Recorded, pg: str) -> None:  # noqa: F811
    """``amber inspect --db postgresql://…``'s source: states, walks and events read from
    PostgreSQL equal the SQLite original's, the events on a connection of their own."""
    from actors._cli._app import open_any_store
    from actors._inspect_source import StoredSession
    from runtime import reports_error, to_data

    assert amber("migrate", "--from", recorded.db, "--to", pg).exit_code == 0
    with SQLiteStore(recorded.db) as store:
        demo = store.load_timeline("demo")
    source = StoredSession(lambda: open_any_store(pg), "demo")
    try:
        assert source.last_seq == demo.last_seq
        for seq in (0, 5, demo.last_seq, 20):
            assert to_data(source.at(seq)) == to_data(demo.at(seq))
        assert [e for e, _, _ in source.entries(10, 20)] == demo.events()[9:20]
        assert list(source.events()) == demo.events()
        assert list(source.flags()) == [(e.kind, reports_error(e)) for e in demo.events()]
    finally:
        source.close()


@pytest.mark.parametrize(
    "argv", [["demo"], ["chat"], ["resume", "s"]], ids=["demo", "chat", "resume"]
)
def test_commands_that_run_a_runtime_name_the_sqlite_file_they_need(argv: list[str]) -> None:
    """demo, chat and resume run a runtime on a SQLite file: given a PostgreSQL URL they say
    so at once (a user got "Cannot open 'postgresql:/…': unable to open database file", and
    chat then hung), before anything connects."""
    url = "postgresql://amber@127.0.0.1:1/nowhere"  # nothing listens there
    result = amber(*argv, "--db", url, input="")
    assert result.exit_code == 2
    assert "runs its runtime on a SQLite file" in result.output
    assert "amber worker" in result.output


@pytest.mark.parametrize("made", [True, False], ids=["empty-schema", "missing-schema"])
def test_a_schema_without_a_store_says_how_to_fill_it(
    pg: str, made: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A schema that exists but is empty (or is missing): exit 4 naming AMBER_PG_SCHEMA,
    `amber migrate` and `amber import`, and nothing is created."""
    import psycopg
    from psycopg import sql

    schema = os.environ["AMBER_PG_SCHEMA"]
    if made:
        with psycopg.connect(pg, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    result = amber("sessions", "--db", pg)
    assert result.exit_code == 4
    state = "exists but is empty" if made else "does not exist"
    stores = r"(Schemas with an Amber store in this database: .+|No schema in this database holds an Amber store)\."
    assert re.fullmatch(
        re.escape(
            f"amber: Schema '{schema}' of the PostgreSQL database that --db names holds no Amber "
            f"store (it {state}). "
        )
        + stores
        + re.escape(
            f" If your store is in another schema, set AMBER_PG_SCHEMA to it (it is "
            f"'{schema}'). To make one here: 'amber migrate --from STORE.db --to URL' copies "
            "every session of a SQLite store, 'amber import FILE --db URL' one session that "
            "'amber export' wrote.\n"
        ),
        result.stderr,
    ), result.stderr
    with psycopg.connect(pg, autocommit=True) as conn:
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = %s", (schema,))
        assert tables.fetchone() == (0,)


def test_recover_leaves_turns_whose_lease_is_held_alone(pg: str) -> None:
    """A turn whose session's lease a live runtime holds (unexpired) is running, not
    orphaned: recover leaves it alone, saying who holds it; a turn whose lease expired
    (its worker stopped renewing, as a dead one does) is recovered."""
    schema = os.environ["AMBER_PG_SCHEMA"]
    past = lambda: datetime.now(UTC) - timedelta(hours=1)  # noqa: E731
    settings = Settings(lease_ttl=30.0, lease_poll=3600.0, passivate_after=None)
    live = Runtime(
        model=ScriptedModel([hang()]), store=PostgresStore(pg, schema=schema), settings=settings
    )
    stale = Runtime(
        model=ScriptedModel([hang()]),
        store=PostgresStore(pg, schema=schema),
        settings=settings,
        clock=past,  # its lease expired long ago by the real clock
    )
    with live, stale:
        live.send("held", "hello", sender="u")
        stale.send("lapsed", "hello", sender="u")
        deadline = time.monotonic() + 60  # a hang guard
        while live.state("held").active_turn is None or stale.state("lapsed").active_turn is None:
            assert time.monotonic() < deadline, "the turns did not start"
            time.sleep(0.02)
        dry = amber("recover", "--older-than", "0", "--dry-run", "--db", pg)
        assert "Would recover lapsed:" in dry.output
        assert "Would recover held" not in dry.output
        assert "Left alone, running in the worker that holds its lease" in dry.output
        result = amber("recover", "--older-than", "0", "--json", "--db", pg)
        data = orjson.loads(result.output)
        assert [r["session_id"] for r in data["recovered"]] == ["lapsed"]
        (running,) = data["running"]
        assert running["session_id"] == "held"
        assert f"the worker that holds its lease ({live.runner}, until" in running["by"]
        with PostgresStore(pg, schema=schema) as store:
            assert store.load_state("held").active_turn is not None
            (recovered,) = data["recovered"]
            turn = store.load_state("lapsed").turn(recovered["turn_id"])
            assert turn is not None
            assert turn.status is TurnStatus.RECOVERED
