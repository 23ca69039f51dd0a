"""A client that asks for progress hears from long calls of manifest process tools, HTTP tools
and bash: the elapsed time (increasing) and the output bytes so far, at a bounded rate.

Each tool prints 1500 bytes, then waits until the test has heard two heartbeats (a FIFO, or an
event the HTTP route waits on): no sleeping, and the call runs exactly as long as needed."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client

from mcp_toolbridge.executors.progress import BEAT_S
from mcp_toolbridge.runtime import Settings, load_catalog, open_bridge
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.manifests import agentcli_manifest, echo_tool
from tests.support.web_fixture import Reply, serving

PRINTED = 1500
BEATS = 2

WAITER = f"""
import json, sys
args = json.load(sys.stdin)
sys.stdout.write('{{"data": "' + 'x' * {PRINTED - 10})
sys.stdout.flush()
open(args["release"]).read()
sys.stdout.write('"}}')
"""

POLICY = """
extends = "none"  # all of the policy: not over the default's write, edit, bash ask
default_action = "allow"
[requires]
fs.read = ["{workspace}"]
net.hosts = ["127.0.0.1"]
"""


class Listener:
    """The progress callback: records what arrives, and calls ``release`` once it has heard
    ``BEATS`` heartbeats."""

    def __init__(self, release: Callable[[], None]) -> None:
        self.seen: list[tuple[float, float | None, str | None]] = []
        self._release = release
        self._released = False

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append((progress, total, message))
        if len(self.seen) >= BEATS and not self._released:
            self._released = True
            await anyio.to_thread.run_sync(self._release)


def _fifo(tmp_path: Path) -> tuple[Path, Callable[[], None]]:
    path = tmp_path / "release"
    os.mkfifo(path)

    def release() -> None:
        with open(path, "w", encoding="utf-8") as fifo:
            fifo.write("go\n")

    return path, release


def _runloop_http(folder: Path, url: str) -> Path:
    schema = {"type": "object", "properties": {"data": {"type": "string"}}}
    tool = {
        "id": "slow.download",
        "description": "A slow HTTP download",
        "transport": {"kind": "http", "method": "GET", "url": url},
        "input_schema": {"type": "object"},
        "result_schema": schema,
    }
    folder.mkdir(parents=True)
    (folder / "tools.json").write_text(json.dumps({"version": 1, "tools": [tool]}), "utf-8")
    return folder


async def _call(tmp_path: Path, paths: list[Path], mode: str, tool: str, args: Any, on: Listener):
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY, encoding="utf-8")
    settings = Settings(paths=paths, workspace=tmp_path, policy_file=policy, audit=False)
    loaded = load_catalog(settings, locked=True)
    assert not loaded.errors, loaded.errors
    async with open_bridge(settings, loaded) as bridge:
        server = ToolbridgeServer(bridge)
        async with Client(server.server, mode=mode, raise_exceptions=True) as client:
            with anyio.fail_after(20):
                return await client.call_tool(tool, args, progress_callback=on)


def _check(seen: list[tuple[float, float | None, str | None]]) -> None:
    assert len(seen) == BEATS, seen
    values = [progress for progress, _, _ in seen]
    assert values == sorted(set(values)), values  # strictly increasing
    assert values[1] - values[0] >= BEAT_S - 0.05  # at most a few a second
    assert all(total is None for _, total, _ in seen)
    assert all(message and message.startswith("running for ") for _, _, message in seen)
    assert seen[-1][2] is not None and seen[-1][2].endswith("1.5 KB of output so far")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_long_process_tool_reports_time_and_output(tmp_path: Path, mode: str) -> None:
    fifo, release = _fifo(tmp_path)
    tool = echo_tool("waiter", bin="waiter")
    tool["schema"] = {"type": "object"}
    agentcli_manifest(tmp_path / "m", [tool], {"waiter": WAITER})
    listener = Listener(release)
    result = await _call(
        tmp_path, [tmp_path / "m"], mode, "waiter", {"release": str(fifo)}, listener
    )
    assert result.is_error is False, result
    _check(listener.seen)


async def test_a_long_bash_command_reports_time_and_output(tmp_path: Path) -> None:
    fifo, release = _fifo(tmp_path)
    command = f"printf '%{PRINTED}s' | tr ' ' x; read -r _ < {fifo}"
    listener = Listener(release)
    result = await _call(tmp_path, [], "legacy", "bash", {"command": command}, listener)
    assert result.is_error is False, result
    _check(listener.seen)


async def test_a_long_http_tool_reports_time_and_bytes_received(tmp_path: Path) -> None:
    released = threading.Event()

    def body() -> Any:
        yield b'{"data": "' + b"x" * (PRINTED - 10)
        released.wait(15)
        yield b'"}'

    with serving(
        {"/slow": lambda seen: Reply(body=body(), content_type="application/json")}
    ) as web:
        folder = _runloop_http(tmp_path / "m", web.url("/slow"))
        listener = Listener(released.set)
        result = await _call(tmp_path, [folder], "auto", "slow_download", {}, listener)
    assert result.is_error is False, result
    _check(listener.seen)
