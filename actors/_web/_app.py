"""The viewer's web application (Starlette): routes, error pages, and its guards.

Pages (all ``GET``, none writes): ``/`` the sessions, ``/session`` one
session at a seq, ``/jump`` (a redirect to the next turn or error),
``/message``, ``/call`` (one model call), ``/charts``, ``/verify`` (replay
and check, as ``amber replay --verify``) and ``/export`` (the session's JSON,
as ``amber export``). One action writes: ``POST /fork``. Session ids travel
in the query string (``?s=ID``), so any id works.

Guards, since a session holds private conversations and the server runs on
the user's machine: requests must name an allowed host (a web page elsewhere
cannot reach the viewer through DNS rebinding); the fork form carries a
per-process token and must come from the viewer's own pages (no cross-site
form posts); every response forbids framing and loads nothing from another
origin (Content-Security-Policy).
"""

from __future__ import annotations

import inspect
import secrets
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from runtime import STATUS_ORDER, AmberError, CorruptRow

from .._cli._app import CliError
from .._cli._hints import command_line
from ._html import duration, money, number, utc_time
from ._params import WebError, as_web_error, damaged
from ._request import url
from ._source import Source
from ._views import ROUTES

__all__ = ["LOCAL_HOSTS", "create_app"]

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
"""Host names a viewer bound to the loopback interface answers to."""

_HERE = Path(__file__).parent
_PAGES = (
    "sessions.html",
    "session.html",
    "message.html",
    "call.html",
    "charts.html",
    "verify.html",
    "error.html",
)
_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_HEADERS = [
    (b"content-security-policy", _CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),  # no-referrer would make form posts Origin: null
]


class _Headers:
    """Adds the security headers to every response (a pure ASGI middleware)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        # Pages show live data: never cached. The stylesheet and script are revalidated.
        cache = b"no-cache" if scope["path"].startswith("/static/") else b"no-store"
        headers = [*_HEADERS, (b"cache-control", cache)]

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in headers if k not in names]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _ago(at: datetime) -> str:
    seconds = max(0, int((datetime.now(UTC) - at).total_seconds()))
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"


def _templates() -> Jinja2Templates:
    env = Environment(
        loader=FileSystemLoader(_HERE / "templates"),
        autoescape=select_autoescape(default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    # command(...): an ``amber`` command to paste, quoted for a shell (``command_line``).
    env.globals.update(url=url, command=command_line, STATUS_ORDER=[str(s) for s in STATUS_ORDER])
    env.filters.update(duration=duration, money=money, number=number, utc=utc_time, ago=_ago)
    return Jinja2Templates(env=env)


def create_app(
    source: Source | str,
    *,
    allowed_hosts: Sequence[str] = LOCAL_HOSTS,
    token: str | None = None,
) -> Starlette:
    """The viewer for ``source`` (a ``Source``, or the ``--db`` value of one).

    Args:
        source: where sessions are read from and forks written to.
        allowed_hosts: host names requests may carry (``*`` for any); the
            loopback names by default.
        token: the fork form's token (a random one by default).
    """
    if isinstance(source, str):
        source = Source(source)
    templates = _templates()
    for name in _PAGES:  # compiled now, not by the first request that needs one
        templates.get_template(name)
    secret = token if token is not None else secrets.token_urlsafe(24)
    loads = BackgroundTask(source.start_loads)

    def page(request: Request, name: str, context: dict[str, Any], status: int = 200) -> Response:
        context = {"db": source.db, "token": secret, **context}
        return templates.TemplateResponse(
            request, name, context, status_code=status, background=loads
        )

    def error_page(request: Request, error: WebError) -> Response:
        return page(
            request,
            "error.html",
            {"status": error.status, "message": str(error), "code": error.code, "link": error.link},
            status=error.status,
        )

    def damage_page(request: Request, exc: CorruptRow) -> Response:
        """The 422 of a damaged row, with a link to the state before it if that opens."""
        opens = False
        if exc.session_id is not None and exc.seq:
            last = exc.seq - 1
            try:
                source.span(exc.session_id, lambda head: (last, last, last))
                opens = True
            except (CorruptRow, CliError, AmberError, WebError):
                pass  # no state opens (a log cut short under its summary row, say)
        return error_page(request, damaged(exc, source.db, opens_before=opens))

    def wrap(handler: Callable[..., Any]) -> Callable[[Request], Any]:
        if inspect.iscoroutinefunction(handler):

            async def action(request: Request) -> Response:
                try:
                    response: Response = await handler(
                        request, source=source, page=page, token=secret
                    )
                except WebError as exc:
                    return error_page(request, exc)
                except CorruptRow as exc:
                    return damage_page(request, exc)
                except (CliError, AmberError) as exc:
                    return error_page(request, as_web_error(exc, source.db))
                return response

            action.__name__ = handler.__name__
            return action

        def endpoint(request: Request) -> Response:
            try:
                response: Response = handler(request, source=source, page=page, token=secret)
            except WebError as exc:
                return error_page(request, exc)
            except CorruptRow as exc:
                return damage_page(request, exc)
            except (CliError, AmberError) as exc:
                return error_page(request, as_web_error(exc, source.db))
            return response

        endpoint.__name__ = handler.__name__
        return endpoint

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        message = {
            404: f"No page at {request.url.path!r}; the sessions list is at /.",
            405: f"{request.method} is not allowed on {request.url.path!r}.",
        }.get(exc.status_code, str(exc.detail))
        return error_page(request, WebError(exc.status_code, message))

    async def server_error(request: Request, exc: Exception) -> Response:
        return error_page(
            request,
            WebError(
                500, f"The viewer failed: {type(exc).__name__}: {exc}. This is a bug in amber."
            ),
        )

    def favicon(request: Request) -> Response:
        return RedirectResponse("/static/amber.svg", status_code=301)

    routes: list[Route | Mount] = [
        Route(path, wrap(handler), methods=list(methods)) for path, handler, methods in ROUTES
    ]
    routes.append(Route("/favicon.ico", favicon))
    routes.append(Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"))
    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        HTTPException: http_error,
        500: server_error,
    }
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(_Headers),
            Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts)),
        ],
        exception_handlers=handlers,
    )
    app.state.source = source
    app.state.token = secret
    return app
