"""A host serving the locked tools on a project, driven by the MCP SDK's client over real
stdio: the refusals a model sees for a path outside the workspace say how to allow it, and
never suggest the file system root or the home folder as the workspace."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.e2e


async def test_a_refusal_for_the_root_or_the_home_folder_suggests_no_such_workspace(
    tmp_path: Path,
) -> None:
    """``rm -rf /`` was answered "To allow it, serve a workspace that contains it
    (--workspace /)", and a file in the home folder with ``--workspace ~``: the folders a
    workspace must never be. A path elsewhere still gets its workspace suggestion."""
    home = tmp_path / "home"
    project = tmp_path / "project"
    elsewhere = tmp_path / "data"
    for folder in (home, project, elsewhere):
        folder.mkdir()
    (home / "notes.txt").write_text("private\n", encoding="utf-8")
    (elsewhere / "a.txt").write_text("a\n", encoding="utf-8")
    argv = ["-m", "mcp_toolbridge", "serve", "--workspace", str(project), "--allow", "bash"]
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "XDG_CACHE_HOME": str(tmp_path)}
    params = StdioServerParameters(command=sys.executable, args=argv, env=env)
    with anyio.fail_after(60):
        async with Client(params) as client:
            root = await client.call_tool("bash", {"command": "rm -rf /"})
            private = await client.call_tool("read", {"file_path": str(home / "notes.txt")})
            other = await client.call_tool("read", {"file_path": str(elsewhere / "a.txt")})

    texts = [r.content[0].text for r in (root, private, other)]  # type: ignore[union-attr]
    assert all(r.is_error for r in (root, private, other)), texts
    assert all(t.startswith("Denied by capability check: ") for t in texts), texts
    assert "--workspace /" not in texts[0]
    assert (
        "No workspace is suggested for it: / is the file system root. If a tool needs it, "
        in texts[0]
    )
    assert f"--workspace {home}" not in texts[1]
    assert (
        f"No workspace is suggested for it: {home} is the home folder or a folder above it. "
        in texts[1]
    )
    assert f"To allow it, serve a workspace that contains it (--workspace {elsewhere})" in texts[2]
