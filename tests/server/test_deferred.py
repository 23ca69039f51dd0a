"""Deferred loading: --expose search lists tool_search, a search loads its hits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_bridge
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool


def _catalog(tmp_path: Path) -> Path:
    tools = [echo_tool(f"tool_{i:02d}") for i in range(10)]
    tools.append({**echo_tool("send_email"), "description": "Send an email message"})
    agentcli_manifest(tmp_path / "big", tools, {"echo": ECHO})
    return tmp_path


async def _server(tmp_path: Path) -> Any:
    settings = Settings(paths=[_catalog(tmp_path)])
    loaded = load_catalog(settings, BUILTIN_SPECS)
    return settings, loaded


async def test_search_mode_lists_only_builtins_then_loads_hits_legacy(tmp_path: Path) -> None:
    settings, loaded = await _server(tmp_path)
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with open_bridge(settings, loaded) as bridge:
        server = ToolbridgeServer(bridge, expose="search")
        async with Client(server.server, mode="legacy", message_handler=on_message) as client:
            before = [t.name for t in (await client.list_tools()).tools]
            assert before == ["tool_search"]
            found = await client.call_tool("tool_search", {"query": "send an email"})
            assert found.structured_content["tools"][0]["name"] == "send_email"
            with anyio.fail_after(5):
                await changed.wait()
            after = [t.name for t in (await client.list_tools()).tools]
            assert "send_email" in after


async def test_search_mode_announces_loads_on_the_modern_listen_stream(tmp_path: Path) -> None:
    settings, loaded = await _server(tmp_path)
    async with open_bridge(settings, loaded) as bridge:
        server = ToolbridgeServer(bridge, expose="search")
        async with Client(server.server, mode="auto") as client:
            async with client.listen(tools_list_changed=True) as sub:
                await client.call_tool("tool_search", {"query": "send_email"})
                with anyio.fail_after(5):
                    async for _event in sub:
                        break
            assert "send_email" in [t.name for t in (await client.list_tools()).tools]


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
        async with Client(server.server, mode="auto") as client:

            async def first_hit(query: str) -> str:
                found = await client.call_tool("tool_search", {"query": query})
                assert found.is_error is False
                return str(found.structured_content["tools"][0]["name"])

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
