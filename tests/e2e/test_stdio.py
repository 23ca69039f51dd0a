"""End to end over real stdio: `python -m mcp_toolbridge serve` driven by the SDK client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from mcp_toolbridge.builtins import LOCKED_IDS
from mcp_toolbridge.cli.event_loop import uvloop_installed
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool

pytestmark = pytest.mark.e2e


def _server(*args: str) -> StdioServerParameters:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/")}
    env["XDG_CACHE_HOME"] = os.environ["XDG_CACHE_HOME"]  # the test's, never the user's
    return StdioServerParameters(
        command=sys.executable, args=["-m", "mcp_toolbridge", "serve", *args], env=env
    )


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_stdio_server_lists_and_calls_the_bundled_tools(mode: str) -> None:
    with anyio.fail_after(30):
        async with Client(_server(), mode=mode) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"get_time", "word_count", "slugify", "debug_echo"} <= names
            result = await client.call_tool("word_count", {"text": "one two three"})
            assert result.structured_content == {"words": 3, "lines": 1, "characters": 13}
            bad = await client.call_tool("word_count", {"text": 5})
            assert bad.is_error is True


async def test_stdio_server_serves_manifests_given_on_the_command_line(tmp_path: Path) -> None:
    agentcli_manifest(tmp_path / "mine", [echo_tool("echo")], {"echo": ECHO})
    with anyio.fail_after(30):
        async with Client(_server(str(tmp_path))) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert names == {"echo", *LOCKED_IDS}
            result = await client.call_tool("echo", {"text": "over stdio"})
            assert result.structured_content == {"echo": {"text": "over stdio"}}


def test_serve_refuses_invalid_manifests_with_every_problem_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "tools.json").write_text(
        json.dumps(
            {
                "tools": [
                    {"name": "a", "command": ["echo"]},
                    {"command": ["./tools/bin/x"]},
                ]
            }
        ),
        encoding="utf-8",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_toolbridge", "serve", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 2
    assert (
        'tools.json: tool[0] "a": relative command[0] must start with ./tools/bin/' in proc.stderr
    )
    assert "tools.json: tool[1]: name is required" in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
async def test_stdio_server_runs_on_either_event_loop(tmp_path: Path, loop: str) -> None:
    if loop == "uvloop" and not uvloop_installed():
        pytest.skip("uvloop is not installed here")
    agentcli_manifest(tmp_path / "mine", [echo_tool("echo")], {"echo": ECHO})
    with anyio.fail_after(30):
        async with Client(_server("--loop", loop, str(tmp_path))) as client:
            result = await client.call_tool("echo", {"text": f"on {loop}"})
            assert result.structured_content == {"echo": {"text": f"on {loop}"}}
