"""Fail closed by default, through a real client: a manifest tool that declares nothing about
itself (goagent's fs_rm and exec) is published as destructive and open world, the default
policy asks before running it, and a client that cannot ask is refused."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client

from mcp_toolbridge.bridge.asking import ALLOW_ONCE
from mcp_toolbridge.bridge.gate import HEADLESS_DENIED
from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_bridge
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.manifests import agentcli_manifest
from tests.support.results import text_of

MODES = ["auto", "legacy"]
RECORD = "import json, sys\nprint(json.dumps({'ran': json.load(sys.stdin)}))\n"
"""Stands in for the real programs: prints its arguments, so a test sees that it ran."""

# The shape of goagent's own entries (name, description, schema, command, timeoutSec): no
# field says what the tool does to the machine.
GOAGENT_LIKE: list[dict[str, Any]] = [
    {
        "name": "fs_rm",
        "description": "Remove a repository-relative file or directory",
        "schema": {"type": "object", "properties": {"path": {"type": "string"}}},
        "command": ["./tools/bin/fs_rm"],
        "timeoutSec": 10,
    },
    {
        "name": "exec",
        "description": "Run an arbitrary program with args, cwd, env, and stdin",
        "schema": {"type": "object", "properties": {"cmd": {"type": "string"}}},
        "command": ["./tools/bin/exec"],
        "timeoutSec": 10,
    },
    {
        "name": "fs_stat",
        "description": "Stat a path",
        "schema": {"type": "object", "properties": {"path": {"type": "string"}}},
        "command": ["./tools/bin/fs_stat"],
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    },
]


class Person:
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(
        self, context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        assert isinstance(params, types.ElicitRequestFormParams)
        self.asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": ALLOW_ONCE})


def _settings(tmp_path: Path) -> Settings:
    agentcli_manifest(
        tmp_path / "goagent",
        GOAGENT_LIKE,
        {"fs_rm": RECORD, "exec": RECORD, "fs_stat": RECORD},
    )
    return Settings(paths=[tmp_path / "goagent"], workspace=tmp_path, audit=False)


async def _client(settings: Settings, mode: str, person: Person | None) -> AsyncIterator[Client]:
    loaded = load_catalog(settings, BUILTIN_SPECS)
    assert not loaded.errors, [p.render() for p in loaded.errors]
    async with open_bridge(settings, loaded) as bridge:
        server = ToolbridgeServer(bridge)
        async with Client(
            server.server, mode=mode, elicitation_callback=person, raise_exceptions=True
        ) as client:
            yield client


@pytest.mark.parametrize("mode", MODES)
async def test_undeclared_facts_are_published_with_their_cautious_values(
    tmp_path: Path, mode: str
) -> None:
    async for client in _client(_settings(tmp_path), mode, None):
        tools = {t.name: t for t in (await client.list_tools()).tools}
    for name in ("fs_rm", "exec"):
        hints = tools[name].annotations
        assert hints is not None
        assert hints.destructive_hint is True, name
        assert hints.read_only_hint is False and hints.open_world_hint is True
        assert hints.idempotent_hint is False
    declared = tools["fs_stat"].annotations
    assert declared is not None and declared.read_only_hint is True
    assert declared.destructive_hint is False and declared.open_world_hint is False


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_that_cannot_ask_is_refused_a_tool_that_declares_nothing(
    tmp_path: Path, mode: str
) -> None:
    async for client in _client(_settings(tmp_path), mode, None):
        for name in ("fs_rm", "exec"):
            result = await client.call_tool(name, {})
            assert result.is_error is True, name
            assert result.meta is not None
            assert result.meta["toolbridge/code"] == "permission.denied"
            error = text_of(result)
            assert error.startswith(HEADLESS_DENIED)
            assert f'"{name}" does not declare whether it changes or deletes anything' in error
            assert f"To allow it, start the server with --allow {name}, or add" in error
        ran = await client.call_tool("fs_stat", {"path": "x"})
        assert ran.is_error is False and ran.structured_content == {"ran": {"path": "x"}}


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_that_can_ask_asks_first_and_runs_once_allowed(
    tmp_path: Path, mode: str
) -> None:
    person = Person()
    async for client in _client(_settings(tmp_path), mode, person):
        result = await client.call_tool("fs_rm", {"path": "build"})
        assert result.is_error is False and result.structured_content == {"ran": {"path": "build"}}
        assert (await client.call_tool("fs_stat", {"path": "x"})).is_error is False
    assert len(person.asked) == 1
    assert "fs_rm" in person.asked[0] and "treated as destructive" in person.asked[0]
