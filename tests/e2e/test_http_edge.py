"""What an outsider sends ``serve --http`` and its console before any credential counts
(docs/security.md, "The HTTP edge and the console"):

- slow clients (slow loris): a connection that sends nothing, or trickles its headers or its
  body, is closed once its request's deadline passes (server/deadlines.py), while other
  clients are served meanwhile and after. Before the deadlines, uvicorn kept such
  connections open for ever: enough of them use up the process's file descriptors (its
  tools' pipes, its sockets), and a stalled ``initialize`` held one of the session manager's
  10,000 places for as long as its client liked; a client that goes away mid-body is one
  line in the log, not a traceback;
- malformed requests (a body nested a hundred thousand deep, an oversized header, another
  site's CORS preflight, a foreign Host in the 2026-07-28 era): refused, and the server
  serves on."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.abc
import httpx2
import pytest

from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_runtime
from mcp_toolbridge.server.deadlines import HEAD_S
from mcp_toolbridge.server.http import HttpService
from mcp_toolbridge.server.http_options import HttpOptions
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.httpserve import (
    ACCEPT,
    Session,
    answer_from,
    call,
    http_server,
    open_session,
)
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

CLOSED_WITHIN_S = HEAD_S + 110.0
"""A guard: how long the server may take to close a connection past its deadline, with room
for a loaded machine (the deadline itself, then milliseconds)."""
_CONSOLE = re.compile(r"console at (http://\S+)")
_OPENING = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "slow", "version": "0"},
        },
    }
).encode()


async def _connect(url: str) -> anyio.abc.SocketStream:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    return await anyio.connect_tcp(parts.hostname, parts.port)


def _head(host: bytes, length: int) -> bytes:
    """The head of an ``initialize`` POST whose body is ``length`` bytes."""
    return (
        b"POST /mcp HTTP/1.1\r\nHost: " + host + b"\r\n"
        b"Accept: " + ACCEPT["Accept"].encode() + b"\r\n"
        b"Content-Type: application/json\r\n"
        b"Content-Length: " + str(length).encode() + b"\r\n\r\n"
    )


async def _closed_by_the_server(stream: anyio.abc.SocketStream) -> bytes:
    """What the server sent before it closed the connection (the test fails on the guard
    if it never does)."""
    received = b""
    with anyio.fail_after(CLOSED_WITHIN_S):
        while True:
            try:
                received += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionResetError):
                return received


async def test_connections_that_never_finish_their_headers_are_closed_and_others_served(
    tmp_path: Path,
) -> None:
    tools = tmp_path / "tools"
    agentcli_manifest(tools, [echo_tool("echo")], {"echo": ECHO})
    async with http_server(tmp_path, "--console", "127.0.0.1:0", str(tools)) as server:
        found = _CONSOLE.search(server.stderr())
        assert found is not None, server.stderr()
        console = found.group(1)
        host = urlsplit(server.url).netloc.encode()
        slow = []
        for url in (server.url, console):
            silent = await _connect(url)  # connects and sends nothing
            trickling = await _connect(url)  # sends part of a request's head, then stalls
            await trickling.send(b"GET /healthz HTTP/1.1\r\nHost: " + host + b"\r\nX-Slow: 1")
            slow += [silent, trickling]
        gone = await _connect(server.url)  # part of a body, then the client goes away
        await gone.send(_head(host, len(_OPENING) + 100) + _OPENING)
        await gone.aclose()
        async with httpx2.AsyncClient(timeout=30) as http:
            meanwhile = await http.get(server.url.replace("/mcp", "/healthz"))
            assert meanwhile.status_code == 200
            for stream in slow:
                assert await _closed_by_the_server(stream) == b""
                await stream.aclose()
            after = await http.get(server.url.replace("/mcp", "/healthz"))
            assert after.status_code == 200
            console_after = await http.get(console)  # the console's token opens it
            assert console_after.status_code == 303
    assert "did not arrive within" in server.stderr()
    # the client gone mid-body (seconds before the deadlines above): one line, no traceback
    assert "went away before its request's body arrived" in server.stderr()
    assert "Traceback" not in server.stderr(), server.stderr()


@asynccontextmanager
async def _served(tmp_path: Path, options: HttpOptions) -> AsyncIterator[str]:
    tools = tmp_path / "tools"
    agentcli_manifest(tools, [echo_tool("echo")], {"echo": ECHO})
    settings = Settings(paths=[tools], audit_path=None)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    async with open_runtime(settings, loaded) as runtime:
        server = ToolbridgeServer(runtime.bridge, on_session_end=runtime.end_session)
        service = HttpService(server, options)
        async with anyio.create_task_group() as group:
            url = await group.start(service.serve)
            try:
                yield url
            finally:
                service.stop()


async def test_a_request_whose_body_stalls_is_closed_and_opens_no_session(
    tmp_path: Path,
) -> None:
    # Short deadlines, so the body's is reached quickly; the head's is as long as the body's,
    # so what closes the connection below is the body's.
    async with _served(tmp_path, HttpOptions(port=0, head_s=2.0, body_s=2.0)) as url:
        host = urlsplit(url).netloc.encode()
        stalled = await _connect(url)
        await stalled.send(_head(host, len(_OPENING) + 100) + _OPENING)  # 100 short, for ever
        assert b"mcp-session-id" not in (await _closed_by_the_server(stalled)).lower()
        await stalled.aclose()
        async with httpx2.AsyncClient(timeout=30) as http:  # a whole request is served
            opened = await http.post(url, content=_OPENING, headers=ACCEPT)
            assert opened.status_code == 200, opened.text
            assert opened.headers.get("mcp-session-id")


async def test_malformed_requests_are_refused_and_the_server_serves_on(tmp_path: Path) -> None:
    async with _served(tmp_path, HttpOptions(port=0)) as url, httpx2.AsyncClient() as http:
        deep = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":' + b"[" * 100_000
        deep += b"]" * 100_000 + b"}"
        for era in ({}, {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "initialize"}):
            nested = await http.post(url, content=deep, headers={**ACCEPT, **era})
            assert nested.status_code == 400, nested.text
            assert nested.json()["error"]["code"] == -32700
        try:  # h11's limit on a request's head: 400, or the connection closed
            huge = await http.post(
                url, content=_OPENING, headers={**ACCEPT, "X-Big": "a" * 1_000_000}
            )
            assert huge.status_code in (400, 431), huge.text
        except httpx2.TransportError:
            pass
        preflight = await http.options(
            url,
            headers={
                "Origin": "http://evil.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type, mcp-session-id",
            },
        )
        assert preflight.status_code >= 400
        assert not any(h.startswith("access-control-") for h in preflight.headers)
        modern = {**ACCEPT, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
        rebound = await http.post(url, json=body, headers={**modern, "Host": "evil.example"})
        assert rebound.status_code == 421
        opened = await http.post(url, content=_OPENING, headers=ACCEPT)
        assert opened.status_code == 200, opened.text


@pytest.mark.parametrize("stateless", [False, True], ids=["session", "stateless"])
async def test_a_request_whose_id_is_neither_a_string_nor_an_integer_is_not_accepted(
    tmp_path: Path, stateless: bool
) -> None:
    """The SDK validates a 2025 POST with a method and an id it cannot take (a fraction, a
    number past a float's range, true, null) as a notification: 202, no answer, and a client
    waiting on that id waits for ever. It gets 400 and -32600 with id null, as the 2026 path
    answers (server/misread.py); notifications and responses are still accepted."""
    options = HttpOptions(port=0, stateless=stateless)
    async with _served(tmp_path, options) as url, httpx2.AsyncClient(timeout=10) as http:
        session = await open_session(http, url, stateless=stateless)
        for raw in ("1.5", "1e999", "true", "null"):
            body = '{"jsonrpc":"2.0","id":' + raw + ',"method":"ping"}'
            refused = await http.post(url, content=body, headers=session.headers)
            assert refused.status_code == 400, (raw, refused.status_code, refused.text)
            error = refused.json()
            assert error["id"] is None and error["error"]["code"] == -32600, error
        note = await session.post(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": "nothing"},
            }
        )
        assert note.status_code == 202
        answer = await session.post({"jsonrpc": "2.0", "id": "not-asked", "result": {}})
        assert answer.status_code == 202
        assert "result" in await session.ask({"jsonrpc": "2.0", "id": 5, "method": "ping"})


async def test_a_call_with_300000_unknown_argument_names_gets_a_short_answer(
    tmp_path: Path,
) -> None:
    """A 3.5 MB call naming 300,000 properties the tool does not take: the schema error lists
    the first 30 names and counts the rest. It listed every one, twice (the text and
    ``_meta``), an 11 MB answer to a 3.5 MB request, with a typo search per name: two seconds
    of the event loop, in which no other client was answered."""
    async with http_server(tmp_path) as server, httpx2.AsyncClient(timeout=60) as http:
        session = await open_session(http, server.url, stateless=False)
        names = ",".join(f'"k{i}":1' for i in range(300_000))
        body = (
            '{"jsonrpc":"2.0","id":9,"method":"tools/call",'
            '"params":{"name":"read","arguments":{' + names + "}}}"
        )
        response = await http.post(server.url, content=body, headers=session.headers)
        assert response.status_code == 200, response.text[:300]
        assert len(response.content) < 16_000, len(response.content)
        result = answer_from(response.content)["result"]
        assert result["isError"] is True
        text = result["content"][0]["text"]
        assert '"k29" (299970 more); expected only the properties "file_path"' in text, text
        assert 'missing the required property "file_path"' in text


async def test_a_call_with_an_array_of_a_million_items_is_refused_at_once(tmp_path: Path) -> None:
    """``todo`` takes at most 200 items. A 2 MB call sending it a million, each of the wrong
    kind: refused for its size, in well under a second. Every item was checked first, and
    each of its problems looked for among those found before (a list), so 8,000 items took
    4 s of the event loop and a million, which a 4 MiB request holds, days: no other client
    was answered meanwhile. The second call, a million items of the right kind, was checked
    item by item too (seconds)."""
    async with http_server(tmp_path) as server, httpx2.AsyncClient(timeout=60) as http:
        session = await open_session(http, server.url, stateless=False)
        for item in ("1", '{"content":"a","status":"pending","id":"1"}'):
            items = ",".join([item] * 1_000_000)
            body = (
                '{"jsonrpc":"2.0","id":9,"method":"tools/call",'
                '"params":{"name":"todo","arguments":{"todos":[' + items + "]}}}"
            )
            if len(body) > 4 * 1024 * 1024:  # the SDK's cap: as many as fit
                body = body[: 4 * 1024 * 1024 - 100].rpartition(item)[0] + item + "]}}}"
                body = body.replace(",]", "]")
            with anyio.fail_after(20):
                response = await http.post(server.url, content=body, headers=session.headers)
            assert response.status_code == 200, response.text[:300]
            assert len(response.content) < 16_000, len(response.content)
            text = answer_from(response.content)["result"]["content"][0]["text"]
            assert "at /todos: expected at most 200 items; got" in text, text
            async with httpx2.AsyncClient(timeout=5) as other:
                with anyio.fail_after(2):  # the event loop is free again at once
                    health = await other.get(server.url.replace("/mcp", "/healthz"))
            assert health.status_code == 200


EMAIL_CHECK = (
    r"^([a-zA-Z0-9])(([\-.]|[_]+)?([a-zA-Z0-9]+))*(@){1}[a-z0-9]+[.]{1}"
    r"(([a-z]{2,3})|([a-z]{2,3}[.]{1}[a-z]{2,3}))$"
)
"""A known email check that backtracks: each character more doubles Python's time."""


@asynccontextmanager
async def _mail(tmp_path: Path, schema: dict[str, Any]) -> AsyncIterator[Session]:
    """A stateful session with ``serve --http`` serving one tool, ``mail``, of ``schema``."""
    tools = tmp_path / "tools"
    agentcli_manifest(tools, [echo_tool("mail", schema=schema, bin="echo")], {"echo": ECHO})
    async with (
        http_server(tmp_path, "--allow", "mail", str(tools)) as server,
        httpx2.AsyncClient(timeout=60) as http,
    ):
        yield await open_session(http, server.url, stateless=False)


async def test_an_argument_that_a_manifests_pattern_backtracks_on_is_refused_at_once(
    tmp_path: Path,
) -> None:
    """A manifest tool whose argument has a pattern that backtracks, and a call with 60
    letters and a '!': refused as not matching, at once. Python's ``re`` took a minute for 30
    letters, doubling with each one more, on the event loop: no other client was answered."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"text": {"type": "string", "pattern": EMAIL_CHECK}},
        "required": ["text"],
    }
    good = {"text": "ab.c@example.com"}
    async with _mail(tmp_path, schema) as session:
        with anyio.fail_after(10):
            refused = await session.ask(call("mail", {"text": "a" * 60 + "!"}))
        text = refused["result"]["content"][0]["text"]
        assert "expected a string matching the pattern" in text, text
        with anyio.fail_after(30):
            echoed = await session.ask(call("mail", good))
        assert echoed["result"].get("isError") is not True, echoed
        assert "ab.c@example.com" in json.dumps(echoed["result"])


@pytest.mark.parametrize("closed", [True, False], ids=["additional-false", "open"])
async def test_a_property_name_that_a_manifests_pattern_backtracks_on_is_judged_at_once(
    tmp_path: Path, closed: bool
) -> None:
    """The same check on a property's name (``patternProperties``, and ``additionalProperties``
    that tests names against them): a name of 60 letters and a '!' is judged at once, as not
    matching; Python's ``re`` held the event loop as the value's pattern did."""
    schema: dict[str, Any] = {
        "type": "object",
        "patternProperties": {EMAIL_CHECK: {"type": "string"}},
    }
    if closed:
        schema["additionalProperties"] = False
    async with _mail(tmp_path, schema) as session:
        with anyio.fail_after(10):
            judged = await session.ask(call("mail", {"a" * 60 + "!": "x"}))
        refused = judged["result"].get("isError") is True
        assert refused is closed, judged
        if closed:
            text = judged["result"]["content"][0]["text"]
            assert "unexpected property" in text and "names matching" in text, text
        with anyio.fail_after(30):
            typed = await session.ask(call("mail", {"ab.c@example.com": 7}))
        assert typed["result"].get("isError") is True, (
            typed
        )  # the name matches: its value is checked
