"""serve --http --auth-issuer: an OAuth 2.1 resource server in front of the MCP endpoint,
against a real OpenID provider (oidc-provider on 127.0.0.1), signed in to by the SDK's OAuth
clients in both protocol eras: an agent with client credentials, a person with the
authorization code flow, PKCE and dynamic client registration."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx2
import pytest

from mcp_toolbridge.runtime import Settings
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.oauth import (
    AGENT,
    agent_client,
    needs_oidc,
    person_client,
    protected_server,
)
from tests.support.oidc import Provider

pytestmark = needs_oidc
MODES = ["auto", "legacy"]


def _settings(tmp_path: Path) -> Settings:
    agentcli_manifest(tmp_path / "m", [echo_tool("echo_a")], {"echo": ECHO})
    return Settings(paths=[tmp_path / "m"], audit_path=tmp_path / "audit.ndjson")


async def test_the_metadata_names_the_issuer_and_an_unauthenticated_request_is_told_where(
    tmp_path: Path, provider: Provider
) -> None:
    with anyio.fail_after(30):
        async with protected_server(_settings(tmp_path), provider) as served:
            async with httpx2.AsyncClient() as http:
                refused = await http.post(served.url, json={})
                assert served.service.guard is not None
                metadata = (await http.get(served.service.guard.metadata_url)).json()
    assert refused.status_code == 401
    challenge = refused.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert f'resource_metadata="{served.service.guard.metadata_url}"' in challenge
    assert 'scope="tools"' in challenge and "error=" not in challenge
    assert served.service.guard.metadata_url.endswith("/.well-known/oauth-protected-resource/mcp")
    assert metadata["resource"] == served.url
    assert metadata["authorization_servers"] == [provider.issuer]
    assert metadata["scopes_supported"] == ["tools"]
    assert served.audit_lines() == []


@pytest.mark.parametrize("mode", MODES)
async def test_an_agent_signs_in_with_client_credentials_and_its_calls_are_its_own(
    tmp_path: Path, provider: Provider, mode: str
) -> None:
    with anyio.fail_after(60):
        async with protected_server(_settings(tmp_path), provider) as served:
            async with agent_client(served.url, provider, mode) as client:
                listed = await client.list_tools()
                result = await client.call_tool("echo_a", {"text": "hi"})
    assert "echo_a" in [t.name for t in listed.tools]
    assert not result.is_error
    (line,) = served.audit_lines()
    assert line["subject"] == AGENT and line["clientId"] == AGENT and line["outcome"] == "ok"


@pytest.mark.parametrize("mode", MODES)
async def test_a_person_signs_in_with_the_authorization_code_flow_and_pkce(
    tmp_path: Path, provider: Provider, mode: str
) -> None:
    with anyio.fail_after(60):
        async with protected_server(_settings(tmp_path), provider) as served:
            async with person_client(served.url, "alice", mode) as client:
                result = await client.call_tool("echo_a", {"text": "from alice"})
    assert not result.is_error
    (line,) = served.audit_lines()
    assert line["subject"] == "alice"
    assert line["clientId"] and line["clientId"] != AGENT  # registered by the client itself
