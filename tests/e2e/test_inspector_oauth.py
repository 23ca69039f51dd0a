"""The MCP Inspector CLI (pinned 2.12.0) against an OAuth-protected server, from where an
Inspector user stands, with a real OpenID provider (oidc-provider on 127.0.0.1):

- without a token it is refused (exit 3, ``auth_required``) with the server's own words: what
  it needs and from which issuer;
- with an agent's access token (client credentials at the provider) passed as the Inspector
  takes headers (``--header "Authorization: Bearer …"``) it lists the agent's tools (not the
  one the policy denies the agent, which it then cannot find to call) and calls one, in the
  era the Inspector negotiates by default for a URL (2025) and in 2026-07-28
  (``--protocol-era modern``);
- a token the provider minted for another resource is refused the same way;
- a person signs in through the Inspector itself: it registers itself with the provider, runs
  the authorization code flow with PKCE through the person's browser, and later runs reuse
  the token it kept (``--stored-auth-only``).

Skipped without node, the Inspector (scripts/install-inspector) or oidc-provider
(scripts/install-oidc); CI installs all three.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_toolbridge.runtime import Settings
from tests.support.inspector import (
    AUTH_REQUIRED_EXIT,
    TOOL_ERROR_EXIT,
    require_inspector,
    run_inspector,
    run_inspector_signing_in,
)
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.oauth import (
    AGENT,
    AGENT_SECRET,
    CLIENTS,
    PEOPLE,
    Served,
    needs_oidc,
    protected_server,
)
from tests.support.oidc import Provider, oidc_provider

pytestmark = [pytest.mark.e2e, needs_oidc]

require_inspector()

POLICY = """
deny = ["deploy"]

[[callers]]
subject = "alice"
allow = ["deploy"]
"""
ERAS = {"default": ([], "2025-11-25"), "modern": (["--protocol-era", "modern"], "2026-07-28")}


@pytest.fixture(scope="module")
async def provider(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Provider]:
    async with oidc_provider(
        tmp_path_factory.mktemp("oidc"), accounts=PEOPLE, clients=CLIENTS
    ) as running:
        yield running


def _settings(tmp_path: Path) -> Settings:
    agentcli_manifest(tmp_path / "m", [echo_tool("deploy"), echo_tool("status")], {"echo": ECHO})
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY, encoding="utf-8")
    return Settings(
        paths=[tmp_path / "m"], policy_file=policy, audit_path=tmp_path / "audit.ndjson"
    )


def _names(listed: Any) -> set[str]:
    return {tool["name"] for tool in listed["tools"]}


def _call(tool: str, text: str) -> list[str]:
    arguments = json.dumps({"text": text})
    return ["--method", "tools/call", "--tool-name", tool, "--tool-args-json", arguments]


def _who(served: Served) -> list[tuple[str | None, str]]:
    return [(line["subject"], line["tool"]) for line in served.audit_lines()]


async def test_without_a_token_the_inspector_is_told_what_the_server_needs(
    tmp_path: Path, provider: Provider
) -> None:
    with anyio.fail_after(90):
        async with protected_server(_settings(tmp_path), provider) as served:
            target = [served.url, "--transport", "http"]
            stored_only = await run_inspector(
                tmp_path, *target, "--stored-auth-only", "--method", "tools/list"
            )
            at_no_terminal = await run_inspector(tmp_path, *target, "--method", "tools/list")
    assert stored_only.returncode == AUTH_REQUIRED_EXIT, stored_only
    assert stored_only.result is None
    assert stored_only.error["error"]["code"] == "auth_required"
    message = stored_only.error["error"]["message"]
    assert f"needs an OAuth access token from {provider.issuer}" in message
    assert "Authorization: Bearer <token>" in message
    # Without a terminal the Inspector does not start a sign-in it could not finish.
    assert at_no_terminal.returncode == AUTH_REQUIRED_EXIT, at_no_terminal
    assert "--stored-auth-only" in at_no_terminal.error["error"]["message"]
    assert served.audit_lines() == []


@pytest.mark.parametrize("era", ERAS)
async def test_with_an_agents_token_in_a_header_the_inspector_lists_its_tools_and_calls_one(
    tmp_path: Path, provider: Provider, era: str
) -> None:
    flags, version = ERAS[era]
    with anyio.fail_after(120):
        async with protected_server(_settings(tmp_path), provider) as served:
            token = await provider.client_credentials(AGENT, AGENT_SECRET, resource=served.url)
            target = [served.url, "--transport", "http", *flags]
            target += ["--header", f"Authorization: Bearer {token}"]
            hello = await run_inspector(tmp_path, *target, "--method", "initialize")
            listed = await run_inspector(tmp_path, *target, "--method", "tools/list")
            called = await run_inspector(tmp_path, *target, *_call("status", "up?"))
            denied = await run_inspector(tmp_path, *target, *_call("deploy", "now"))
    assert hello.returncode == 0, hello.error
    assert hello.result["protocolVersion"] == version
    assert listed.returncode == 0, listed.error
    assert "status" in _names(listed.result) and "deploy" not in _names(listed.result)
    assert called.returncode == 0, called.error
    assert called.result["structuredContent"] == {"echo": {"text": "up?"}}
    # deploy is not in the agent's list, so the Inspector does not find it to call
    assert denied.returncode == TOOL_ERROR_EXIT, denied
    assert denied.error["error"]["code"] == "tool_not_found"
    assert _who(served) == [(AGENT, "status")]
    assert token not in served.audit.read_text(encoding="utf-8")


async def test_a_token_for_another_server_is_refused_with_what_to_do(
    tmp_path: Path, provider: Provider
) -> None:
    with anyio.fail_after(90):
        async with protected_server(_settings(tmp_path), provider) as served:
            elsewhere = "http://127.0.0.1:9/mcp"
            token = await provider.client_credentials(AGENT, AGENT_SECRET, resource=elsewhere)
            refused = await run_inspector(
                tmp_path,
                *(served.url, "--transport", "http", "--stored-auth-only"),
                *("--header", f"Authorization: Bearer {token}", "--method", "tools/list"),
            )
    assert refused.returncode == AUTH_REQUIRED_EXIT, refused
    message = refused.error["error"]["message"]
    assert "invalid_token" in message
    assert f"the access token is for {elsewhere}, not for this server ({served.url})" in message
    assert served.audit_lines() == []


async def test_a_person_signs_in_through_the_inspector_itself_and_later_runs_reuse_it(
    tmp_path: Path, provider: Provider
) -> None:
    with anyio.fail_after(180):
        async with protected_server(_settings(tmp_path), provider) as served:
            listed = await run_inspector_signing_in(
                tmp_path, "alice", served.url, "--method", "tools/list"
            )
            called = await run_inspector(
                tmp_path,
                *(served.url, "--transport", "http", "--stored-auth-only"),
                *_call("deploy", "v2"),
            )
    assert listed.returncode == 0, listed.error
    assert {"deploy", "status"} <= _names(listed.result)  # alice may deploy
    assert called.returncode == 0, called.error
    assert called.result["structuredContent"] == {"echo": {"text": "v2"}}
    (line,) = served.audit_lines()
    assert (line["subject"], line["tool"], line["outcome"]) == ("alice", "deploy", "ok")
    assert line["clientId"]  # the client the Inspector registered for itself
