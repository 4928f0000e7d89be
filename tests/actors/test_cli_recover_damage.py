"""``amber recover`` on a store whose event log is damaged where no summary row shows it.

An edited event row (its body or its hash) leaves the session's summary row
and latest snapshot sound: the listing ``recover`` starts from cannot tell.
``recover`` reads every log as ``amber check`` does, leaves a damaged session
alone (no orphan_recovered event appended to a broken chain), says what it did
not repair and what would, and exits 1.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from cli_support import Recorded, amber, recorded
from test_cli_damage import raw

from actors._cli import ExitCode

__all__ = ["recorded"]


def edit(db: Path, session: str, seq: int, what: str) -> None:
    """Another program edits one event row: its body (still a valid event) or its hash."""
    with raw(db) as conn:
        if what == "body":
            conn.execute(
                "UPDATE events SET body = replace(body, 'Chii', 'Chie') "
                "WHERE session_id = ? AND seq = ?",
                (session, seq),
            )
        else:
            conn.execute(
                "UPDATE events SET hash = ? WHERE session_id = ? AND seq = ?",
                ("0" * 64, session, seq),
            )


def events_of(db: Path, session: str) -> int:
    with sqlite3.connect(db) as conn:
        (count,) = conn.execute(
            "SELECT count(*) FROM events WHERE session_id = ?", (session,)
        ).fetchone()
    conn.close()
    return int(count)


class TestRecoverFindsLogDamage:
    @pytest.mark.parametrize("what", ["body", "hash"])
    def test_says_what_it_did_not_repair_and_exits_1(
        self, recorded: Recorded, tmp_path: Path, what: str
    ) -> None:
        """It printed 'No orphaned turns' and exited 0, as if the store were sound."""
        db = recorded.copy(tmp_path)
        edit(db, "demo", 1, what)
        result = amber("recover", "--db", db)
        assert result.exit_code == ExitCode.FAILED, result.output
        assert result.stderr == ""
        lines = result.stdout.splitlines()
        assert lines[0] == "No orphaned turns: none idle for more than 300 s."
        (left,) = [line for line in lines if line.startswith("Left alone: ")]
        assert left.startswith("Left alone: session 'demo' seq 1: Session 'demo' event seq 1 ")
        assert left.endswith("restore the file from a backup. [the log itself is damaged]")
        assert lines[-1] == (
            "Not repaired: the event log of 1 session(s) is damaged (demo); recover cannot mend "
            "events. Restore the file from a backup, or import an export of the session made "
            f"before the damage (amber import FILE --as NEW --db {db}); amber check --db {db} "
            "lists every problem."
        )

    def test_json_lists_the_damage(self, recorded: Recorded, tmp_path: Path) -> None:
        db = recorded.copy(tmp_path)
        edit(db, "demo", 1, "body")
        result = amber("recover", "--json", "--db", db)
        assert result.exit_code == ExitCode.FAILED, result.output
        data = json.loads(result.stdout)
        assert data["recovered"] == []
        ((damaged),) = data["damaged"]
        assert (damaged["session_id"], damaged["seq"]) == ("demo", 1)
        assert "fails its checksum" in damaged["error"]

    def test_a_damaged_orphan_is_left_alone_the_others_recovered(
        self, recorded: Recorded, tmp_path: Path
    ) -> None:
        """An orphaned turn in a damaged log is not recovered: its event would chain onto
        rows that cannot be trusted. The sound orphan beside it is."""
        db = recorded.copy(tmp_path)
        seq = recorded.demo.input_seq
        for name in ("orphan", "damaged"):
            forked = amber("fork", "demo", "--at", seq, "--as", name, "--db", db)
            assert forked.exit_code == ExitCode.OK, forked.output
        edit(db, "damaged", 1, "body")
        before = events_of(db, "damaged")
        result = amber("recover", "--older-than", "0", "--db", db)
        assert result.exit_code == ExitCode.FAILED, result.output
        assert "Recovered orphan: " in result.stdout
        assert "Recovered damaged" not in result.stdout
        assert "Left alone: session 'damaged' seq 1: " in result.stdout
        assert events_of(db, "damaged") == before
        assert result.stdout.splitlines()[-1].startswith(
            "Not repaired: the event log of 1 session(s) is damaged (damaged); "
        )

    def test_a_damaged_snapshot_names_rebuild(self, recorded: Recorded, tmp_path: Path) -> None:
        """Damage only in derived rows that the listing does not read (a snapshot): recover
        names the command that mends it."""
        from runtime.store import SQLiteStore

        db = recorded.copy(tmp_path)
        with SQLiteStore(db, snapshot_every=5) as store:
            store.rebuild("demo")  # a snapshot at its head
        with raw(db) as conn:
            conn.execute(
                "UPDATE snapshot_chunks SET body = X'7B7D' "
                "WHERE session_id = 'demo' AND part = 'messages'"
            )
        result = amber("recover", "--db", db)
        assert result.exit_code == ExitCode.FAILED, result.output
        assert f"[amber recover --rebuild --db {db} mends it]" in result.stdout
        assert result.stdout.splitlines()[-1].startswith("Not repaired: the derived rows of ")
        assert result.stdout.splitlines()[-1] == (
            "Not repaired: the derived rows of 1 session(s) (demo) are damaged: amber recover "
            f"--rebuild --db {db} mends them; amber check --db {db} lists every problem."
        )
        rebuilt = amber("recover", "--rebuild", "--db", db)
        assert rebuilt.exit_code == ExitCode.OK, rebuilt.output
        assert amber("recover", "--db", db).exit_code == ExitCode.OK

    def test_a_sound_store_is_still_exit_0(self, recorded: Recorded) -> None:
        result = amber("recover", "--db", recorded.db)
        assert result.exit_code == ExitCode.OK, result.output
        assert result.stdout == "No orphaned turns: none idle for more than 300 s.\n"

    def test_quick_reads_only_the_summaries(self, recorded: Recorded, tmp_path: Path) -> None:
        """--quick skips the scan (as recover did before): a large store's cron job pays only
        for the summary rows, and the edited row goes unseen, as documented."""
        db = recorded.copy(tmp_path)
        edit(db, "demo", 1, "body")
        result = amber("recover", "--quick", "--db", db)
        assert result.exit_code == ExitCode.OK, result.output
        assert result.stdout == "No orphaned turns: none idle for more than 300 s.\n"
