"""A runtime on a store whose event rows are damaged (edited, deleted) by another program.

What a load reads it checks: the snapshot, then every event after it, chained from the
snapshot's hash. A session whose rows there are damaged is refused (every call raises its
``CorruptRow``, which says what is damaged and what to do), nothing is appended to it, and
the runtime's other sessions run on. Rows behind the snapshot are not read by a load (that
is what makes it fast): damage there is found by ``amber check`` and ``amber recover``.
"""

from __future__ import annotations

import logging
import re
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from harness import WAIT

from actors import Runtime, ScriptedModel, reply
from runtime import Category, CorruptRow, MessageAdded, new_message
from runtime.store import SQLiteStore


def _store(db: Path) -> tuple[int, int]:
    """Sessions ``s`` and ``t`` answered once each (``s`` snapshotted), then three inputs
    for ``s`` stored after its snapshot by another writer (they wait for a runner): the
    snapshot's seq and the log's last."""
    with Runtime(model=ScriptedModel([], fallback=reply("ok")),
                 store=SQLiteStore(db, snapshot_every=3)) as rt:  # fmt: skip
        rt.ask("s", "q0", timeout=WAIT)
        rt.ask("t", "hello", timeout=WAIT)
    with SQLiteStore(db) as store:
        for n in range(3):
            at = datetime.now(UTC)
            message = new_message(
                Category.USER_QUESTION, id=f"late{n}", session_id="s", created_at=at,
                sender="Chii", content=f"late {n}",
            )  # fmt: skip
            seq = store.session("s").seq + 1
            store.append([MessageAdded(session_id="s", seq=seq, at=at, message=message)])
    return _snapshot_seq(db), _rows(db)[1]


def _snapshot_seq(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        (seq,) = conn.execute("SELECT seq FROM snapshots WHERE session_id = 's'").fetchone()
    conn.close()
    return int(seq)


def _rows(db: Path) -> tuple[int, int]:
    """How many events ``s`` has stored, and its last seq."""
    with sqlite3.connect(db) as conn:
        count, last = conn.execute(
            "SELECT count(*), max(seq) FROM events WHERE session_id = 's'"
        ).fetchone()
    conn.close()
    return int(count), int(last)


def _damage(db: Path, seq: int, how: str) -> None:
    """Another program (the log's guards dropped) edits or deletes the row at ``seq``."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("DROP TRIGGER events_no_update")
        conn.execute("DROP TRIGGER events_no_delete")
        if how == "body":
            conn.execute(
                "UPDATE events SET body = replace(body, 'late', 'LATE') "
                "WHERE session_id = 's' AND seq = ?",
                (seq,),
            )
        elif how == "hash":
            conn.execute(
                "UPDATE events SET hash = ? WHERE session_id = 's' AND seq = ?", ("0" * 64, seq)
            )
        else:
            conn.execute("DELETE FROM events WHERE session_id = 's' AND seq = ?", (seq,))
    finally:
        conn.close()


_ADVICE = (
    r" This runtime writes nothing to session 's' \(every call for it fails with this error\) "
    r"and runs its other sessions; 'amber check --db {db}' lists every damaged row of the "
    r"store\."
)
"""What a runtime adds to the store's error for damaged events (the store knows no CLI)."""

_TOLD = {
    "body": r"Session 's' event seq {seq} fails its checksum: .* The log cannot be trusted "
    r"past seq {before}; restore the file from a backup\.",
    "hash": r"Session 's' event seq {seq} fails its checksum: .* The log cannot be trusted "
    r"past seq {before}; restore the file from a backup\.",
    "delete": r"Session 's' event seq {seq} is missing: the next stored event has seq {after}\. "
    r"The log has a gap and cannot be replayed past seq {before}; restore the file from a "
    r"backup\.",
}


class TestDamageAfterTheSnapshot:
    @pytest.mark.parametrize("how", ["body", "hash", "delete"])
    @pytest.mark.parametrize("resume", ["all", "none"])
    def test_the_session_is_refused_and_the_others_run_on(
        self, tmp_path: Path, how: str, resume: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The load reads the rows after the snapshot and checks their chain: a send to
        the session (an ask, wait_idle, state too; with resume='all', its load at start)
        fails with the row's CorruptRow, naming the seq and what to do; nothing is appended to it (its waiting
        inputs are not answered onto a broken chain, the refused send is not stored), and
        the other session answers."""
        db = tmp_path / "amber.db"
        snapshot, last = _store(db)
        seq = last - 1
        assert seq > snapshot
        _damage(db, seq, how)
        before = _rows(db)
        with (
            caplog.at_level(logging.WARNING, "amber.session"),
            Runtime(model=ScriptedModel([], fallback=reply("ok")), store=db, resume=resume) as rt,
        ):
            with pytest.raises(CorruptRow) as raised:
                rt.send("s", "again")
            assert rt.ask("t", "still there?", timeout=WAIT).text == "ok"
            for call in (
                lambda: rt.ask("s", "again?", timeout=WAIT),
                lambda: rt.wait_idle("s", timeout=WAIT),
                lambda: rt.state("s"),
            ):
                with pytest.raises(CorruptRow) as also:
                    call()
                assert str(also.value) == str(raised.value)  # every call is told the same
        assert (raised.value.session_id, raised.value.seq) == ("s", seq)
        told = _TOLD[how].format(seq=seq, before=seq - 1, after=seq + 1)
        told += _ADVICE.format(db=re.escape(str(db)))
        assert re.fullmatch(told, str(raised.value)), str(raised.value)
        assert _rows(db) == before
        assert any("session s could not be loaded" in r.getMessage() for r in caplog.records)


class TestTheHashOfTheSnapshotsEvent:
    def test_names_the_event_not_the_snapshot(self, tmp_path: Path) -> None:
        """The hash stored with the event the snapshot was built at, edited: the call is
        told that event row fails its checksum (it was once told the snapshot was built
        from another log, the log was intact, and to rebuild: which mends nothing)."""
        db = tmp_path / "amber.db"
        snapshot, _ = _store(db)
        _damage(db, snapshot, "hash")
        before = _rows(db)
        with Runtime(model=ScriptedModel([], fallback=reply("ok")), store=db, resume="all") as rt:
            with pytest.raises(CorruptRow) as raised:
                rt.send("s", "again")
            assert rt.ask("t", "still there?", timeout=WAIT).text == "ok"
        assert (raised.value.session_id, raised.value.seq) == ("s", snapshot)
        told = str(raised.value)
        assert told.startswith(f"Session 's' event seq {snapshot} fails its checksum: "), told
        assert "intact" not in told, told
        assert _rows(db) == before


class TestDamageBehindTheSnapshot:
    @pytest.mark.parametrize("how", ["body", "delete"])
    def test_a_load_does_not_read_it_and_the_session_runs_on(
        self, tmp_path: Path, how: str
    ) -> None:
        """A known limit, pinned: the load starts at the snapshot and does not read the
        rows behind it (a full read of every log on every load is what the snapshot
        saves), so a session damaged there loads and is appended to. The new rows chain
        from the stored hashes; ``store.check()`` (``amber check``, ``amber recover``)
        still names the damaged row."""
        db = tmp_path / "amber.db"
        snapshot, _ = _store(db)
        with sqlite3.connect(db) as conn:
            (seq,) = conn.execute(
                "SELECT max(seq) FROM events WHERE session_id = 's' AND seq < ? "
                "AND body LIKE '%q0%'",
                (snapshot,),
            ).fetchone()
        conn.close()
        if how == "body":
            conn = sqlite3.connect(db, isolation_level=None)
            conn.execute("DROP TRIGGER events_no_update")
            conn.execute(
                "UPDATE events SET body = replace(body, 'q0', 'qX') "
                "WHERE session_id = 's' AND seq = ?",
                (seq,),
            )
            conn.close()
        else:
            _damage(db, seq, how)
        with Runtime(model=ScriptedModel([], fallback=reply("ok")), store=db) as rt:
            assert rt.ask("s", "again", timeout=WAIT).text == "ok"
        with SQLiteStore(db) as store:
            problems = store.check().problems
        named = [(p.session_id, p.seq) for p in problems if p.session_id is not None]
        assert named == [("s", seq)], problems


class TestALogCutShort:
    @pytest.mark.parametrize("resume", ["all", "none"])
    def test_the_runtime_starts_and_refuses_only_that_session(
        self, tmp_path: Path, resume: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The log's last row deleted (its summary row, intact, says the log is longer):
        a runtime with resume='all' once refused to start at all (the listing of sessions
        to resume raised the one session's CorruptRow). It starts, says which session it
        leaves alone and why, and runs the others; a send to that one is refused, nothing
        is appended to it."""
        db = tmp_path / "amber.db"
        _, last = _store(db)
        _damage(db, last, "delete")
        before = _rows(db)
        with (
            caplog.at_level(logging.WARNING, "amber"),
            Runtime(model=ScriptedModel([], fallback=reply("ok")), store=db, resume=resume) as rt,
        ):
            assert rt.ask("t", "still there?", timeout=WAIT).text == "ok"
            with pytest.raises(CorruptRow) as raised:
                rt.send("s", "again")
        assert (raised.value.session_id, raised.value.seq) == ("s", last)
        assert str(raised.value).startswith(
            f"Session 's' seq {last}: its summary row says the log ends at seq {last}, but it "
            f"ends at seq {last - 1}: events {last} to {last} were lost. Restore the file from "
            "a backup (rebuilding would make the shorter log look sound)."
        ), str(raised.value)
        advice = _ADVICE.format(db=re.escape(str(db)))
        assert re.search(advice + "$", str(raised.value)), str(raised.value)
        assert _rows(db) == before
        if resume == "all":
            (record,) = [r for r in caplog.records if "not resumed" in r.getMessage()]
            # Logged as before ``logging`` was imported on the first record (runtime._log).
            where = (record.name, record.levelname, record.funcName, Path(record.pathname).name)
            assert where == ("amber.runtime", "WARNING", "resumable", "_damage.py")
            assert record.amber_damage.session_id == "s"  # type: ignore[attr-defined]
            told = record.getMessage()
            assert told.startswith(f"session s is not resumed: Session 's' seq {last}: "), told
            assert re.search(advice + "$", told), told


class TestAnOrphanedTurn:
    @pytest.mark.parametrize("damaged", [False, True])
    def test_is_recovered_only_on_a_sound_log(self, tmp_path: Path, damaged: bool) -> None:
        """A turn left active by a runner that died, in a log damaged after the snapshot:
        a runtime that resumes it appends no recovery (it would chain onto rows that cannot
        be trusted, as ``amber recover`` leaves them); on a sound log it recovers the turn
        and answers the inputs the turn had claimed."""
        from runtime import TurnStarted

        db = tmp_path / "amber.db"
        _, last = _store(db)
        with SQLiteStore(db) as store:
            at = datetime.now(UTC)
            store.append([TurnStarted(session_id="s", seq=last + 1, at=at, turn_id="turn_dead",
                                      runner="a runner that died")])  # fmt: skip
            assert store.session("s").active_turn_id == "turn_dead"
        if damaged:
            _damage(db, last - 1, "body")
        before = _rows(db)
        with Runtime(model=ScriptedModel([], fallback=reply("ok")), store=db, resume="all") as rt:
            if damaged:
                with pytest.raises(CorruptRow, match=rf"^Session 's' event seq {last - 1} "):
                    rt.wait_idle("s", timeout=WAIT)
            else:
                state = rt.wait_idle("s", timeout=WAIT)
                assert state.active_turn is None
            assert rt.ask("t", "still there?", timeout=WAIT).text == "ok"
        assert (_rows(db) == before) is damaged


class TestADamagedSummaryRow:
    @pytest.mark.parametrize("resume", ["all", "none"])
    def test_every_call_is_refused_and_the_damage_stays_for_check(
        self, tmp_path: Path, resume: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A summary row edited by another program (its digest no longer matches): the
        warning of a resuming runtime says the session is not resumed and to rebuild it,
        and, as docs/reliability.md says, every call for it raises that ``CorruptRow``.
        A send once went through and wrote the row again: the warning's advice was false,
        and ``amber check`` no longer saw the damage. Nothing is appended to it; the other
        session answers; ``store.check()`` still names the row."""
        db = tmp_path / "amber.db"
        _, last = _store(db)
        conn = sqlite3.connect(db, isolation_level=None)
        conn.execute("UPDATE sessions SET messages = messages + 5 WHERE session_id = 's'")
        conn.close()
        before = _rows(db)
        with (
            caplog.at_level(logging.WARNING, "amber"),
            Runtime(model=ScriptedModel([], fallback=reply("ok")), store=db, resume=resume) as rt,
        ):
            assert rt.ask("t", "still there?", timeout=WAIT).text == "ok"
            with pytest.raises(CorruptRow) as raised:
                rt.send("s", "again")
            with pytest.raises(CorruptRow) as also:
                rt.ask("s", "again?", timeout=WAIT)
            assert str(also.value) == str(raised.value)
        told = str(raised.value)
        assert raised.value.session_id == "s"
        assert told.startswith(
            f"Session 's' seq {last}: its summary row does not match its digest: it was changed "
            "after it was written. Rebuild the summary with 'amber recover --rebuild --db "
        ), told
        assert _rows(db) == before
        if resume == "all":
            (warned,) = [r.getMessage() for r in caplog.records if "not resumed" in r.getMessage()]
            assert warned == f"session s is not resumed: {told}"
        with SQLiteStore(db) as store:
            problems = store.check().problems
        assert [(p.session_id, p.derived) for p in problems] == [("s", True)], problems
