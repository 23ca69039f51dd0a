"""stdin closed right after a burst of requests: every request already read is answered with
its real result before the server exits (within the grace period), in both eras, over real
stdio."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.manifests import agentcli_manifest, echo_tool
from tests.support.rawstdio import modern, raw_server, request

pytestmark = pytest.mark.e2e

SLOW_ECHO = (
    "import json, sys, time\n"
    "args = json.load(sys.stdin)\n"
    "time.sleep(args.get('n', 1) / 10)\n"
    "print(json.dumps({'echo': args}))\n"
)
CALLS = 8


def _catalog(tmp_path: Path) -> Path:
    agentcli_manifest(tmp_path / "m", [echo_tool("slow", bin="slow")], {"slow": SLOW_ECHO})
    return tmp_path / "m"


def _call(request_id: int, era: str) -> dict[str, Any]:
    params = {"name": "slow", "arguments": {"text": f"call {request_id}", "n": 1 + request_id % 4}}
    if era == "2026":
        return modern(request_id, "tools/call", params)
    return request(request_id, "tools/call", params)


def _burst(era: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if era == "2025":
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "burst", "version": "0"},
        }
        messages += [
            request("init", "initialize", init),
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
        ]
    messages += [_call(i, era) for i in range(CALLS)]
    messages.append(
        modern("list", "tools/list") if era == "2026" else request("list", "tools/list")
    )
    return messages


@pytest.mark.parametrize("era", ["2025", "2026"])
async def test_every_request_read_before_stdin_closed_gets_its_real_answer(
    era: str, tmp_path: Path
) -> None:
    async with raw_server(tmp_path, "--locked", "none", str(_catalog(tmp_path))) as server:
        await server.send(b"".join(json.dumps(m).encode() + b"\n" for m in _burst(era)))
        await server.close_stdin()
        answers: dict[object, dict[str, Any]] = {}
        with anyio.fail_after(30):
            while True:
                try:
                    message = await server.read_message()
                except (anyio.EndOfStream, anyio.IncompleteRead):
                    break
                answers[message.get("id")] = message
        assert await server.wait_exit(10) == 0
    for i in range(CALLS):
        assert "error" not in answers[i], answers[i]
        result = answers[i]["result"]
        assert result["isError"] is False
        assert result["structuredContent"] == {"echo": {"text": f"call {i}", "n": 1 + i % 4}}
    assert {t["name"] for t in answers["list"]["result"]["tools"]} == {"slow"}
