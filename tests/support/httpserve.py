"""`python -m mcp_toolbridge serve --http 127.0.0.1:0` as a child process, and a raw HTTP
client for it (no SDK in between, so a test can send what no well-behaved client would).

The server picks a free port and prints its URL on stderr; :func:`http_server` reads stderr
until that line (an event, not a poll) and keeps draining it into ``HttpServer.stderr``.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.support.rawstdio import MODERN_META, REPO

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LEGACY_VERSION = "2025-11-25"
MODERN_VERSION = "2026-07-28"
_URL_LINE = re.compile(rb"over streamable HTTP at (\S+)")
_LIMITED = (
    "import os, resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, ({nofile}, {nofile})); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
)
"""``python -c`` that runs ``python ARGS…`` under a lower limit of file descriptors."""
_ids = itertools.count(1)


class HttpServer:
    """One ``serve --http`` process and what it printed on stderr so far."""

    def __init__(self, process: Process, url: str, lines: list[str]) -> None:
        self.process = process
        self.url = url
        self.lines = lines

    @property
    def pid(self) -> int:
        return self.process.pid

    def stderr(self) -> str:
        return "\n".join(self.lines)


async def _drain(stream: BufferedByteReceiveStream, lines: list[str]) -> None:
    try:
        while True:
            lines.append((await stream.receive_until(b"\n", 1 << 20)).decode(errors="replace"))
    except (anyio.EndOfStream, anyio.IncompleteRead, anyio.ClosedResourceError):
        pass


@asynccontextmanager
async def http_server(
    workdir: Path,
    *serve_args: str,
    env: Mapping[str, str] | None = None,
    audit: Path | None = None,
    nofile: int | None = None,
) -> AsyncIterator[HttpServer]:
    """Start ``serve --no-audit --http 127.0.0.1:0 *serve_args`` (``--audit AUDIT`` instead of
    ``--no-audit`` when given; with ``nofile``, under ``ulimit -n NOFILE``); yield once it
    listens; kill it on the way out if the test has not ended it."""
    environ = {"PATH": os.environ.get("PATH", ""), "HOME": str(workdir), **(env or {})}
    auditing = ["--audit", str(audit)] if audit is not None else ["--no-audit"]
    argv = [sys.executable, "-m", "mcp_toolbridge", "serve", *auditing]
    if nofile is not None:
        argv[1:1] = ["-c", _LIMITED.format(nofile=nofile)]
    argv += ["--http", "127.0.0.1:0", *serve_args]
    process = await anyio.open_process(
        argv, env=environ, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, cwd=REPO
    )
    assert process.stderr is not None
    stream = BufferedByteReceiveStream(process.stderr)
    lines: list[str] = []
    try:
        url = None
        with anyio.fail_after(60):  # a guard: a start on a loaded machine takes seconds
            while url is None:
                try:
                    line = await stream.receive_until(b"\n", 1 << 20)
                except anyio.IncompleteRead:
                    raise AssertionError(f"the server exited: {lines}") from None
                lines.append(line.decode(errors="replace"))
                if found := _URL_LINE.search(line):
                    url = found.group(1).decode()
        async with anyio.create_task_group() as tg:
            tg.start_soon(_drain, stream, lines)
            yield HttpServer(process, url, lines)
            tg.cancel_scope.cancel()
    finally:
        if process.returncode is None:
            process.kill()
        with anyio.move_on_after(5, shield=True):
            await process.wait()
        await process.aclose()


def request(method: str, params: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A JSON-RPC request with a fresh integer id (``id=`` overrides it)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": next(_ids), "method": method}
    if params is not None:
        message["params"] = params
    message.update(extra)
    return message


def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return request("tools/call", {"name": tool, "arguments": arguments})


def modern_headers(message: dict[str, Any]) -> dict[str, str]:
    """The routing headers a 2026-07-28 POST carries (its body needs the _meta envelope)."""
    headers = {**ACCEPT, "MCP-Protocol-Version": MODERN_VERSION, "Mcp-Method": message["method"]}
    name = (message.get("params") or {}).get("name")
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


def modern(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` as a 2026-07-28 request: its params carry the per-request envelope."""
    params = {**(message.get("params") or {}), "_meta": copy.deepcopy(MODERN_META)}
    return {**message, "params": params}


def answer_from(body: bytes) -> dict[str, Any]:
    """The JSON-RPC message of a response body: plain JSON, or the last SSE ``data:`` event
    (the answer comes last; notifications may precede it)."""
    text = body.decode()
    if text.lstrip().startswith("{"):
        message: dict[str, Any] = json.loads(text)
        return message
    data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    assert data, f"no SSE data in {text[:300]!r}"
    last: dict[str, Any] = json.loads(data[-1])
    return last


class Session:
    """A raw 2025-era session: ``initialize`` opened it; requests carry its Mcp-Session-Id.
    Without an id (``--stateless``) every request stands alone."""

    def __init__(self, http: httpx2.AsyncClient, url: str, session_id: str | None) -> None:
        self.http = http
        self.url = url
        self.id = session_id

    @property
    def headers(self) -> dict[str, str]:
        headers = {**ACCEPT, "MCP-Protocol-Version": LEGACY_VERSION}
        if self.id is not None:
            headers["Mcp-Session-Id"] = self.id
        return headers

    async def post(self, message: dict[str, Any]) -> httpx2.Response:
        return await self.http.post(self.url, json=message, headers=self.headers)

    async def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        """POST a request; its JSON-RPC answer (which must carry the request's id)."""
        response = await self.post(message)
        assert response.status_code == 200, (response.status_code, response.text[:300])
        answer = answer_from(response.content)
        assert answer.get("id") == message["id"], answer
        return answer

    async def delete(self) -> int:
        response = await self.http.delete(self.url, headers=self.headers)
        return response.status_code


async def open_session(http: httpx2.AsyncClient, url: str, *, stateless: bool) -> Session:
    """``initialize`` and ``notifications/initialized``; the session id the server gave (none
    when stateless)."""
    params = {
        "protocolVersion": LEGACY_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "raw-http-test-client", "version": "0"},
    }
    opening = request("initialize", params)
    response = await http.post(url, json=opening, headers=ACCEPT)
    assert response.status_code == 200, response.text[:300]
    assert answer_from(response.content)["result"]["protocolVersion"] == LEGACY_VERSION
    session_id = response.headers.get("mcp-session-id")
    assert (session_id is None) == stateless
    session = Session(http, url, session_id)
    note = await session.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert note.status_code == 202, note.text[:300]
    return session
