"""Hot reload (serve --watch): valid changes swap in atomically, invalid ones keep the old."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp_toolbridge.cli.reload import fingerprint, reload_on_change
from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_runtime
from mcp_toolbridge.server.http import HttpService
from mcp_toolbridge.server.http_options import HttpOptions
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
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
                assert await runtime.reload() == []
                await server.swap(runtime.bridge)
                with anyio.fail_after(10):
                    await anyio.to_thread.run_sync(release, abandon_on_cancel=True)
            assert results[0].structured_content == {"finished": True}
            names = {t.name for t in (await client.list_tools()).tools}
            assert "slow" not in names and "replacement" in names


def _server_params(*args: str) -> StdioServerParameters:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/")}
    env["XDG_CACHE_HOME"] = os.environ["XDG_CACHE_HOME"]  # the test's, never the user's
    return StdioServerParameters(
        command=sys.executable, args=["-m", "mcp_toolbridge", "serve", *args], env=env
    )


@pytest.mark.e2e
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_serve_watch_over_stdio_announces_an_edited_manifest_and_serves_the_new_tool(
    tmp_path: Path, mode: str
) -> None:
    folder = tmp_path / "m"
    agentcli_manifest(folder, [echo_tool("first")], {"echo": ECHO})
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    params = _server_params(
        "--watch", "--no-audit", "--locked", "none", "--workspace", str(tmp_path), str(folder)
    )
    with anyio.fail_after(60):
        async with Client(params, mode=mode, message_handler=on_message) as client:
            assert {t.name for t in (await client.list_tools()).tools} == {"first"}
            if mode == "legacy":  # 2025: the notification comes on the connection
                _write(folder, [echo_tool("first"), echo_tool("second")])
                await changed.wait()
            else:  # 2026: only on a listen stream the client opened
                async with client.listen(tools_list_changed=True) as stream:
                    _write(folder, [echo_tool("first"), echo_tool("second")])
                    async for _event in stream:
                        break
            assert {t.name for t in (await client.list_tools()).tools} == {"first", "second"}
            result = await client.call_tool("second", {"text": "new"})
            assert result.structured_content == {"echo": {"text": "new"}}


@asynccontextmanager
async def _watched(settings: Settings) -> AsyncIterator[tuple[Client, anyio.Event]]:
    """A 2025-era client of a server whose files are watched (polled every 50 ms), and an
    event set on the first list_changed."""
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
            await tg.start(
                lambda task_status: reload_on_change(
                    runtime, server, interval_s=0.05, task_status=task_status
                )
            )
            yield client, changed
            tg.cancel_scope.cancel()


ALLOW_ALL = 'default_action = "allow"\n'
DENY_RULE = '[[rules]]\npermission = "second"\naction = "deny"\n'
INVALID_RULE = '[[rules]]\npermission = "second"\naction = "maybe"\n'
"""Rules only: a project policy may not set ``default_action``."""


async def _names(client: Client) -> set[str]:
    return {t.name for t in (await client.list_tools()).tools}


async def _logged(caplog: pytest.LogCaptureFixture, text: str) -> None:
    with anyio.fail_after(10):
        while text not in caplog.text:  # noqa: ASYNC110
            await anyio.sleep(0.05)  # the loop reports through the log only


async def test_a_tool_the_changed_policy_file_denies_disappears_from_the_list(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "m"
    agentcli_manifest(folder, [echo_tool("first"), echo_tool("second")], {"echo": ECHO})
    policy = tmp_path / "policy.toml"
    policy.write_text(ALLOW_ALL, encoding="utf-8")
    settings = Settings(paths=[folder], audit=False, workspace=tmp_path, policy_file=policy)
    async with _watched(settings) as (client, changed):
        assert {"first", "second"} <= await _names(client)
        policy.write_text(ALLOW_ALL + DENY_RULE, encoding="utf-8")
        with anyio.fail_after(10):
            await changed.wait()
        names = await _names(client)
        assert "first" in names and "second" not in names
        with pytest.raises(MCPError, match="Unknown tool: second"):
            await client.call_tool("second", {"text": "x"})


@pytest.mark.parametrize("which", ["--policy file", "project policy"])
async def test_an_invalid_policy_keeps_the_old_catalog_and_logs_the_problem(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, which: str
) -> None:
    folder = tmp_path / "m"
    agentcli_manifest(folder, [echo_tool("first"), echo_tool("second")], {"echo": ECHO})
    operator = tmp_path / "policy.toml"
    operator.write_text(ALLOW_ALL, encoding="utf-8")
    project = tmp_path / "ws" / ".toolbridge" / "policy.toml"
    project.parent.mkdir(parents=True)
    broken = operator if which == "--policy file" else project
    settings = Settings(
        paths=[folder], audit=False, workspace=tmp_path / "ws", policy_file=operator
    )
    caplog.set_level(logging.ERROR, logger="mcp_toolbridge")
    async with _watched(settings) as (client, changed):
        before = await _names(client)
        assert {"first", "second"} <= before
        prefix = ALLOW_ALL if broken == operator else ""
        broken.write_text(prefix + INVALID_RULE, encoding="utf-8")
        await _logged(caplog, "still serving the previous catalog")
        line = 4 if broken == operator else 3  # the error names the line of the bad value
        wrong = f"{broken}: line {line}: rules[0].action: Input should be 'allow', 'deny' or 'ask'"
        assert wrong in caplog.text
        assert not changed.is_set()
        assert await _names(client) == before
        kept = await client.call_tool("second", {"text": "kept"})
        assert kept.structured_content == {"echo": {"text": "kept"}}

        broken.write_text(prefix + DENY_RULE, encoding="utf-8")  # fixed: the next change applies
        with anyio.fail_after(10):
            await changed.wait()
        assert "second" not in await _names(client)


async def test_an_invalid_project_policy_is_logged_under_its_own_path_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "m"
    agentcli_manifest(folder, [echo_tool("first")], {"echo": ECHO})
    operator = tmp_path / "policy.toml"
    operator.write_text(ALLOW_ALL, encoding="utf-8")
    project = tmp_path / "ws" / ".toolbridge" / "policy.toml"
    project.parent.mkdir(parents=True)
    settings = Settings(
        paths=[folder], audit=False, workspace=tmp_path / "ws", policy_file=operator
    )
    caplog.set_level(logging.ERROR, logger="mcp_toolbridge")
    async with _watched(settings) as (_client, _changed):
        project.write_text(INVALID_RULE, encoding="utf-8")
        await _logged(caplog, "still serving the previous catalog")
    problem = next(r.getMessage() for r in caplog.records if "rules[0]" in r.getMessage())
    assert (
        problem
        == f"reload: {project}: line 3: rules[0].action: Input should be 'allow', 'deny' or 'ask'"
    )


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_reload_is_announced_to_http_clients_in_both_eras(
    tmp_path: Path, mode: str
) -> None:
    folder = tmp_path / "m"
    agentcli_manifest(folder, [echo_tool("first")], {"echo": ECHO})
    settings = Settings(paths=[folder], audit=False, workspace=tmp_path)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with open_runtime(settings, loaded) as runtime, anyio.create_task_group() as tg:
        server = ToolbridgeServer(runtime.bridge, on_session_end=runtime.end_session)
        service = HttpService(server, HttpOptions(port=0))
        url = await tg.start(service.serve)
        try:
            with anyio.fail_after(20):
                async with (
                    httpx2.AsyncClient() as http,
                    Client(
                        streamable_http_client(url, http_client=http),
                        mode=mode,
                        message_handler=on_message,
                    ) as client,
                ):
                    assert "second" not in await _names(client)
                    _write(folder, [echo_tool("first"), echo_tool("second")])
                    assert await runtime.reload() == []
                    if mode == "legacy":  # on the session's GET stream
                        await server.swap(runtime.bridge)
                        await changed.wait()
                    else:  # 2026: on the client's listen stream
                        async with client.listen(tools_list_changed=True) as stream:
                            await server.swap(runtime.bridge)
                            async for _event in stream:
                                break
                    assert "second" in await _names(client)
        finally:
            service.stop()
