"""SIGTERM to ``serve --http`` while SDK clients hold their streams open: the process exits 0
and says nothing but its own lines on the way (docs/deploy.md, "Health and stopping").

A 2025-11-25 client holds its session's GET stream, a 2026-07-28 client a
``subscriptions/listen`` stream; with ``--console`` the console runs beside (its own port,
and mounted at /console). Before, the GET stream was cut by uvicorn's shutdown ("ASGI
callable returned without completing response.") and the console's uvicorn was cancelled
in its shutdown (a lifespan ``CancelledError`` traceback).
"""

from __future__ import annotations

import secrets
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

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
