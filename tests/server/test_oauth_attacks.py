"""Attacks on the OAuth resource server, each refused before anything runs: tokens that are
expired, not yet valid, from another issuer, for another MCP server, unsigned (alg none),
HMAC-signed with the issuer's public key, signed with a key the issuer never published, or
tampered with; a token without the scope; a token in the query string; an opaque token
replayed after the issuer revoked it. Each is sent as a 2026-07-28 tools/call and as a 2025
initialize; the audit log stays empty (no call reached the bridge, no tool ran)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from jwt.algorithms import RSAAlgorithm

from mcp_toolbridge.runtime import Settings
from tests.support.httpserve import ACCEPT, call, modern, modern_headers, request
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.oauth import (
    AGENT,
    AGENT_SECRET,
    OPAQUE,
    OPAQUE_SECRET,
    Clock,
    needs_oidc,
    protected_server,
)
from tests.support.oidc import Provider, public_jwk, rsa_jwk

pytestmark = needs_oidc
ERAS = ["modern", "legacy"]


def _settings(tmp_path: Path) -> Settings:
    agentcli_manifest(tmp_path / "m", [echo_tool("echo_a")], {"echo": ECHO})
    return Settings(paths=[tmp_path / "m"], audit_path=tmp_path / "audit.ndjson")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _claims(provider: Provider, audience: str, **changes: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {
        "iss": provider.issuer,
        "aud": audience,
        "sub": "mallory",
        "client_id": AGENT,
        "scope": "tools",
        "iat": now,
        "exp": now + 300,
        **changes,
    }
    return {k: v for k, v in claims.items() if v is not None}


def _signed(jwk: dict[str, Any], claims: dict[str, Any]) -> str:
    key = RSAAlgorithm.from_jwk(json.dumps(jwk))
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": jwk["kid"]})  # type: ignore[arg-type]


def _unsigned(claims: dict[str, Any]) -> str:
    header = _b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    return f"{header}.{_b64(json.dumps(claims).encode())}."


def _hmac_with_public_key(jwk: dict[str, Any], claims: dict[str, Any]) -> str:
    """HS256 with the issuer's public key (PEM) as the secret: the classic key confusion."""
    public = RSAAlgorithm.from_jwk(json.dumps(public_jwk(jwk)))
    pem = public.public_bytes(  # type: ignore[union-attr]
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    header = {"alg": "HS256", "typ": "JWT", "kid": jwk["kid"]}
    signing = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
    signature = hmac.new(pem, signing.encode(), hashlib.sha256).digest()
    return f"{signing}.{_b64(signature)}"


def _tampered(token: str) -> str:
    """A real token whose payload now names another subject and more scopes; the issuer's
    signature kept."""
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims.update(sub="admin", scope="tools deploy admin")
    return f"{header}.{_b64(json.dumps(claims).encode())}.{signature}"


async def _post(url: str, era: str, token: str | None, *, query: str = "") -> httpx2.Response:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    if era == "modern":
        message = modern(call("echo_a", {"text": "x"}))
        headers |= modern_headers(message)
    else:
        params = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        }
        message = request("initialize", params)
        headers |= ACCEPT
    async with httpx2.AsyncClient() as http:
        return await http.post(url + query, json=message, headers=headers)


Forge = Callable[[Provider, str], str]
FORGED: dict[str, Forge] = {
    "expired": lambda p, aud: _signed(p.keys[0], _claims(p, aud, exp=int(time.time()) - 120)),
    "not yet valid": lambda p, aud: _signed(p.keys[0], _claims(p, aud, nbf=int(time.time()) + 120)),
    "another issuer": lambda p, aud: _signed(p.keys[0], _claims(p, aud, iss="http://127.0.0.1:9/")),
    "no expiry": lambda p, aud: _signed(p.keys[0], _claims(p, aud, exp=None)),
    "alg none": lambda p, aud: _unsigned(_claims(p, aud)),
    "HS256 with the public key": lambda p, aud: _hmac_with_public_key(p.keys[0], _claims(p, aud)),
    "an unpublished key, its own kid": lambda p, aud: _signed(rsa_jwk("evil"), _claims(p, aud)),
    "an unpublished key, the issuer's kid": lambda p, aud: _signed(
        rsa_jwk(p.keys[0]["kid"]), _claims(p, aud)
    ),
}


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("attack", list(FORGED))
async def test_a_forged_token_is_refused_with_401_and_nothing_runs(
    tmp_path: Path, provider: Provider, attack: str, era: str
) -> None:
    with anyio.fail_after(30):
        async with protected_server(_settings(tmp_path), provider) as served:
            genuine = _signed(provider.keys[0], _claims(provider, served.url))
            assert (await _post(served.url, era, genuine)).status_code == 200  # the control
            refused = await _post(served.url, era, FORGED[attack](provider, served.url))
    assert refused.status_code == 401, refused.text
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    assert "resource_metadata=" in refused.headers["www-authenticate"]
    assert len(served.audit_lines()) == (1 if era == "modern" else 0)  # the control's call


@pytest.mark.parametrize("era", ERAS)
async def test_the_issuers_own_tokens_for_another_server_or_tampered_with_are_refused(
    tmp_path: Path, provider: Provider, era: str
) -> None:
    with anyio.fail_after(30):
        async with protected_server(_settings(tmp_path), provider) as served:
            other = "http://127.0.0.1:9/mcp"  # another MCP server this issuer serves
            for_other = await provider.client_credentials(AGENT, AGENT_SECRET, resource=other)
            mine = await provider.client_credentials(AGENT, AGENT_SECRET, resource=served.url)
            wrong_audience = await _post(served.url, era, for_other)
            tampered = await _post(served.url, era, _tampered(mine))
            genuine = await _post(served.url, era, mine)
    assert wrong_audience.status_code == 401 and tampered.status_code == 401
    assert genuine.status_code == 200
    assert len(served.audit_lines()) == (1 if era == "modern" else 0)


@pytest.mark.parametrize("era", ERAS)
async def test_a_token_without_the_required_scope_gets_403_insufficient_scope(
    tmp_path: Path, provider: Provider, era: str
) -> None:
    with anyio.fail_after(30):
        async with protected_server(_settings(tmp_path), provider) as served:
            token = await provider.client_credentials(
                AGENT, AGENT_SECRET, resource=served.url, scope="deploy"
            )
            refused = await _post(served.url, era, token)
    assert refused.status_code == 403
    challenge = refused.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="tools"' in challenge
    assert served.audit_lines() == []


@pytest.mark.parametrize("era", ERAS)
async def test_a_token_in_the_query_string_is_refused_even_when_valid(
    tmp_path: Path, provider: Provider, era: str
) -> None:
    with anyio.fail_after(30):
        async with protected_server(_settings(tmp_path), provider) as served:
            token = await provider.client_credentials(AGENT, AGENT_SECRET, resource=served.url)
            alone = await _post(served.url, era, None, query=f"?access_token={token}")
            beside = await _post(served.url, era, token, query=f"?access_token={token}")
    assert alone.status_code == 400 and beside.status_code == 400
    assert "Authorization header" in alone.json()["error_description"]
    assert served.audit_lines() == []


@pytest.mark.parametrize("era", ERAS)
async def test_an_opaque_token_works_through_introspection_until_the_issuer_revokes_it(
    tmp_path: Path, provider: Provider, era: str
) -> None:
    """With the introspection cache off, every request asks the issuer: the next request
    after the revocation is refused."""
    with anyio.fail_after(30):
        async with protected_server(
            _settings(tmp_path), provider, introspection=True, introspection_cache_s=0
        ) as served:
            token = await provider.client_credentials(OPAQUE, OPAQUE_SECRET, resource=served.url)
            assert token.count(".") != 2  # opaque: only the issuer can say what it is
            accepted = await _post(served.url, era, token)
            await provider.revoke(token, OPAQUE, OPAQUE_SECRET)
            replayed = await _post(served.url, era, token)
    assert accepted.status_code == 200
    assert replayed.status_code == 401
    assert 'error="invalid_token"' in replayed.headers["www-authenticate"]
    lines = served.audit_lines()
    assert [(line["clientId"], line["outcome"]) for line in lines] == (
        [(OPAQUE, "ok")] if era == "modern" else []
    )


@pytest.mark.parametrize("era", ERAS)
async def test_a_revoked_opaque_token_is_honoured_only_until_its_cached_introspection_ends(
    tmp_path: Path, provider: Provider, era: str
) -> None:
    """With the cache on (30 s here), the issuer's answer is taken for 30 s of the server's
    clock: a token revoked meanwhile still works until then, and is refused at the first
    request after."""
    clock = Clock()
    with anyio.fail_after(30):
        async with protected_server(
            _settings(tmp_path), provider, introspection=True, introspection_cache_s=30
        ) as served:
            assert served.service.guard is not None
            served.service.guard.validator.clock = clock
            token = await provider.client_credentials(OPAQUE, OPAQUE_SECRET, resource=served.url)
            accepted = await _post(served.url, era, token)
            await provider.revoke(token, OPAQUE, OPAQUE_SECRET)
            clock.now += 29.5
            cached = await _post(served.url, era, token)
            clock.now += 1.0
            refused = await _post(served.url, era, token)
    assert (accepted.status_code, cached.status_code) == (200, 200)
    assert refused.status_code == 401
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    lines = served.audit_lines()
    assert [(line["clientId"], line["outcome"]) for line in lines] == (
        [(OPAQUE, "ok")] * 2 if era == "modern" else []
    )


async def test_an_opaque_token_is_refused_without_introspection(
    tmp_path: Path, provider: Provider
) -> None:
    with anyio.fail_after(30):
        async with protected_server(_settings(tmp_path), provider) as served:
            token = await provider.client_credentials(OPAQUE, OPAQUE_SECRET, resource=served.url)
            refused = await _post(served.url, "modern", token)
    assert refused.status_code == 401
    assert served.audit_lines() == []
