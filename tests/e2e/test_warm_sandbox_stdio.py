"""Warm sandboxes from where a client stands: `python -m mcp_toolbridge serve` over real stdio,
the SDK client in both eras, a manifest tool and the bash tool each called again and again.
Every answer is the call's own, every audit line says the call ran sandboxed, what one bash call
leaves in /tmp is never seen by the next, and once the client has gone, no sandbox is left."""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.sandbox.conftest import sandbox_support  # noqa: F401 (the fixture)
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.procs import alive_with, keeps_warm_sandbox, wait_gone
from tests.support.results import text_of

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox"),
    pytest.mark.usefixtures("sandbox_support"),
]
CALLS = 12
PLANT = (
    "import json, os, sys\n"
    "name = 'planted-' + json.load(sys.stdin)['text']\n"
    "open(os.path.join('/tmp', name), 'w').close()\n"
    "print(json.dumps({'echo': {'text': ' '.join(sorted(os.listdir('/tmp')))}}))\n"
)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_tools_called_again_answer_each_call_sandboxed_and_leave_nothing(
    tmp_path: Path, mode: str
) -> None:
    marker = f"warm-{uuid.uuid4().hex}"
    manifest = tmp_path / marker
    tools = [echo_tool(annotations={"readOnlyHint": True}), echo_tool("plant", bin="plant")]
    agentcli_manifest(manifest, tools, {"echo": ECHO, "plant": PLANT})
    audit = tmp_path / "audit.ndjson"
    argv = ["-m", "mcp_toolbridge", "serve", "--audit", str(audit), "--workspace", str(tmp_path)]
    argv += ["--allow", "plant", "--allow", "bash=echo *", str(manifest)]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    server = StdioServerParameters(command=sys.executable, args=argv, env=env)
    warm_seen = []
    with anyio.fail_after(180):  # a guard against a hang: 36 calls, on a loaded machine too
        async with Client(server, mode=mode) as client:
            (served,) = alive_with(marker)
            for i in range(CALLS):
                echoed = await client.call_tool("echo", {"text": f"{marker}-{i}"})
                assert echoed.structured_content == {"echo": {"text": f"{marker}-{i}"}}
                said = await client.call_tool("bash", {"command": f"echo {marker}-{i}"})
                assert text_of(said) == f"{marker}-{i}\nexit code 0", said
                warm_seen.append(await keeps_warm_sandbox(served))
                # Each call plants a file in /tmp and lists it: it sees only its own, in a
                # fresh sandbox or a warm one (which such a call leaves unusable).
                planted = await client.call_tool("plant", {"text": str(i)})
                seen = planted.structured_content["echo"]["text"].split()
                assert [n for n in seen if n.startswith("planted-")] == [f"planted-{i}"]
    # The tools share their options: plant's leftovers cost it its warm sandbox, not theirs.
    assert all(warm_seen), warm_seen
    await wait_gone(marker, 30.0, warm=True)  # the server has exited: its sandboxes with it
    lines = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    calls = [line for line in lines if line.get("tool") in ("echo", "bash", "plant")]
    assert len(calls) == 3 * CALLS
    assert {(line["outcome"], line["sandboxed"]) for line in calls} == {("ok", True)}
