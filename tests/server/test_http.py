"""Streamable HTTP: uvicorn in-process on 127.0.0.1, driven by the SDK client and raw HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_toolbridge.cli.main import main
from mcp_toolbridge.errors import ConfigError
from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_runtime
from mcp_toolbridge.server.http import HttpService
from mcp_toolbridge.server.http_options import HttpOptions, check_binding, parse_address
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.httpserve import ACCEPT, http_server
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.results import found_tools, text_of

TOKEN = "s3cret-test-token-0123456789"


def _catalog(tmp_path: Path) -> Path:
    tools = [echo_tool(f"tool_{i:02d}") for i in range(4)]
    tools.append({**echo_tool("send_email"), "description": "Send an email message"})
    agentcli_manifest(tmp_path / "tools", tools, {"echo": ECHO})
    return tmp_path / "tools"


@asynccontextmanager
async def _serving(
    tmp_path: Path, *, expose: Any = "all", stateless: bool = False, token: str | None = TOKEN
) -> AsyncIterator[tuple[str, Path]]:
    audit = tmp_path / "audit.ndjson"
    settings = Settings(paths=[_catalog(tmp_path)], audit_path=audit)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    async with open_runtime(settings, loaded) as runtime:
        server = ToolbridgeServer(runtime.bridge, expose=expose, on_session_end=runtime.end_session)
        service = HttpService(server, HttpOptions(port=0, token=token, stateless=stateless))
        async with anyio.create_task_group() as tg:
            url = await tg.start(service.serve)
            try:
                yield url, audit
            finally:
                service.stop()


@asynccontextmanager
async def _client(url: str, mode: str = "auto", token: str = TOKEN) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            yield client


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_http_server_lists_and_calls_tools_with_the_token(tmp_path: Path, mode: str) -> None:
    with anyio.fail_after(20):
        async with _serving(tmp_path) as (url, _), _client(url, mode) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"tool_00", "send_email", "tool_search"} <= names
            result = await client.call_tool("tool_01", {"text": "over http"})
            assert result.structured_content == {"echo": {"text": "over http"}}


async def test_requests_without_the_right_token_get_401(tmp_path: Path) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}
    with anyio.fail_after(20):
        async with _serving(tmp_path) as (url, _), httpx2.AsyncClient() as http:
            missing = await http.post(url, json=body, headers=headers)
            wrong = await http.post(
                url, json=body, headers={**headers, "Authorization": "Bearer nope"}
            )
    for response in (missing, wrong):
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert "TOOLBRIDGE_TOKEN" in response.json()["error"]


async def test_the_token_is_taken_whatever_the_case_of_its_scheme_and_only_as_a_bearer_token(
    tmp_path: Path,
) -> None:
    """RFC 9110 §11.1: an authentication scheme's name is case-insensitive (a client may send
    ``bearer``); the token itself is compared exactly, and another scheme is refused."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream"}
    sent = [f"bearer {TOKEN}", f"BEARER {TOKEN}", f"Bearer {TOKEN.upper()}", f"Basic {TOKEN}"]
    sent += [f"Bearer  {TOKEN}", f"Bearer{TOKEN}"]
    with anyio.fail_after(20):
        async with _serving(tmp_path) as (url, _), httpx2.AsyncClient() as http:
            statuses = [
                (
                    await http.post(url, json=body, headers={**headers, "Authorization": a})
                ).status_code
                for a in sent
            ]
    assert statuses[:2] == [200, 200]
    assert statuses[2:] == [401, 401, 401, 401]


async def test_a_foreign_host_or_origin_header_is_refused_against_dns_rebinding(
    tmp_path: Path,
) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {TOKEN}"}
    with anyio.fail_after(20):
        async with _serving(tmp_path) as (url, _), httpx2.AsyncClient() as http:
            host = await http.post(url, json=body, headers={**headers, "Host": "evil.example"})
            origin = await http.post(
                url, json=body, headers={**headers, "Origin": "http://evil.example"}
            )
    assert host.status_code == 421
    assert origin.status_code == 403


def test_a_non_loopback_address_without_a_token_is_refused() -> None:
    with pytest.raises(ConfigError, match="without a bearer token"):
        check_binding(HttpOptions(host="0.0.0.0", port=0))
    check_binding(HttpOptions(host="0.0.0.0", port=0, token=TOKEN))


def test_serve_http_on_every_address_without_a_token_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("TOOLBRIDGE_TOKEN", raising=False)
    assert main(["serve", "--no-audit", "--http", "0.0.0.0:0"]) == 2
    assert "without a bearer token" in capsys.readouterr().err


def test_addresses_parse_with_the_loopback_default() -> None:
    assert parse_address("8765") == ("127.0.0.1", 8765)
    assert parse_address(":0") == ("127.0.0.1", 0)
    assert parse_address("0.0.0.0:80") == ("0.0.0.0", 80)
    assert parse_address("[::1]:9000") == ("::1", 9000)
    with pytest.raises(ConfigError, match="HOST:PORT"):
        parse_address("localhost:http")


async def test_each_http_session_has_its_own_visible_set_and_session_id(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with _serving(tmp_path, expose="search") as (url, audit):
            async with _client(url, "legacy") as first, _client(url, "legacy") as second:
                listed = ["tool_search", "call_tool"]
                assert [t.name for t in (await first.list_tools()).tools] == listed
                found = await first.call_tool("tool_search", {"query": "send an email"})
                assert found_tools(found)[0] == "send_email"
                assert "send_email" in [t.name for t in (await first.list_tools()).tools]
                assert [t.name for t in (await second.list_tools()).tools] == listed
                await second.call_tool("tool_00", {"text": "b"})
                await first.call_tool("tool_00", {"text": "a"})
    sessions = {
        json.loads(line)["session"] for line in audit.read_text(encoding="utf-8").splitlines()
    }
    assert len(sessions) == 2


async def test_stateless_http_keeps_the_list_static_and_calls_any_tool(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with _serving(tmp_path, expose="search", stateless=True) as (url, audit):
            async with _client(url, "legacy") as client:
                found = await client.call_tool("tool_search", {"query": "send an email"})
                assert "through call_tool" in text_of(found).splitlines()[0]
                listed = [t.name for t in (await client.list_tools()).tools]
                assert listed == ["tool_search", "call_tool"]
                result = await client.call_tool("send_email", {"text": "hi"})
                assert result.structured_content == {"echo": {"text": "hi"}}
    sessions = [json.loads(line)["session"] for line in audit.read_text().splitlines()]
    assert len(set(sessions)) == len(sessions) == 2


async def test_a_closed_http_session_and_each_stateless_call_end_their_session_state(
    tmp_path: Path,
) -> None:
    settings = Settings(paths=[_catalog(tmp_path)], audit=False)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    ended: list[str] = []
    closed = anyio.Event()

    def end(session_id: str, *, keep_files: bool = False) -> None:
        ended.append(f"{session_id} keep_files={keep_files}")
        closed.set()

    async with open_runtime(settings, loaded) as runtime, anyio.create_task_group() as tg:
        server = ToolbridgeServer(runtime.bridge, on_session_end=end)
        service = HttpService(server, HttpOptions(port=0, token=TOKEN))
        url = await tg.start(service.serve)
        try:
            with anyio.fail_after(20):
                async with _client(url, "legacy") as client:
                    await client.call_tool("tool_00", {"text": "x"})
                    assert ended == []
                await closed.wait()
                closed = anyio.Event()
                async with _client(url, "auto") as modern:  # 2026 requests have no session
                    await modern.call_tool("tool_00", {"text": "y"})
                    await closed.wait()
        finally:
            service.stop()
    first, second = ended
    assert first.startswith(server.session_id) and first.endswith("keep_files=False")
    # A call without a session that left no output to link keeps nothing either.
    assert second.startswith(server.session_id) and second.endswith("keep_files=False")
    assert first.split()[0] != second.split()[0]


async def test_the_token_from_toolbridge_token_is_required_by_a_served_process(
    tmp_path: Path,
) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    env = {"TOOLBRIDGE_TOKEN": TOKEN}
    with anyio.fail_after(30):
        async with (
            http_server(tmp_path, str(_catalog(tmp_path)), env=env) as server,
            httpx2.AsyncClient() as http,
        ):
            assert "bearer token required" in server.stderr()
            missing = await http.post(server.url, json=ping, headers=ACCEPT)
            wrong = await http.post(
                server.url, json=ping, headers={**ACCEPT, "Authorization": "Bearer nope"}
            )
            async with _client(server.url, "legacy", token=TOKEN) as client:
                result = await client.call_tool("tool_00", {"text": "with the token"})
    assert missing.status_code == wrong.status_code == 401
    assert result.structured_content == {"echo": {"text": "with the token"}}


def test_the_token_option_wins_over_the_variable_and_an_empty_variable_means_none(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TOOLBRIDGE_TOKEN", "from-the-environment")
    assert main(["serve", "--no-audit", "--http", "0.0.0.0:0", "--token", " "]) == 2
    assert "the bearer token is empty" in capsys.readouterr().err
    monkeypatch.setenv("TOOLBRIDGE_TOKEN", "")
    assert main(["serve", "--no-audit", "--http", "0.0.0.0:0"]) == 2
    assert "without a bearer token" in capsys.readouterr().err


def test_the_session_idle_timeout_must_be_positive_and_applies_to_http_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["serve", "--no-audit", "--http", ":0", "--session-idle-timeout", "0"]) == 2
    assert "--session-idle-timeout must be a positive number" in capsys.readouterr().err
    assert main(["serve", "--no-audit", "--session-idle-timeout", "5"]) == 2
    assert "--session-idle-timeout applies to --http only" in capsys.readouterr().err
