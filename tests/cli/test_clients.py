"""mcp-toolbridge config --client NAME: a working snippet with absolute paths."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from mcp_toolbridge.cli.main import main
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool

EXPECTED = {
    "claude-desktop": ("mcpServers", False),
    "claude-code": ("mcpServers", True),
    "vscode": ("servers", True),
    "cursor": ("mcpServers", False),
}


def _config(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[Any, str]:
    assert main(["config", *argv]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


@pytest.mark.parametrize("client", sorted(EXPECTED))
def test_each_client_gets_its_own_file_shape_with_absolute_paths(
    client: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "p.toml").write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    config, hint = _config(capsys, "--client", client, "m", "--policy", "p.toml")
    key, typed = EXPECTED[client]
    assert list(config) == [key]
    entry = config[key]["toolbridge"]
    assert ("type" in entry) is typed
    if typed:
        assert entry["type"] == "stdio"
    assert Path(entry["command"]).is_absolute() and Path(entry["command"]).exists()
    policy, manifests = (tmp_path / "p.toml").resolve(), (tmp_path / "m").resolve()
    assert entry["args"][-4:] == ["serve", "--policy", str(policy), str(manifests)]
    assert "put this in" in hint


async def test_the_printed_command_starts_a_working_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agentcli_manifest(tmp_path / "mine", [echo_tool("echo")], {"echo": ECHO})
    config, _ = _config(capsys, "--client", "cursor", str(tmp_path / "mine"))
    entry = config["mcpServers"]["toolbridge"]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env)
    with anyio.fail_after(30):
        async with Client(params) as client:
            result = await client.call_tool("echo", {"text": "from the snippet"})
    assert result.structured_content == {"echo": {"text": "from the snippet"}}
