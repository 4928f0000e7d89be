"""A stub provider server for tests: real HTTP on 127.0.0.1, scripted replies.

``StubServer`` listens on a free local port in a thread of its own and
answers each request with the next queued ``Reply``: a JSON body with any
status and headers (a 429 with ``retry-after``, a 400, a 500), or a stream
of server-sent events (the wire format of OpenAI, Anthropic and Gemini's
``alt=sse``), with pauses, a connection dropped mid-way, or a stream held
open until the client goes away. Point an official SDK at ``server.url``
(its ``base_url``) and the SDK's own HTTP, retry and streaming code runs.

Every request is recorded (``server.requests``: method, path, headers and
the JSON body), and a client that disconnects is noticed, so a test can
wait for it (``server.disconnected.wait()``) instead of sleeping::

    with StubServer() as server:
        server.queue(Reply.sse([{"data": {...}}, ...]))
        model = OpenAIModel("gpt-4.1-mini", api_key="test", base_url=server.url + "/v1")
        ...
        assert server.requests[0].json["model"] == "gpt-4.1-mini"
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs

__all__ = ["Received", "Reply", "StubServer", "load_fixture"]


@attrs.frozen(kw_only=True)
class Reply:
    """One scripted HTTP response."""

    status: int = 200
    """The HTTP status."""
    headers: Mapping[str, str] = attrs.field(factory=dict)
    """Extra headers (``retry-after`` …)."""
    body: Any = None
    """A JSON body (for a non-streamed response, an error say); None for a stream."""
    raw: bytes | None = None
    """A body sent as is, instead of ``body``."""
    events: tuple[Mapping[str, Any], ...] = ()
    """Server-sent events: ``{"event": name?, "data": object or raw str, "delay": s?}``."""
    drop_after: int | None = None
    """Close the connection abruptly after this many events (no end of stream)."""
    hold: bool = False
    """After the events, keep the stream open until the client disconnects."""
    delay: float = 0.0
    """Seconds to wait between events (a slow stream)."""
    burst: bool = False
    """Send every event in one write (a fast stream: the client, not the server, sets the pace)."""

    @classmethod
    def sse(cls, events: Iterable[Mapping[str, Any]], **fields: Any) -> Reply:
        """A 200 ``text/event-stream`` reply."""
        return cls(events=tuple(events), **fields)

    @classmethod
    def error(cls, status: int, body: Any, **headers: str) -> Reply:
        """A JSON error reply (``headers`` with ``_`` spelled as ``-``)."""
        return cls(
            status=status,
            body=body,
            headers={k.replace("_", "-"): v for k, v in headers.items()},
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Reply:
        """A reply from a fixture's JSON (the fields above; ``events`` a list)."""
        fields = dict(data)
        if "events" in fields:
            fields["events"] = tuple(fields["events"])
        if "raw" in fields and isinstance(fields["raw"], str):
            fields["raw"] = fields["raw"].encode()
        return cls(**fields)


@attrs.frozen(kw_only=True)
class Received:
    """A request the stub received."""

    method: str
    """``POST`` …"""
    path: str
    """The path, without the query."""
    query: Mapping[str, list[str]]
    """The query parameters."""
    headers: Mapping[str, str]
    """The headers, names lower-cased."""
    body: bytes
    """The raw body."""

    @property
    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body) if self.body else None


def load_fixture(path: str | Path) -> dict[str, Any]:
    """A fixture file: ``{"replies": [...], "expect": {...}, …}`` with replies made ``Reply``."""
    data: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    data["replies"] = [Reply.from_json(r) for r in data.get("replies", [])]
    return data


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def setup(self) -> None:
        super().setup()
        # Each event goes out at once (no Nagle delay behind the client's delayed ACK).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        received = Received(
            method=self.command,
            path=parts.path,
            query=parse_qs(parts.query),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        stub = self.server.stub
        reply = stub._record(received)
        try:
            if reply.events or reply.hold or (reply.body is None and reply.raw is None):
                self._stream(reply)
            else:
                self._plain(reply)
        except (BrokenPipeError, ConnectionResetError):
            stub._gone()

    def _plain(self, reply: Reply) -> None:
        data = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
        self.send_response(reply.status)
        self._content_type(reply, "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _content_type(self, reply: Reply, default: str) -> None:
        """The default content type, unless the reply's headers name their own."""
        if not any(name.lower() == "content-type" for name in reply.headers):
            self.send_header("content-type", default)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _stream(self, reply: Reply) -> None:
        self.send_response(reply.status)
        self._content_type(reply, "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.flush()
        if reply.burst and reply.drop_after is None and not reply.hold:
            data = b"".join(_encode(event) for event in reply.events)
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))
            self.wfile.flush()
            return
        for number, event in enumerate(reply.events):
            if reply.drop_after is not None and number >= reply.drop_after:
                self._drop()
                return
            pause = event.get("delay", reply.delay)
            if pause and self._client_left(pause):
                self.server.stub._gone()
                return
            self._chunk(_encode(event))
        if reply.drop_after is not None and reply.drop_after <= len(reply.events):
            self._drop()
            return
        if reply.hold:
            while not self._client_left(0.05):
                if self.server.stub._closing:
                    return
            self.server.stub._gone()
            return
        self._chunk(b"")

    def _drop(self) -> None:
        """End the connection without ending the stream (a reset, not a clean close)."""
        with contextlib.suppress(OSError):
            self.connection.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
            )
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _client_left(self, seconds: float) -> bool:
        """Wait up to ``seconds``; True as soon as the client closes its end."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            readable, _, _ = select.select([self.connection], [], [], left)
            if readable:
                try:
                    data = self.connection.recv(1, socket.MSG_PEEK)
                except OSError:
                    return True
                return not data  # data: the client sent more (a pipelined request), not gone


def _encode(event: Mapping[str, Any]) -> bytes:
    lines = []
    if event.get("event"):
        lines.append(f"event: {event['event']}")
    data = event.get("data")
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    lines.extend(f"data: {line}" for line in text.split("\n"))
    return ("\n".join(lines) + "\n\n").encode()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    stub: StubServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up between requests is normal here (interrupts, drops)."""
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionError, OSError)):
            super().handle_error(request, client_address)


class StubServer:
    """A local HTTP server that answers with queued ``Reply`` values (see the module docstring).

    Use it as a context manager; ``url`` is its base URL. Without a queued
    reply a request gets a 500 that says so.
    """

    def __init__(self) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.stub = self
        self._lock = threading.Lock()
        self._replies: deque[Reply] = deque()
        self.requests: list[Received] = []
        """Every request received, in order."""
        self.disconnected = threading.Event()
        """Set when a client left a stream the stub was still sending (or holding)."""
        self.disconnects = 0
        """How many times that happened."""
        self._closing = False
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.01},
            name="amber-stub-server",
            daemon=True,
        )

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> StubServer:
        """Start serving (``with`` does it)."""
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and close the socket."""
        self._closing = True
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def queue(self, *replies: Reply) -> None:
        """Answer the next requests with ``replies``, in order."""
        with self._lock:
            self._replies.extend(replies)

    @property
    def pending(self) -> int:
        """Replies queued and not yet sent."""
        with self._lock:
            return len(self._replies)

    def _record(self, received: Received) -> Reply:
        with self._lock:
            self.requests.append(received)
            if self._replies:
                return self._replies.popleft()
        return Reply.error(
            500, {"error": {"message": "the stub server has no reply queued for this request"}}
        )

    def _gone(self) -> None:
        with self._lock:
            self.disconnects += 1
        self.disconnected.set()
