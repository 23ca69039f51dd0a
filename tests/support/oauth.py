"""An mcp-toolbridge HTTP server protected by a real OpenID provider (tests/support/oidc.py),
and the SDK's OAuth clients that sign in to it: an agent with client credentials, a person
with the authorization code flow and PKCE (dynamic client registration, the provider's login
and consent pages driven over HTTP)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from mcp_toolbridge.runtime import BUILTIN_SPECS, Runtime, Settings, load_catalog, open_runtime
from mcp_toolbridge.server.auth_options import AuthOptions
from mcp_toolbridge.server.http import HttpService
from mcp_toolbridge.server.http_options import HttpOptions
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.oidc import Provider, oidc_skip_reason, redirect_params, sign_in

AGENT, AGENT_SECRET = "deploy-agent", "agent-secret-0123456789abcdef"
RS, RS_SECRET = "toolbridge-rs", "rs-secret-0123456789abcdef"
OPAQUE, OPAQUE_SECRET = "opaque-agent", "opaque-secret-0123456789abcdef"
REPORTER, REPORTER_SECRET = "report-agent", "reporter-secret-0123456789abcdef"
CLIENTS = [
    {"client_id": AGENT, "client_secret": AGENT_SECRET, "grant_types": ["client_credentials"],
     "response_types": [], "redirect_uris": [], "groups": ["bots"]},
    {"client_id": REPORTER, "client_secret": REPORTER_SECRET,
     "grant_types": ["client_credentials"], "response_types": [], "redirect_uris": []},
    {"client_id": OPAQUE, "client_secret": OPAQUE_SECRET, "grant_types": ["client_credentials"],
     "response_types": [], "redirect_uris": []},
    {"client_id": RS, "client_secret": RS_SECRET, "grant_types": [], "response_types": [],
     "redirect_uris": []},
]  # fmt: skip
PEOPLE = {"alice": ["ops"], "bob": ["dev"]}
REDIRECT = "http://127.0.0.1:53682/callback"

needs_oidc = pytest.mark.skipif(oidc_skip_reason() is not None, reason=oidc_skip_reason() or "")


class Clock:
    """A wall clock a test moves: a token validator's ``clock``, so a test of what a time
    limit does needs no sleep."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


class MemoryTokens(TokenStorage):
    """A client's token and registration, kept in memory (the SDK's storage port)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


@dataclass
class Served:
    url: str
    audit: Path
    runtime: Runtime
    service: HttpService

    def audit_lines(self) -> list[dict[str, Any]]:
        if not self.audit.exists():
            return []
        return [json.loads(line) for line in self.audit.read_text(encoding="utf-8").splitlines()]


@asynccontextmanager
async def protected_server(
    settings: Settings,
    provider: Provider,
    *,
    scopes: Sequence[str] = ("tools",),
    introspection: bool = False,
    introspection_cache_s: float = 0.0,
    stateless: bool = False,
    locked: bool = False,
) -> AsyncIterator[Served]:
    """``settings`` served over HTTP on 127.0.0.1, accepting ``provider``'s tokens (opaque
    ones through introspection with ``introspection``: each request asks the issuer unless
    ``introspection_cache_s`` keeps its answers)."""
    assert settings.audit_path is not None
    auth = AuthOptions(
        issuer=provider.issuer,
        scopes=tuple(scopes),
        introspection_client_id=RS if introspection else None,
        introspection_secret=RS_SECRET if introspection else None,
        introspection_cache_s=introspection_cache_s,
    )
    loaded = load_catalog(settings, BUILTIN_SPECS, locked=locked)
    assert not loaded.errors, [p.render() for p in loaded.errors]
    async with open_runtime(settings, loaded) as runtime, anyio.create_task_group() as group:
        server = ToolbridgeServer(runtime.bridge, on_session_end=runtime.end_session)
        service = HttpService(server, HttpOptions(port=0, auth=auth, stateless=stateless))
        url = await group.start(service.serve)
        try:
            yield Served(url, settings.audit_path, runtime, service)
        finally:
            service.stop()


@asynccontextmanager
async def agent_client(url: str, provider: Provider, mode: str) -> AsyncIterator[Client]:
    """The SDK client of an agent signing in with client credentials."""
    auth = ClientCredentialsOAuthProvider(
        url, MemoryTokens(), AGENT, AGENT_SECRET, scope="tools", issuer=provider.issuer
    )
    async with httpx2.AsyncClient(auth=auth) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            yield client


@asynccontextmanager
async def person_client(
    url: str,
    login: str,
    mode: str,
    *,
    scope: str = "tools",
    storage: MemoryTokens | None = None,
    **client_options: Any,
) -> AsyncIterator[Client]:
    """The SDK client of a person: it registers itself with the provider, sends the person's
    browser to the authorization URL (the login and consent pages, filled in over HTTP) and
    exchanges the code, with PKCE, for a token for this server. The same ``storage`` again is
    the same client and sign-in in a later session."""
    redirected: list[str] = []

    async def open_browser(authorization_url: str) -> None:
        redirected.append(await sign_in(authorization_url, login, redirect_prefix=REDIRECT))

    async def callback() -> AuthorizationCodeResult:
        return AuthorizationCodeResult.model_validate(redirect_params(redirected.pop()))

    metadata = OAuthClientMetadata(
        client_name=f"{login}'s IDE",
        redirect_uris=[AnyUrl(REDIRECT)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=scope,
        token_endpoint_auth_method="none",
    )
    tokens = storage if storage is not None else MemoryTokens()
    auth = OAuthClientProvider(url, metadata, tokens, open_browser, callback)
    async with httpx2.AsyncClient(auth=auth) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, **client_options) as client:
            yield client
