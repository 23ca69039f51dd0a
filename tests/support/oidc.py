"""A real OpenID provider for the OAuth tests: panva's oidc-provider (OpenID certified) from
npm, run by node on 127.0.0.1 (tests/fixtures/oidc/provider.mjs; installed by .ci/run), and
what a test does with it: sign-in keys, client credentials, the browser's part of an
authorization code flow (its login and consent pages, driven over HTTP), revocation.

:func:`oidc_skip_reason` says why the provider cannot run here (no node 20.19+, not
installed); CI installs it, so there the tests run.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import anyio
import httpx2
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from tests.support.node import find_node
from tests.support.rawstdio import REPO

FIXTURE = REPO / "tests" / "fixtures" / "oidc"
SCRIPT = FIXTURE / "provider.mjs"
INSTALLED = FIXTURE / "node_modules" / "oidc-provider" / "package.json"
MIN_NODE = (20, 19)


def oidc_skip_reason() -> str | None:
    if find_node(MIN_NODE) is None:
        return f"node {MIN_NODE[0]}.{MIN_NODE[1]}+ is not installed (oidc-provider needs it)"
    if not INSTALLED.is_file():
        return "oidc-provider is not installed: run `npm ci --prefix tests/fixtures/oidc`"
    return None


def rsa_jwk(kid: str) -> dict[str, Any]:
    """A fresh RSA signing key as a private JWK."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(key))
    return {**jwk, "kid": kid, "alg": "RS256", "use": "sig"}


def public_jwk(jwk: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in jwk.items() if k in ("kty", "n", "e", "kid", "alg", "use")}


@dataclass
class Provider:
    """A running oidc-provider: its issuer URL, the private keys it signs with, its config."""

    issuer: str
    keys: list[dict[str, Any]]
    config: dict[str, Any]
    process: Process
    stderr: list[str] = field(default_factory=list)

    @property
    def token_endpoint(self) -> str:
        return f"{self.issuer}/token"

    async def client_credentials(
        self, client_id: str, secret: str, *, resource: str, scope: str | None = "tools"
    ) -> str:
        """An access token for a confidential client (an agent), for ``resource``."""
        form = {"grant_type": "client_credentials", "resource": resource}
        if scope is not None:
            form["scope"] = scope
        async with httpx2.AsyncClient() as http:
            response = await http.post(self.token_endpoint, data=form, auth=(client_id, secret))
        assert response.status_code == 200, response.text
        return str(response.json()["access_token"])

    async def register(self, redirect_uri: str, *, public: bool = False) -> tuple[str, str | None]:
        """A web client registered now (RFC 7591) for the authorization code flow back to
        ``redirect_uri``: its id and secret (None for a ``public`` client, PKCE alone)."""
        metadata = {
            "client_name": "mcp-toolbridge console",
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none" if public else "client_secret_basic",
        }
        async with httpx2.AsyncClient() as http:
            response = await http.post(f"{self.issuer}/reg", json=metadata)
        assert response.status_code == 201, response.text
        found = response.json()
        return str(found["client_id"]), None if public else str(found["client_secret"])

    async def revoke(self, token: str, client_id: str, secret: str) -> None:
        async with httpx2.AsyncClient() as http:
            response = await http.post(
                f"{self.issuer}/token/revocation", data={"token": token}, auth=(client_id, secret)
            )
        assert response.status_code == 200, response.text


class _Forms(HTMLParser):
    """The forms of a page: action, method and input values (hidden ones included)."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, Any]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "form":
            self.forms.append({"action": found.get("action") or "", "inputs": {}})
        elif tag in ("input", "button") and self.forms and found.get("name"):
            self.forms[-1]["inputs"][found["name"]] = found.get("value") or ""


async def sign_in(authorization_url: str, login: str, *, redirect_prefix: str) -> str:
    """What a person's browser does with an authorization URL: open it, fill in the
    provider's login form, press "continue" on its consent page, and follow redirects to
    the client's redirect URI. Returns that final URL (with ``code`` and ``state``)."""
    async with httpx2.AsyncClient(follow_redirects=False) as browser:
        url = authorization_url
        for _ in range(12):
            if url.startswith(redirect_prefix):
                return url
            response = await browser.get(url)
            while response.is_redirect:
                url = urljoin(url, response.headers["location"])
                if url.startswith(redirect_prefix):
                    return url
                response = await browser.get(url)
            assert response.status_code == 200, (url, response.status_code, response.text[:500])
            forms = _Forms()
            forms.feed(response.text)
            assert forms.forms, response.text[:500]
            form = forms.forms[0]
            inputs = dict(form["inputs"])
            if "login" in inputs:
                inputs.update(login=login, password="any")
            target = urljoin(url, form["action"])
            response = await browser.post(target, data=inputs)
            assert response.is_redirect, (target, response.status_code, response.text[:500])
            url = urljoin(target, response.headers["location"])
    raise AssertionError(f"no redirect back to {redirect_prefix}")


def redirect_params(redirected: str) -> dict[str, str]:
    """The parameters of the redirect back to the client (``code``, ``state``, ``iss``)."""
    query = parse_qs(urlsplit(redirected).query)
    assert "code" in query, redirected
    return {name: values[0] for name, values in query.items()}


async def _drain(stream: BufferedByteReceiveStream, lines: list[str]) -> None:
    try:
        while True:
            lines.append((await stream.receive_until(b"\n", 1 << 20)).decode(errors="replace"))
    except (anyio.EndOfStream, anyio.IncompleteRead, anyio.ClosedResourceError):
        pass


@asynccontextmanager
async def oidc_provider(
    workdir: Path,
    *,
    keys: Sequence[dict[str, Any]] | None = None,
    accounts: Mapping[str, Sequence[str]] | None = None,
    clients: Sequence[Mapping[str, Any]] = (),
    opaque_clients: Sequence[str] = (),
    scopes: Sequence[str] = ("tools",),
    port: int = 0,
    access_token_ttl: int = 600,
) -> AsyncIterator[Provider]:
    """Run oidc-provider until the block ends. ``accounts``: login name -> groups;
    ``clients``: static client metadata (``client_id``, ``client_secret``, ``grant_types``,
    ``groups``...); ``access_token_ttl``: the seconds its access tokens live."""
    node = find_node(MIN_NODE)
    assert node is not None, oidc_skip_reason()
    signing = list(keys) if keys is not None else [rsa_jwk("key-1")]
    config: dict[str, Any] = {
        "port": port,
        "keys": signing,
        "accounts": {name: {"groups": list(g)} for name, g in (accounts or {}).items()},
        "clients": [dict(c) for c in clients],
        "opaque_clients": list(opaque_clients),
        "resource_scopes": list(scopes),
        "access_token_ttl": access_token_ttl,
    }
    path = anyio.Path(workdir / f"oidc-{port or 'any'}-{signing[0]['kid']}.json")
    await path.write_text(json.dumps(config), encoding="utf-8")
    env = {"PATH": os.environ.get("PATH", ""), "NODE_ENV": "test"}
    process = await anyio.open_process(
        [node, str(SCRIPT), str(path)], cwd=FIXTURE, env=env, stdin=subprocess.PIPE
    )
    assert process.stdout is not None and process.stderr is not None
    out = BufferedByteReceiveStream(process.stdout)
    errors: list[str] = []
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_drain, BufferedByteReceiveStream(process.stderr), errors)
            with anyio.fail_after(30):
                try:
                    line = await out.receive_until(b"\n", 1 << 16)
                except anyio.IncompleteRead:
                    raise AssertionError(f"oidc-provider exited: {errors}") from None
            issuer = json.loads(line)["issuer"]
            yield Provider(issuer, signing, config, process, errors)
            group.cancel_scope.cancel()
    finally:
        if process.returncode is None:
            process.terminate()
        with anyio.move_on_after(5, shield=True):
            await process.wait()
        if process.returncode is None:
            process.kill()
            with anyio.move_on_after(5, shield=True):
                await process.wait()
        await process.aclose()
