"""The MCP server through the SDK's in-memory client, in both protocol eras."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_toolbridge.runtime import Settings
from mcp_toolbridge.server.tool_lists import PAGE_SIZE
from tests.support.manifests import ECHO, FAIL, SLEEP, agentcli_manifest, echo_tool
from tests.support.results import text_of
from tests.support.served import served_client

MODES = ["auto", "legacy"]


@pytest.fixture
def catalog_dir(tmp_path: Path) -> Path:
    agentcli_manifest(
        tmp_path / "demo",
        [
            echo_tool("echo"),
            echo_tool("fails", bin="fail"),
            echo_tool("slow", bin="sleep", timeoutSec=1),
        ],
        {"echo": ECHO, "fail": FAIL, "sleep": SLEEP},
    )
    return tmp_path


@pytest.fixture(params=MODES)
async def client(request: pytest.FixtureRequest, catalog_dir: Path) -> AsyncIterator[Client]:
    async with served_client(Settings(paths=[catalog_dir]), request.param) as served:
        yield served


async def test_list_publishes_schema_annotations_and_source(client: Client) -> None:
    listed = await client.list_tools()
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == {"echo", "fails", "slow", "tool_search"}
    echo = tools["echo"]
    assert echo.input_schema["required"] == ["text"]
    assert echo.annotations is not None and echo.annotations.read_only_hint is False
    assert echo.annotations.open_world_hint is True
    assert echo.meta is not None
    assert echo.meta["toolbridge/format"] == "agentcli"
    assert echo.meta["toolbridge/source"].endswith("demo/tools.json")


async def test_successful_call_returns_json_text_and_structured_content(client: Client) -> None:
    result = await client.call_tool("echo", {"text": "hi"})
    assert result.is_error is False
    assert result.structured_content == {"echo": {"text": "hi"}}
    assert isinstance(result.content[0], types.TextContent)
    assert '"echo"' in result.content[0].text
    assert result.meta is not None and "duration_ms" in result.meta


async def test_bad_arguments_name_the_path_and_the_constraint(client: Client) -> None:
    result = await client.call_tool("echo", {"text": "hi", "n": 0})
    assert result.is_error is True
    error = text_of(result)
    assert error == "invalid arguments: at /n: expected at least 1; got 0"
    assert result.structured_content is None
    assert result.meta is not None and result.meta["toolbridge/code"] == "args.invalid"


async def test_missing_required_argument_is_a_tool_error(client: Client) -> None:
    result = await client.call_tool("echo", {})
    assert result.is_error is True
    assert text_of(result) == 'invalid arguments: at /: missing the required property "text"'


async def test_unknown_tool_is_a_protocol_error(client: Client) -> None:
    with pytest.raises(MCPError) as info:
        await client.call_tool("nope", {})
    assert info.value.error.code == types.INVALID_PARAMS


async def test_failing_tool_gives_its_stderr_error_to_the_model(client: Client) -> None:
    result = await client.call_tool("fails", {"text": "x"})
    assert result.is_error is True
    assert text_of(result) == "the input was rejected"
    assert result.structured_content is None
    assert result.meta is not None and result.meta["toolbridge/code"] == "exec.failed"


async def test_tool_past_its_deadline_times_out(client: Client) -> None:
    with anyio.fail_after(10):
        result = await client.call_tool("slow", {"text": "x"})
    assert result.is_error is True
    assert "timed out" in text_of(result)
    assert result.meta is not None and result.meta["toolbridge/code"] == "exec.timeout"


@pytest.mark.parametrize("mode", MODES)
async def test_large_catalog_is_paginated_with_opaque_cursors(tmp_path: Path, mode: str) -> None:
    count = PAGE_SIZE + 50
    agentcli_manifest(
        tmp_path / "many", [echo_tool(f"tool_{i:03d}") for i in range(count)], {"echo": ECHO}
    )
    async with served_client(Settings(paths=[tmp_path]), mode, server={"expose": "all"}) as client:
        first = await client.list_tools()
        assert len(first.tools) == PAGE_SIZE and first.next_cursor
        second = await client.list_tools(cursor=first.next_cursor)
        assert len(second.tools) == 51 and second.next_cursor is None
        with pytest.raises(MCPError) as info:
            await client.list_tools(cursor="not-a-cursor")
        assert info.value.error.code == types.INVALID_PARAMS
