"""Deferred loading: --expose search lists the locked tools, tool_search and call_tool; a search
loads its hits into a 2025-era connection's list, while a 2026-07-28 list never changes as a
side effect of a request (its hits are called through call_tool)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from mcp_toolbridge.runtime import (
    BUILTIN_SPECS,
    Settings,
    load_catalog,
    open_bridge,
    open_runtime,
)
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.results import found_tools, text_of


def _catalog(tmp_path: Path) -> Path:
    tools = [echo_tool(f"tool_{i:02d}") for i in range(10)]
    tools.append({**echo_tool("send_email"), "description": "Send an email message"})
    agentcli_manifest(tmp_path / "big", tools, {"echo": ECHO})
    return tmp_path


async def _server(tmp_path: Path) -> Any:
    settings = Settings(paths=[_catalog(tmp_path)])
    loaded = load_catalog(settings, BUILTIN_SPECS)
    return settings, loaded


def _listing(result: types.ListToolsResult) -> list[dict[str, Any]]:
    return [t.model_dump(mode="json", by_alias=True) for t in result.tools]


async def test_a_2025_connection_sees_its_list_grow_with_the_hits_and_is_told(
    tmp_path: Path,
) -> None:
    settings, loaded = await _server(tmp_path)
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with open_bridge(settings, loaded) as bridge:
        server = ToolbridgeServer(bridge, expose="search")
        async with Client(server.server, mode="legacy", message_handler=on_message) as client:
            before = [t.name for t in (await client.list_tools()).tools]
            assert before == ["tool_search", "call_tool"]
            found = await client.call_tool("tool_search", {"query": "send an email"})
            assert found_tools(found)[0] == "send_email"
            assert "in your tool list now" in text_of(found).splitlines()[0]
            assert "call each one directly" in text_of(found)
            with anyio.fail_after(5):
                await changed.wait()
            after = [t.name for t in (await client.list_tools()).tools]
            assert after[:2] == before and "send_email" in after


async def test_a_2026_list_is_the_same_before_and_after_a_search(tmp_path: Path) -> None:
    settings, loaded = await _server(tmp_path)
    async with open_bridge(settings, loaded) as bridge:
        server = ToolbridgeServer(bridge, expose="search")
        async with Client(server.server, mode="auto") as client:
            assert client.protocol_version == "2026-07-28"
            before = _listing(await client.list_tools())
            assert [t["name"] for t in before] == ["tool_search", "call_tool"]
            found = await client.call_tool("tool_search", {"query": "send an email"})
            assert found_tools(found)[0] == "send_email"
            assert '"required":["text"]' in text_of(found)  # its input schema, compact JSON
            assert "call one through call_tool" in text_of(found).splitlines()[0]
            assert _listing(await client.list_tools()) == before
            result = await client.call_tool(
                "call_tool", {"name": "send_email", "arguments": {"text": "hi"}}
            )
            assert result.structured_content == {"echo": {"text": "hi"}}
            assert _listing(await client.list_tools()) == before


async def test_a_reload_is_what_changes_a_2026_list_announced_on_the_listen_stream(
    tmp_path: Path,
) -> None:
    settings, loaded = await _server(tmp_path)
    async with open_runtime(settings, loaded) as runtime:
        server = ToolbridgeServer(runtime.bridge, expose="all")
        async with Client(server.server, mode="auto") as client:
            before = [t.name for t in (await client.list_tools()).tools]
            assert "send_email" in before and "call_tool" not in before
            agentcli_manifest(tmp_path / "more", [echo_tool("later")], {"echo": ECHO})
            assert await runtime.reload() == []
            async with client.listen(tools_list_changed=True) as sub:
                await server.swap(runtime.bridge)
                with anyio.fail_after(5):
                    async for _event in sub:
                        break
            after = [t.name for t in (await client.list_tools()).tools]
            assert after == [*before, "later"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_unlisted_catalog_tool_can_be_called_by_name(tmp_path: Path, mode: str) -> None:
    settings, loaded = await _server(tmp_path)
    async with open_bridge(settings, loaded) as bridge:
        server = ToolbridgeServer(bridge, expose="search")
        async with Client(server.server, mode=mode) as client:
            result = await client.call_tool("tool_03", {"text": "direct"})
            assert result.structured_content == {"echo": {"text": "direct"}}


async def test_auto_exposure_switches_to_search_past_the_threshold(tmp_path: Path) -> None:
    agentcli_manifest(tmp_path / "huge", [echo_tool(f"t{i}") for i in range(70)], {"echo": ECHO})
    settings = Settings(paths=[tmp_path])
    loaded = load_catalog(settings, BUILTIN_SPECS)
    async with open_bridge(settings, loaded) as bridge:
        assert ToolbridgeServer(bridge).expose == "search"
        assert ToolbridgeServer(bridge, expose="all").expose == "all"


async def test_tool_search_finds_a_chinese_described_tool_by_two_characters(
    tmp_path: Path,
) -> None:
    tools = [echo_tool(f"tool_{i:02d}") for i in range(10)]
    tools.append({**echo_tool("翻译文本"), "description": "翻译文本到中文"})
    tools.append({**echo_tool("café_menu"), "description": "Show the menu of the day"})
    agentcli_manifest(tmp_path / "intl", tools, {"echo": ECHO})
    settings = Settings(paths=[tmp_path])
    loaded = load_catalog(settings, BUILTIN_SPECS)
    assert not loaded.problems, [p.render() for p in loaded.problems]
    async with open_bridge(settings, loaded) as bridge:
        server = ToolbridgeServer(bridge, expose="search")
        async with Client(server.server, mode="legacy") as client:

            async def first_hit(query: str) -> str:
                found = await client.call_tool("tool_search", {"query": query})
                assert found.is_error is False
                return found_tools(found)[0]

            # The transliterated MCP name is what a client calls; the id as written is still
            # its title and _meta, and still finds it.
            assert await first_hit("中文") == "FanYiWenBen"
            assert await first_hit("翻译") == "FanYiWenBen"
            assert await first_hit("翻译文本") == "FanYiWenBen"
            assert await first_hit("cafe") == "cafe_menu"
            assert await first_hit("café_menu") == "cafe_menu"
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert listed["FanYiWenBen"].title == "翻译文本"
            assert listed["FanYiWenBen"].meta is not None
            assert listed["FanYiWenBen"].meta["toolbridge/id"] == "翻译文本"
            assert listed["cafe_menu"].title == "café_menu"
            result = await client.call_tool("FanYiWenBen", {"text": "你好"})
            assert result.structured_content == {"echo": {"text": "你好"}}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_search_with_no_match_says_so_and_loads_nothing(tmp_path: Path, mode: str) -> None:
    settings, loaded = await _server(tmp_path)
    async with open_bridge(settings, loaded) as bridge:
        server = ToolbridgeServer(bridge, expose="search")
        async with Client(server.server, mode=mode) as client:
            before = [t.name for t in (await client.list_tools()).tools]
            for query in ("zzqxunmatched", "book a table for two at an Italian restaurant"):
                found = await client.call_tool("tool_search", {"query": query})
                assert found.is_error is False
                assert found_tools(found) == []
                text = text_of(found)
                assert text.startswith(f"No tool matches {query!r}")
                assert "Search again with other words" in text
                assert "call each one directly" not in text and "call_tool with" not in text
                if "Closest names" in text:  # only as a hint, and said to be one
                    assert "not matches" in text
            assert [t.name for t in (await client.list_tools()).tools] == before
