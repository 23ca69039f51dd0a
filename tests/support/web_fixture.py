"""A real HTTP(S) server on 127.0.0.1 with routes a test defines (stdlib, in a thread).

``serving({"/page": Reply(body=b"...")})`` or a callable route ``lambda seen: Reply(...)``.
A body given as bytes is sent with Content-Length; an iterable of chunks is streamed without
one and the connection closed after it. ``Reply(hold=True)`` waits for the server's release
event (set at shutdown) before answering: a provider that never answers in time. Every
request is recorded in ``hits``.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

HOLD_LIMIT_S = 10.0


@dataclass(frozen=True)
class Seen:
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]


@dataclass
class Reply:
    status: int = 200
    body: bytes | Iterable[bytes] = b""
    content_type: str = "text/html; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)
    hold: bool = False


Route = Reply | Callable[[Seen], Reply]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    routes: Mapping[str, Route]
    hits: list[Seen]
    release: threading.Event

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that hang up early (caps, deadlines) are expected; stay quiet."""


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """No access log on stderr."""

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        seen = Seen(
            path=parts.path,
            query=parse_qs(parts.query),
            headers={key.lower(): value for key, value in self.headers.items()},
        )
        self.server.hits.append(seen)
        route = self.server.routes.get(parts.path)
        if route is None:
            reply = Reply(404, b"no such page", "text/plain")
        else:
            reply = route(seen) if callable(route) else route
        if reply.hold:
            self.server.release.wait(HOLD_LIMIT_S)
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if isinstance(reply.body, bytes):
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
            return
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for chunk in reply.body:
            self.wfile.write(chunk)


@dataclass
class WebServer:
    server: _Server

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def hits(self) -> list[Seen]:
        return self.server.hits

    def url(self, path: str, host: str = "127.0.0.1", scheme: str = "http") -> str:
        return f"{scheme}://{host}:{self.port}{path}"


@contextmanager
def serving(
    routes: Mapping[str, Route], *, tls: ssl.SSLContext | None = None
) -> Iterator[WebServer]:
    """Serve ``routes`` on an ephemeral port of 127.0.0.1 (HTTPS with ``tls``)."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.routes = routes
    server.hits = []
    server.release = threading.Event()
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield WebServer(server)
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
