"""Names for PostgreSQL stores that need no driver: telling a database URL from a path."""

from __future__ import annotations

import re

from .._article import type_named

__all__ = ["DEFAULT_SCHEMA", "is_postgres_url", "schema_problem", "url_problem"]

DEFAULT_SCHEMA = "amber"
"""The schema a ``PostgresStore`` uses unless told another."""


MAX_IDENTIFIER_BYTES = 63
"""PostgreSQL's identifier limit (NAMEDATALEN - 1), in bytes of the UTF-8 name."""


def schema_problem(schema: object) -> str | None:
    """Why ``schema`` cannot name a ``PostgresStore``'s schema; None when it can.

    PostgreSQL silently cuts an identifier to 63 bytes, not characters: two
    non-ASCII names alike in their first 63 bytes would share one schema.
    """
    expected = (
        f"schema must be a PostgreSQL identifier of 1 to {MAX_IDENTIFIER_BYTES} bytes in UTF-8"
    )
    if not isinstance(schema, str):
        return f"{expected} (got {schema!r} that is {type_named(schema)})."
    if not schema or "\x00" in schema:
        return f"{expected} with no NUL character (got {schema!r})."
    try:
        size = len(schema.encode())
    except UnicodeEncodeError:
        return f"{expected} (got {schema!r}, which has a lone surrogate and no UTF-8 form)."
    if size > MAX_IDENTIFIER_BYTES:
        return (
            f"{expected} (got {schema!r}, {len(schema)} characters, {size} bytes); PostgreSQL "
            f"cuts a longer name to {MAX_IDENTIFIER_BYTES} bytes, so two names could share one "
            "schema. Use a shorter name."
        )
    return None


def is_postgres_url(text: object) -> bool:
    """True when ``text`` names a PostgreSQL database (``postgresql://…`` or ``postgres://…``)."""
    return isinstance(text, str) and text.startswith(("postgresql://", "postgres://"))


_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):/")
"""A scheme of two letters or more, then ``:/`` (``C:/x``, a drive, is a path)."""


def url_problem(text: object) -> str | None:
    """Why ``text``, given as a store, is a URL Amber does not open; None when it is a
    PostgreSQL URL or not a URL at all (a path). A mistyped PostgreSQL URL
    (``postgress://``, ``postgresql:/``) was read as a file path: a read said "no
    file" and a runtime made an empty SQLite store under that name."""
    if not isinstance(text, str) or is_postgres_url(text):
        return None
    found = _URL.match(text)
    if found is None:
        return None
    scheme = found.group(1)
    rest = text[found.end() :].lstrip("/")
    if scheme.lower().startswith(("postg", "pg", "psql")):
        hint = f"did you mean 'postgresql://{rest}'?"
    elif scheme.lower().startswith(("sqlite", "file")):
        hint = f"for a SQLite file pass its path ({rest or 'amber.db'!r}), not a URL."
    else:
        hint = "pass a SQLite file's path or a postgresql:// URL."
    return (
        f"{text!r} looks like a URL with the scheme {scheme!r}, but a store is a SQLite "
        f"file's path or a PostgreSQL URL (postgresql://… or postgres://…); {hint}"
    )
