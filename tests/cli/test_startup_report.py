"""What serve says on stderr as it starts: the tools served per manifest, and every tool left
out with its reason, one line per reason however many tools share it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import stdio_client

from tests.support.manifests import ECHO, agentcli_manifest, echo_tool

HTTP_TOOLS = 40


def _runloop_http_tools(folder: Path) -> Path:
    """Runloop http tools calling hosts that no policy grants."""
    folder.mkdir(parents=True)
    tools = [
        {
            "id": f"svc.op{i}",
            "description": f"Operation {i} of the service.",
            "transport": {
                "kind": "http",
                "method": "get",
                "url": f"https://api.h{i % 3}.example/v1/op{i}",
            },
            "input_schema": {"type": "object"},
            "result_schema": {"type": "object"},
        }
        for i in range(HTTP_TOOLS)
    ]
    path = folder / "tools.json"
    path.write_text(json.dumps({"version": 1, "tools": tools}), encoding="utf-8")
    return path


def _serve_stderr(tmp_path: Path, *args: str) -> list[str]:
    """serve's stderr, started in ``tmp_path`` (home is elsewhere) until stdin ends."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home)}
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_toolbridge", "serve", "--no-audit", *args],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stderr.splitlines()


def test_serve_names_what_each_manifest_gave_and_summarises_what_it_left_out(
    tmp_path: Path,
) -> None:
    agentcli_manifest(tmp_path / "echo", [echo_tool("echo")], {"echo": ECHO})
    http = _runloop_http_tools(tmp_path / "rl")
    lines = _serve_stderr(tmp_path, "--locked", "none", str(tmp_path / "echo"), str(http))
    assert len(lines) == 4, lines  # banner, per manifest, one reason, workspace
    assert lines[1] == (
        f"mcp-toolbridge: tools served per manifest: {tmp_path / 'echo' / 'tools.json'} (1), "
        f"{http} (0 of {HTTP_TOOLS})"
    )
    left_out = lines[2]
    assert left_out.startswith(
        f"mcp-toolbridge: not served: {HTTP_TOOLS} tools (svc_op0 [api.h0.example], "
        "svc_op1 [api.h1.example], svc_op2 [api.h2.example] and 37 more): "
    )
    assert left_out.endswith(
        "its host is not in the granted net.hosts; grant it in the policy's [requires] "
        'net.hosts, or declare it in the tool\'s capabilities ("net:HOST" in its Runloop entry)'
    )
    assert (
        lines[3] == f"mcp-toolbridge: workspace {tmp_path.resolve()} (the working directory; "
        "the client's MCP roots move it)"
    )


def test_skip_invalid_shows_the_first_problems_and_counts_the_rest(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    tools = [{"name": f"t{i}", "command": ["echo"]} for i in range(12)]
    (bad / "tools.json").write_text(json.dumps({"tools": tools}), encoding="utf-8")
    agentcli_manifest(tmp_path / "good", [echo_tool("echo")], {"echo": ECHO})
    lines = _serve_stderr(tmp_path, "--skip-invalid", "--locked", "none", str(tmp_path))
    shown = [line for line in lines if line.startswith(str(bad))]
    assert len(shown) == 10
    assert all("relative command[0] must start with ./tools/bin/" in line for line in shown)
    assert (
        "mcp-toolbridge: not served: 12 invalid declaration(s) (--skip-invalid); 2 more not "
        "shown (mcp-toolbridge lint lists them all)"
    ) in lines


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_roots_that_leave_the_workspace_where_it_was_do_not_repeat_its_line(
    mode: str, tmp_path: Path
) -> None:
    """A client with no folders to share (the MCP Inspector's CLI) answers roots/list with an
    empty list: the workspace stays the working directory, said once at start-up."""
    (tmp_path / "notes.txt").write_text("here\n", encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    asked: list[bool] = []

    async def list_roots(context: ClientRequestContext) -> types.ListRootsResult:
        asked.append(True)
        return types.ListRootsResult(roots=[])

    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcp_toolbridge", "serve", "--no-audit"],
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(home)},
        cwd=str(tmp_path),
    )
    errlog = tmp_path / "stderr.txt"
    with anyio.fail_after(60), errlog.open("w", encoding="utf-8") as err:
        async with Client(
            stdio_client(server, errlog=err), mode=mode, list_roots_callback=list_roots
        ) as client:
            read = await client.call_tool("read", {"file_path": "notes.txt"})
    assert asked, "the server never asked for the client's roots"
    assert not read.is_error
    said = errlog.read_text(encoding="utf-8").splitlines()
    where = await anyio.Path(tmp_path).resolve()
    workspace = [line for line in said if line.startswith("mcp-toolbridge: workspace ")]
    assert workspace == [
        f"mcp-toolbridge: workspace {where} (the working directory; the client's MCP roots move it)"
    ], said


def test_a_workspace_that_is_not_a_folder_is_said_at_start_up(tmp_path: Path) -> None:
    """A mistyped --workspace in a client's config: the start-up line says the folder is not
    there, where before it read like any workspace and only the calls failed later."""
    from mcp_toolbridge.cli.main import parse_args, settings_of
    from mcp_toolbridge.cli.startup import workspace_line

    missing = tmp_path / "projcet"
    line = workspace_line(
        settings_of(parse_args(["serve", "--workspace", str(missing)])), follows_roots=False
    )
    assert line == (
        f"workspace {missing} (--workspace) is not a folder: read, write, edit, glob, grep "
        "and bash fail until it is one; check the path in the client's config"
    )
    missing.mkdir()
    line = workspace_line(
        settings_of(parse_args(["serve", "--workspace", str(missing)])), follows_roots=False
    )
    assert line == f"workspace {missing} (--workspace)"
