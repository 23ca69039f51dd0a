"""One caller's share of the streams an OAuth-protected ``serve --http`` holds open (streams.py;
docs/security.md, "The HTTP edge and the console"): 2026-07-28 listen streams and a
2025-11-25 session's GET stream of one identity fill its share, its next stream or call is
refused as a session beyond the limit is, another identity is unaffected, and a stream that
ends, whichever side ends it, gives its place back. Real provider, real HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest

from mcp_toolbridge.runtime import Settings
from mcp_toolbridge.server.streams import MAX_STREAMS_PER_CALLER
from tests.support.httpserve import (
    ACCEPT,
    LEGACY_VERSION,
    call,
    http_server,
    modern,
    modern_headers,
    request,
)
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.oauth import (
    AGENT,
    AGENT_SECRET,
    REPORTER,
    REPORTER_SECRET,
    needs_oidc,
    protected_server,
)
from tests.support.oidc import Provider

pytestmark = pytest.mark.anyio

LISTEN = {"notifications": {"toolsListChanged": True}}


def _settings(tmp_path: Path) -> Settings:
    agentcli_manifest(tmp_path / "m", [echo_tool("status")], {"echo": ECHO})
    return Settings(paths=[tmp_path / "m"], audit_path=tmp_path / "audit.ndjson")


def _listen_post(token: str | None) -> tuple[dict[str, object], dict[str, str]]:
    message = modern(request("subscriptions/listen", LISTEN))
    auth = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return message, {**modern_headers(message), **auth}


@asynccontextmanager
async def _listening(
    http: httpx2.AsyncClient, url: str, token: str | None
) -> AsyncIterator[httpx2.Response]:
    """A 2026-07-28 ``subscriptions/listen`` held open (its response, not read)."""
    message, headers = _listen_post(token)
    async with http.stream("POST", url, json=message, headers=headers) as response:
        yield response


async def _listen_once(http: httpx2.AsyncClient, url: str, token: str | None) -> httpx2.Response:
    """A listen stream opened and closed again at once: its status (and body when refused)."""
    async with _listening(http, url, token) as response:
        if response.status_code != 200:
            await response.aread()
        return response


def _refused(response: httpx2.Response) -> str:
    """The JSON-RPC error of a refusal (503, as a session beyond the limit): its message."""
    assert response.status_code == 503, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = json.loads(response.content)
    assert body["jsonrpc"] == "2.0" and body["id"] is None
    assert body["error"]["code"] == -32603
    message: str = body["error"]["message"]
    return message


async def _open_session(http: httpx2.AsyncClient, url: str, token: str) -> dict[str, str]:
    """A 2025-11-25 session: the headers its next requests carry."""
    opening = request(
        "initialize",
        {
            "protocolVersion": LEGACY_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "hoarder", "version": "0"},
        },
    )
    auth = {"Authorization": f"Bearer {token}"}
    opened = await http.post(url, json=opening, headers={**ACCEPT, **auth})
    assert opened.status_code == 200, opened.text
    headers = {
        **auth,
        "Mcp-Session-Id": opened.headers["mcp-session-id"],
        "MCP-Protocol-Version": LEGACY_VERSION,
    }
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    done = await http.post(url, json=initialized, headers={**ACCEPT, **headers})
    assert done.status_code == 202, done.text
    return headers


@needs_oidc
async def test_one_caller_cannot_hold_every_stream(tmp_path: Path, provider: Provider) -> None:
    """An agent keeps listen streams and a session's GET stream open: past its share its next
    stream and its next call get 503 with a JSON-RPC error, its notifications still pass, and
    another caller still opens a stream. The GET stream the server ends (the session's
    DELETE) gives its place back before its end reaches the client."""
    async with protected_server(_settings(tmp_path), provider) as served:
        url = served.url
        hoarder = await provider.client_credentials(AGENT, AGENT_SECRET, resource=url)
        other = await provider.client_credentials(REPORTER, REPORTER_SECRET, resource=url)
        limits = httpx2.Limits(max_connections=MAX_STREAMS_PER_CALLER + 8)
        async with (
            httpx2.AsyncClient(timeout=60, limits=limits) as http,
            AsyncExitStack() as held,
        ):
            session = await _open_session(http, url, hoarder)
            listened = {**session, "Accept": "text/event-stream"}
            get_stream = await held.enter_async_context(http.stream("GET", url, headers=listened))
            assert get_stream.status_code == 200
            assert get_stream.headers["content-type"].startswith("text/event-stream")
            for _ in range(MAX_STREAMS_PER_CALLER - 1):
                stream = await held.enter_async_context(_listening(http, url, hoarder))
                assert stream.status_code == 200
                assert stream.headers["content-type"].startswith("text/event-stream")

            assert "this caller holds" in _refused(await _listen_once(http, url, hoarder))
            echo = modern(call("status", {"text": "one more"}))
            called = await http.post(
                url,
                json=echo,
                headers={**modern_headers(echo), "Authorization": f"Bearer {hoarder}"},
            )
            assert "Too many open streams" in _refused(called)
            in_session = await http.post(
                url, json=request("tools/list"), headers={**ACCEPT, **session}
            )
            _refused(in_session)
            cancelled = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 1, "reason": "changed my mind"},
            }
            noted = await http.post(url, json=cancelled, headers={**ACCEPT, **session})
            assert noted.status_code == 202, noted.text

            theirs = await _listen_once(http, url, other)
            assert theirs.status_code == 200

            ended = await http.delete(url, headers=session)
            assert ended.status_code == 200, ended.text
            with anyio.fail_after(10):
                await get_stream.aread()  # the server ended it
            again = await _listen_once(http, url, hoarder)
            assert again.status_code == 200


@needs_oidc
async def test_streams_the_client_closes_give_their_places_back(
    tmp_path: Path, provider: Provider
) -> None:
    """An agent fills its share with listen streams and goes away from all of them (the
    server cancels each): it opens a full share again, and one more is refused as before."""
    async with protected_server(_settings(tmp_path), provider) as served:
        url = served.url
        hoarder = await provider.client_credentials(AGENT, AGENT_SECRET, resource=url)
        limits = httpx2.Limits(max_connections=MAX_STREAMS_PER_CALLER + 8)
        async with httpx2.AsyncClient(timeout=60, limits=limits) as http:
            async with AsyncExitStack() as held:
                for _ in range(MAX_STREAMS_PER_CALLER):
                    stream = await held.enter_async_context(_listening(http, url, hoarder))
                    assert stream.status_code == 200
                _refused(await _listen_once(http, url, hoarder))
            # Nothing tells a client when the server has seen its connections close: it
            # tries again, within a deadline, as a client refused for a while would.
            async with AsyncExitStack() as held:
                with anyio.fail_after(20):
                    for _ in range(MAX_STREAMS_PER_CALLER):
                        while True:
                            stream = await held.enter_async_context(_listening(http, url, hoarder))
                            if stream.status_code == 200:
                                break
                            await stream.aread()
                            await anyio.sleep(0.05)
                _refused(await _listen_once(http, url, hoarder))


async def test_every_caller_together_holds_at_most_half_the_file_descriptors(
    tmp_path: Path,
) -> None:
    """A ``serve`` under ``ulimit -n 256`` holds at most 128 streams of everyone (here the one
    anonymous caller of loopback, for which no share of its own holds): the next is refused,
    saying so; the process serves on."""
    tools = tmp_path / "tools"
    agentcli_manifest(tools, [echo_tool("status")], {"echo": ECHO})
    async with http_server(tmp_path, str(tools), nofile=256) as server:
        total = 256 // 2
        assert total > MAX_STREAMS_PER_CALLER  # the anonymous caller has no share of 64
        limits = httpx2.Limits(max_connections=total + 8)
        async with httpx2.AsyncClient(timeout=60, limits=limits) as http:
            async with AsyncExitStack() as held:
                for _ in range(total):
                    stream = await held.enter_async_context(_listening(http, server.url, None))
                    assert stream.status_code == 200
                refused = _refused(await _listen_once(http, server.url, None))
                assert f"the server holds {total} already" in refused
            ready = await http.get(server.url.replace("/mcp", "/readyz"))
            assert ready.status_code == 200
