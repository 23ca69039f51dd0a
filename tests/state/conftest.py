"""A real Redis for the shared-state tests (one per test session), and the State to test:
the in-memory one and the one in Redis, each test on its own key prefix."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from mcp_toolbridge.state import MemoryState, RedisLink, RedisState, State
from tests.support.redis_server import RedisServer, unique_prefix


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def link(redis_server: RedisServer) -> AsyncIterator[RedisLink]:
    link = RedisLink(redis_server.url())
    try:
        yield link
    finally:
        await link.aclose()


@pytest.fixture(params=["memory", "redis"])
async def state(request: pytest.FixtureRequest) -> AsyncIterator[State]:
    if request.param == "memory":
        yield MemoryState()
        return
    server: RedisServer = request.getfixturevalue("redis_server")
    link = RedisLink(server.url())
    try:
        yield RedisState(link, prefix=unique_prefix())
    finally:
        await link.aclose()
