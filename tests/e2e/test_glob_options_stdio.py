"""Issue 25 over real stdio: `python -m mcp_toolbridge serve` with the issue's policy
(``find *`` and ``tar cf out.tar *`` allowed, everything else denied), a workspace holding
files named ``-delete``, ``--checkpoint=1`` and ``--checkpoint-action=exec=sh pwn.sh``, and
the SDK client in both eras. The lines that would delete the workspace or run pwn.sh are
refused with the word and the safe spelling; written safely, they run."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.support.results import text_of

pytestmark = pytest.mark.e2e

POLICY = 'allow = ["bash=find *", "bash=tar cf out.tar *"]\ndeny = ["bash=*"]\n'
PLANTED = ("-delete", "--checkpoint=1", "--checkpoint-action=exec=sh pwn.sh")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_planted_options_are_refused_and_the_safe_spellings_run(
    tmp_path: Path, mode: str
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for name in PLANTED:
        (workspace / name).write_text("planted\n", encoding="utf-8")
    (workspace / "pwn.sh").write_text("touch PWNED\n", encoding="utf-8")
    (workspace / "keep.txt").write_text("keep me\n", encoding="utf-8")
    (workspace / ".git").mkdir()
    (workspace / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY, encoding="utf-8")
    audit = tmp_path / "audit.ndjson"
    argv = ["-m", "mcp_toolbridge", "serve", "--workspace", str(workspace), "--policy"]
    argv += [str(policy), "--audit", str(audit)]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    server = StdioServerParameters(command=sys.executable, args=argv, env=env)
    with anyio.fail_after(60):
        async with Client(server, mode=mode) as client:
            find = await client.call_tool("bash", {"command": "find *"})
            tar = await client.call_tool("bash", {"command": "tar cf out.tar *"})
            assert find.is_error and tar.is_error
            assert "'*' can expand to an option of find such as -delete" in text_of(find)
            assert "write './*'" in text_of(find)
            assert "--checkpoint-action" in text_of(tar) and "put '--' before it" in text_of(tar)
            found = await client.call_tool("bash", {"command": "find ./* -name keep.txt"})
            assert found.structured_content is None  # the text is the whole result
            assert text_of(found) == "./keep.txt\nexit code 0"
            packed = await client.call_tool("bash", {"command": "tar cf out.tar -- *"})
            assert text_of(packed).endswith("exit code 0"), packed
    assert not (workspace / "PWNED").exists()
    assert (workspace / ".git" / "HEAD").exists() and (workspace / "-delete").exists()
    assert (workspace / "keep.txt").read_text(encoding="utf-8") == "keep me\n"
    lines = [json.loads(x) for x in audit.read_text(encoding="utf-8").splitlines()]
    calls = [(line["decision"], line["decisionScope"]) for line in lines if line["tool"] == "bash"]
    assert calls == [("deny", "shell")] * 2 + [("allow", "manifest")] * 2
