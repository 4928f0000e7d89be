"""``amber inspect``'s second round: views both ways, one message whole, a wide timeline."""

from __future__ import annotations

import io

from cli_support import Recorded, recorded
from rich.console import Console
from test_inspect import demo, run
from textual.containers import Horizontal
from textual.pilot import Pilot
from textual.widgets import DataTable, OptionList, Static
from web_support import Ids

from actors._inspect import InspectApp, MessageScreen, PickMessage
from runtime import Timeline

__all__ = ["demo", "recorded"]


def shown(widget: Static) -> str:
    """A static widget's content as plain text."""
    console = Console(file=io.StringIO(), width=200, record=True, color_system=None)
    console.print(widget.content)
    return console.export_text()


class TestPolish:
    def test_views_both_ways_wide_timeline_and_gutters(self, demo: Timeline) -> None:
        """V steps back through the views; w widens the timeline; h/l scroll it; gutters."""

        async def scenario(app: InspectApp, pilot: Pilot[None]) -> None:
            await pilot.press("V")
            assert app.view == "gemini"
            await pilot.press("V")
            assert app.view == "anthropic"
            await pilot.press("v", "v")
            assert app.view == "state"
            for selector in ("#timeline", "#pane"):  # a scrollbar never covers text
                assert app.query_one(selector).styles.scrollbar_gutter == "stable"
            table = app.query_one("#timeline", DataTable)
            narrow = table.size.width
            assert table.max_scroll_x > 0  # the change column is cut at 45% of the screen
            await pilot.press("l")
            assert table.scroll_x == 8
            await pilot.press("h")
            assert table.scroll_x == 0
            await pilot.press("w")
            await pilot.pause()
            assert app.query_one(Horizontal).has_class("-wide")
            assert table.size.width > narrow
            assert not app.query_one("#pane").display
            await pilot.press("w")
            await pilot.pause()
            assert table.size.width == narrow

        run(InspectApp(demo, seq=40), scenario)

    def test_o_opens_one_message_whole(self, demo: Timeline, recorded: Recorded) -> None:
        """o lists the event's messages first, then the newest; Enter shows one whole."""
        seq = recorded.demo.input_seq  # the interrupting question is added here
        ids = Ids(recorded.demo.state)

        async def scenario(app: InspectApp, pilot: Pilot[None]) -> None:
            await pilot.press("o")
            picker = app.screen
            assert isinstance(picker, PickMessage)
            options = picker.query_one(OptionList)
            assert [options.get_option_at_index(i).id for i in range(3)] == [
                ids.msg(14),  # touched by the event
                ids.msg(13),  # then the newest first
                ids.msg(12),
            ]
            await pilot.press("enter")
            await pilot.pause()
            detail = app.screen
            assert isinstance(detail, MessageScreen)
            text = shown(detail.query_one("#detail", Static))
            assert "Actually, stop: one line is enough." in text
            assert "pending_agent" in text
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, MessageScreen | PickMessage)
            await pilot.press("o", "down", "enter")
            await pilot.pause()
            assert isinstance(app.screen, MessageScreen)
            assert app.screen.message.id == ids.msg(13)
            await pilot.press("escape", "home", "o")
            await pilot.pause()
            assert not isinstance(app.screen, PickMessage)  # nothing to open at seq 0

        run(InspectApp(demo, seq=seq), scenario)
