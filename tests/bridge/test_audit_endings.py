"""Every call leaves exactly one audit line with its outcome, however it ends: allowed,
denied, failed, timed out (bash included), cancelled by the client, or ended by the server's
shutdown (real stdio, stdin closed mid-call)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from mcp_toolbridge.errors import ErrorCode
from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_bridge, open_runtime
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.manifests import ECHO, FAIL, agentcli_manifest, echo_tool
from tests.support.rawstdio import raw_server, request
from tests.support.served import locked_settings

HANG = """
import json, sys, time
args = json.load(sys.stdin)
with open(args["ready"], "w") as ready:
    ready.write("ready")
time.sleep(60)
"""

POLICY = """
[[rules]]
permission = "bash"
pattern = { prefix = "sleep " }
action = "allow"
[[rules]]
permission = "bash"
pattern = { prefix = "echo " }
action = "allow"
[[rules]]
permission = "fs.read"
pattern = "secret.txt"
action = "deny"
[[rules]]
permission = "echo"
action = "allow"
[[rules]]
permission = "hang"
action = "allow"
[[rules]]
permission = "slow"
action = "allow"
[[rules]]
permission = "fail"
action = "allow"
"""


def _catalog(folder: Path) -> Path:
    hang = echo_tool("hang", bin="hang")
    hang["schema"] = {"type": "object"}
    hang["timeoutSec"] = 120
    slow = echo_tool("slow", bin="hang")
    slow["schema"] = {"type": "object"}
    slow["timeoutSec"] = 1
    fail = echo_tool("fail", bin="fail")
    agentcli_manifest(
        folder, [echo_tool("echo"), hang, slow, fail], {"echo": ECHO, "hang": HANG, "fail": FAIL}
    )
    return folder


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def _wait_ready(path: Path) -> None:
    """Block until the tool opens the FIFO and says it is running."""

    def read() -> str:
        with open(path, encoding="utf-8") as fifo:
            return fifo.read()

    with anyio.fail_after(60):  # a guard against a hang: a sandboxed start may be slow
        assert await anyio.to_thread.run_sync(read, abandon_on_cancel=True) == "ready"


def _fifo(tmp_path: Path, name: str = "ready") -> Path:
    path = tmp_path / name
    os.mkfifo(path)
    return path


async def test_each_ending_leaves_one_line_with_its_outcome(tmp_path: Path) -> None:
    # The tools work in the workspace (the hang tool writes its FIFO there).
    grant = '[requires]\nfs.read = ["{workspace}"]\nfs.write = ["{workspace}"]\n'
    settings = locked_settings(tmp_path, grant + POLICY, locked=("bash", "read"))
    settings = Settings(**{**settings.__dict__, "paths": [_catalog(tmp_path / "tools")]})
    root = settings.workspace_root()
    assert root is not None
    (root / "secret.txt").write_text("x\n", encoding="utf-8")
    audit = tmp_path / "audit.ndjson"
    loaded = load_catalog(settings, locked=True)
    assert not loaded.errors, [p.render() for p in loaded.errors]
    ready = _fifo(root)  # in the workspace: the tool's sandbox shows it nothing else
    with anyio.fail_after(30):
        async with open_runtime(settings, loaded) as runtime:
            bridge = runtime.bridge
            assert (await bridge.call("echo", {"text": "hi"})).ok
            assert (await bridge.call("read", {"file_path": "secret.txt"})).code == (
                ErrorCode.PERMISSION_DENIED
            )
            assert (await bridge.call("fail", {"text": "x"})).code == ErrorCode.EXEC_FAILED
            timed = await bridge.call("slow", {"ready": "/dev/null"})
            assert timed.code == ErrorCode.EXEC_TIMEOUT
            killed = await bridge.call("bash", {"command": "sleep 30", "timeout": 300})
            assert killed.code == ErrorCode.EXEC_TIMEOUT
            async with anyio.create_task_group() as tg:
                tg.start_soon(bridge.call, "hang", {"ready": str(ready)})
                await _wait_ready(ready)
                tg.cancel_scope.cancel()
    entries = _lines(audit)
    assert [(e["tool"], e["outcome"]) for e in entries] == [
        ("echo", "ok"),
        ("read", "denied"),
        ("fail", "error"),
        ("slow", "timeout"),
        ("bash", "timeout"),
        ("hang", "cancelled"),
    ]
    assert entries[4]["errorCode"] == "exec.timeout" and entries[4]["isError"]
    assert entries[5]["errorCode"] == "exec.cancelled" and entries[5]["decision"] == "allow"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_call_the_client_cancels_is_audited_as_cancelled(tmp_path: Path, mode: str) -> None:
    audit = tmp_path / "audit.ndjson"
    settings = Settings(paths=[_catalog(tmp_path / "tools")], audit_path=audit, workspace=tmp_path)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    ready = _fifo(tmp_path)
    with anyio.fail_after(30):
        async with open_bridge(settings, loaded) as bridge:
            server = ToolbridgeServer(bridge)
            async with Client(server.server, mode=mode) as client:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(client.call_tool, "hang", {"ready": str(ready)})
                    await _wait_ready(ready)
                    tg.cancel_scope.cancel()
                # The server runs the cancelled call's cleanup (and its audit line) shielded;
                # a call answered after it shows the cancellation has been handled.
                assert not (await client.call_tool("echo", {"text": "after"})).is_error
    entries = _lines(audit)
    assert [(e["tool"], e["outcome"]) for e in entries] == [("hang", "cancelled"), ("echo", "ok")]


@pytest.mark.e2e
async def test_a_call_in_flight_when_stdin_closes_is_audited_as_ended_by_shutdown(
    tmp_path: Path,
) -> None:
    audit = tmp_path / "audit.ndjson"
    folder = _catalog(tmp_path / "tools")
    ready = _fifo(tmp_path)
    serving = ("--workspace", str(tmp_path), str(folder))  # the FIFO is in the workspace
    grace = ("--eof-grace", "1")  # the call outlives it: no 10 s default to wait out
    async with raw_server(tmp_path, *serving, *grace, audit=audit) as server:
        await server.initialize()
        call = {"name": "hang", "arguments": {"ready": str(ready)}}
        await server.send_json(request(7, "tools/call", call))
        await _wait_ready(ready)
        await server.close_stdin()  # the call outlives the grace for answers (--eof-grace)
        assert await server.wait_exit(1 + 60) == 0  # the grace, then a guard
    [entry] = _lines(audit)
    assert entry["tool"] == "hang" and entry["outcome"] == "shutdown"
    assert entry["errorCode"] == "exec.cancelled" and entry["isError"]
