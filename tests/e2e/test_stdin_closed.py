"""stdin closed right after a burst of requests: every request already read is answered with
its real result before the server exits (within the grace period), in both eras, over real
stdio. stdin closed while a confirmation waits for the person: the call is refused (the
client could not ask), not an internal error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_toolbridge.bridge.gate import NOT_ASKED, NOT_CONSENT
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
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


async def test_stdin_closed_while_a_confirmation_waits_refuses_the_call_as_not_asked(
    tmp_path: Path,
) -> None:
    """2025 era, a client that declared elicitation: an ask-gated call sends the client
    elicitation/create; the client closes stdin instead of answering. The question is cut off
    and the call's answer is a refusal saying the client could not ask, audited as such."""
    agentcli_manifest(tmp_path / "m", [echo_tool("guarded")], {"echo": ECHO})
    policy = tmp_path / "policy.toml"
    policy.write_text('ask = ["guarded"]\n', encoding="utf-8")
    audit = tmp_path / "audit.ndjson"
    serve = ("--locked", "none", "--policy", str(policy), str(tmp_path / "m"))
    async with raw_server(tmp_path, *serve, audit=audit) as server:
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "closes-stdin", "version": "0"},
        }
        await server.call(request("init", "initialize", init))
        await server.send_json({"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = request("call", "tools/call", {"name": "guarded", "arguments": {"text": "x"}})
        await server.send_json(call)
        with anyio.fail_after(10):
            asked = await server.read_message()
        assert asked.get("method") == "elicitation/create", asked
        assert "guarded" in asked["params"]["message"]
        await server.close_stdin()
        answered = await server.answer_to("call")
        assert await server.wait_exit(10) == 0
        stderr = server.stderr()
    assert "error" not in answered, answered
    result = answered["result"]
    text = result["content"][0]["text"]
    assert result["isError"] is True and "structuredContent" not in result
    assert result["_meta"]["toolbridge/code"] == "permission.denied"
    assert text.startswith(f"{NOT_ASKED} (the question ended with error "), text
    assert "Connection closed" in text and NOT_CONSENT in text
    assert "To allow it, " in text and "--allow guarded" in text
    assert "internal error" not in text and "Traceback" not in stderr
    lines = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    assert [(line["tool"], line["answer"], line["outcome"]) for line in lines] == [
        ("guarded", "unreachable", "denied")
    ]
    assert lines[0]["exitCode"] is None
