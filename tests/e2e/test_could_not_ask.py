"""A confirmation the client could not ask, over real stdio (2025 era, a client that declared
elicitation): it closes stdin while the question waits, answers ``elicitation/create`` with a
JSON-RPC error, or answers it with something that is not an elicitation result. Each time the
call is refused saying the client could not ask (with the way to allow it), never run, never
an approval and never an internal error, and its audit line says ``unreachable``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_toolbridge.bridge.gate import NOT_ASKED, NOT_CONSENT
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.rawstdio import RawServer, raw_server, request

pytestmark = pytest.mark.e2e

INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"elicitation": {"form": {}}},
    "clientInfo": {"name": "cannot-ask", "version": "0"},
}


async def _close_stdin(server: RawServer, asked: dict[str, Any]) -> None:
    await server.close_stdin()


async def _method_not_found(server: RawServer, asked: dict[str, Any]) -> None:
    error = {"code": -32601, "message": "Method not found"}
    await server.send_json({"jsonrpc": "2.0", "id": asked["id"], "error": error})


async def _not_a_result(server: RawServer, asked: dict[str, Any]) -> None:
    await server.send_json({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "maybe"}})


CASES = {
    "stdin closed": (_close_stdin, "the question ended with error -32000: Connection closed"),
    "error answer": (_method_not_found, "the question ended with error -32601: Method not found"),
    "not a result": (_not_a_result, "the client's reply to the question is not an elicitation"),
}


@pytest.mark.parametrize(("client_fails", "reason"), CASES.values(), ids=CASES.keys())
async def test_a_confirmation_the_client_could_not_ask_refuses_the_call(
    tmp_path: Path, client_fails: Any, reason: str
) -> None:
    agentcli_manifest(tmp_path / "m", [echo_tool("guarded")], {"echo": ECHO})
    policy = tmp_path / "policy.toml"
    policy.write_text('ask = ["guarded"]\n', encoding="utf-8")
    audit = tmp_path / "audit.ndjson"
    serve = ("--locked", "none", "--policy", str(policy), str(tmp_path / "m"))
    async with raw_server(tmp_path, *serve, audit=audit) as server:
        await server.call(request("init", "initialize", INIT))
        await server.send_json({"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = request("call", "tools/call", {"name": "guarded", "arguments": {"text": "x"}})
        await server.send_json(call)
        with anyio.fail_after(10):
            asked = await server.read_message()
        assert asked.get("method") == "elicitation/create", asked
        assert "guarded" in asked["params"]["message"]
        await client_fails(server, asked)
        answered = await server.answer_to("call")
        await server.close_stdin()
        assert await server.wait_exit(10) == 0
        stderr = server.stderr()
    assert "error" not in answered, answered
    result = answered["result"]
    text = result["content"][0]["text"]
    assert result["isError"] is True and "structuredContent" not in result
    assert result["_meta"]["toolbridge/code"] == "permission.denied"
    assert text.startswith(f"{NOT_ASKED} ({reason}"), text
    assert NOT_CONSENT in text and "To allow it, " in text and "--allow guarded" in text
    assert "internal error" not in text and "Traceback" not in stderr
    lines = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    assert [(line["tool"], line["answer"], line["outcome"]) for line in lines] == [
        ("guarded", "unreachable", "denied")
    ]
    assert lines[0]["exitCode"] is None
