"""Cancellation and progress from a real MCP client, in memory and over real stdio."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_bridge
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.manifests import agentcli_manifest, echo_tool

HANG = """
import json, subprocess, sys, time
args = json.load(sys.stdin)
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", args["text"]])
with open(args["ready"], "w") as ready:
    ready.write("ready")
time.sleep(600)
"""

PROGRESS = """
import json, os, sys
with open(int(os.environ["TOOLBRIDGE_PROGRESS_FD"]), "w") as channel:
    for step in (1, 2, 3):
        print(json.dumps({"progress": step, "total": 3, "message": f"step {step}"}), file=channel,
              flush=True)
print(json.dumps({"done": True}))
"""


GONE_WITHIN_S = 60.0
"""How long a cancelled call's processes may take to be gone: a guard against their living on
(they would sleep 600 s, past their 120 s deadline), with room for a loaded 2-core machine."""


def _alive_with(marker: str) -> list[int]:
    """Processes (not zombies: PID 1 here never reaps) whose command line holds ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
            with open(f"/proc/{entry}/stat", encoding="utf-8") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry))
    return found


async def _wait_gone(marker: str, within_s: float) -> None:
    with anyio.fail_after(within_s):
        # Polling /proc: no event tells one process that an unrelated one has exited.
        while _alive_with(marker):  # noqa: ASYNC110
            await anyio.sleep(0.02)


def _catalog(tmp_path: Path) -> Path:
    hang = echo_tool("hang", bin="hang")
    hang["schema"] = {"type": "object"}
    hang["timeoutSec"] = 120
    progress = echo_tool("progress", bin="progress")
    progress["schema"] = {"type": "object"}
    agentcli_manifest(tmp_path / "m", [hang, progress], {"hang": HANG, "progress": PROGRESS})
    return tmp_path / "m"


def _ready_pipe(tmp_path: Path) -> Path:
    path = tmp_path / "ready"
    os.mkfifo(path)
    return path


async def _wait_ready(path: Path) -> None:
    """Block until the tool opens the FIFO and says it is ready (its children exist)."""

    def read() -> str:
        with open(path, encoding="utf-8") as fifo:
            return fifo.read()

    with anyio.fail_after(GONE_WITHIN_S):  # a guard against a hang: a start may be slow
        assert await anyio.to_thread.run_sync(read, abandon_on_cancel=True) == "ready"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_cancelled_call_kills_the_tool_and_its_children(tmp_path: Path, mode: str) -> None:
    settings = Settings(paths=[_catalog(tmp_path)], audit=False, workspace=tmp_path)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    marker = f"marker-{uuid.uuid4().hex}"
    ready = _ready_pipe(tmp_path)
    async with open_bridge(settings, loaded) as bridge:
        server = ToolbridgeServer(bridge)
        async with Client(server.server, mode=mode) as client, anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "hang", {"text": marker, "ready": str(ready)})
            await _wait_ready(ready)
            assert _alive_with(marker)
            tg.cancel_scope.cancel()
        await _wait_gone(marker, GONE_WITHIN_S)
        assert (await bridge.call("progress", {})).ok


@pytest.mark.e2e
async def test_cancel_over_stdio_frees_the_process_group_and_the_server_keeps_serving(
    tmp_path: Path,
) -> None:
    folder = _catalog(tmp_path)
    marker = f"marker-{uuid.uuid4().hex}"
    ready = _ready_pipe(tmp_path)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            *("-m", "mcp_toolbridge", "serve", str(folder), "--no-audit"),
            *("--workspace", str(tmp_path)),
        ],
        env=env,
    )
    with anyio.fail_after(3 * GONE_WITHIN_S):
        async with Client(params, mode="legacy") as client:
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, "hang", {"text": marker, "ready": str(ready)})
                await _wait_ready(ready)
                tg.cancel_scope.cancel()
            await _wait_gone(marker, GONE_WITHIN_S)
            result = await client.call_tool("progress", {})
            assert result.structured_content == {"done": True}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_progress_lines_reach_a_client_that_asked_for_progress(
    tmp_path: Path, mode: str
) -> None:
    settings = Settings(paths=[_catalog(tmp_path)], audit=False)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with open_bridge(settings, loaded) as bridge:
        server = ToolbridgeServer(bridge)
        async with Client(server.server, mode=mode) as client:
            result = await client.call_tool("progress", {}, progress_callback=on_progress)
    assert result.structured_content == {"done": True}
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
