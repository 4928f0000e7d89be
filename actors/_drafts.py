"""Input from outside a turn, checked before a session sees it: drafts for the turn machine.

Every rule is checked here, in the caller's thread, so that refused input
raises ``InvalidInput`` and nothing is stored; the session's machine then
gives the accepted draft its id, seq and time.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from runtime import (
    IMAGE_MEDIA_TYPES,
    ArtifactStore,
    Category,
    Draft,
    InputLimits,
    InvalidInput,
    InvalidMessage,
    Message,
    UserInput,
    check_session_id,
    new_message,
)
from runtime._article import type_named
from runtime._storable import session_id_problem

__all__ = ["interrupt_reason", "post_draft", "session_id_of", "user_draft"]


def interrupt_reason(reason: object) -> str:
    """``reason`` for ``Runtime.interrupt``.

    Raises:
        InvalidInput: it is not a str.
    """
    if not isinstance(reason, str):
        raise InvalidInput(
            f"interrupt() takes reason= as a str (got {reason!r} that is {type_named(reason)}); "
            "it is recorded as why the turn ended."
        )
    return reason


def session_id_of(value: object, *, stored: bool = False) -> str:
    """``value`` as a session id: one new input may go to, or (``stored``) one a session
    already stored may have (a blank id, refused for input since, is one).

    Raises:
        InvalidInput: it is not a session id (1 to 256 characters, no control characters,
            and for input not blank).
    """
    if stored:
        problem = session_id_problem(value)
        if problem is None:
            return value  # type: ignore[return-value]
    return check_session_id(value)


def user_draft(
    what: str,
    session_id: str,
    text: UserInput | str,
    fields: dict[str, Any],
    clock: Callable[[], datetime],
    limits: InputLimits,
    *,
    artifacts: ArtifactStore | None = None,
) -> Draft:
    """A person's input (text with ``UserInput`` fields, or a ``UserInput``), checked.

    ``artifacts`` is the runtime's artifact store (None: it has none, and an image is
    refused).

    Raises:
        InvalidInput: the input breaks a rule (``what`` names the caller in the message).
    """
    if isinstance(text, str):
        try:
            user_input = UserInput(text=text, **fields)
        except TypeError as exc:
            raise InvalidInput(
                f"{what}() takes the fields of UserInput (sender, chatbot_id, channel_id, "
                f"attachments, browser_elements, metadata): {exc}."
            ) from None
    elif isinstance(text, UserInput):
        if fields:
            raise InvalidInput(
                f"{what}() takes extra fields only with plain text; put them in the UserInput."
            )
        user_input = text
    else:
        raise InvalidInput(
            f"{what}() takes a UserInput or a str (got {text!r} that is {type_named(text)})."
        )
    # Built once here so that every rule is checked before the session sees it.
    message = user_input.to_message(
        id="msg_check", session_id=session_id, created_at=clock(), limits=limits
    )
    _check_images(what, message, artifacts)
    return Draft.of(message)


def _check_images(what: str, message: Message, artifacts: ArtifactStore | None) -> None:
    """An image goes to the model as bytes read from the artifact store: without one, the
    turn it started would fail building the model's view; refuse it now, with nothing stored."""
    if artifacts is not None:
        return
    for attachment in message.attachments:
        if attachment.media_type.lower() in IMAGE_MEDIA_TYPES:
            *others, last = sorted(IMAGE_MEDIA_TYPES)
            kinds = f"{', '.join(others)} or {last}"
            raise InvalidInput(
                f"{what}() got the image {attachment.name!r} ({attachment.media_type}), but the "
                "runtime has no artifact store to read it from for the model; give "
                "Settings(artifacts=<an ArtifactStore>) to the Runtime, or attach it as a file "
                f"(not {kinds})."
            )


def post_draft(
    session_id: str,
    category: Category,
    content: str,
    fields: dict[str, Any],
    clock: Callable[[], datetime],
    *,
    artifacts: ArtifactStore | None = None,
    limits: InputLimits | None = None,
) -> Draft:
    """A cron prompt, compaction request, background alert or notification, checked
    (against ``limits``, the runtime's ``Settings.input_limits``, as a person's input is).

    Raises:
        InvalidInput: ``category`` cannot be posted, or a field is wrong.
    """
    if not isinstance(category, Category):
        raise InvalidInput(
            f"post() takes a Category (like Category.CRON_PROMPT); got {category!r} that is "
            f"{type_named(category)}."
        )
    if not (category.is_input or category is Category.NOTIFICATION):
        allowed = "cron prompts, compaction requests, background alerts and notifications"
        raise InvalidInput(
            f"post() takes {allowed}; a {category.label} is made by a turn, not posted."
        )
    if isinstance(content, str) and not content.strip():
        # Blank, a prompt reached the model as an empty message and a notification a
        # platform that refuses empty messages (it stayed pending for good).
        raise InvalidInput(
            f"post() takes non-blank text for a {category.label} (got {content!r}); write "
            "what it says."
        )
    try:
        message = new_message(
            category, id="msg_check", session_id=session_id, created_at=clock(), content=content,
            **fields,
        )  # fmt: skip
    except (InvalidMessage, TypeError, ValueError) as exc:
        raise InvalidInput(f"post() cannot make a {category.label} of that: {exc}") from None
    _check_limits(message, category, limits or InputLimits())
    if category.is_input:
        _check_images("post", message, artifacts)
    return Draft.of(message)


def _check_limits(message: Message, category: Category, limits: InputLimits) -> None:
    """The bounds a person's input has: a program's post is stored and sent to the model or
    the channel the same way, so a runaway prompt or alert is refused with nothing stored."""
    what = f"post() of a {category.label}"
    if len(message.content) > limits.max_text_chars:
        raise InvalidInput(
            f"{what} got {len(message.content)} characters of text, more than the limit of "
            f"{limits.max_text_chars} (Settings.input_limits.max_text_chars); shorten it or "
            "attach it as a file."
        )
    if len(message.attachments) > limits.max_attachments:
        raise InvalidInput(
            f"{what} got {len(message.attachments)} attachments, more than the limit of "
            f"{limits.max_attachments} (Settings.input_limits.max_attachments); post them in "
            "several messages."
        )
    for attachment in message.attachments:
        if attachment.size > limits.max_attachment_bytes:
            raise InvalidInput(
                f"{what} got the attachment {attachment.name!r} of {attachment.size} bytes, "
                f"more than the limit of {limits.max_attachment_bytes} "
                "(Settings.input_limits.max_attachment_bytes); compress or split it."
            )
