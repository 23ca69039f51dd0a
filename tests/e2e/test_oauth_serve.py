"""`mcp-toolbridge serve --http` as a real process in front of a real OpenID provider: the
issuer from --auth-issuer or from the policy file's [auth] table, an agent signed in with the
SDK's client credentials flow calling a tool (the audit line and the --record frame name it),
and --token refused beside an issuer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import pytest

from tests.support.httpserve import http_server
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.oauth import AGENT, CLIENTS, agent_client, needs_oidc
from tests.support.oidc import oidc_provider
from tests.support.rawstdio import REPO

pytestmark = [pytest.mark.e2e, needs_oidc]


@pytest.mark.parametrize("where", ["flag", "policy file"])
async def test_serve_with_an_issuer_accepts_an_agents_token_and_audits_who_called(
    tmp_path: Path, where: str
) -> None:
    agentcli_manifest(tmp_path / "m", [echo_tool("echo_a")], {"echo": ECHO})
    audit = tmp_path / "audit.ndjson"
    with anyio.fail_after(90):
        async with oidc_provider(tmp_path, clients=CLIENTS) as provider:
            policy = tmp_path / "policy.toml"
            table = f'issuer = "{provider.issuer}"\n' if where == "policy file" else ""
            policy.write_text(f'[auth]\n{table}scopes = ["tools"]\n', encoding="utf-8")
            flags = ["--auth-issuer", provider.issuer] if where == "flag" else []
            record = ["--record", str(tmp_path / "rec")]
            serving = [*flags, "--policy", str(policy), *record, str(tmp_path / "m")]
            async with http_server(tmp_path, *serving, audit=audit) as server:
                async with agent_client(server.url, provider, "auto") as client:
                    result = await client.call_tool("echo_a", {"text": "hi"})
                banner = server.stderr()
    assert not result.is_error
    assert f"OAuth access tokens of {provider.issuer} for {server.url}" in banner
    assert f'"subject":"{AGENT}"' in audit.read_text(encoding="utf-8")
    (recording,) = (tmp_path / "rec").glob("*.jsonl")
    frames = [json.loads(line) for line in recording.read_text(encoding="utf-8").splitlines()]
    assert (frames[0]["frame"], frames[0]["subject"], frames[0]["client_id"]) == (
        "CT_TOOL_CALL",
        AGENT,
        AGENT,
    )
    assert "eyJ" not in recording.read_text(encoding="utf-8")  # no JWT, the token least of all


def test_a_static_token_beside_an_issuer_is_refused_at_start(tmp_path: Path) -> None:
    agentcli_manifest(tmp_path / "m", [echo_tool("echo_a")], {"echo": ECHO})
    argv = [sys.executable, "-m", "mcp_toolbridge", "serve", "--no-audit", "--http", ":0"]
    argv += ["--token", "x" * 32, "--auth-issuer", "https://id.example", str(tmp_path / "m")]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "--token (TOOLBRIDGE_TOKEN) and --auth-issuer exclude each other" in done.stderr


@pytest.mark.parametrize(
    ("where", "why"),
    [
        (["--http", "0.0.0.0:0"], "it listens on every address"),
        (["--http", ":0", "--state", "redis://127.0.0.1:9/0"], "it is a replica"),
    ],
)
def test_an_issuer_without_the_resource_clients_reach_is_refused_at_start(
    tmp_path: Path, where: list[str], why: str
) -> None:
    """Bound to every address, the default resource was http://0.0.0.0:PORT/mcp, and a
    replica's its own URL: the SDK's client refused the metadata ("Protected resource ...
    does not match expected ...") at every sign-in, through the load balancer too."""
    agentcli_manifest(tmp_path / "m", [echo_tool("echo_a")], {"echo": ECHO})
    argv = [sys.executable, "-m", "mcp_toolbridge", "serve", "--no-audit", *where]
    argv += ["--auth-issuer", "https://id.example", str(tmp_path / "m")]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert f"--auth-issuer needs --auth-resource here, since {why}" in done.stderr
    assert "--auth-resource https://tools.example.com/mcp" in done.stderr


async def test_the_metadata_is_at_the_url_the_401_names_and_at_the_root_fallback(
    tmp_path: Path,
) -> None:
    """A client that reads no WWW-Authenticate tries /.well-known/oauth-protected-resource
    (the MCP authorization spec's fallback); it was 404."""
    agentcli_manifest(tmp_path / "m", [echo_tool("echo_a")], {"echo": ECHO})
    with anyio.fail_after(90):
        async with oidc_provider(tmp_path, clients=CLIENTS) as provider:
            serving = ["--auth-issuer", provider.issuer, str(tmp_path / "m")]
            async with http_server(tmp_path, *serving) as server, httpx2.AsyncClient() as http:
                base = server.url.removesuffix("/mcp")
                refused = await http.post(server.url, json={})
                named = await http.get(f"{base}/.well-known/oauth-protected-resource/mcp")
                root = await http.get(f"{base}/.well-known/oauth-protected-resource")
    assert refused.status_code == 401
    assert f'resource_metadata="{named.url}"' in refused.headers["www-authenticate"]
    assert named.status_code == root.status_code == 200, root.text
    assert root.json() == named.json()
    assert named.json()["resource"] == server.url
    assert named.json()["authorization_servers"] == [provider.issuer]
