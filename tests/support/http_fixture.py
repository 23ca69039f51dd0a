"""A real HTTP server on 127.0.0.1 for executor tests (stdlib ThreadingHTTPServer in a thread).

Routes:
    /echo...              JSON {method, path, query, body, headers} (any path under /echo)
    /status/<code>        JSON error {"error": ..., "headers": {...}} with that status
    /encoded/<code>       JSON error quoting the X-Key header encoded: base64 after a prefix,
                          URL-safe base64, hex, percent-encoded and reversed
    /long-error           500 with a 2000-character text body
    /text                 200 text/html
    /empty                200 with an empty body
    /big?n=N              200 JSON-ish body of N bytes with Content-Length
    /big-stream?n=N       200 body of N bytes without Content-Length (read until close)
    /redirect?to=U&code=C C (default 302) to U
    /chain/<n>            302 to /chain/<n-1>; /chain/0 echoes
    /slow                 waits for ``release`` (set at shutdown), then answers

:func:`http_spec` is a Runloop http tool's spec for a URL (the executor's input).
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from mcp_toolbridge.model import Format, HttpTransport, RequirementSet, Source, ToolSpec

SLOW_RELEASE_TIMEOUT_S = 10.0


def http_spec(
    url: str,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    net_hosts: tuple[str, ...] = (),
) -> ToolSpec:
    schema: dict[str, Any] = {"type": "object"}
    return ToolSpec(
        name="api_call",
        id="api.call",
        input_schema=schema,
        runtime_input_schema=schema,
        transport=HttpTransport(method=method, url=url, headers=dict(headers or {})),
        requires=RequirementSet(net_hosts=net_hosts),
        source=Source(path="tools.json", index=0, format=Format.RUNLOOP),
    )


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    release: threading.Event

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that hang up early (caps, deadlines) are expected; stay quiet."""


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """No access log on stderr."""

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, value: object) -> None:
        self._send(status, json.dumps(value).encode())

    def _redirect(self, status: int, location: str) -> None:
        self.send_response(status)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _handle(self) -> None:
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {key.lower(): value for key, value in self.headers.items()}
        path = parts.path
        if path.startswith("/echo"):
            self._json(
                200,
                {
                    "method": self.command,
                    "path": path,
                    "query": parts.query,
                    "body": body.decode(),
                    "headers": headers,
                },
            )
        elif path.startswith("/encoded/"):
            key = headers.get("x-key", "").encode()
            encoded = {
                "base64": base64.b64encode(b"token:" + key).decode(),
                "base64url": base64.urlsafe_b64encode(b"k=" + key + b";").decode(),
                "hex": key.hex(),
                "quoted": quote(key, safe=""),
                "reversed": key.decode()[::-1],
            }
            self._json(int(path.rsplit("/", 1)[1]), {"error": "bad key", "seen": encoded})
        elif path.startswith("/status/"):
            status = int(path.rsplit("/", 1)[1])
            self._json(status, {"error": "the fixture failed on purpose", "headers": headers})
        elif path == "/long-error":
            self._send(500, b"x" * 2000, "text/plain")
        elif path == "/text":
            self._send(200, b"<html><body>hello</body></html>", "text/html; charset=utf-8")
        elif path == "/empty":
            self._send(200, b"")
        elif path == "/big":
            self._send(200, b"[" + b"1," * (int(query["n"][0]) // 2) + b"1]")
        elif path == "/big-stream":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            chunk = b" " * 4096
            for _ in range(int(query["n"][0]) // len(chunk) + 1):
                self.wfile.write(chunk)
        elif path == "/redirect":
            self._redirect(int(query.get("code", ["302"])[0]), query["to"][0])
        elif path.startswith("/chain/"):
            left = int(path.rsplit("/", 1)[1])
            if left:
                self._redirect(302, f"/chain/{left - 1}")
            else:
                self._json(200, {"done": True})
        elif path == "/slow":
            self.server.release.wait(SLOW_RELEASE_TIMEOUT_S)
            self._json(200, {"slow": True})
        else:
            self._json(404, {"error": f"no route {path}"})

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _handle


class FixtureServer:
    def __init__(self, server: _Server) -> None:
        self.server = server

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextmanager
def running_server() -> Iterator[FixtureServer]:
    """Start the fixture server on an ephemeral port; stop it (releasing /slow) on exit."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.release = threading.Event()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield FixtureServer(server)
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
