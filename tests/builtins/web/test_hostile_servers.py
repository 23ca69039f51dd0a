"""Hostile servers against the two in-process HTTP clients (web_fetch and the Runloop http
tools), each a real socket on 127.0.0.1 that misbehaves from the first byte: what the red-team
pass of 2026-11-29 (4th) tried, all of which held. Every read is bounded (the head by h11's
buffer, the body by the decoded cap), and the call's deadline holds over a server that trickles.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import anyio
import pytest

from mcp_toolbridge.builtins.session import Sessions
from mcp_toolbridge.builtins.web.fetch import SPEC, WebFetchTool
from mcp_toolbridge.errors import ExecTimeoutError, ExecTransportError
from mcp_toolbridge.executors.base import CallContext, ExecRequest, ExecResult
from mcp_toolbridge.executors.http import HttpExecutor
from tests.support.http_fixture import http_spec

Behaviour = Callable[[socket.socket, threading.Event], None]
DEADLINE_S = 1.5


def _big_location(conn: socket.socket, stop: threading.Event) -> None:
    conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: /" + b"a" * 1024 * 1024 + b"\r\n\r\n")


def _endless_headers(conn: socket.socket, stop: threading.Event) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    while not stop.is_set():
        conn.sendall(b"X-A: " + b"b" * 1000 + b"\r\n")


def _endless_chunks(conn: socket.socket, stop: threading.Event) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n")
    conn.sendall(b"Transfer-Encoding: chunked\r\n\r\n")
    while not stop.is_set():
        conn.sendall(b"10000\r\n" + b"x" * 0x10000 + b"\r\n")


def _trickle(conn: socket.socket, stop: threading.Event) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\n")
    while not stop.wait(0.2):
        conn.sendall(b"x")


def _trickled_head(conn: socket.socket, stop: threading.Event) -> None:
    for byte in b"HTTP/1.1 200 OK\r\nX: " + b"y" * 100:
        if stop.wait(0.2):
            return
        conn.sendall(bytes([byte]))


@contextmanager
def _hostile(behaviour: Behaviour) -> Iterator[int]:
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def handle(conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                behaviour(conn, stop)
            except OSError:
                pass  # the client hung up: what a bounded read does

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        listener.close()


async def _web_fetch(port: int) -> ExecResult:
    async def loopback(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    tool = WebFetchTool(Sessions(), allow_loopback=True, resolver=loopback, timeout_s=DEADLINE_S)
    arguments = {"url": f"http://public.test:{port}/x", "max_bytes": 1_000_000}
    context = CallContext(session_id="s1")
    return await tool.run(ExecRequest(spec=SPEC, arguments=arguments, timeout_s=5, context=context))


async def _runloop(port: int) -> ExecResult:
    async with HttpExecutor.open() as executor:
        spec = http_spec(f"http://127.0.0.1:{port}/x")
        return await executor.run(ExecRequest(spec=spec, arguments={}, timeout_s=DEADLINE_S))


CLIENTS = {"web_fetch": _web_fetch, "runloop": _runloop}


@pytest.mark.parametrize("client", list(CLIENTS))
@pytest.mark.parametrize(
    ("behaviour", "ends"),
    [
        (_big_location, "invalid HTTP response"),
        (_endless_headers, "invalid HTTP response"),
        (_endless_chunks, "capped"),
        (_trickle, "deadline"),
        (_trickled_head, "deadline"),
    ],
    ids=["1MB-location", "endless-headers", "endless-chunks", "trickled-body", "trickled-head"],
)
async def test_a_hostile_server_costs_a_bounded_read_and_the_deadline(
    client: str, behaviour: Behaviour, ends: str
) -> None:
    started = time.monotonic()
    with _hostile(behaviour) as port:
        with anyio.fail_after(20):
            if ends == "invalid HTTP response":
                with pytest.raises(ExecTransportError, match="invalid HTTP response"):
                    await CLIENTS[client](port)
            elif ends == "deadline":
                with pytest.raises(ExecTimeoutError):
                    await CLIENTS[client](port)
            else:
                result = await CLIENTS[client](port)
                if client == "web_fetch":
                    assert result.ok and result.value["note"].startswith("the body was larger")
                    assert len(result.value["content"].encode()) <= 200 * 1024
                else:
                    assert not result.ok and result.truncated
    assert time.monotonic() - started < DEADLINE_S + 3


async def test_web_fetch_takes_no_proxy_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    proxied: list[bytes] = []
    proxy = socket.create_server(("127.0.0.1", 0))

    def accept() -> None:
        try:
            conn, _ = proxy.accept()
        except OSError:
            return
        with conn:
            proxied.append(conn.recv(4096))

    threading.Thread(target=accept, daemon=True).start()
    address = f"http://127.0.0.1:{proxy.getsockname()[1]}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, address)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)

    def answer(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n")
        conn.sendall(b"Content-Length: 6\r\n\r\ndirect")

    try:
        with _hostile(answer) as port:
            result = await _web_fetch(port)
    finally:
        proxy.close()
    assert result.ok and result.value["content"] == "direct"
    assert proxied == []
    assert os.environ["HTTP_PROXY"] == address  # the setting was there to be taken
