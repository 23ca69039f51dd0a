"""Two people on one OAuth-protected server, each signed in through the SDK's OAuth client
(authorization code, PKCE) against the real provider, in both protocol eras: each sees their
own tool list, has their own budget (which holds across their sessions) and audit lines, and
neither's "always" answer allows the other's call. The client's token never reaches a tool's
process, an HTTP tool, the audit log or the server's log; a session opened with one identity
is not found with another's token."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest

from mcp_toolbridge.bridge.asking import ALLOW_ALWAYS, REJECT
from mcp_toolbridge.runtime import Settings
from tests.support.http_fixture import running_server
from tests.support.httpserve import open_session, request
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.oauth import (
    AGENT,
    AGENT_SECRET,
    REPORTER,
    REPORTER_SECRET,
    MemoryTokens,
    needs_oidc,
    person_client,
    protected_server,
)
from tests.support.oidc import Provider
from tests.support.results import found_tools, text_of

pytestmark = needs_oidc
MODES = ["auto", "legacy"]
POLICY = """
deny = ["deploy"]
ask = ["guarded"]

[[callers]]
subject = "alice"
allow = ["deploy"]

[requires]
net.hosts = ["127.0.0.1"]
"""
SHOW = (
    "import json, os, sys\n"
    "print(json.dumps({'env': dict(os.environ), 'argv': sys.argv, 'stdin': sys.stdin.read()}))\n"
)


def _settings(tmp_path: Path, http_url: str = "http://127.0.0.1:9/echo") -> Settings:
    tools = [
        echo_tool("deploy"),
        echo_tool("guarded"),
        echo_tool("status"),
        echo_tool("show_env", bin="show", schema={"type": "object"}),
    ]
    agentcli_manifest(tmp_path / "m", tools, {"echo": ECHO, "show": SHOW})
    schema: dict[str, Any] = {"type": "object"}
    runloop = [
        {
            "id": "paid.call",
            "description": "A paid call: its result reports what it used",
            "transport": {"kind": "exec", "command": "/bin/cat", "args": []},
            "input_schema": schema,
            "result_schema": schema,
            "annotations": {"destructiveHint": False},
            "budget": {"usd": 0.25},
        },
        {
            "id": "probe.headers",
            "description": "An HTTP tool: the fixture echoes the request it got",
            "transport": {"kind": "http", "method": "GET", "url": http_url},
            "input_schema": schema,
            "result_schema": schema,
            "annotations": {"readOnlyHint": True},
        },
    ]
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "tools.json").write_text(json.dumps({"version": 1, "tools": runloop}))
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY, encoding="utf-8")
    return Settings(
        paths=[tmp_path / "m", tmp_path / "r"],
        policy_file=policy,
        workspace=tmp_path,
        audit_path=tmp_path / "audit.ndjson",
    )


class Person:
    """The person at a client: answers each confirmation with the next choice (none left:
    the test fails, they were not to be asked)."""

    def __init__(self, *choices: str) -> None:
        self.choices = list(choices)
        self.asked = 0

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult:
        self.asked += 1
        return types.ElicitResult(action="accept", content={"decision": self.choices.pop(0)})


def _found(result: types.CallToolResult) -> list[str]:
    assert not result.is_error, text_of(result)
    return found_tools(result)


@pytest.mark.parametrize("mode", MODES)
async def test_each_person_sees_their_own_list_and_search_and_the_proxy_reveal_nothing_else(
    tmp_path: Path, provider: Provider, mode: str
) -> None:
    with anyio.fail_after(90):
        async with protected_server(_settings(tmp_path), provider, locked=True) as served:
            async with person_client(served.url, "alice", mode) as alice:
                alices = [t.name for t in (await alice.list_tools()).tools]
                alice_found = _found(await alice.call_tool("tool_search", {"query": "deploy"}))
                deployed = await alice.call_tool("deploy", {"text": "v2"})
            async with person_client(served.url, "bob", mode) as bob:
                bobs = [t.name for t in (await bob.list_tools()).tools]
                bob_found = _found(await bob.call_tool("tool_search", {"query": "deploy"}))
                proxied = await bob.call_tool("call_tool", {"name": "deploy", "arguments": {}})
                direct = await bob.call_tool("deploy", {"text": "v2"})
    assert "deploy" in alices and "deploy" not in bobs
    assert "status" in alices and "status" in bobs
    assert "deploy" in alice_found and "deploy" not in bob_found
    assert not deployed.is_error
    assert proxied.is_error and "no tool named 'deploy'" in text_of(proxied)
    assert direct.is_error
    refusal = text_of(direct)
    assert "deny[0]" in refusal  # the rule for everyone that refused him
    assert '[[callers]] table (subject = "bob", allow = ["deploy"])' in refusal
    lines = served.audit_lines()
    assert {(line["subject"], line["tool"], line["outcome"]) for line in lines} == {
        ("alice", "tool_search", "ok"),
        ("alice", "deploy", "ok"),
        ("bob", "tool_search", "ok"),
        ("bob", "call_tool", "error"),  # the proxy's own refusal: it never reached deploy
        ("bob", "deploy", "denied"),
    }
    assert not any(line["subject"] == "bob" and line["via"] for line in lines)


@pytest.mark.parametrize("mode", MODES)
async def test_budgets_and_always_answers_are_each_persons_own_across_their_sessions(
    tmp_path: Path, provider: Provider, mode: str
) -> None:
    spend = {"message": "m", "usage": {"usd": 0.2}}
    alices = MemoryTokens()  # her client: registered once, signed in once
    with anyio.fail_after(120):
        async with protected_server(_settings(tmp_path), provider) as served:
            first = Person(ALLOW_ALWAYS)
            async with person_client(
                served.url, "alice", mode, storage=alices, elicitation_callback=first
            ) as alice:
                assert not (await alice.call_tool("guarded", {"text": "a"})).is_error
                assert not (await alice.call_tool("paid_call", spend)).is_error
                assert not (await alice.call_tool("paid_call", spend)).is_error
            later = Person()  # asked about nothing: her "always" holds in her next session
            async with person_client(
                served.url, "alice", mode, storage=alices, elicitation_callback=later
            ) as alice:
                again = await alice.call_tool("guarded", {"text": "b"})
                spent = await alice.call_tool("paid_call", spend)
            bobs = Person(REJECT)
            async with person_client(served.url, "bob", mode, elicitation_callback=bobs) as bob:
                rejected = await bob.call_tool("guarded", {"text": "c"})
                paid = await bob.call_tool("paid_call", spend)
    assert first.asked == 1 and later.asked == 0 and bobs.asked == 1
    assert not again.is_error
    assert spent.is_error and "used by alice" in text_of(spent)
    assert "across their sessions" in text_of(spent)
    assert rejected.is_error and not paid.is_error
    lines = [line for line in served.audit_lines() if line["answer"] != "pending"]  # 2026: asked
    assert [line["outcome"] for line in lines if line["subject"] == "bob"] == ["denied", "ok"]
    assert [line["answer"] for line in lines if line["tool"] == "guarded"] == [
        "always",
        None,
        "reject",
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_the_callers_token_reaches_no_tool_no_audit_line_and_no_log(
    tmp_path: Path, provider: Provider, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    storage = MemoryTokens()
    with running_server() as fixture, anyio.fail_after(90):
        settings = _settings(tmp_path, f"{fixture.base_url}/echo")
        async with protected_server(settings, provider) as served:
            async with person_client(served.url, "alice", mode, storage=storage) as alice:
                shown = await alice.call_tool("show_env", {})
                probed = await alice.call_tool("probe_headers", {})
    assert storage.tokens is not None
    token = storage.tokens.access_token
    signature = token.rsplit(".", 1)[-1]
    assert not shown.is_error and not probed.is_error
    seen = [
        text_of(shown),
        text_of(probed),
        served.audit.read_text(encoding="utf-8"),
        "\n".join(record.getMessage() for record in caplog.records),
    ]
    assert "authorization" not in json.dumps(probed.structured_content or {}).lower()
    for text in seen:
        assert token not in text and signature not in text


async def test_a_session_opened_by_one_identity_is_not_found_with_anothers_token(
    tmp_path: Path, provider: Provider
) -> None:
    with anyio.fail_after(30):
        async with protected_server(_settings(tmp_path), provider) as served:
            mine = await provider.client_credentials(AGENT, AGENT_SECRET, resource=served.url)
            theirs = await provider.client_credentials(
                REPORTER, REPORTER_SECRET, resource=served.url
            )
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {mine}"}) as http:
                session = await open_session(http, served.url, stateless=False)
                assert session.id is not None
                headers = {**session.headers, "Authorization": f"Bearer {theirs}"}
                hijack = await http.post(served.url, json=request("tools/list"), headers=headers)
                own = await session.post(request("tools/list"))
    assert hijack.status_code == 404
    assert own.status_code == 200
