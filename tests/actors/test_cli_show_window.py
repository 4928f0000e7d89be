"""``amber show`` of a long state: the last 100 of a list over 200, the touched messages, ``--all``.

The small states of ``test_cli.py`` print whole (their output is pinned there);
here a session of 210 turns (210 messages, 210 turns) ends with an event
touching one of its first messages.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cli_support import amber

from runtime import (
    Category,
    Event,
    MessageAdded,
    MetadataUpdated,
    SessionState,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
    apply,
    new_message,
)
from runtime.store import SQLiteStore

T0 = datetime(2026, 5, 27, 12, 0, tzinfo=UTC)
TURNS = 210


def _events(turns: int, *, touch: str | None) -> list[Event]:
    state = SessionState.empty("long")
    out: list[Event] = []

    def emit(make: Any) -> None:
        nonlocal state
        event = make(session_id="long", seq=state.seq + 1, at=T0 + timedelta(seconds=state.seq))
        state = apply(state, event)
        out.append(event)

    for n in range(turns):
        at = T0 + timedelta(seconds=state.seq)
        message = new_message(
            Category.USER_QUESTION, id=f"u{n}", session_id="long", created_at=at,
            sender="Chii", content=f"question {n}",
        )  # fmt: skip
        emit(lambda message=message, **kw: MessageAdded(message=message, **kw))
        emit(lambda n=n, **kw: TurnStarted(turn_id=f"t{n}", **kw))
        emit(lambda n=n, **kw: TurnEnded(turn_id=f"t{n}", outcome=TurnOutcome.PROCESSED, **kw))
    if touch is not None:
        emit(lambda **kw: MetadataUpdated(message_id=touch, metadata={"pinned": True}, **kw))
    return out


def _store(folder: Path, turns: int = TURNS, *, touch: str | None = "u3") -> Path:
    db = folder / "long.db"
    with SQLiteStore(db) as store:
        store.append(_events(turns, touch=touch))
    return db


def _ids(output: str) -> set[str]:
    """The message ids of the message lines printed."""
    found = set()
    for line in output.splitlines():
        words = line.split()
        if len(words) > 2 and words[0].isdigit() and words[1].startswith("u"):
            found.add(words[1])
    return found


def _turn_ids(output: str) -> set[str]:
    return {line.split()[0] for line in output.splitlines() if line.startswith("t")}


@pytest.fixture(scope="module")
def long_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _store(tmp_path_factory.mktemp("long"))


def test_show_prints_the_last_100_and_the_touched_messages(long_db: Path) -> None:
    result = amber("show", "long", "--db", long_db)
    assert result.exit_code == 0, result.output
    ids = _ids(result.output)
    assert ids == {f"u{n}" for n in range(TURNS - 100, TURNS)} | {"u3"}
    assert (
        "(109 earlier messages of 210 not shown: the last 100, and those the event touched; "
        "--all prints every one)" in result.output
    )
    assert _turn_ids(result.output) == {f"t{n}" for n in range(TURNS - 100, TURNS)}
    assert "(110 earlier turns of 210 not shown: the last 100; --all prints every one)" in (
        result.output
    )
    # The turns in turn_list's order (picked without sorting every turn).
    turn_lines = [line.split()[0] for line in result.output.splitlines() if line.startswith("t")]
    assert turn_lines == [f"t{n}" for n in range(TURNS - 100, TURNS)]
    # In state order: the touched message first, then the last 100.
    rows = [line.split() for line in result.output.splitlines()]
    lines = [w[1] for w in rows if len(w) > 2 and w[0].isdigit() and w[1].startswith("u")]
    assert lines[:2] == ["u3", f"u{TURNS - 100}"]


def test_show_all_prints_every_message_and_turn(long_db: Path) -> None:
    result = amber("show", "long", "--all", "--db", long_db)
    assert result.exit_code == 0, result.output
    assert _ids(result.output) == {f"u{n}" for n in range(TURNS)}
    assert _turn_ids(result.output) == {f"t{n}" for n in range(TURNS)}
    assert "not shown" not in result.output


def test_show_at_a_past_seq_keeps_the_window_of_that_state(long_db: Path) -> None:
    # seq 3 * 205 + 1: u205 added; 206 messages, its event touches only u205.
    result = amber("show", "long", "--at", 3 * 205 + 1, "--db", long_db)
    assert result.exit_code == 0, result.output
    assert _ids(result.output) == {f"u{n}" for n in range(106, 206)}
    assert "(106 earlier messages of 206 not shown" in result.output
    # 205 turns ended, one not started yet.
    assert _turn_ids(result.output) == {f"t{n}" for n in range(105, 205)}


def test_show_json_prints_the_whole_state(long_db: Path) -> None:
    result = amber("show", "long", "--json", "--db", long_db)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [m["id"] for m in data["state"]["messages"]] == [f"u{n}" for n in range(TURNS)]
    assert len(data["state"]["turns"]) == TURNS


def test_show_of_200_messages_prints_every_one(tmp_path: Path) -> None:
    db = _store(tmp_path, 200, touch=None)
    result = amber("show", "long", "--db", db)
    assert result.exit_code == 0, result.output
    assert _ids(result.output) == {f"u{n}" for n in range(200)}
    assert _turn_ids(result.output) == {f"t{n}" for n in range(200)}
    assert "not shown" not in result.output


def test_emit_json_writes_the_same_text_to_bytes_and_to_a_text_only_stdout(
    monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    import io

    from actors._cli._app import emit_json

    data = {"é": [1, "ü", None], "b": b"\x00"}
    emit_json(data)
    as_bytes = capsysbinary.readouterr().out
    text_only = io.StringIO()
    monkeypatch.setattr("sys.stdout", text_only)
    emit_json(data)
    assert as_bytes.decode() == text_only.getvalue()
    assert json.loads(as_bytes) == {"é": [1, "ü", None], "b": "AA=="}


def test_show_at_a_stored_state_reads_its_event_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the seq of a checkpoint (here the first snapshot, seq 10) the state is the stored
    one and only its event is read: not every event after it (which cost the session's
    length: 2.9 s at seq 49,100 of 100,000)."""
    db = tmp_path / "s.db"
    log = _events(30, touch=None)
    with SQLiteStore(db, snapshot_every=10) as store:
        store.append(log[:10])
        store.append(log[10:])
        assert store.load_span("long", 10, 10).first_seq == 10

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("show read the events after its seq")

    monkeypatch.setattr(SQLiteStore, "events", refuse)
    result = amber("show", "long", "--at", 10, "--db", db)
    assert result.exit_code == 0, result.output
    assert log[9].kind == "message_added"
    assert "long at seq 10 of 90 · " in result.output
    assert "Event: + u3 user question" in result.output


@pytest.mark.parametrize("seq", [8, 9, 10])
@pytest.mark.parametrize("as_json", [False, True])
def test_show_at_a_stored_state_prints_what_a_replay_from_the_start_prints(
    tmp_path: Path, seq: int, as_json: bool
) -> None:
    """Seq 9 (t2's turn_ended) is a stored state: its line still names the turn as it was
    before the event, as when the state is replayed from the session's start."""
    log = _events(5, touch=None)
    stored, plain = tmp_path / "stored.db", tmp_path / "plain.db"
    with SQLiteStore(stored, snapshot_every=9) as store:
        store.append(log[:9])
        store.append(log[9:])
        assert store.load_span("long", 9, 9).first_seq == 9
    with SQLiteStore(plain, snapshot_every=1000) as store:
        store.append(log)
        assert store.load_span("long", 9, 9).first_seq == 0
    assert log[8].kind == "turn_ended"
    options = ["--json"] if as_json else []
    outputs = [amber("show", "long", "--at", seq, *options, "--db", db) for db in (stored, plain)]
    assert outputs[0].exit_code == outputs[1].exit_code == 0
    assert outputs[0].output == outputs[1].output
    if seq == 9 and not as_json:
        assert "Event: ■ t2 ends processed; 1 input → processed" in outputs[0].output


@pytest.mark.parametrize(
    ("options", "lazy"),
    [
        ((), True),
        (("--all",), True),
        (("--message", "u3"), True),
        (("--message", "u205"), True),  # added later: the head is read too
        (("--json",), False),
        (("--view", "history"), False),
    ],
)
def test_show_reads_lazily_only_for_the_text_state_and_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: tuple[str, ...], lazy: bool
) -> None:
    """The text state view and --message load the stored state lazily (decoding only the
    messages they print); --json and the other views read every message, eagerly. The
    output is the eager load's, byte for byte."""
    db = tmp_path / "s.db"
    with SQLiteStore(db, snapshot_every=100) as store:
        store.append(_events(TURNS, touch="u3"))
    seq = 3 * 205 + 1 if "u205" not in options else 3 * 100
    args = ("show", "long", "--at", seq, *options, "--db", db)
    loads: list[bool] = []
    load_span = SQLiteStore.load_span

    def spy(self: SQLiteStore, *args: Any, lazy: bool = False, **kwargs: Any) -> Any:
        loads.append(lazy)
        return load_span(self, *args, lazy=lazy, **kwargs)

    monkeypatch.setattr(SQLiteStore, "load_span", spy)
    result = amber(*args)
    assert loads
    assert set(loads) == {lazy}

    def eager(self: SQLiteStore, *args: Any, lazy: bool = False, **kwargs: Any) -> Any:
        return load_span(self, *args, **kwargs)

    monkeypatch.setattr(SQLiteStore, "load_span", eager)
    assert result.output == amber(*args).output
    assert (result.exit_code == 0) is ("u205" not in options)


@pytest.mark.parametrize("view", ["history", "clean"])
def test_the_history_and_clean_views_print_the_last_100_too(tmp_path: Path, view: str) -> None:
    """``--view history`` and ``--view clean`` of a long state print its last 100 messages
    under a line saying how many are left out, as the state view does (a user waited 12 s for
    62,645 lines of ``--view clean`` at the head of a long session); ``--all`` prints every
    one, and ``--json`` is the whole view."""
    db = _store(tmp_path, touch=None)
    cut = amber("show", "long", "--view", view, "--db", db)
    every = amber("show", "long", "--view", view, "--all", "--db", db)
    assert cut.exit_code == every.exit_code == 0
    questions = [f"question {n}" for n in range(TURNS)]
    shown = [q for q in questions if f"{q}\n" in cut.output or f"{q} " in cut.output]
    assert shown == questions[-100:]
    assert f"({TURNS - 100:,} earlier messages of {TURNS:,} not shown: the last 100; --all " in (
        cut.output
    )
    assert [q for q in questions if f"{q}\n" in every.output or f"{q} " in every.output] == (
        questions
    )
    assert "not shown" not in every.output


def test_show_at_a_forks_head_prints_the_last_100(tmp_path: Path) -> None:
    """User trial: at a fork's head (its first event, branch_imported, which brings every
    message) ``show`` printed all 210 messages, as if the event had touched each one; it
    prints the last 100 and says how many are left out, as elsewhere. ``inspect`` picks its
    messages the same way (``window_messages``)."""
    from actors._cli._views import window_messages

    db = _store(tmp_path, touch=None)
    assert amber("fork", "long", "--at", "-1", "--as", "copy", "--db", db).exit_code == 0
    result = amber("show", "copy", "--db", db)
    assert result.exit_code == 0, result.output
    assert _ids(result.output) == {f"u{n}" for n in range(TURNS - 100, TURNS)}
    assert (
        f"({TURNS - 100} earlier messages of {TURNS} not shown: the last 100; --all prints "
        "every one)" in result.output
    )
    every = amber("show", "copy", "--all", "--db", db)
    assert _ids(every.output) == {f"u{n}" for n in range(TURNS)}
    with SQLiteStore(db) as store:
        state = store.load_state("copy")
    # inspect's pane: every message is new at a fork's first state.
    shown, left_out = window_messages(state, frozenset(m.id for m in state.messages))
    assert [m.id for m in shown] == [f"u{n}" for n in range(TURNS - 100, TURNS)]
    assert left_out == TURNS - 100
