"""A workspace whose path holds glob characters (``?``, ``[``, ``*``) is a literal path: it is
escaped where it is substituted into patterns (``{workspace}``, relative patterns), so reads in
it are allowed and a sibling the unescaped pattern would match is not."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_toolbridge.policy.paths import escape_glob, glob_literal, glob_regex, split_glob
from mcp_toolbridge.runtime import Settings
from tests.support.results import text_of
from tests.support.served import error_text, served_client

ODD = "w[1]?*"


def test_an_escaped_glob_matches_only_its_own_text():
    pattern = escape_glob("/tmp/" + ODD) + "/**"
    assert pattern == "/tmp/w[[]1][?][*]/**"
    assert glob_regex(pattern).match("/tmp/w[1]?*/a/b.txt")
    assert not glob_regex(pattern).match("/tmp/w1xy/a/b.txt")
    assert split_glob(pattern) == ("/tmp/w[1]?*", "**")
    assert split_glob(escape_glob("/tmp/" + ODD)) == ("/tmp/w[1]?*", "")
    assert glob_literal("[*][?][[]]") == "*?[]"
    assert glob_literal("a[bc]") is None and glob_literal("*.py") is None


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return Path(os.path.realpath(tmp_path))


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_file_tools_work_in_a_workspace_named_like_a_glob(base: Path, mode: str):
    workspace = base / ODD
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "notes.txt").write_text("alpha\nbeta\n", encoding="utf-8")
    sibling = base / "w1xyz"  # matched by the unescaped pattern w[1]?*
    sibling.mkdir()
    (sibling / "secret.txt").write_text("top secret\n", encoding="utf-8")
    settings = Settings(
        paths=[],
        workspace=workspace,
        audit=False,
        locked=("read", "glob", "grep", "tool_search"),
    )
    async with served_client(settings, mode, locked=True) as client:
        read = await client.call_tool("read", {"file_path": "src/notes.txt"})
        assert not read.is_error, read
        assert text_of(read).startswith("     1\talpha")
        absolute = await client.call_tool("read", {"file_path": str(workspace / "src/notes.txt")})
        assert not absolute.is_error
        globbed = await client.call_tool("glob", {"pattern": "**/*.txt"})
        assert text_of(globbed) == "src/notes.txt"
        anchored = await client.call_tool("glob", {"pattern": f"{workspace}/src/*.txt"})
        assert text_of(anchored) == "src/notes.txt"
        grepped = await client.call_tool("grep", {"pattern": "beta"})
        assert text_of(grepped) == "Found 1 file(s)\nsrc/notes.txt"
        outside = await client.call_tool("read", {"file_path": str(sibling / "secret.txt")})
        assert "outside" in error_text(outside) or "denied" in error_text(outside).lower()
