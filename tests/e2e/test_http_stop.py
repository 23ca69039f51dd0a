"""SIGTERM to ``serve --http`` while SDK clients hold their streams open: the process exits 0
and says nothing but its own lines on the way (docs/deploy.md, "Health and stopping").

A 2025-11-25 client holds its session's GET stream, a 2026-07-28 client a
``subscriptions/listen`` stream; with ``--console`` the console runs beside (its own port,
and mounted at /console). Before, the GET stream was cut by uvicorn's shutdown ("ASGI
callable returned without completing response.") and the console's uvicorn was cancelled
in its shutdown (a lifespan ``CancelledError`` traceback). A call still running at the drain
deadline is answered with an error result, not cut.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from tests.support.httpserve import http_server
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.redis_server import RedisServer, need_redis

pytestmark = pytest.mark.e2e

NOISE = ("Traceback", "CancelledError", "ERROR", "error:", "without completing response")


async def _hold(url: str, mode: str, holding: anyio.Event) -> None:
    """Connect in ``mode``, open the era's stream, and hold it until the server goes."""
    async with httpx2.AsyncClient() as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            await client.list_tools()
            if mode == "legacy":  # the SDK opened the session's GET stream after initialize
                holding.set()
                await anyio.sleep_forever()
            async with client.listen(tools_list_changed=True):
                holding.set()
                await anyio.sleep_forever()


async def _stopped_cleanly(
    tmp_path: Path, mode: str, *extra: str, env: dict[str, str] | None = None
) -> None:
    """Serve, hold a stream in ``mode``, SIGTERM: exit 0 and no error line on stderr."""
    agentcli_manifest(tmp_path / "tools", [echo_tool("tool_00")], {"echo": ECHO})
    async with http_server(tmp_path, str(tmp_path / "tools"), *extra, env=env) as server:
        async with anyio.create_task_group() as group:
            holding = anyio.Event()

            async def hold() -> None:
                try:
                    await _hold(server.url, mode, holding)
                except Exception:  # the server going away under the client is the point
                    pass

            group.start_soon(hold)
            with anyio.fail_after(20):
                await holding.wait()
            server.process.terminate()
            with anyio.fail_after(20):
                assert await server.process.wait() == 0
            group.cancel_scope.cancel()
        stderr = server.stderr()
    assert "SIGTERM: draining" in stderr
    noisy = [line for line in stderr.splitlines() if any(n in line for n in NOISE)]
    assert noisy == [], stderr


@pytest.mark.parametrize("console", [False, True], ids=["plain", "console"])
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_sigterm_ends_serve_http_cleanly_with_streams_open(
    tmp_path: Path, mode: str, console: bool
) -> None:
    await _stopped_cleanly(tmp_path, mode, *(["--console", "127.0.0.1:0"] if console else []))


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_sigterm_ends_a_replica_cleanly_with_streams_open(tmp_path: Path, mode: str) -> None:
    """The same on a replica sharing its state in Redis (its session's events there)."""
    need_redis()
    redis = RedisServer(tmp_path).start()
    try:
        replica = ["--state", redis.url(), "--replica", "r1"]
        keys = {"TOOLBRIDGE_STATE_KEYS": secrets.token_hex(32)}
        await _stopped_cleanly(tmp_path, mode, *replica, env=keys)
    finally:
        redis.stop()


HANG = """
import json, sys, time
args = json.load(sys.stdin)
with open(args["ready"], "w") as ready:
    ready.write("ready")
time.sleep(60)
"""


async def _ready(path: Path) -> None:
    def read() -> str:
        with open(path, encoding="utf-8") as fifo:
            return fifo.read()

    with anyio.fail_after(20):
        assert await anyio.to_thread.run_sync(read, abandon_on_cancel=True) == "ready"


@pytest.mark.parametrize("stateless", [False, True], ids=["session", "stateless"])
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_call_running_at_the_drain_deadline_gets_an_error_result(
    tmp_path: Path, mode: str, stateless: bool
) -> None:
    """SIGTERM with a call that outlives ``--drain-timeout``: at the deadline the call is
    ended, its client gets a tool result that says so (``isError``, ``exec.cancelled``),
    the process exits 0 and stderr has no uvicorn line. Before, the response was cut (the
    client saw its connection end) and uvicorn logged "ASGI callable returned without
    completing response."."""
    hang = echo_tool("hang", bin="hang")
    hang["schema"] = {"type": "object"}
    hang["timeoutSec"] = 60
    agentcli_manifest(tmp_path / "tools", [hang], {"hang": HANG})
    ready = tmp_path / "ready"
    os.mkfifo(ready)
    serving = ["--workspace", str(tmp_path), str(tmp_path / "tools"), "--drain-timeout", "0.5"]
    results: list[CallToolResult] = []
    async with http_server(tmp_path, *serving, *(["--stateless"] if stateless else [])) as server:
        async with (
            httpx2.AsyncClient(timeout=60) as http,
            Client(streamable_http_client(server.url, http_client=http), mode=mode) as client,
            anyio.create_task_group() as group,
        ):
            answered = anyio.Event()

            async def run() -> None:
                results.append(await client.call_tool("hang", {"ready": str(ready)}))
                answered.set()

            group.start_soon(run)
            await _ready(ready)
            server.process.terminate()
            with anyio.fail_after(20):
                assert await server.process.wait() == 0
            with anyio.fail_after(5):  # the answer came before the process ended
                await answered.wait()
        stderr = server.stderr()
    [result] = results
    assert result.is_error
    assert (result.meta or {}).get("toolbridge/code") == "exec.cancelled"
    assert "drain deadline" in result.content[0].text  # type: ignore[union-attr]
    assert "SIGTERM: 1 call(s) still running at the deadline are ended" in stderr
    noisy = [line for line in stderr.splitlines() if any(n in line for n in NOISE)]
    assert noisy == [], stderr
