"""`amber sessions`: each session's cost and whether it waits for approval, as listed.

The listing reads them from the summary rows; these tests pin what it prints
(text and ``--json``) for sessions with priced and unpriced model calls, one
that waits for approval, a fork and an import, and after a rebuild.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import amber

from runtime.store import SQLiteStore
from tests.runtime.store.costed import costed_session

TEXT = """\
session  events  messages  active turn               last active           cost   statuses
a        22      8         t20 (waits for approval)  2026-05-27 12:00 UTC  $0.3+  \
1 processing · 3 processed · 3 pending · 1 responded
b        6       2         -                         2026-05-27 12:00 UTC  $0.25  1 processed · 1 pending
c        2       1         t2                        2026-05-27 12:00 UTC  -      1 processing
3 session(s) in {db}
"""


def _rows(db: Path) -> list[dict[str, Any]]:
    result = amber("sessions", "--json", "--db", db)
    assert result.exit_code == 0, result.output
    rows: list[dict[str, Any]] = json.loads(result.output)
    return rows


def _listed(db: Path) -> dict[str, tuple[object, object]]:
    return {r["session_id"]: (r["cost_usd"], r["waits_for_approval"]) for r in _rows(db)}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "costed.db"
    with SQLiteStore(path) as store:
        store.append(costed_session("a", [0.1, 0.2, None], waiting=True)[0])
        store.append(costed_session("b", [0.25])[0])
        store.append(costed_session("c", [], waiting=True)[0][:2])
    return path


class TestListed:
    def test_text(self, db: Path) -> None:
        """A row per session: its cost ('+': some calls have no price), and the active turn
        marked when it only waits for approval."""
        result = amber("sessions", "--db", db)
        assert result.exit_code == 0, result.output
        assert [line.rstrip() for line in result.output.splitlines()] == [
            line.rstrip() for line in TEXT.format(db=db).splitlines()
        ]

    def test_json(self, db: Path) -> None:
        """--json: the cost in US dollars (None without a priced call) and the flag."""
        rows = {row["session_id"]: row for row in _rows(db)}
        assert {s: (r["cost_usd"], r["waits_for_approval"]) for s, r in rows.items()} == {
            "a": (0.3, True),
            "b": (0.25, False),
            "c": (None, False),
        }
        assert list(rows["a"]) == [
            "session_id", "seq", "created_at", "updated_at", "messages", "counts",
            "active_turn_id", "active_turn_started_at", "snapshot_seq", "cost_usd",
            "waits_for_approval",
        ]  # fmt: skip

    def test_fork_import_and_rebuild_list_the_same(self, db: Path, tmp_path: Path) -> None:
        """A fork at the head waits as its source does; an import costs what its source
        did; a rebuild lists the same."""
        assert amber("fork", "a", "--at", "-1", "--as", "f", "--db", db).exit_code == 0
        other, exported = tmp_path / "other.db", tmp_path / "b.json"
        assert amber("export", "b", "-o", exported, "--db", db).exit_code == 0
        imported = amber("import", exported, "--db", other)
        assert imported.exit_code == 0, imported.output
        rows = {row["session_id"]: row for row in _rows(db)}
        # A fork costs nothing of its own yet (its source's calls are not its audit rows).
        assert (rows["f"]["cost_usd"], rows["f"]["waits_for_approval"]) == (None, True)
        (row,) = _rows(other)
        assert (row["session_id"], row["cost_usd"], row["waits_for_approval"]) == ("b", 0.25, False)
        before = _listed(db)
        assert (
            amber("recover", "--rebuild", "--older-than", "1000000000", "--db", db).exit_code == 0
        )
        assert _listed(db) == before
