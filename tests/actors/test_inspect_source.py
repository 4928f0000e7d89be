"""``amber inspect`` on a store read lazily, and its table's window.

A ``StoredSession`` must show what the whole timeline shows (any state, any
event, every row), reading only spans around the seqs asked for; the app
must draw the state at once and the rows as they come, and keep a window of
rows whatever the session's length.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import Recorded, recorded
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_inspect import Scenario, pane
from textual.pilot import Pilot
from textual.widgets import DataTable

from actors import _inspect_source
from actors._inspect import InspectApp, TimelineTable
from actors._inspect_source import SPANS_KEPT, StoredSession, TimelineSource
from runtime import InvalidArgument, Timeline, reports_error, to_data
from runtime.store import SQLiteStore

__all__ = ["recorded"]


@pytest.fixture(scope="module")
def demo(recorded: Recorded) -> Timeline:
    """The demo session's whole timeline, the reference."""
    with SQLiteStore(recorded.db) as store:
        return store.load_timeline("demo")


def stored(db: Path, session: str = "demo") -> StoredSession:
    """The session read lazily from ``db``."""
    return StoredSession(lambda: SQLiteStore(db), session)


def run(app: InspectApp, scenario: Scenario, *, rows: bool = True) -> None:
    """Run ``scenario`` headless; with ``rows``, after every row was read."""

    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            await pilot.pause()
            if rows:
                await app.workers.wait_for_complete()
                await pilot.pause()
            await scenario(app, pilot)

    asyncio.run(main())


def seqs_shown(app: InspectApp) -> list[int]:
    """The seqs of the table's rows, top to bottom."""
    table = app.query_one("#timeline", DataTable)
    return [int(str(table.get_row_at(row)[0])) for row in range(table.row_count)]


class TestStoredSession:
    @settings(
        max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(data=st.data())
    def test_any_state_and_event_in_any_order_is_the_timelines(
        self,
        data: st.DataObject,
        demo: Timeline,
        recorded: Recorded,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """States and events asked in any order equal the whole timeline's, read in spans
        (of 5 here, so that there are many) of which at most SPANS_KEPT are kept."""
        monkeypatch.setattr(_inspect_source, "SPAN", 5)
        seqs = data.draw(st.lists(st.integers(0, demo.last_seq), min_size=1, max_size=30))
        source = stored(recorded.db)
        try:
            assert (source.first_seq, source.last_seq) == (0, demo.last_seq)
            for seq in seqs:
                assert to_data(source.at(seq)) == to_data(demo.at(seq))
                if seq:
                    assert source.event(seq) == demo.event(seq)
                assert len(source._spans) <= SPANS_KEPT
            assert source.reads <= 2 * len(seqs)
        finally:
            source.close()

    def test_nearby_seqs_read_one_span(self, recorded: Recorded) -> None:
        """Stepping through a span's states, and back to the state before it, reads once."""
        source = stored(recorded.db)
        try:
            for seq in (10, 11, 12, 9, 30, 12, 10):
                source.at(seq)
                source.event(seq)
            assert source.reads == 1
        finally:
            source.close()

    def test_entries_and_events_are_the_timelines(self, demo: Timeline, recorded: Recorded) -> None:
        """Every (event, before, after) of a walk, and every event, equals the timeline's."""
        reference = TimelineSource(demo)
        source = stored(recorded.db)
        try:
            for first, last in ((1, demo.last_seq), (20, 30), (demo.last_seq, demo.last_seq)):
                walked = [(e, to_data(b), to_data(a)) for e, b, a in source.entries(first, last)]
                expected = [
                    (e, to_data(b), to_data(a)) for e, b, a in reference.entries(first, last)
                ]
                assert walked == expected
                assert [e.seq for e, _, _ in walked] == list(range(first, last + 1))
            assert list(source.events()) == list(reference.events()) == demo.events()
            flags = [(e.kind, reports_error(e)) for e in demo.events()]
            assert any(error for _, error in flags)  # the demo has errors to mark
            assert list(source.flags()) == list(reference.flags()) == flags
        finally:
            source.close()

    def test_an_unknown_session_is_an_error_and_closes_the_store(self, recorded: Recorded) -> None:
        """A session the store lacks fails at once (and leaves no connection open)."""
        opened: list[SQLiteStore] = []

        def opener() -> SQLiteStore:
            opened.append(SQLiteStore(recorded.db))
            return opened[-1]

        with pytest.raises(Exception, match="nope"):
            StoredSession(opener, "nope")
        assert len(opened) == 1
        assert opened[0].closed


class TestAppOnAStore:
    def test_draws_every_row_and_the_state_as_from_the_timeline(
        self, demo: Timeline, recorded: Recorded
    ) -> None:
        """Read lazily, the app shows the same rows and the same pane as from memory."""
        expected: dict[str, object] = {}

        async def reference(app: InspectApp, pilot: Pilot[None]) -> None:
            expected["pane"] = pane(app)
            expected["rows"] = seqs_shown(app)

        run(InspectApp(demo, seq=20), reference)
        source = stored(recorded.db)

        async def scenario(app: InspectApp, pilot: Pilot[None]) -> None:
            assert not app.loading
            assert seqs_shown(app) == expected["rows"] == list(range(demo.last_seq + 1))
            assert app.query_one("#timeline", DataTable).cursor_row == 20
            assert pane(app) == expected["pane"]
            assert source.reads == 1  # the span of the first draw holds the window's rows
            await pilot.press("]")
            assert demo.event(app.seq).kind in ("turn_started", "turn_ended")

        try:
            run(InspectApp(source, seq=20), scenario)
        finally:
            source.close()

    def test_the_state_and_its_rows_are_drawn_before_the_marks(
        self, demo: Timeline, recorded: Recorded
    ) -> None:
        """While the marks (turn boundaries, errors) are still being read, the pane and the
        table show the seq asked for, j/k step, and the jumps say the marks are still
        coming; once read, the jumps work."""
        release = threading.Event()

        class Held(StoredSession):
            def flags(self) -> Iterator[tuple[str, bool]]:
                release.wait()
                yield from super().flags()

        source = Held(lambda: SQLiteStore(recorded.db), "demo")

        async def scenario(app: InspectApp, pilot: Pilot[None]) -> None:
            table = app.query_one("#timeline", DataTable)
            try:  # the reader waits for release: never leave it waiting
                assert app.loading
                assert seqs_shown(app) == list(range(demo.last_seq + 1))
                assert table.cursor_row == 30
                assert pane(app).startswith(f"demo at seq 30 of {demo.last_seq}")
                await pilot.press("k", "k")
                assert app.seq == 28
                assert table.cursor_row == 28
                assert pane(app).startswith(f"demo at seq 28 of {demo.last_seq}")
                await pilot.press("]")
                await pilot.pause()
                assert app.seq == 28
                assert any("Still reading the timeline" in n.message for n in app._notifications)
            finally:
                release.set()
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert not app.loading
            await pilot.press("]")
            assert app.seq > 28
            assert demo.event(app.seq).kind in ("turn_started", "turn_ended")
            assert table.cursor_row == app.seq

        try:
            run(InspectApp(source, seq=30), scenario, rows=False)
        finally:
            release.set()
            source.close()

    def test_quitting_does_not_wait_for_the_marks(self, demo: Timeline, recorded: Recorded) -> None:
        """q while the marks are still coming (here: a reader that would never end) stops
        the reader between two batches, and the app exits."""
        batches = threading.Semaphore(0)

        class Endless(StoredSession):
            def flags(self) -> Iterator[tuple[str, bool]]:
                while True:  # the demo's flags, over and over
                    yield from TimelineSource(demo).flags()
                    batches.release()

        source = Endless(lambda: SQLiteStore(recorded.db), "demo")

        async def scenario(app: InspectApp, pilot: Pilot[None]) -> None:
            batches.acquire()  # the reader is running
            assert app.loading
            await pilot.press("q")

        try:
            run(InspectApp(source, seq=3), scenario, rows=False)  # returns: the reader stopped
        finally:
            source.close()

    def test_a_damaged_row_stops_the_rows_and_shows_the_error(
        self, recorded: Recorded, tmp_path: Path
    ) -> None:
        """An event row that does not decode: the rows and the marks stop before it with a
        notice naming it, and a state past it shows the error in the pane instead of
        failing; the states before it show as ever."""
        db = recorded.copy(tmp_path)
        with contextlib.closing(sqlite3.connect(db)) as conn, conn:
            conn.execute("DROP TRIGGER events_no_update")  # a program that bypasses Amber
            conn.execute("UPDATE events SET body = 'garbage' WHERE session_id = 'demo' AND seq = 7")
        source = stored(db)

        async def scenario(app: InspectApp, pilot: Pilot[None]) -> None:
            table = app.query_one("#timeline", DataTable)
            assert not app.loading
            assert seqs_shown(app) == list(range(8))  # 7: the damaged row, named
            assert "damaged: CorruptRow" in str(table.get_row_at(7)[2])
            notes = sorted(n.message for n in app._notifications if n.severity == "error")
            assert len(notes) == 2
            assert notes[0].startswith("The timeline stops at seq 6: ")
            assert notes[1].startswith("The turn and error jumps stop at seq 6: ")
            assert all("event seq 7 is corrupt" in note for note in notes)
            assert len(app._marks) == 7
            assert "CorruptRow" in pane(app)
            assert table.cursor_row == 7  # on the damaged row, the pane at seq 10
            reads = source.reads
            await pilot.press("j", "j", "k")  # past the damage: no new read, no new notice
            assert app.seq == 11
            assert "CorruptRow" in pane(app)
            assert source.reads == reads
            assert len([n for n in app._notifications if n.severity == "error"]) == 2
            await pilot.press("home")
            assert app.seq == 0
            assert "0 messages" in pane(app)
            await pilot.press("j", "j")
            assert app.seq == 2
            assert table.cursor_row == 2
            await pilot.press("end")
            assert app.seq == 47
            assert table.cursor_row == 7

        try:
            run(InspectApp(source, seq=10), scenario)
        finally:
            source.close()


class TestWindow:
    def test_the_table_holds_a_window_that_follows_the_cursor(self, demo: Timeline) -> None:
        """With a window of 10 rows, the table never holds more; stepping past its edge,
        paging, jumping to the ends and to errors move it, and its rows are the right
        seqs with the cursor on the seq shown."""

        def check(app: InspectApp) -> None:
            shown = seqs_shown(app)
            table = app.query_one("#timeline", DataTable)
            assert len(shown) == 10
            assert shown == list(range(shown[0], shown[0] + 10))
            assert shown[table.cursor_row] == app.seq

        async def scenario(app: InspectApp, pilot: Pilot[None]) -> None:
            check(app)
            assert app.seq == 3
            await pilot.press(*["j"] * 12)
            assert app.seq == 15
            check(app)
            await pilot.press("down", "down")
            assert app.seq == 17
            check(app)
            await pilot.press("up")
            assert app.seq == 16
            await pilot.press("pagedown")
            assert app.seq > 17
            check(app)
            await pilot.press("end")
            assert app.seq == demo.last_seq
            check(app)
            assert seqs_shown(app)[-1] == demo.last_seq
            await pilot.press("home")
            assert app.seq == 0
            check(app)
            await pilot.press("e")
            assert "❌ exception: ConnectionError" in pane(app)
            check(app)

        run(InspectApp(demo, seq=3, window=10), scenario)

    def test_keys_faster_than_the_pane_are_not_lost(self, demo: Timeline) -> None:
        """Ten steps queued before the app handles any of their moves (a held key): the
        cursor goes ten states, across the window's edge and back, with arrows and j/k."""

        async def scenario(app: InspectApp, pilot: Pilot[None]) -> None:
            table = app.query_one("#timeline", TimelineTable)
            for _ in range(10):
                table.action_cursor_down()
            await pilot.pause()
            assert app.seq == 13
            assert seqs_shown(app)[table.cursor_row] == 13
            for _ in range(12):
                app.action_step(-1)
            await pilot.pause()
            assert app.seq == 1
            assert seqs_shown(app)[table.cursor_row] == 1
            table.action_scroll_bottom()  # ctrl+end: the head, not the window's last row
            await pilot.pause()
            assert app.seq == demo.last_seq
            table.action_scroll_top()
            await pilot.pause()
            assert app.seq == 0

        run(InspectApp(demo, seq=3, window=10), scenario)

    def test_a_window_must_hold_a_row(self, demo: Timeline) -> None:
        """A window of no rows is refused, saying what is expected."""
        with pytest.raises(InvalidArgument, match="at least 1 row, got 0"):
            InspectApp(demo, window=0)
