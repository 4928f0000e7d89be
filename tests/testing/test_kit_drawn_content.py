"""The kit's session strategies draw only content a real runtime stores.

A trial user's adapter (its platform refuses empty posts, as Discord does) failed
``AdapterContract`` 248 times, every time on an empty notification, aside or thought:
messages no runtime produces, since ``post()`` refuses blank text and a model's blank
text or reasoning is never stored (unless it carries provider data, a signed thought).
"""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings

from actors._drafts import post_draft
from runtime import Category, InputLimits, Message, UserInput, category_of, validate_input
from runtime._storable import text_problem
from runtime.testing import messages, timelines

_POSTED = (
    Category.CRON_PROMPT,
    Category.BACKGROUND_ALERT,
    Category.COMPACTION_REQUEST,
    Category.NOTIFICATION,
)
"""What a program posts with ``Runtime.post``, checked by the runtime's ``post_draft``."""
_MAY_BE_BLANK = (Category.TOOL_RESULT,)
"""A tool may return an empty string; it is stored as it is."""


def _now() -> datetime:
    return datetime(2026, 1, 1, tzinfo=UTC)


def assert_a_runtime_stores(message: Message) -> None:
    category = category_of(message)
    assert text_problem(message.content) is None, message
    if category is Category.USER_QUESTION:
        validate_input(
            UserInput(
                text=message.content,
                sender=message.sender or "Chii",
                attachments=list(message.attachments),
                browser_elements=list(message.browser_elements),
            ),
            InputLimits(),
        )
    elif category in _POSTED:
        post_draft(message.session_id, category, message.content, {}, _now)
    elif category is Category.THOUGHT:
        # Blank reasoning is stored only when it carries provider data (a signature).
        assert message.content.strip() or message.metadata, message
    elif category not in _MAY_BE_BLANK:
        assert message.content.strip(), f"a blank {category.label}: {message!r}"


@settings(max_examples=300, suppress_health_check=list(HealthCheck), deadline=None)
@given(timelines(max_steps=30, rich=True))
def test_every_drawn_session_message_is_one_a_runtime_stores(timeline: object) -> None:
    from runtime import Timeline

    assert isinstance(timeline, Timeline)
    for state in timeline.states():
        for message in state.messages:
            assert_a_runtime_stores(message)


@settings(max_examples=300, suppress_health_check=list(HealthCheck), deadline=None)
@given(messages())
def test_every_drawn_message_is_one_a_runtime_stores(message: Message) -> None:
    assert_a_runtime_stores(message)
