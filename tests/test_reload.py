"""Hot reload (serve --watch): valid changes swap in atomically, invalid ones keep the old."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from mcp_toolbridge.app import BUILTIN_SPECS, Settings, load_catalog, open_runtime
from mcp_toolbridge.reload import fingerprint, reload_on_change
from mcp_toolbridge.server import ToolbridgeServer
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool

HANG_THEN_ECHO = """
import json, sys
args = json.load(sys.stdin)
with open(args["text"], "w") as fifo:
    fifo.write("started")
with open(args["text"] + ".go") as gate:
    gate.read()
print(json.dumps({"finished": True}))
"""


def _write(folder: Path, tools: list[dict[str, Any]]) -> None:
    (folder / "tools.json").write_text(json.dumps({"tools": tools}), encoding="utf-8")


def test_fingerprint_changes_when_a_file_is_added_or_edited(tmp_path: Path) -> None:
    agentcli_manifest(tmp_path / "m", [echo_tool("a")], {"echo": ECHO})
    before = fingerprint([tmp_path])
    _write(tmp_path / "m", [echo_tool("a"), echo_tool("b")])
    assert fingerprint([tmp_path]) != before


async def test_valid_change_is_served_and_announced_invalid_change_keeps_the_old_catalog(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "m"
    agentcli_manifest(folder, [echo_tool("first")], {"echo": ECHO})
    settings = Settings(paths=[folder], audit=False, workspace=tmp_path)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with open_runtime(settings, loaded) as runtime:
        server = ToolbridgeServer(runtime.bridge)
        async with (
            Client(server.server, mode="legacy", message_handler=on_message) as client,
            anyio.create_task_group() as tg,
        ):
            await client.list_tools()
            await tg.start(
                lambda task_status: reload_on_change(
                    runtime, server, interval_s=0.05, task_status=task_status
                )
            )
            _write(folder, [echo_tool("first"), echo_tool("second")])
            with anyio.fail_after(10):
                await changed.wait()
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"first", "second"} <= names

            caplog.set_level(logging.ERROR, logger="mcp_toolbridge")
            _write(folder, [{"name": "broken", "command": ["not/allowed"]}])
            with anyio.fail_after(10):
                while "still serving the previous catalog" not in caplog.text:  # noqa: ASYNC110
                    await anyio.sleep(0.05)  # the loop reports through the log only
            assert "relative command[0] must start with ./tools/bin/" in caplog.text
            assert (await client.call_tool("second", {"text": "kept"})).is_error is False
            tg.cancel_scope.cancel()


async def test_call_in_flight_finishes_on_the_tool_it_started_with(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    slow = echo_tool("slow", bin="slow")
    slow["schema"] = {"type": "object"}
    agentcli_manifest(folder, [slow], {"slow": HANG_THEN_ECHO})
    settings = Settings(paths=[folder], audit=False, workspace=tmp_path)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    started = tmp_path / "started"
    os.mkfifo(started)
    os.mkfifo(tmp_path / "started.go")
    results: list[Any] = []

    async with open_runtime(settings, loaded) as runtime:
        server = ToolbridgeServer(runtime.bridge)
        async with Client(server.server, mode="legacy") as client:

            async def call() -> None:
                results.append(await client.call_tool("slow", {"text": str(started)}))

            def wait_started() -> str:
                with open(started, encoding="utf-8") as fifo:
                    return fifo.read()

            def release() -> None:
                with open(tmp_path / "started.go", "w", encoding="utf-8") as gate:
                    gate.write("go")

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                with anyio.fail_after(10):
                    await anyio.to_thread.run_sync(wait_started, abandon_on_cancel=True)
                _write(folder, [echo_tool("replacement")])
                assert runtime.reload() == []
                await server.swap(runtime.bridge)
                with anyio.fail_after(10):
                    await anyio.to_thread.run_sync(release, abandon_on_cancel=True)
            assert results[0].structured_content == {"finished": True}
            names = {t.name for t in (await client.list_tools()).tools}
            assert "slow" not in names and "replacement" in names
