"""Deferred loading over streamable HTTP (uvicorn in this process, the SDK client): a 2026-07-28
list is the same before and after a search, a 2025-era session's grows; found tools run
through call_tool under their own schema, rules and audit line; pinned tools are listed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_runtime
from mcp_toolbridge.server.http import HttpService
from mcp_toolbridge.server.http_options import HttpOptions
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.discovery import BLOCKED_NOTE, audit_lines, proxied, write_catalog
from tests.support.results import found_tools, text_of

TOKEN = "discovery-test-token-0123456789"


@asynccontextmanager
async def _serving(tmp_path: Path, *, pins: tuple[str, ...] = ()) -> AsyncIterator[str]:
    paths, policy = write_catalog(tmp_path)
    settings = Settings(
        paths=paths,
        policy_file=policy,
        workspace=tmp_path,
        audit_path=tmp_path / "audit.ndjson",
        pins=pins,
    )
    loaded = load_catalog(settings, BUILTIN_SPECS)
    assert not loaded.errors, [p.render() for p in loaded.errors]
    async with open_runtime(settings, loaded) as runtime:
        server = ToolbridgeServer(
            runtime.bridge, expose="search", on_session_end=runtime.end_session
        )
        service = HttpService(server, HttpOptions(port=0, token=TOKEN))
        async with anyio.create_task_group() as tg:
            url = await tg.start(service.serve)
            try:
                yield url
            finally:
                service.stop()


@asynccontextmanager
async def _client(url: str, mode: str, **options: Any) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, **options) as client:
            yield client


def _listing(result: types.ListToolsResult) -> list[dict[str, Any]]:
    return [t.model_dump(mode="json", by_alias=True) for t in result.tools]


async def test_over_http_a_2026_list_is_the_same_before_and_after_a_search(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(30):
        async with _serving(tmp_path) as url, _client(url, "auto") as client:
            assert client.protocol_version == "2026-07-28"
            before = _listing(await client.list_tools())
            assert [t["name"] for t in before] == ["tool_search", "call_tool"]
            found = await client.call_tool("tool_search", {"query": "send an email"})
            assert found_tools(found)[0] == "send_email"
            assert "through call_tool" in text_of(found).splitlines()[0]
            assert _listing(await client.list_tools()) == before


async def test_over_http_a_2025_session_list_grows_with_the_hits(tmp_path: Path) -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    with anyio.fail_after(30):
        async with (
            _serving(tmp_path) as url,
            _client(url, "legacy", message_handler=on_message) as client,
        ):
            before = [t.name for t in (await client.list_tools()).tools]
            assert before == ["tool_search", "call_tool"]
            found = await client.call_tool("tool_search", {"query": "send an email"})
            assert "call each one directly" in text_of(found)
            await changed.wait()
            after = [t.name for t in (await client.list_tools()).tools]
            assert after[:2] == before and "send_email" in after[2:]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_over_http_found_tools_run_through_call_tool_under_their_own_rules(
    tmp_path: Path, mode: str
) -> None:
    with anyio.fail_after(30):
        async with _serving(tmp_path) as url, _client(url, mode) as client:
            sent = await client.call_tool("call_tool", proxied("send_email", text="hi"))
            assert sent.structured_content == {"echo": {"text": "hi"}}
            broken = await client.call_tool("call_tool", proxied("send_email", text=5))
            direct = await client.call_tool("send_email", {"text": 5})
            assert broken.is_error and text_of(broken) == text_of(direct)
            denied = await client.call_tool("call_tool", proxied("post_note", **BLOCKED_NOTE))
            assert denied.is_error and "Denied by" in text_of(denied)
    lines = audit_lines(tmp_path / "audit.ndjson")
    assert [(ln["tool"], ln["via"], ln["outcome"]) for ln in lines] == [
        ("send_email", "call_tool", "ok"),
        ("send_email", "call_tool", "error"),
        ("send_email", None, "error"),
        ("post_note", "call_tool", "denied"),
    ]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_over_http_a_pinned_tool_is_listed_with_always_load(
    tmp_path: Path, mode: str
) -> None:
    with anyio.fail_after(30):
        async with _serving(tmp_path, pins=("post_*",)) as url, _client(url, mode) as client:
            tools = (await client.list_tools()).tools
            assert [t.name for t in tools] == ["tool_search", "call_tool", "post_note"]
            meta = tools[2].meta or {}
            assert meta["anthropic/alwaysLoad"] is True
            assert meta["anthropic/searchHint"] == "notes team"
            assert "anthropic/alwaysLoad" not in (tools[0].meta or {})
