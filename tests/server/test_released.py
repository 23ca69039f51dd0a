"""What released.py passes the transport's router after each answer (PASSING) goes nowhere:
the session's event store keeps nothing of it, no client sees it whatever it names its
requests (the stream it is routed to is named at random as the server starts), and a client
that names a request as that stream was named still gets that request's answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import pytest

from mcp_toolbridge.server.released import PASSING, PASSING_STREAM
from mcp_toolbridge.server.resume import SessionEvents
from tests.support.httpserve import call, http_server, open_session, request
from tests.support.manifests import agentcli_manifest, echo_tool

pytestmark = pytest.mark.anyio


async def test_the_event_store_keeps_nothing_of_the_passing_message() -> None:
    store = SessionEvents()
    assert await store.store_event(PASSING_STREAM, PASSING.message) == ""
    assert store.kept == (0, 0)


@pytest.mark.e2e
async def test_a_request_named_as_the_passing_stream_was_is_answered(tmp_path: Path) -> None:
    async with http_server(tmp_path) as server, httpx2.AsyncClient(timeout=60) as http:
        session = await open_session(http, server.url, stateless=False)
        for _ in range(2):  # ask() checks that the answer carries the request's id
            assert "result" in await session.ask(request("ping", id="toolbridge/passing"))
            assert "result" in await session.ask(request("tools/list"))


GATE = (
    "import json, sys\n"
    "args = json.load(sys.stdin)\n"
    "with open(args['text']) as gate:\n"
    "    gate.read()\n"
    "print(json.dumps({'released': True}))\n"
)
"""A tool that answers once the test writes to the FIFO its argument names."""


@pytest.mark.e2e
async def test_no_client_sees_the_passing_message_whatever_it_names_its_request(
    tmp_path: Path,
) -> None:
    """A request in flight named ``toolbridge/passing`` (the stream the message was routed
    to) got a ``toolbridge/passing`` notification on its stream after every other answer of
    the session. No name a client can give reaches that stream now."""
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    folder = tmp_path / "m"
    agentcli_manifest(folder, [echo_tool("gated", bin="gate")], {"gate": GATE})
    slow = call("gated", {"text": str(gate)})
    slow["id"] = "toolbridge/passing"
    with anyio.fail_after(60):
        async with (
            http_server(tmp_path, "--sandbox", "off", str(folder)) as server,
            httpx2.AsyncClient(timeout=60) as http,
        ):
            session = await open_session(http, server.url, stateless=False)
            headers = session.headers
            async with http.stream("POST", server.url, json=slow, headers=headers) as held:
                assert held.status_code == 200
                for _ in range(2):  # answered while the call is in flight
                    assert "result" in await session.ask(request("ping"))
                    assert "result" in await session.ask(request("tools/list"))
                await anyio.to_thread.run_sync(gate.write_text, "go")
                text = (await held.aread()).decode()
    data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    messages = [json.loads(item) for item in data if item]
    assert [message.get("id") for message in messages] == ["toolbridge/passing"], messages
    assert messages[0]["result"]["structuredContent"] == {"released": True}, messages


def test_the_passing_stream_is_named_afresh_by_each_server() -> None:
    """A client cannot name its request after the stream: no two servers share the name."""
    code = "from mcp_toolbridge.server.released import PASSING_STREAM; print(PASSING_STREAM)"
    names = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
        ).stdout.strip()
        for _ in range(2)
    }
    assert len(names) == 2 and PASSING_STREAM not in names, names
    assert all(len(name) >= len("toolbridge/passing/") + 32 for name in names), names
