"""A Runloop http tool's redirects stay inside the call's net scope, through a real server
(the in-process SDK client) and real HTTP servers on 127.0.0.1.

The tool runs in the server, outside the sandbox: its redirects are the only way its request
can reach a host the capability check never saw. Found by the red-team pass of 2026-11-29
(4th): a tool that declares no ``net:`` host is served under the policy's ``net.hosts``, and
the executor checked redirects against the tool's own declared hosts only, so a granted API
that redirected to another host (a loopback service, the cloud metadata address) was
followed there.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from urllib.parse import quote

import pytest

from mcp_toolbridge.runtime import Settings
from tests.support.served import OPEN_POLICY, error_text, locked_settings, served_client
from tests.support.web_fixture import Reply, Route, Seen, serving

pytestmark = pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")


def _redirect(seen: Seen) -> Reply:
    return Reply(302, b"", headers={"Location": seen.query["to"][0]})


ROUTES: dict[str, Route] = {
    "/redirect": _redirect,
    "/internal": Reply(body=b'{"secret": "internal"}', content_type="application/json"),
}


def _settings(tmp_path: Path, url: str, policy: str, capabilities: list[str]) -> Settings:
    tool = {
        "id": "api.get",
        "description": "Gets a thing from the API",
        "transport": {"kind": "http", "method": "GET", "url": url},
        "input_schema": {"type": "object"},
        "result_schema": {"type": "object"},
        "capabilities": capabilities,
        "annotations": {"readOnlyHint": True},
    }
    folder = tmp_path / "h"
    folder.mkdir()
    (folder / "tools.json").write_text(json.dumps({"version": 1, "tools": [tool]}), "utf-8")
    settings = locked_settings(tmp_path, policy)
    return dataclasses.replace(settings, paths=[*settings.paths, folder], sandbox="off")


@pytest.mark.parametrize(
    ("granted", "capabilities"),
    [('["127.0.0.1"]', []), ('["*.example.com", "127.0.0.1"]', [])],
    ids=["policy-grant", "policy-pattern"],
)
async def test_a_redirect_to_a_host_outside_the_calls_scope_is_not_followed(
    tmp_path: Path, granted: str, capabilities: list[str]
) -> None:
    policy = OPEN_POLICY + f"net.hosts = {granted}\n"
    with serving(ROUTES) as server:
        internal = server.url("/internal", "localhost")  # the same server, another host
        url = server.url("/redirect") + "?to=" + quote(internal, safe="")
        settings = _settings(tmp_path, url, policy, capabilities)
        async with served_client(settings) as client:
            result = await client.call_tool("api_get", {})
        assert [hit.path for hit in server.hits] == ["/redirect"]
    text = error_text(result)
    assert "redirect to localhost" in text and "not allowed" in text, text
    assert "internal" not in text.replace("/internal", "")


async def test_a_redirect_inside_the_calls_scope_is_followed(tmp_path: Path) -> None:
    policy = OPEN_POLICY + 'net.hosts = ["127.0.0.1", "localhost"]\n'
    with serving(ROUTES) as server:
        internal = server.url("/internal", "localhost")
        url = server.url("/redirect") + "?to=" + quote(internal, safe="")
        settings = _settings(tmp_path, url, policy, [])
        async with served_client(settings) as client:
            result = await client.call_tool("api_get", {})
        assert [hit.path for hit in server.hits] == ["/redirect", "/internal"]
    assert not result.is_error, result
    assert result.structured_content == {"secret": "internal"} or "internal" in str(result)
