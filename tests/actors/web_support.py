"""Helpers for the web viewer's tests: a client on a store, and reading pages.

(Imported by name like ``cli_support``.)
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path

import attrs
import pytest

pytest.importorskip("starlette", reason="amber web needs the web extra: pip install 'amber[web]'")
pytest.importorskip("httpx", reason="Starlette's test client needs httpx")

from starlette.testclient import TestClient

from actors._web import Source, create_app
from runtime import SessionState
from runtime.store import SQLiteStore

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from web_session import agent_session  # noqa: E402  (the benchmark's long session)

__all__ = ["AMBER", "TOKEN", "Ids", "Page", "agent_session", "snapshot", "web"]

AMBER = [sys.executable, "-c", "from actors._cli import main; raise SystemExit(main())"]
"""The amber command, run by this interpreter (in a subprocess)."""
TOKEN = "test-token"
"""The fork form's token in every test app."""


@contextmanager
def web(db: Path | str, **source: object) -> Iterator[tuple[TestClient, Source]]:
    """A test client on a viewer of ``db`` (host ``testserver``, token ``TOKEN``)."""
    src = Source(str(db), **source)  # type: ignore[arg-type]
    app = create_app(src, allowed_hosts=["testserver"], token=TOKEN)
    with TestClient(app, follow_redirects=False) as client:
        yield client, src
    assert src.wait_loaded(timeout=60)


class _Collect(HTMLParser):
    """Text by element id, and every link."""

    _VOID = frozenset({"br", "img", "input", "meta", "link", "hr", "wbr", "source", "col"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, str | None]] = []
        self.texts: dict[str, list[str]] = {}
        self.links: list[str] = []
        self.attrs: dict[str, dict[str, str | None]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        ident = found.get("id")
        if ident:
            self.attrs[ident] = found
            self.texts.setdefault(ident, [])
        if tag == "a" and found.get("href"):
            self.links.append(found["href"] or "")
        if tag not in self._VOID:
            self.stack.append((tag, ident))
        elif tag == "br":
            self.handle_data("\n")

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data: str) -> None:
        for _, ident in self.stack:
            if ident:
                self.texts[ident].append(data)


@attrs.frozen
class Page:
    """A page as text, by element id."""

    html: str
    texts: dict[str, str]
    links: list[str]
    attrs: dict[str, dict[str, str | None]]

    @classmethod
    def of(cls, html: str) -> Page:
        """Parse ``html``."""
        parser = _Collect()
        parser.feed(html)
        return cls(
            html=html,
            texts={k: "".join(v) for k, v in parser.texts.items()},
            links=parser.links,
            attrs=parser.attrs,
        )

    def text(self, ident: str) -> str:
        """The text inside the element with ``id=ident``, whitespace collapsed."""
        assert ident in self.texts, f"no element with id {ident!r}"
        return " ".join(self.texts[ident].split())

    def raw(self, ident: str) -> str:
        """The text inside the element with ``id=ident``, as it is (for ``<pre>``)."""
        assert ident in self.texts, f"no element with id {ident!r}"
        return self.texts[ident]

    def has(self, ident: str) -> bool:
        """True if the page has an element with ``id=ident``."""
        return ident in self.texts


def snapshot(db: Path) -> tuple[object, ...]:
    """What a store holds, to check that nothing was written: every session and its log."""
    with SQLiteStore(db) as store:
        infos = store.list_sessions()
        return tuple((info, store.export_session(info.session_id)) for info in infos)


@attrs.frozen
class Ids:
    """The demo's ids by position: its runtime derives them from the session and the seq."""

    state: SessionState

    def msg(self, n: int) -> str:
        """The id of the n-th message (1-based, in the order they were added)."""
        return self.state.messages[n - 1].id

    def call(self, n: int) -> str:
        """The operation id of model call #n."""
        return self.state.model_calls()[n - 1].operation_id

    def turn(self, n: int) -> str:
        """The id of the n-th turn."""
        return self.state.turn_list()[n - 1].id
