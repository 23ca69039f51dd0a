"""End to end with the TypeScript SDK's client (v2, pinned 2.4.0): the SDK that most editors
and assistants build on, as the client of `serve` over stdio and over streamable HTTP, in the
2025 era (its default handshake) and in 2026-07-28 (its version negotiation).

In each of the four: every tool lists (the client compiles each outputSchema), a structured
result passes the client's own outputSchema check, a call with a wrong argument comes back as a
tool error and not as a client failure, a confirmation is asked and answered through the
client's elicitation handler (a server request in 2025, an input request in 2026), and a call
the client aborts once the server reports it running is stopped on the server (its audit line
says cancelled) while the session goes on. And an agent on it signs in to a server with an
authorization server (OAuth client credentials, a real OpenID provider).

Installed by scripts/install-ts-client; skipped without node or without it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.httpserve import http_server
from tests.support.oauth import AGENT, AGENT_SECRET, CLIENTS, needs_oidc
from tests.support.oidc import oidc_provider
from tests.support.paths import ROOT
from tests.support.ts_client import require_ts_client, run_ts_client

pytestmark = pytest.mark.e2e

require_ts_client()

LOCKED = {
    *("read", "write", "edit", "glob", "grep", "bash", "todo", "task", "question"),
    *("web_search", "web_fetch", "skill", "tool_search"),
}
LONG = "for i in $(seq 1 600); do echo line $i; sleep 0.1; done"
"""A bash command that prints a line a tenth of a second for a minute."""
RUNNING = "running for"
"""How the progress the server sends about a running command begins ("running for 1.0 s; 71
bytes of output so far"); the client's own progress while it answers a 2026 input request
("Fulfilling input required ...") does not."""


def _steps(workspace: Path) -> list[dict[str, Any]]:
    note = str(workspace / "note.txt")
    return [
        {"tool": "word_count", "arguments": {"text": "one two"}},
        {"tool": "word_count", "arguments": {"text": 5}},
        {"tool": "write", "arguments": {"file_path": note, "content": "hello\n"}},
        {"tool": "bash", "arguments": {"command": LONG}, "abortOn": RUNNING},
        {"tool": "read", "arguments": {"file_path": note}},
    ]


def _audit(path: Path) -> list[tuple[str, str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [(entry["tool"], entry["outcome"]) for entry in map(json.loads, lines)]


def _check(report: dict[str, Any], era: str, workspace: Path) -> None:
    assert report["version"] == ("2026-07-28" if era == "modern" else "2025-11-25")
    names = {tool["name"] for tool in report["tools"]}
    assert LOCKED | {"word_count", "slugify"} <= names
    counted, wrong, written, aborted, read = report["steps"]

    assert counted["result"]["structuredContent"] == {"words": 2, "lines": 1, "characters": 7}
    assert wrong["result"]["isError"] is True
    assert wrong["result"]["_meta"]["toolbridge/code"] == "args.invalid"

    assert written["result"]["isError"] is False, written
    assert written["result"]["structuredContent"]["created"] is True
    assert len(written["asked"]) == 1
    assert "wants to run the tool 'write'" in written["asked"][0]
    assert (workspace / "note.txt").read_text(encoding="utf-8") == "hello\n"

    assert "the test cancels the call" in aborted["error"]
    assert any(message.startswith(RUNNING) for message in aborted["progress"])
    assert "hello" in read["result"]["content"][0]["text"]


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_the_typescript_client_over_stdio(tmp_path: Path, era: str) -> None:
    workspace, audit = tmp_path / "ws", tmp_path / "audit.ndjson"
    workspace.mkdir()
    argv = ["-m", "mcp_toolbridge", "serve", "--audit", str(audit), "--workspace", str(workspace)]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    target = {"command": sys.executable, "args": argv, "cwd": str(ROOT), "env": env}
    plan = {"era": era, "target": target, "decision": "Allow once", "steps": _steps(workspace)}

    report = await run_ts_client(plan)  # ends when the client has closed the server's stdin

    _check(report, era, workspace)
    assert ("bash", "cancelled") in _audit(audit)


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_the_typescript_client_over_http(tmp_path: Path, era: str) -> None:
    workspace, audit = tmp_path / "ws", tmp_path / "audit.ndjson"
    workspace.mkdir()
    async with http_server(tmp_path, "--workspace", str(workspace), audit=audit) as server:
        plan = {
            "era": era,
            "target": {"url": server.url},
            "decision": "Allow once",
            "steps": _steps(workspace),
        }
        report = await run_ts_client(plan)
        server.process.terminate()
        assert await server.process.wait() == 0  # drained: every audit line is written

    _check(report, era, workspace)
    assert ("bash", "cancelled") in _audit(audit)


@needs_oidc
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_the_typescript_client_signs_in_as_an_agent(tmp_path: Path, era: str) -> None:
    """An agent built on the TypeScript SDK signs in with OAuth client credentials: on the
    server's 401 the client reads the protected resource metadata, asks the provider for a
    token for the resource and calls with it; the audit line names the agent."""
    audit = tmp_path / "audit.ndjson"
    with anyio.fail_after(90):
        async with oidc_provider(tmp_path, clients=CLIENTS) as provider:
            serving = ("--workspace", str(tmp_path), "--auth-issuer", provider.issuer)
            async with http_server(tmp_path, *serving, audit=audit) as server:
                credentials = {
                    "clientId": AGENT,
                    "clientSecret": AGENT_SECRET,
                    "scope": "tools",
                    "issuer": provider.issuer,
                }
                target = {"url": server.url, "clientCredentials": credentials}
                steps = [{"tool": "word_count", "arguments": {"text": "one two"}}]
                plan = {"era": era, "target": target, "decision": None, "steps": steps}
                report = await run_ts_client(plan)
    (counted,) = report["steps"]
    assert counted["result"]["structuredContent"]["words"] == 2, counted
    (line,) = map(json.loads, audit.read_text(encoding="utf-8").splitlines())
    assert (line["tool"], line["subject"], line["clientId"]) == ("word_count", AGENT, AGENT)
