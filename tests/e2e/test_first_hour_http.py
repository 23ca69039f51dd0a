"""A team serving over HTTP, as operating.md and clients.md say: ``serve --http`` with a
token, the health endpoint, a remote client by URL with the bearer header; and the Host
allow-list, whose refusal names the Host and the ``--allow-host`` that admits it."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_toolbridge.server.http_options import HttpOptions, connect_url, reach_line
from tests.support.httpserve import ACCEPT, LEGACY_VERSION, http_server, request

pytestmark = pytest.mark.e2e

TOKEN = "first-hour-" + "0" * 32
INITIALIZE = request(
    "initialize",
    {
        "protocolVersion": LEGACY_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "teammate", "version": "0"},
    },
)


async def test_a_foreign_host_is_told_the_allow_host_that_admits_it(tmp_path: Path) -> None:
    """A teammate reaching the server by the machine's name got 421 "Invalid Host header",
    which names neither the Host nor the flag. The answer now names both, and the flag it
    names admits the name."""
    env = {"TOOLBRIDGE_TOKEN": TOKEN}
    headers = {**ACCEPT, "Authorization": f"Bearer {TOKEN}"}
    async with http_server(tmp_path, env=env) as server:
        port = server.url.rsplit(":", 1)[1].split("/")[0]
        foreign = {**headers, "Host": f"tools.internal:{port}"}
        async with httpx2.AsyncClient(timeout=30) as http, http_with_token(TOKEN) as remote:
            health = await http.get(server.url.replace("/mcp", "/healthz"))
            refused = await http.post(server.url, json=INITIALIZE, headers=foreign)
            async with Client(streamable_http_client(server.url, http_client=remote)) as client:
                listed = await client.list_tools()
    assert health.status_code == 200 and health.json() == {"status": "ok"}
    assert refused.status_code == 421
    assert refused.json() == {
        "error": f"this server does not answer to the Host 'tools.internal:{port}' "
        "(DNS-rebinding protection; it answers 127.0.0.1, localhost, [::1]): start it with "
        "--allow-host tools.internal to reach it by that name"
    }
    assert "read" in {tool.name for tool in listed.tools}
    assert "listening on every address" not in server.stderr()

    async with http_server(tmp_path, "--allow-host", "tools.internal", env=env) as server:
        port = server.url.rsplit(":", 1)[1].split("/")[0]
        foreign = {**headers, "Host": f"tools.internal:{port}"}
        async with httpx2.AsyncClient(timeout=30) as http:
            with anyio.fail_after(30):
                admitted = await http.post(server.url, json=INITIALIZE, headers=foreign)
    assert admitted.status_code == 200, admitted.text


def http_with_token(token: str) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)


def test_listening_on_every_address_says_which_names_it_answers() -> None:
    """Bound to 0.0.0.0 without --allow-host, the start-up says that only the loopback names
    are answered, and how to add the ones clients on other machines use."""
    line = reach_line(HttpOptions(host="0.0.0.0", port=8765, token=TOKEN))
    assert line == (
        "listening on every address, but answering only the Host names 127.0.0.1, localhost, "
        "[::1] (DNS-rebinding protection): for clients on other machines, add --allow-host with "
        "each name or address they use (--allow-host tools.internal); any other is answered 421"
    )
    named = HttpOptions(host="0.0.0.0", port=8765, token=TOKEN, allowed_hosts=("tools.internal",))
    assert reach_line(named) == (
        "listening on every address, answering the Host names 127.0.0.1, localhost, [::1], "
        "tools.internal"
    )
    assert reach_line(HttpOptions(host="127.0.0.1", port=8765)) is None


def test_the_url_printed_for_every_address_is_one_a_client_can_use() -> None:
    """Bound to 0.0.0.0, the start-up line said "at http://0.0.0.0:8765/mcp": a client given
    that URL sends Host 0.0.0.0, which the server does not answer (421). It prints the
    loopback URL; clients elsewhere use the names --allow-host admits."""
    assert connect_url(HttpOptions(host="0.0.0.0", port=8765)) == "http://127.0.0.1:8765/mcp"
    assert connect_url(HttpOptions(host="::", port=8765)) == "http://[::1]:8765/mcp"
    assert connect_url(HttpOptions(host="10.0.0.5", port=8765)) == "http://10.0.0.5:8765/mcp"
