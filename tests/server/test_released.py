"""What released.py passes the transport's router after each answer (PASSING) goes nowhere:
the session's event store keeps nothing of it, and a client that names a request as its
stream still gets that request's answer, and the session goes on."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from mcp_toolbridge.server.released import PASSING, PASSING_STREAM
from mcp_toolbridge.server.resume import SessionEvents
from tests.support.httpserve import http_server, open_session, request

pytestmark = pytest.mark.anyio


async def test_the_event_store_keeps_nothing_of_the_passing_message() -> None:
    store = SessionEvents()
    assert await store.store_event(PASSING_STREAM, PASSING.message) == ""
    assert store.kept == (0, 0)


@pytest.mark.e2e
async def test_a_request_named_as_the_passing_stream_is_answered(tmp_path: Path) -> None:
    async with http_server(tmp_path) as server, httpx2.AsyncClient(timeout=60) as http:
        session = await open_session(http, server.url, stateless=False)
        for _ in range(2):  # ask() checks that the answer carries the request's id
            assert "result" in await session.ask(request("ping", id=PASSING_STREAM))
            assert "result" in await session.ask(request("tools/list"))
