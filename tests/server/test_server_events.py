"""The server's own events reach the person watching the client as MCP log messages (logger
``mcp-toolbridge``): a tool killed at its deadline, a watchdog refusal, the tools left out at
start-up, and reloads; at the client's level, and in 2026-07-28 only on a request that opted
in."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_toolbridge.cli.reload import not_served, reload_on_change
from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_runtime
from mcp_toolbridge.server.http import HttpService
from mcp_toolbridge.server.http_options import HttpOptions
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.manifests import ECHO, SLEEP, agentcli_manifest, echo_tool

pytestmark = pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")  # setLevel

LOGGER = "mcp-toolbridge"
WATCHDOG = 'import sys; sys.stdin.read(); print(\'{"verdict": "deny", "reason": "too risky"}\')'


class Messages:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, Any]] = []
        self.arrived = anyio.Event()

    async def __call__(self, params: types.LoggingMessageNotificationParams) -> None:
        self.seen.append((params.level, params.logger, params.data))
        self.arrived.set()

    async def next(self) -> tuple[str, str | None, Any]:
        with anyio.fail_after(10):
            await self.arrived.wait()
        self.arrived = anyio.Event()
        return self.seen[-1]


@asynccontextmanager
async def _served(
    tmp_path: Path,
    messages: Messages,
    mode: str = "legacy",
    *,
    policy: str = 'default_action = "allow"\n',
    log_level: str | None = None,
    notices: tuple[str, ...] = (),
    timeout_s: float = 60,
) -> AsyncIterator[Client]:
    folder = tmp_path / "m"
    agentcli_manifest(
        folder,
        [echo_tool("echo"), echo_tool("sleepy", bin="sleep")],
        {"echo": ECHO, "sleep": SLEEP},
    )
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(policy, encoding="utf-8")
    settings = Settings(
        paths=[folder],
        workspace=tmp_path,
        policy_file=policy_file,
        audit=False,
        timeout_s=timeout_s,
    )
    loaded = load_catalog(settings, BUILTIN_SPECS)
    assert not loaded.errors, loaded.errors
    async with open_runtime(settings, loaded) as runtime:
        server = ToolbridgeServer(runtime.bridge, notices=notices)
        async with Client(
            server.server,
            mode=mode,
            raise_exceptions=True,
            logging_callback=messages,
            log_level=log_level,  # type: ignore[arg-type]
        ) as client:
            yield client


@pytest.mark.parametrize(("mode", "log_level"), [("legacy", None), ("auto", "warning")])
async def test_a_tool_killed_at_its_deadline_is_told_to_a_listening_client(
    tmp_path: Path, mode: str, log_level: str | None
) -> None:
    messages = Messages()
    async with _served(tmp_path, messages, mode, log_level=log_level, timeout_s=0.3) as client:
        with anyio.fail_after(10):
            result = await client.call_tool("sleepy", {"text": "zz"})
    assert result.is_error is True
    assert messages.seen == [
        ("warning", LOGGER, "sleepy was killed at its deadline: tool timed out after 0.3s")
    ]


async def test_a_2026_request_that_did_not_opt_in_is_told_nothing(tmp_path: Path) -> None:
    messages = Messages()
    async with _served(tmp_path, messages, "auto", timeout_s=0.3) as client:
        with anyio.fail_after(10):
            result = await client.call_tool("sleepy", {"text": "zz"})
    assert result.is_error is True and messages.seen == []


async def test_a_watchdog_refusal_is_told_to_a_listening_client(tmp_path: Path) -> None:
    watchdog = f'[watchdog]\ncommand = ["{sys.executable}", "-c", """{WATCHDOG}"""]\n'
    messages = Messages()
    policy = 'default_action = "allow"\n' + watchdog
    async with _served(tmp_path, messages, policy=policy) as client:
        result = await client.call_tool("echo", {"text": "hi"})
    assert result.is_error is True
    assert messages.seen == [
        ("warning", LOGGER, "the watchdog refused a call of echo: watchdog: too risky")
    ]


async def test_start_up_notices_reach_each_2025_client_once_after_it_initialized(
    tmp_path: Path,
) -> None:
    messages = Messages()
    notice = "1 problem(s) leave tools out of what this server serves:\nm/tools.json: ..."
    async with _served(tmp_path, messages, notices=(notice,)) as client:
        assert messages.seen == []
        await client.list_tools()
        assert messages.seen == [("warning", LOGGER, notice)]
        await client.list_tools()
        await client.call_tool("echo", {"text": "hi"})
    assert messages.seen == [("warning", LOGGER, notice)]
    modern = Messages()
    async with _served(tmp_path, modern, "auto", log_level="debug", notices=(notice,)) as client:
        await client.list_tools()
        await client.call_tool("echo", {"text": "hi"})
    assert modern.seen == []


async def test_sessionless_requests_get_no_start_up_notices(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    agentcli_manifest(folder, [echo_tool("echo")], {"echo": ECHO})
    settings = Settings(paths=[folder], audit=False, workspace=tmp_path)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    messages = Messages()
    async with open_runtime(settings, loaded) as runtime, anyio.create_task_group() as tg:
        server = ToolbridgeServer(runtime.bridge, notices=("tools are missing",))
        service = HttpService(server, HttpOptions(port=0, stateless=True))
        url = await tg.start(service.serve)
        try:
            with anyio.fail_after(20):
                async with (
                    httpx2.AsyncClient() as http,
                    Client(
                        streamable_http_client(url, http_client=http),
                        mode="legacy",
                        logging_callback=messages,
                    ) as client,
                ):
                    await client.list_tools()
                    await client.list_tools()
        finally:
            service.stop()
    assert messages.seen == []  # each request is a connection of its own: nothing to greet


def test_the_not_served_message_lists_the_problems_and_the_hidden_tools(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    agentcli_manifest(folder, [echo_tool("first"), echo_tool("second")], {"echo": ECHO})
    policy = tmp_path / "policy.toml"
    policy.write_text('[[rules]]\npermission = "second"\naction = "deny"\n', encoding="utf-8")
    settings = Settings(paths=[folder], workspace=tmp_path, policy_file=policy, audit=False)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    assert [spec.name for spec in loaded.hidden] == ["second"]
    assert not_served([], []) is None
    message = not_served([], loaded.left_out)
    assert message == (
        "1 problem(s) leave tools out of what this server serves:\n"
        "not served: 1 tool (second): the policy refuses it whatever its arguments, or does "
        "not grant what it requires"
    )
    many = [("a reason", 40, ("t1", "t2", "t3")), ("another", 1, ("u",))]
    assert not_served([], many) == (
        "41 problem(s) leave tools out of what this server serves:\n"
        "not served: 40 tools (t1, t2, t3 and 37 more): a reason\n"
        "not served: 1 tool (u): another"
    )


async def test_reloads_are_told_to_2025_clients_at_their_level(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    agentcli_manifest(folder, [echo_tool("first")], {"echo": ECHO})
    settings = Settings(paths=[folder], audit=False, workspace=tmp_path)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    messages = Messages()
    async with open_runtime(settings, loaded) as runtime:
        server = ToolbridgeServer(runtime.bridge)
        async with (
            Client(server.server, mode="legacy", logging_callback=messages) as client,
            anyio.create_task_group() as tg,
        ):
            await client.set_logging_level("notice")
            await tg.start(
                lambda task_status: reload_on_change(
                    runtime, server, interval_s=0.05, task_status=task_status
                )
            )
            (folder / "tools.json").write_text('{"tools": [{"name": "broken"}]}', "utf-8")
            level, logger, text = await messages.next()
            assert (level, logger) == ("error", LOGGER)
            assert text == (
                "reload refused: 1 problem(s); still serving the previous catalog\n"
                f'{folder / "tools.json"}: tool[0] "broken": command must have at least '
                "program name; command is missing; it is a list: the program, then its fixed "
                'arguments ("command": ["./tools/bin/NAME"])'
            )
            agentcli_manifest(folder, [echo_tool("first"), echo_tool("second")], {"echo": ECHO})
            count = len(runtime.bridge.catalog) + 1
            assert await messages.next() == ("notice", LOGGER, f"reload: serving {count} tools")
            tg.cancel_scope.cancel()
