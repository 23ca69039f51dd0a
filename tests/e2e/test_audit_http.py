"""Over streamable HTTP, a call whose client closes the response stream is audited as
cancelled, and a call in flight when the server is terminated (SIGTERM) as ended by the
shutdown: one line each."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.support.httpserve import ACCEPT, call, http_server, open_session
from tests.support.manifests import agentcli_manifest, echo_tool

pytestmark = pytest.mark.e2e

HANG = """
import json, sys, time
args = json.load(sys.stdin)
with open(args["ready"], "w") as ready:
    ready.write("ready")
time.sleep(60)
"""


def _catalog(folder: Path) -> Path:
    hang = echo_tool("hang", bin="hang")
    hang["schema"] = {"type": "object"}
    hang["timeoutSec"] = 60
    agentcli_manifest(folder, [hang], {"hang": HANG})
    return folder


async def _ready(path: Path) -> None:
    def read() -> str:
        with open(path, encoding="utf-8") as fifo:
            return fifo.read()

    with anyio.fail_after(10):
        assert await anyio.to_thread.run_sync(read, abandon_on_cancel=True) == "ready"


async def _post_until_cancelled(url: str, body: dict[str, Any]) -> None:
    """POST a call and read its answer until cancelled (or the server goes away)."""
    try:
        async with (
            httpx2.AsyncClient(timeout=60) as own,
            own.stream("POST", url, json=body, headers=ACCEPT) as response,
        ):
            async for _ in response.aiter_bytes():
                pass
    except httpx2.TransportError:
        pass  # the server shut down mid-answer


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def test_a_dropped_stream_and_a_terminated_server_each_leave_one_audit_line(
    tmp_path: Path,
) -> None:
    audit = tmp_path / "audit.ndjson"
    folder = _catalog(tmp_path / "tools")
    first, second = tmp_path / "first", tmp_path / "second"
    os.mkfifo(first)
    os.mkfifo(second)
    serving = ("--workspace", str(tmp_path), str(folder), "--stateless", "--drain-timeout", "0")
    # the FIFOs are in the workspace; SIGTERM ends the calls at once (no drain)
    async with http_server(tmp_path, *serving, audit=audit) as server:
        async with httpx2.AsyncClient() as http:
            await open_session(http, server.url, stateless=True)
            async with anyio.create_task_group() as group:
                group.start_soon(
                    _post_until_cancelled, server.url, call("hang", {"ready": str(first)})
                )
                await _ready(first)
                group.cancel_scope.cancel()  # the response stream and its connection close
            async with anyio.create_task_group() as group:
                body = call("hang", {"ready": str(second)})
                group.start_soon(_post_until_cancelled, server.url, body)
                await _ready(second)
                server.process.terminate()
                with anyio.fail_after(15):  # drained (at once), its calls ended: a clean exit
                    assert await server.process.wait() == 0
                group.cancel_scope.cancel()
    entries = _lines(audit)
    assert [(e["tool"], e["outcome"]) for e in entries] == [
        ("hang", "cancelled"),
        ("hang", "shutdown"),
    ]
    assert all(e["errorCode"] == "exec.cancelled" for e in entries)
