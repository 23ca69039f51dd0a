"""Runloop budget hints reach the client in each tool's ``_meta`` (``toolbridge/budget``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_bridge
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.manifests import NOT_DESTRUCTIVE

SCHEMA = {
    "type": "object",
    "properties": {"message": {"type": "string"}},
    "required": ["message"],
    "additionalProperties": False,
}


def _tool(tool_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": tool_id,
        "description": f"Echo the payload ({tool_id})",
        "transport": {"kind": "exec", "command": "/bin/cat", "args": []},
        "input_schema": SCHEMA,
        "result_schema": SCHEMA,
        "annotations": NOT_DESTRUCTIVE,
        **extra,
    }


@pytest.fixture
def runloop_tools(tmp_path: Path) -> Path:
    path = tmp_path / "budgeted" / "tools.json"
    path.parent.mkdir()
    tools = [
        _tool("summarize.long", budget={"tokens": 4000, "usd": 0.25}),
        _tool("count.tokens", budget={"tokens": 120}),
        _tool("plain.echo"),
    ]
    path.write_text(json.dumps({"version": 1, "tools": tools}), encoding="utf-8")
    return path


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_budget_hints_are_in_the_listed_tools_meta(runloop_tools: Path, mode: str) -> None:
    settings = Settings(paths=[runloop_tools], audit=False)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    assert not loaded.problems, [p.render() for p in loaded.problems]
    with anyio.fail_after(30):
        async with open_bridge(settings, loaded) as bridge:
            server = ToolbridgeServer(bridge)
            async with Client(server.server, mode=mode, raise_exceptions=True) as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                result = await client.call_tool("summarize_long", {"message": "hi"})
    metas = {name: tools[name].meta or {} for name in ("summarize_long", "count_tokens")}
    assert metas["summarize_long"]["toolbridge/budget"] == {"tokens": 4000, "usd": 0.25}
    assert metas["count_tokens"]["toolbridge/budget"] == {"tokens": 120}
    plain = tools["plain_echo"].meta or {}
    assert plain["toolbridge/format"] == "runloop"
    assert "toolbridge/budget" not in plain
    # A hint, not a limit: the call runs and its result is not affected.
    assert result.is_error is False
    assert result.structured_content == {"message": "hi"}
