"""A tool granted specific hosts: no network but the allowlisting proxy, which lets exactly
those hosts through (HTTP_PROXY/HTTPS_PROXY point at it) and refuses and logs the rest.

The "remote" host is an HTTP listener of the test's on 127.0.0.1: granted by its exact IP it
is reachable through the proxy only; granted under another name it is refused."""

from __future__ import annotations

import logging
import sys

import anyio
import pytest
from anyio.abc import SocketAttribute, SocketStream

from tests.sandbox.conftest import Box, report

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

CLIENT = """
import json, socket, urllib.error, urllib.request
PORT = @PORT@
out = {}
try:
    out["http"] = urllib.request.urlopen(f"http://127.0.0.1:{PORT}/x", timeout=10).read().decode()
except urllib.error.HTTPError as exc:
    out["http"] = exc.code
def tunnel(target):
    with socket.create_connection(("127.0.0.1", 3128), timeout=10) as s:
        s.sendall(f"CONNECT {target} HTTP/1.1\\r\\nHost: {target}\\r\\n\\r\\n".encode())
        status = s.recv(4096).split(b"\\r\\n")[0].decode()
        if " 200 " not in status:
            return status
        s.sendall(b"GET /tunnelled HTTP/1.0\\r\\n\\r\\n")
        return status + " | " + s.recv(4096).decode().split("\\r\\n\\r\\n")[-1]
out["connect"] = tunnel(f"127.0.0.1:{PORT}")
out["nul"] = tunnel(f"evil\\x00.127.0.0.1:{PORT}")
try:
    socket.create_connection(("127.0.0.1", PORT), timeout=10).close()
    out["direct"] = "connected"
except OSError as exc:
    out["direct"] = type(exc).__name__
print(json.dumps(out))
"""


async def _web_server(tg: anyio.abc.TaskGroup) -> tuple[int, list[bytes]]:
    """A one-request-per-connection HTTP server saying ``hello``; the request lines seen."""
    seen: list[bytes] = []
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")

    async def handle(stream: SocketStream) -> None:
        async with stream:
            head = b""
            while b"\r\n\r\n" not in head:
                head += await stream.receive()
            seen.append(head.split(b"\r\n")[0])
            await stream.send(b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello")

    async def serve() -> None:
        async with listener:
            await listener.serve(handle)

    tg.start_soon(serve)
    return listener.extra(SocketAttribute.local_port), seen


async def test_a_granted_host_is_reached_through_the_proxy_only(box: Box) -> None:
    async with anyio.create_task_group() as tg:
        port, seen = await _web_server(tg)
        outcome = await box.python(
            CLIENT.replace("@PORT@", str(port)), requires={"hosts": ["127.0.0.1"]}
        )
        tg.cancel_scope.cancel()
    result = report(outcome)
    assert result["http"] == "hello"
    assert result["connect"] == "HTTP/1.1 200 Connection Established | hello"
    assert result["nul"].startswith("HTTP/1.1 400 ")  # the NUL trick never reaches matching
    assert result["direct"] == "ConnectionRefusedError"  # only the proxy's port is open
    assert sorted(seen) == [b"GET /tunnelled HTTP/1.0", b"GET /x HTTP/1.1"]


async def test_an_ungranted_host_is_refused_and_logged(
    box: Box, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="mcp_toolbridge.sandbox")
    async with anyio.create_task_group() as tg:
        port, seen = await _web_server(tg)
        outcome = await box.python(
            CLIENT.replace("@PORT@", str(port)), requires={"hosts": ["api.example.com"]}
        )
        tg.cancel_scope.cancel()
    result = report(outcome)
    assert result["http"] == 403
    assert result["connect"] == "HTTP/1.1 403 Forbidden"
    assert result["direct"] == "ConnectionRefusedError"
    assert seen == []
    refusals = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(refusals) == 3  # the GET, the CONNECT and the NUL name
    assert (
        "tool 'probe'" in refusals[0]
        and "'127.0.0.1' is not in the tool's net.hosts" in (refusals[0])
    )


async def test_without_a_host_grant_there_is_no_proxy_either(box: Box) -> None:
    async with anyio.create_task_group() as tg:
        port, seen = await _web_server(tg)
        outcome = await box.python(CLIENT.replace("@PORT@", str(port)))
        tg.cancel_scope.cancel()
    assert outcome.exit_code != 0  # nothing listens on the proxy's port either
    assert b"ConnectionRefusedError" in outcome.stderr_tail
    assert seen == []
