"""Channel visibility: the table adapters consult (seed 000 §5.3)."""

from __future__ import annotations

import pytest
from conftest import Session

from runtime import (
    CHANNEL_RULES,
    Category,
    ChannelKind,
    ChannelRule,
    Presentation,
    ProjectionError,
    Visibility,
    channel_rule,
    visibility,
)

SHOWN, HIDDEN, ABSORBED = Visibility.SHOWN, Visibility.HIDDEN, Visibility.ABSORBED
INTERMEDIATES = (Category.THOUGHT, Category.TOOL_CALL, Category.TOOL_RESULT)
USER_FACING = (
    Category.USER_QUESTION,
    Category.CRON_PROMPT,
    Category.COMPACTION_REQUEST,
    Category.REPLY,
    Category.NOTIFICATION,
    Category.CRASH_NOTICE,
)


class TestTable:
    def test_every_kind_covers_every_category(self) -> None:
        """Adapters never hit a missing entry."""
        for kind in ChannelKind:
            assert set(CHANNEL_RULES[kind]) == set(Category)

    @pytest.mark.parametrize("kind", list(ChannelKind))
    @pytest.mark.parametrize("category", USER_FACING)
    def test_questions_and_final_text_are_shown_everywhere(
        self, kind: ChannelKind, category: Category
    ) -> None:
        """Every channel shows inputs, replies, notifications and crash notices as messages."""
        assert channel_rule(kind, category) == ChannelRule(
            visibility=SHOWN, presentation=Presentation.MESSAGE
        )

    def test_cli_shows_intermediates_in_colored_panels(self) -> None:
        """Thought cyan, tool call yellow, tool result magenta (seed 000 §4.3)."""
        colors = {c: channel_rule("cli", c).color for c in INTERMEDIATES}
        assert colors == {
            Category.THOUGHT: "cyan",
            Category.TOOL_CALL: "yellow",
            Category.TOOL_RESULT: "magenta",
        }
        assert all(channel_rule("cli", c).presentation is Presentation.PANEL for c in INTERMEDIATES)

    def test_live_channels_edit_status_lines(self) -> None:
        """Thoughts and calls are live lines; a result edits its call's line."""
        assert channel_rule("live", Category.THOUGHT).presentation is Presentation.STATUS_LINE
        assert channel_rule("live", Category.TOOL_CALL).presentation is Presentation.STATUS_LINE
        assert channel_rule("live", Category.TOOL_RESULT).presentation is Presentation.STATUS_EDIT
        assert all(visibility("live", c) is SHOWN for c in INTERMEDIATES)

    def test_silent_channels_absorb_intermediates(self) -> None:
        """WeChat-like channels mark intermediates delivered without sending them."""
        assert all(visibility(ChannelKind.SILENT, c) is ABSORBED for c in INTERMEDIATES)

    @pytest.mark.parametrize("category", [Category.BACKGROUND_ALERT, Category.NUDGE])
    def test_background_system_messages(self, category: Category) -> None:
        """Alerts and nudges: a terminal shows everything, chats keep them hidden."""
        assert visibility("cli", category) is SHOWN
        assert visibility("live", category) is HIDDEN
        assert visibility("silent", category) is HIDDEN

    def test_table_is_read_only(self) -> None:
        """Adapters consult the table; they cannot change it."""
        with pytest.raises(TypeError):
            CHANNEL_RULES[ChannelKind.CLI][Category.THOUGHT] = channel_rule(
                "silent", Category.THOUGHT
            )  # type: ignore[index]


class TestLookups:
    def test_a_message_is_looked_up_by_its_category(self, session: Session) -> None:
        """Passing a message reads its category."""
        session.ask("u1")
        session.start("t1")
        thought = session.add(Category.THOUGHT, "th1", turn_id="t1")
        assert visibility("silent", thought) is ABSORBED
        assert visibility("cli", session.state.message("u1")) is SHOWN

    def test_unknown_kind(self) -> None:
        """The error lists the kinds and says which to pick."""
        with pytest.raises(
            ProjectionError,
            match=r"^Channel kind must be one of 'cli', 'live', 'silent' \(got 'discord'\); a Discord-like channel that edits messages in place is 'live', a WeChat-like one is 'silent'\.$",
        ):
            visibility("discord", Category.REPLY)

    def test_neither_category_nor_message(self) -> None:
        """A string category is not accepted."""
        with pytest.raises(
            TypeError,
            match=r"^channel_rule\(\) takes a Category or a Message \(got 'reply' that is a 'str'\)\.$",
        ):
            channel_rule("cli", "reply")  # type: ignore[arg-type]
