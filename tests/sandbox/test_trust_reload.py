"""A call running when the server reloads, granted the workspace, against the program of a
tool the reload newly serves (listed under "Not covered" in docs/security.md until now: the
call kept the mounts it started with, so it rewrote the new tool's program after the reload,
and the new tool ran the call's code)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_runtime
from mcp_toolbridge.sandbox import RELOADED
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.manifests import agentcli_manifest, write_script
from tests.support.results import text_of
from tests.support.served import OPEN_POLICY

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

WAIT_THEN_WRITE = """
import json, os, sys, time
args = json.load(sys.stdin)
with open(args["started"], "w") as fifo:
    fifo.write("started")
deadline = time.monotonic() + 20
while not os.path.exists(args["go"]) and time.monotonic() < deadline:
    time.sleep(0.01)
try:
    with open(args["target"], "w") as f:
        f.write("print('the call wrote this')")
    print(json.dumps({"wrote": "done"}))
except OSError as exc:
    print(json.dumps({"wrote": exc.strerror}))
"""
OPEN = {"type": "object", "additionalProperties": True}


def _tool(name: str, command: list[str]) -> dict[str, Any]:
    return {"name": name, "description": name, "schema": OPEN, "command": command}


def _settings(tmp_path: Path, warm: bool) -> tuple[Settings, Path]:
    """A server of the tool ``writer`` (served from outside the workspace ``ws``, granted
    ``ws``), and ``ws/scripts/new.py``, not served yet: (settings, the manifest folder)."""
    base = Path(os.path.realpath(tmp_path))
    ws, home, served = base / "ws", base / "home", base / "m"
    home.mkdir()
    write_script(ws / "scripts" / "new.py", "print('{}')\n")
    agentcli_manifest(
        served, [_tool("writer", ["./tools/bin/writer"])], {"writer": WAIT_THEN_WRITE}
    )
    policy = base / "policy.toml"
    table = f"\n[sandbox]\nwarm = {'true' if warm else 'false'}\n"
    policy.write_text(OPEN_POLICY.replace("{workspace}", str(ws)) + table, encoding="utf-8")
    environ = {**os.environ, "HOME": str(home)}
    settings = Settings(
        paths=[served],
        workspace=ws,
        policy_file=policy,
        audit=False,
        environ=environ,
        sandbox="required",
    )
    return settings, served


@pytest.mark.parametrize("warm", [False, True], ids=["fresh", "warm"])
async def test_a_call_that_may_write_what_a_reload_newly_serves_is_ended_by_the_reload(
    tmp_path: Path, sandbox_support: None, warm: bool
) -> None:
    settings, served = _settings(tmp_path, warm)
    assert settings.workspace is not None
    ws = settings.workspace
    target = ws / "scripts" / "new.py"
    started, go = ws / "started", ws / "go"
    loaded = load_catalog(settings, BUILTIN_SPECS)
    assert not loaded.errors, [p.render() for p in loaded.errors]
    results: list[Any] = []
    arguments = {"started": str(started), "go": str(go), "target": str(ws / "scratch.py")}

    def wait_started() -> str:
        with open(started, encoding="utf-8") as fifo:
            return fifo.read()

    async with open_runtime(settings, loaded) as runtime:
        server = ToolbridgeServer(runtime.bridge)
        async with Client(server.server, mode="legacy") as client:
            for _ in range(2 if warm else 0):  # the options seen twice: the next call is warm
                go.touch()
                os.mkfifo(started)
                async with anyio.create_task_group() as tg:
                    tg.start_soon(client.call_tool, "writer", arguments)
                    with anyio.fail_after(20):
                        await anyio.to_thread.run_sync(wait_started, abandon_on_cancel=True)
                started.unlink()
                go.unlink()
            pool = runtime.gate.sandbox.warm if runtime.gate.sandbox is not None else None
            assert pool is not None and len(pool.sandboxes) == (1 if warm else 0)
            if warm:  # its zygote says it is ready
                await anyio.wait_readable(pool.sandboxes[0].control)
            os.mkfifo(started)

            async def call() -> None:
                results.append(
                    await client.call_tool("writer", {**arguments, "target": str(target)})
                )

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                with anyio.fail_after(20):
                    await anyio.to_thread.run_sync(wait_started, abandon_on_cancel=True)
                assert any(s.busy for s in pool.sandboxes) == warm  # the call runs there
                tools = [
                    _tool("writer", ["./tools/bin/writer"]),
                    _tool("new", [sys.executable, str(target)]),
                ]
                (served / "tools.json").write_text(json.dumps({"tools": tools}), encoding="utf-8")
                assert runtime.reload() == []
                await server.swap(runtime.bridge)
                go.touch()  # the call, if it still runs, writes the new tool's program now
            ran = await client.call_tool("new", {})
    result = results[0]
    assert result.is_error, text_of(result)
    assert RELOADED.format(str(target)) in text_of(result)
    assert target.read_text(encoding="utf-8").endswith("print('{}')\n")
    assert ran.structured_content == {}, text_of(ran)  # the new tool runs what was there
