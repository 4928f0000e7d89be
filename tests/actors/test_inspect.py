"""``amber inspect``, driven headless with Textual's pilot.

Each test opens the app on a store written by a real run, presses keys and
reads what the panes show.
"""

from __future__ import annotations

import asyncio
import io
import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import pytest
from cli_support import Recorded, recorded
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from actors._inspect import InspectApp
from runtime import Category, MessageAdded, Status, StatusChanged, Timeline, new_message
from runtime.store import SQLiteStore

__all__ = ["recorded"]

Scenario = Callable[[InspectApp, Pilot[None]], Awaitable[None]]


@pytest.fixture(scope="module")
def demo(recorded: Recorded) -> Timeline:
    """The demo session's timeline."""
    with SQLiteStore(recorded.db) as store:
        return store.load_timeline("demo")


def added(timeline: Timeline, message_id: str) -> int:
    """The seq of the event that added ``message_id``."""
    message = timeline.head.message(message_id)
    assert message.event_seq is not None
    return message.event_seq


def pane(app: InspectApp) -> str:
    """The right pane as plain text, the way it is drawn."""
    console = Console(file=io.StringIO(), width=140, record=True, color_system=None)
    console.print(app.query_one("#state", Static).content)
    return console.export_text()


def run(app: InspectApp, scenario: Scenario) -> None:
    """Run ``scenario`` against ``app`` in a headless terminal of 160 x 50."""

    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            await pilot.pause()
            await scenario(app, pilot)

    asyncio.run(main())


class TestInspect:
    def test_opens_at_the_given_seq_with_the_timeline(self, demo: Timeline) -> None:
        """One timeline row per state; the pane shows the state at --at and what changed."""

        async def scenario(app: InspectApp, pilot: Pilot[None]) -> None:
            table = app.query_one("#timeline", DataTable)
            assert table.row_count == demo.last_seq + 1  # seq 0 too
            assert table.cursor_row == 2
            text = pane(app)
            assert text.startswith(f"demo at seq 2 of {demo.last_seq}")
            assert "Event: ▶ turn_5be1ef79_000002 starts, claims msg_5be1ef79_000001" in text
            assert "~ msg_5be1ef79_000001 status: pending_agent → processing" in text
            assert "▶ turn_5be1ef79_000002 turn: (none) → active" in text
            assert "Active turn: turn_5be1ef79_000002" in text
            assert app.title == f"amber inspect · seq 2 of {demo.last_seq} · state"

        run(InspectApp(demo, seq=2), scenario)

    def test_steps_forward_and_back(self, demo: Timeline) -> None:
        """down/j step forward, up/k step back; the pane follows the cursor."""
        thought = added(demo, "msg_5be1ef79_000005")
        result = added(demo, "msg_5be1ef79_000009")

        async def scenario(app: InspectApp, pilot: Pilot[None]) -> None:
            await pilot.press("down")
            assert app.seq == thought
            assert "+ msg_5be1ef79_000005 thought responded: Python's integers are exact" in pane(
                app
            )
            await pilot.press(*["j"] * (result - thought))
            assert app.seq == result
            assert (
                "+ msg_5be1ef79_000009 tool result responded: ✅ 1267650600228229401496703205376"
                in (pane(app))
            )
            await pilot.press("up", "k")
            assert app.seq == result - 2
            assert pane(app).startswith(f"demo at seq {result - 2} of {demo.last_seq}")
            await pilot.press("home")
            assert app.seq == 0
            assert "0 messages" in pane(app)
            await pilot.press("end")
            assert app.seq == demo.last_seq
            await pilot.press("g")
            assert app.seq == 0

        run(InspectApp(demo, seq=thought - 1), scenario)

    def test_added_and_changed_rows_are_marked(self, demo: Timeline) -> None:
        """The message table marks the rows the last event added (+) or changed (~)."""
        interrupt = next(
            e.seq for e in demo.events() if e.kind == "turn_ended" and "interrupt" in str(e)
        )

        async def scenario(app: InspectApp, pilot: Pilot[None]) -> None:
            rows = {
                line.split()[2]: line.split()[0]
                for line in pane(app).splitlines()
                if line.strip().startswith(("~", "+"))
                and len(line.split()) > 2
                and line.split()[2].startswith("msg_")
            }
            assert rows == {"msg_5be1ef79_000031": "~", "msg_5be1ef79_000036": "~"}
            await pilot.press("k")  # the interrupt's batch marked the running call first
            assert "~ msg_5be1ef79_000036" in pane(app)
            await pilot.press("k")
            text = pane(app)
            assert "+ msg_5be1ef79_000039 user question pending_agent" in text

        run(InspectApp(demo, seq=interrupt), scenario)

    def test_jumps_between_turns_and_to_errors(self, demo: Timeline) -> None:
        """] and [ jump to turn starts and ends; e jumps to the failing tool result."""
        error_seq = next(
            e.seq for e in demo.events() if getattr(getattr(e, "message", None), "is_error", False)
        )

        async def scenario(app: InspectApp, pilot: Pilot[None]) -> None:
            await pilot.press("]")
            assert app.seq == 2  # turn_5be1ef79_000002 starts
            await pilot.press("]")
            assert demo.event(app.seq).kind == "turn_ended"
            await pilot.press("[")
            assert app.seq == 2
            await pilot.press("e")
            assert app.seq == error_seq
            assert "❌ exception: ConnectionError" in pane(app)

        run(InspectApp(demo, seq=0), scenario)

    def test_views_cycle(self, demo: Timeline) -> None:
        """v shows the history, the model's view and each provider request of that state."""
        interrupt = next(
            e.seq for e in demo.events() if e.kind == "turn_ended" and "interrupt" in str(e)
        )

        async def scenario(app: InspectApp, pilot: Pilot[None]) -> None:
            await pilot.press("v")
            assert app.view == "history"
            assert "session_history: 14 messages, phased" in pane(app)
            await pilot.press("v")
            assert "(made by the view)" in pane(app)  # the interrupted call's result
            await pilot.press("v")
            assert app.view == "openai"
            assert '"role": "tool"' in pane(app)
            await pilot.press("v")
            assert app.view == "openai-responses"
            assert '"type": "function_call_output"' in pane(app)
            await pilot.press("v", "v", "v")
            assert app.view == "state"
            await pilot.press("down")  # the view stays when the cursor moves
            assert app.seq == interrupt + 1
            assert app.title.endswith("· state")

        run(InspectApp(demo, seq=interrupt), scenario)

    def test_quits(self, demo: Timeline) -> None:
        """q leaves the app."""

        async def scenario(app: InspectApp, pilot: Pilot[None]) -> None:
            await pilot.press("q")
            await pilot.pause()
            assert not app.is_running

        run(InspectApp(demo), scenario)

    def test_a_row_highlighted_while_the_app_closes_is_ignored(self, demo: Timeline) -> None:
        """The table's note that a row was highlighted can reach the app after its widgets
        are gone (it exits meanwhile): it is dropped, not an error that fails the exit (a
        suite under load saw `NoMatches: '#timeline'` there)."""

        async def scenario(app: InspectApp, pilot: Pilot[None]) -> None:
            table = app.query_one("#timeline", DataTable)
            late = DataTable.RowHighlighted(table, 3, table.coordinate_to_cell_key((3, 0))[0])
            await app.query_one("#state", Static).parent.remove()  # type: ignore[union-attr]
            await table.remove()
            app.on_data_table_row_highlighted(late)  # no NoMatches
            assert app.seq == 2

        run(InspectApp(demo, seq=2), scenario)


class TestLongStates:
    def test_a_long_state_shows_its_last_messages_and_those_the_event_touched(self) -> None:
        """Of more than 200 messages the pane shows the last 100 and the earlier ones the
        event touched (here: delivered), with a line counting the others, as ``show`` does."""
        timeline = Timeline.start("long")
        at = datetime(2026, 1, 1, tzinfo=UTC)

        def append(cls: type, **fields: object) -> None:
            nonlocal timeline
            seq = timeline.last_seq + 1
            timeline = timeline.append(cls(session_id="long", seq=seq, at=at, **fields))

        for n in range(250):
            message = new_message(
                Category.NOTIFICATION, id=f"n{n}", session_id="long", created_at=at, content="."
            )
            append(MessageAdded, message=message)
        early = timeline.head.message("n3")
        append(StatusChanged, message_id="n3", expected=early.status, status=Status.DELIVERED)
        app = InspectApp(timeline)
        console = Console(file=io.StringIO(), width=140, record=True, color_system=None)
        console.print(app.render_state(timeline.last_seq))
        text = console.export_text()
        shown = re.findall(r"^\S?\s*\d+\s+(n\d+)\s", text, re.MULTILINE)
        assert shown == ["n3", *(f"n{n}" for n in range(150, 250))]
        assert "(149 earlier unchanged messages not shown)" in text

    def test_a_forks_first_state_does_not_call_its_messages_unchanged(self) -> None:
        """At a fork's first state the branch import added every message: the note counts
        the hidden ones as added, not "unchanged"."""
        at = datetime(2026, 1, 1, tzinfo=UTC)
        source = Timeline.start("src")
        for n in range(250):
            message = new_message(
                Category.NOTIFICATION, id=f"n{n}", session_id="src", created_at=at, content="."
            )
            source = source.append(
                MessageAdded(session_id="src", seq=n + 1, at=at, message=message)
            )
        fork = source.fork(source.last_seq, "f", at=at)
        console = Console(file=io.StringIO(), width=140, record=True, color_system=None)
        console.print(InspectApp(fork).render_state(1))
        text = console.export_text()
        assert "(150 earlier messages not shown, 150 of them added or changed by this event)" in (
            text
        )
        assert "unchanged" not in text
