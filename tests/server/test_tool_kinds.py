"""Every listed tool carries its ACP tool kind in ``_meta["toolbridge/acp_kind"]``: the locked
tools by the spec's mapping, manifest tools from their declared safety facts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_toolbridge.model import LOCKED_KINDS, Safety, ToolSpec, tool_kind
from mcp_toolbridge.runtime import Settings, load_catalog, open_bridge
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer

SCHEMA = {"type": "object", "properties": {"message": {"type": "string"}}}
POLICY = """
default_action = "allow"
[requires]
net.hosts = ["api.example"]
"""


def _settings(tmp_path: Path) -> Settings:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY, encoding="utf-8")
    paths = [_runloop(tmp_path / "m")]
    return Settings(paths=paths, workspace=tmp_path, policy_file=policy, audit=False)


def _runloop(folder: Path) -> Path:
    tools: list[dict[str, Any]] = [
        {
            "id": "local.run",
            "description": "A process",
            "transport": {"kind": "exec", "command": "/bin/cat", "args": []},
            "input_schema": SCHEMA,
            "result_schema": SCHEMA,
        },
        {
            "id": "remote.send",
            "description": "An HTTP call",
            "transport": {"kind": "http", "method": "POST", "url": "https://api.example/send"},
            "input_schema": SCHEMA,
            "result_schema": SCHEMA,
        },
    ]
    folder.mkdir(parents=True)
    path = folder / "tools.json"
    path.write_text(json.dumps({"version": 1, "tools": tools}), encoding="utf-8")
    return path


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_every_listed_tool_carries_its_acp_kind(tmp_path: Path, mode: str) -> None:
    settings = _settings(tmp_path)
    loaded = load_catalog(settings, locked=True)
    async with open_bridge(settings, loaded) as bridge:
        server = ToolbridgeServer(bridge)
        async with Client(server.server, mode=mode, raise_exceptions=True) as client:
            tools = (await client.list_tools()).tools
    kinds = {t.name: (t.meta or {}).get("toolbridge/acp_kind") for t in tools}
    assert kinds == {**LOCKED_KINDS, "local_run": "execute", "remote_send": "other"}
    assert kinds["read"] == "read" and kinds["edit"] == "edit" and kinds["bash"] == "execute"


def _with_safety(spec: ToolSpec, **declared: bool) -> ToolSpec:
    inferred = frozenset({"read_only", "destructive", "idempotent", "open_world"}) - set(declared)
    return spec.model_copy(update={"safety": Safety(**declared, inferred=inferred)})


def test_a_manifest_tools_kind_follows_its_declared_safety_facts(tmp_path: Path) -> None:
    loaded = load_catalog(_settings(tmp_path))
    specs = {spec.name: spec for spec in loaded.catalog.specs()}
    process, http = specs["local_run"], specs["remote_send"]
    assert tool_kind(_with_safety(process, read_only=True, open_world=False)) == "read"
    assert tool_kind(_with_safety(process, read_only=True)) == "read"
    assert tool_kind(_with_safety(process, read_only=True, open_world=True)) == "fetch"
    assert tool_kind(_with_safety(http, read_only=True)) == "fetch"
    # Undeclared or false read_only is the cautious case: it may change things.
    assert tool_kind(_with_safety(process)) == "execute"
    assert tool_kind(_with_safety(process, read_only=False, destructive=True)) == "execute"
    assert tool_kind(_with_safety(http, read_only=False)) == "other"
    # A default that was not declared is no declaration.
    assumed = process.model_copy(update={"safety": Safety(read_only=True)})
    assert tool_kind(assumed) == "execute"
