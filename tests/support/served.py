"""A real server and the SDK's client talking to it in this process, and the set-up the
served locked tools are tested in."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import Client

from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_bridge
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.results import text_of


@asynccontextmanager
async def served_client(
    settings: Settings,
    mode: str = "auto",
    *,
    locked: bool = False,
    server: Mapping[str, Any] | None = None,
    **options: Any,
) -> AsyncIterator[Client]:
    """An in-memory client session with a ToolbridgeServer over the manifests of
    ``settings``, which must load without errors: the locked tools ``settings.locked`` names
    with ``locked``, else tool_search alone. ``server`` holds ToolbridgeServer's options,
    ``options`` the Client's (callbacks); the server's exceptions reach the test."""
    loaded = load_catalog(settings, BUILTIN_SPECS, locked=locked)
    assert not loaded.errors, [p.render() for p in loaded.errors]
    async with open_bridge(settings, loaded) as bridge:
        toolbridge = ToolbridgeServer(bridge, **(server or {}))
        async with Client(toolbridge.server, mode=mode, raise_exceptions=True, **options) as client:
            yield client


OPEN_POLICY = """
default_action = "allow"
extends = "none"
[requires]
fs.read = ["{workspace}"]
fs.write = ["{workspace}"]
"""
"""An operator's policy that allows every call and grants the workspace, nothing else (no
default rules): what the secret-scan tests serve the locked tools under."""
OPEN_LOOPBACK_POLICY = (
    OPEN_POLICY + 'net.hosts = ["127.0.0.1"]\n[web_fetch]\nallow_loopback = true\n'
)
""":data:`OPEN_POLICY` that also grants 127.0.0.1, and web_fetch's fetches of it."""


def locked_settings(tmp_path: Path, policy: str | None = None, **extra: Any) -> Settings:
    """Settings for serving the locked tools: a workspace ``ws`` beside its prefix twin
    ``ws_evil`` (holding ``secret.txt``), one echo manifest tool, the audit log in
    ``audit.ndjson``, skills in ``skills``, and ``policy`` as the operator's policy file."""
    base = Path(os.path.realpath(tmp_path))
    workspace = base / "ws"
    workspace.mkdir(exist_ok=True)
    (base / "ws_evil").mkdir(exist_ok=True)
    (base / "ws_evil" / "secret.txt").write_text("top secret\n", encoding="utf-8")
    agentcli_manifest(base / "m", [echo_tool("echo")], {"echo": ECHO})
    policy_file = None
    if policy is not None:
        policy_file = base / "policy.toml"
        policy_file.write_text(policy, encoding="utf-8")
    return Settings(
        paths=[base / "m"],
        workspace=workspace,
        policy_file=policy_file,
        audit_path=base / "audit.ndjson",
        skills_dirs=(base / "skills",),
        **extra,
    )


def error_text(result: types.CallToolResult) -> str:
    """The error a failed call's result carries: its text (asserting it failed, with no
    structuredContent)."""
    assert result.is_error, result
    assert result.structured_content is None, result
    return text_of(result)
