"""What a refused access token is told, and what the operator sees, with `serve --http
--auth-issuer` as a real process in front of a real OpenID provider. Every refusal was the
same sentence ("invalid, expired, revoked, or not issued for this server") and the server
said nothing on stderr, so a server behind a proxy started without --auth-resource refused
every token with nothing to tell why."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jwt
import pytest
from jwt.algorithms import RSAAlgorithm

from tests.support.httpserve import ACCEPT, call, http_server, modern, modern_headers, request
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.oauth import AGENT, AGENT_SECRET, CLIENTS, OPAQUE, OPAQUE_SECRET, needs_oidc
from tests.support.oidc import Provider, oidc_provider

pytestmark = [pytest.mark.e2e, needs_oidc]
PUBLIC = "https://tools.example.com/mcp"  # where clients reach it, through a proxy


def _forged(provider: Provider, audience: str, **changes: Any) -> str:
    now = int(time.time())
    claims: dict[str, Any] = {"iss": provider.issuer, "aud": audience, "sub": "ann"}
    claims |= {"client_id": AGENT, "scope": "tools", "iat": now - 600, "exp": now + 300}
    claims |= changes
    key = RSAAlgorithm.from_jwk(json.dumps(provider.keys[0]))
    kid = provider.keys[0]["kid"]
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})  # type: ignore[arg-type]


async def _refusal(url: str, era: str, token: str) -> tuple[str, str]:
    """(the WWW-Authenticate header, the body's error_description) of a refused request."""
    if era == "modern":
        message = modern(call("echo_a", {"text": "x"}))
        headers = modern_headers(message)
    else:
        params = {"protocolVersion": "2025-11-25", "capabilities": {}}
        message = request("initialize", {**params, "clientInfo": {"name": "t", "version": "0"}})
        headers = dict(ACCEPT)
    headers["Authorization"] = f"Bearer {token}"
    async with httpx2.AsyncClient() as http:
        response = await http.post(url, json=message, headers=headers)
    assert response.status_code == 401, response.text
    challenge = response.headers["www-authenticate"]
    assert 'error="invalid_token"' in challenge and "resource_metadata=" in challenge
    return challenge, str(response.json()["error_description"])


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_a_refused_token_is_told_why_and_a_wrong_resource_is_on_stderr(
    tmp_path: Path, era: str
) -> None:
    agentcli_manifest(tmp_path / "m", [echo_tool("echo_a")], {"echo": ECHO})
    policy = tmp_path / "team.toml"
    policy.write_text('[auth]\nscopes = ["tools"]\n', encoding="utf-8")
    with anyio.fail_after(90):
        async with oidc_provider(tmp_path, clients=CLIENTS, opaque_clients=[OPAQUE]) as provider:
            issuer = provider.issuer
            serving = ["--auth-issuer", issuer, "--policy", str(policy), str(tmp_path / "m")]
            async with http_server(tmp_path, *serving) as server:
                url = server.url
                public = await provider.client_credentials(AGENT, AGENT_SECRET, resource=PUBLIC)
                opaque = await provider.client_credentials(OPAQUE, OPAQUE_SECRET, resource=url)
                tokens = {
                    "expired": _forged(provider, url, exp=int(time.time()) - 120),
                    "audience": public,
                    "audience again": public,
                    "issuer": _forged(provider, url, iss="http://127.0.0.1:9/"),
                    "opaque": opaque,
                }
                told = {name: await _refusal(url, era, t) for name, t in tokens.items()}
                with anyio.fail_after(10):  # stderr is read as it comes: up to the last line
                    while "introspection_client_id" not in server.stderr():  # noqa: ASYNC110
                        await anyio.sleep(0.02)
                stderr = server.stderr()
    assert told["expired"][1] == f"the access token has expired; get a new one from {issuer}"
    assert told["audience"][1] == (
        f"the access token is for {PUBLIC}, not for this server ({url}): ask {issuer} for a "
        f"token for the resource {url}"
    )
    assert told["issuer"][1] == (
        f"the access token was issued by http://127.0.0.1:9/; this server accepts the tokens "
        f"of {issuer} alone"
    )
    assert "does not introspect opaque tokens" in told["opaque"][1]
    for challenge, why in told.values():
        assert f'error_description="{why}"' in challenge
    # The operator learns the fix, once however many tokens it refused; never a token.
    hint = f"start it with --auth-resource {PUBLIC} (or [auth] resource)"
    assert stderr.count(hint) == 1, stderr
    assert "set [auth] introspection_client_id" in stderr
    assert not any(token in stderr for token in tokens.values())
