"""The end of stdin, on the stdio transport over real pipes: the grace period is bounded (a
call still running when it ends is cancelled, its processes killed, and it gets the SDK's
"Connection closed" error), and a request the
server sends after stdin ended is refused at once instead of waiting out the grace period (a
confirmation so refused denies its call: the client could not ask)."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from mcp_toolbridge.bridge.gate import NOT_ASKED
from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_bridge
from mcp_toolbridge.server.stdio import stdio_transport
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.manifests import agentcli_manifest, echo_tool
from tests.support.procs import alive_with, wait_gone

HANG = "import sys, time\nsys.stdin.read()\ntime.sleep(120)\n"


def _init(capabilities: dict[str, Any]) -> list[dict[str, Any]]:
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": capabilities,
        "clientInfo": {"name": "pipes", "version": "0"},
    }
    return [
        {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": params},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]


def _call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": tool, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": "call", "method": "tools/call", "params": params}


async def _serve_burst(
    server: ToolbridgeServer, burst: Sequence[dict[str, Any]], grace_s: float
) -> list[dict[str, Any]]:
    """Write ``burst`` and close stdin at once; serve until the transport ends; return what
    the server wrote."""
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    os.write(stdin_w, b"".join(json.dumps(m).encode() + b"\n" for m in burst))
    os.close(stdin_w)
    with os.fdopen(stdin_r, "rb") as stdin, os.fdopen(stdout_w, "wb") as stdout:
        async with stdio_transport(stdin, stdout, grace_s=grace_s) as (read, write):
            options = server.server.create_initialization_options()
            await server.server.run(read, write, options)
    out = b""
    while chunk := os.read(stdout_r, 1 << 16):  # small: it fits the pipe's buffer
        out += chunk
    os.close(stdout_r)
    return [json.loads(line) for line in out.splitlines()]


async def test_a_call_outliving_the_grace_period_is_cancelled_and_its_tool_killed(
    tmp_path: Path,
) -> None:
    marker = f"hang-{uuid.uuid4().hex}"
    tool = echo_tool("hang", bin="hang")
    tool["timeoutSec"] = 120
    agentcli_manifest(tmp_path / "m", [tool], {"hang": HANG})
    settings = Settings(paths=[tmp_path / "m"], audit=False, workspace=tmp_path)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    async with open_bridge(settings, loaded) as bridge:
        server = ToolbridgeServer(bridge)
        # Limits that guard against a hang (the tool would sleep 120 s, to its deadline).
        with anyio.fail_after(60):
            written = await _serve_burst(
                server, [*_init({}), _call("hang", {"text": marker})], grace_s=0.5
            )
        await wait_gone(marker, 60.0)
    assert [m.get("id") for m in written] == ["init", "call"]
    assert written[1]["error"]["code"] == types.CONNECTION_CLOSED  # cancelled, not a result
    assert not alive_with(marker, warm=True)  # the server has stopped: its pool is gone too


@pytest.mark.parametrize("grace_s", [30.0])
async def test_a_confirmation_asked_after_stdin_ended_is_refused_at_once(
    tmp_path: Path, grace_s: float
) -> None:
    (tmp_path / "policy.toml").write_text(
        '[[rules]]\npermission = "echo"\naction = "ask"\n', encoding="utf-8"
    )
    agentcli_manifest(
        tmp_path / "m",
        [echo_tool("echo")],
        {"echo": "import json, sys\nprint(json.dumps({'echo': json.load(sys.stdin)}))\n"},
    )
    settings = Settings(
        paths=[tmp_path / "m"],
        audit=False,
        workspace=tmp_path,
        policy_file=tmp_path / "policy.toml",
    )
    loaded = load_catalog(settings, BUILTIN_SPECS)
    async with open_bridge(settings, loaded) as bridge:
        server = ToolbridgeServer(bridge)
        with anyio.fail_after(grace_s / 3):  # nothing waits out the grace period
            written = await _serve_burst(
                server, [*_init({"elicitation": {}}), _call("echo", {"text": "x"})], grace_s
            )
    asked, answered = written[1], written[2]
    assert asked["method"] == "elicitation/create"
    assert answered["id"] == "call"
    assert answered["result"]["isError"] is True
    assert "echo" not in json.dumps(answered["result"].get("structuredContent"))
    assert answered["result"]["_meta"]["toolbridge/code"] == "permission.denied"  # not internal
    assert answered["result"]["content"][0]["text"].startswith(NOT_ASKED)
