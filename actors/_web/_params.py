"""What a request asks for, checked: seqs, views, kinds, form fields; and the errors.

Every bad value is a ``WebError`` with an HTTP status and a message that says
what was expected, what was got and how to fix it, in the CLI's words where
the CLI has the same check (``amber show --at 99`` and ``/s/demo?at=99``
fail with the same sentence). Errors from the CLI's own checks
(``CliError``) keep their message and map their exit code to a status.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from urllib.parse import parse_qs, urlencode

from runtime import (
    EVENT_TYPES,
    AmberError,
    CorruptRow,
    InvalidArgument,
    InvalidInput,
    check_session_id,
)

from .._cli._app import CliError, ExitCode, read_seq, resolve_seq_between, translate
from .._cli._hints import command_line, name_store, quoted

__all__ = [
    "FORM_LIMIT",
    "VIEWS",
    "WebError",
    "as_web_error",
    "damaged",
    "one",
    "parse_form",
    "parse_index",
    "parse_kinds",
    "parse_seq",
    "parse_session_id",
    "parse_view",
    "resolve",
]

VIEWS = ("calls", "history", "clean", "openai", "openai-responses", "anthropic", "gemini")
"""What the pane beside the state can show (``?view=``)."""
FORM_LIMIT = 8_192
"""The largest form body accepted, in bytes."""

_STATUS = {
    ExitCode.USAGE: 400,
    ExitCode.NOT_FOUND: 404,
    ExitCode.CONFLICT: 409,
    ExitCode.BAD_STORE: 500,
    ExitCode.FAILED: 500,
    ExitCode.INTERRUPTED: 503,
}


_ONE_LINE = re.compile(r"[ \t]*[\r\n]+\s*")


class WebError(Exception):
    """A request the viewer cannot answer: an HTTP status and a one-line message."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: ExitCode | None = None,
        link: tuple[str, str] | None = None,
    ) -> None:
        # One line, but every other space kept: a path or a command in the message is
        # printed as it is (a store at 'my  store.db' named 'my store.db' was another file).
        super().__init__(_ONE_LINE.sub(" ", message).strip())
        self.status = status
        """The HTTP status of the error page."""
        self.code = code
        """The ``amber`` exit code the same error has on the command line, if any."""
        self.link = link
        """A page to go on with, if there is one: ``(href, text)``."""


def as_web_error(exc: CliError | AmberError, db: str | None = None) -> WebError:
    """The ``WebError`` for an error of the CLI's checks or of the core (same message; the
    commands a store's error suggests name ``db``, as on the command line)."""
    error = exc if isinstance(exc, CliError) else translate(exc, db)
    return WebError(_STATUS.get(error.code, 500), str(error), code=error.code)


def damaged(exc: CorruptRow, db: str, *, opens_before: bool = False) -> WebError:
    """The ``WebError`` for a damaged row: 422 (the request is fine, the stored session is
    not), the store's message and what to do about it, as ``amber check`` says it.

    A damaged summary or snapshot names ``amber recover --rebuild`` in its own message
    (that mends it). Anything else is the event log itself, which rebuilding cannot mend:
    the page says so, with a link to the last state before the damaged row when
    ``opens_before`` (the caller has read it: a log cut short under its summary opens no
    state at all).
    """
    message = name_store(str(exc), db)
    check = command_line("check", options=("--db", db))
    text = f"CorruptRow: {message} {quoted(check)} lists every damaged row in the store."
    link = None
    if "recover --rebuild" not in message:  # not a derived row's: the log itself
        text += " The log itself is damaged: restore the file from a backup"
        if opens_before and exc.session_id is not None and exc.seq:
            text += f"; the states before seq {exc.seq} still open."
            link = (
                "/session?" + urlencode({"s": exc.session_id, "at": exc.seq - 1}),
                f"Open {exc.session_id} at seq {exc.seq - 1}, the last state before the damage",
            )
        else:
            text += "."
    return WebError(422, text, code=ExitCode.BAD_STORE, link=link)


def one(query: Mapping[str, Sequence[str]], name: str) -> str | None:
    """The single value of ``name`` (None if absent); a ``WebError`` if it is repeated."""
    values = query.get(name)
    if not values:
        return None
    if len(values) > 1:
        raise WebError(
            400,
            f"'{name}' is given {len(values)} times ({', '.join(map(repr, values))}); pass it "
            "once.",
        )
    return values[0]


def parse_seq(value: str | None, *, name: str = "at", default: int = -1) -> int:
    """A seq as the CLI reads one: a number, negative from the head, or ``head`` (-1).

    Absent or empty (a form's empty field): ``default``; blank is not a seq (as ``--at ' '``).
    """
    if not value:
        return default
    try:
        return read_seq(value)
    except InvalidArgument as exc:
        raise WebError(400, str(exc)) from None


def parse_session_id(value: str) -> str:
    """A session id a new session can have (``amber fork --as``'s check), or a 400."""
    try:
        return check_session_id(value)
    except InvalidInput as exc:
        raise WebError(400, str(exc)) from None


def resolve(seq: int, last_seq: int, session_id: str, *, name: str = "at") -> int:
    """``seq`` as a seq of the session (``0..last_seq``); negatives count back from the head.

    The message is ``amber show --at``'s, with the query parameter's name.
    """
    try:
        return resolve_seq_between(seq, session_id, 0, last_seq, option=name)
    except CliError as exc:
        raise WebError(404, str(exc), code=ExitCode.NOT_FOUND) from None


def parse_index(value: str | None, *, name: str) -> int | None:
    """A non-negative integer query parameter (a row or message offset), or None."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if not text.isdigit():
        raise WebError(400, f"'{name}' must be a whole number ≥ 0 (got {value!r}).")
    return int(text)


def parse_view(value: str | None) -> str:
    """The pane beside the state: one of ``VIEWS`` (``calls`` by default)."""
    if value is None or not value:
        return "calls"
    if value not in VIEWS:
        raise WebError(400, f"Unknown view {value!r}; pass view= one of {', '.join(VIEWS)}.")
    return value


def parse_kinds(values: Sequence[str]) -> tuple[str, ...]:
    """Event kinds to keep in the timeline (none: every kind)."""
    unknown = [v for v in values if v not in EVENT_TYPES]
    if unknown:
        raise WebError(
            400,
            f"Unknown event kind {unknown[0]!r}; pass kind= one of {', '.join(EVENT_TYPES)} "
            "('amber events' lists them).",
        )
    return tuple(dict.fromkeys(values))


def parse_form(body: bytes, content_type: str | None, fields: Sequence[str]) -> dict[str, str]:
    """A URL-encoded form with exactly the given field names (each at most once).

    Raises:
        WebError: 415 for another content type, 413 for a body over
            ``FORM_LIMIT``, 400 for a body that is not UTF-8 or not a form, a
            repeated field or one not in ``fields``.
    """
    media = (content_type or "").split(";")[0].strip().lower()
    if media != "application/x-www-form-urlencoded":
        raise WebError(
            415,
            "Expected a form (application/x-www-form-urlencoded), got "
            f"{media or 'no content type'}; submit the page's form.",
        )
    if len(body) > FORM_LIMIT:
        raise WebError(
            413, f"The form is {len(body):,} bytes; at most {FORM_LIMIT:,} are accepted."
        )
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise WebError(400, "The form is not UTF-8 text; submit the page's form.") from None
    try:
        parsed = parse_qs(text, keep_blank_values=True, strict_parsing=bool(text), errors="strict")
    except (ValueError, UnicodeDecodeError) as exc:
        raise WebError(400, f"The form cannot be read ({exc}); submit the page's form.") from None
    unexpected = sorted(set(parsed) - set(fields))
    if unexpected:
        raise WebError(
            400,
            f"Unexpected form field {unexpected[0]!r}; the form takes {', '.join(fields)}.",
        )
    return {name: value for name in fields if (value := one(parsed, name)) is not None}
