"""``amber web``: a local web viewer for time travel in stored sessions.

Server-rendered HTML (Starlette and Jinja2, served by uvicorn; the ``web``
extra), a little JavaScript for keys and the seq slider, SVG charts drawn
here; nothing is loaded from another origin. ``create_app(db)`` builds the
ASGI application (``amber web`` serves it); every store access goes through
one ``Source`` (``_source``). See docs/web.md.

Modules: ``_source`` (the store; its caches in ``_loading`` and ``_spans``,
its message-history test in ``_touches``, its values in ``_results``),
``_app`` (the application, its guards and error pages), ``_views`` (one
handler per page), ``_pages`` (what a page shows), ``_stats`` and ``_charts``
(the numbers and their SVG), ``_params`` and ``_request`` (checked
parameters, errors), ``_html`` (rich text as HTML, formatters).
"""

from ._app import LOCAL_HOSTS as LOCAL_HOSTS
from ._app import create_app as create_app
from ._source import Source as Source

__all__ = ["LOCAL_HOSTS", "Source", "create_app"]
