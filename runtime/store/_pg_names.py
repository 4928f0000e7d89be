"""Names for PostgreSQL stores that need no driver: telling a database URL from a path."""

from __future__ import annotations

__all__ = ["DEFAULT_SCHEMA", "is_postgres_url"]

DEFAULT_SCHEMA = "amber"
"""The schema a ``PostgresStore`` uses unless told another."""


def is_postgres_url(text: object) -> bool:
    """True when ``text`` names a PostgreSQL database (``postgresql://…`` or ``postgres://…``)."""
    return isinstance(text, str) and text.startswith(("postgresql://", "postgres://"))
