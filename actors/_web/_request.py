"""Small helpers the handlers share: URLs, query parameters, the fork form's guard."""

from __future__ import annotations

import secrets
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request

from ._params import FORM_LIMIT, WebError, one

__all__ = ["check_origin", "query", "read_body", "require", "url"]


def url(path: str, **params: Any) -> str:
    """``path`` with ``params`` as its query string (None values left out, lists repeated)."""
    pairs: list[tuple[str, str]] = []
    for key, value in params.items():
        name = key.rstrip("_")
        if value is None or value is False:
            continue
        if isinstance(value, list | tuple):
            pairs.extend((name, str(v)) for v in value)
        else:
            pairs.append((name, "1" if value is True else str(value)))
    return f"{path}?{urlencode(pairs)}" if pairs else path


def require(request: Request, name: str = "s") -> str:
    """A required query parameter (the session id by default)."""
    value = one(query(request), name)
    if value is None or not value:
        what = "a session id" if name == "s" else f"'{name}'"
        raise WebError(
            400, f"This page needs {what}: pass ?{name}=… (the sessions list links to it)."
        )
    return value


def query(request: Request) -> dict[str, list[str]]:
    """The query string as lists of values."""
    out: dict[str, list[str]] = {}
    for key, value in request.query_params.multi_items():
        out.setdefault(key, []).append(value)
    return out


def check_origin(request: Request, form_token: str | None, token: str) -> None:
    """Refuse a form that another site made the browser send (token, Origin, fetch metadata)."""
    if request.headers.get("sec-fetch-site") not in (None, "same-origin", "none"):
        raise WebError(403, "This form can only be sent from the viewer's own pages.")
    origin = request.headers.get("origin")
    if origin is not None and origin != f"{request.url.scheme}://{request.url.netloc}":
        raise WebError(
            403, f"This form can only be sent from the viewer's own pages (not from {origin!r})."
        )
    if form_token is None or not secrets.compare_digest(form_token, token):
        raise WebError(
            403,
            "The form's token is missing or stale (the viewer was restarted?); reload the page "
            "and send it again.",
        )


async def read_body(request: Request) -> bytes:
    """The request's body, refused (413) as soon as it passes ``FORM_LIMIT`` bytes."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > FORM_LIMIT:
            raise WebError(413, f"The form is over {FORM_LIMIT:,} bytes; at most that is accepted.")
        chunks.append(chunk)
    return b"".join(chunks)
