"""The console's sign-in in the browser (console/login.py, server/console_login.py), over real
HTTP against a real OpenID provider (oidc-provider on 127.0.0.1; its login and consent pages
driven as a browser would): the authorization request carries PKCE (S256), state, nonce and
the resource; an admin who signs in answers as themselves; and each refusal says why: a
person without the role (403), a forged state, a callback without the browser's attempt
(no verifier) or with an altered cookie, a replayed one, an expired one, the issuer's own
refusals (access_denied; invalid_grant for a code it never issued); and the flags and the
policy file that configure the console's client."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest

from mcp_toolbridge.console import Console, LoginClient
from mcp_toolbridge.console.login import LOGIN_S, s256
from mcp_toolbridge.server.auth_options import AuthOptions
from tests.console.conftest import Person, mounted_serving
from tests.support.oauth import AGENT, AGENT_SECRET, needs_oidc
from tests.support.oidc import Provider, sign_in

pytestmark = [pytest.mark.anyio, needs_oidc]


@asynccontextmanager
async def console_with_login(
    tmp_path: Path, provider: Provider, *, public: bool = False
) -> AsyncIterator[tuple[str, Console, str]]:
    """The server with its console at /console, its console client registered at the
    provider with the callback the server named: the MCP URL, the console, the console's
    base URL."""
    auth = AuthOptions(issuer=provider.issuer, scopes=("tools",))
    async with mounted_serving(tmp_path, auth=auth) as (url, console):
        login = console.browser_login
        assert login is not None
        client_id, secret = await provider.register(login.redirect_uri, public=public)
        console.options = replace(console.options, login=LoginClient(client_id, secret))
        yield url, console, login.console_url


async def _start(http: httpx2.AsyncClient, base: str, page: str = "/console/") -> str:
    """Start a sign-in: the issuer's authorization URL the console sends the browser to."""
    started = await http.get(base + "/login", params={"next": page})
    assert started.status_code == 303, started.text
    return started.headers["location"]


def _params(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


async def _signed_in(http: httpx2.AsyncClient, base: str, login: str, page: str) -> httpx2.Response:
    """Sign in as ``login`` at the provider's pages; the console's answer to the callback."""
    authorization = await _start(http, base, page)
    back = await sign_in(authorization, login, redirect_prefix=base + "/callback")
    return await http.get(back)


async def test_an_admin_signs_in_and_answers_as_themselves(
    tmp_path: Path, provider: Provider
) -> None:
    async with (
        console_with_login(tmp_path, provider) as (url, _console, base),
        httpx2.AsyncClient(timeout=30) as http,
    ):
        first = await http.get(base + "/timeline", params={"outcome": "error"})
        assert first.status_code == 401  # the sign-in page, with the issuer's button
        assert f"Sign in with {provider.issuer}" in first.text
        assert "next=%2Fconsole%2Ftimeline%3Foutcome%3Derror" in first.text
        assert (await http.get(base + "/static/console.css")).status_code == 200
        authorization = await _start(http, base, "/console/timeline?outcome=error")
        asked = _params(authorization)
        assert authorization.startswith(provider.issuer + "/auth?")
        assert asked["response_type"] == "code" and asked["code_challenge_method"] == "S256"
        assert asked["resource"] == url and asked["redirect_uri"] == base + "/callback"
        assert asked["scope"] == "openid tools" and asked["state"] and asked["nonce"]
        assert len(asked["code_challenge"]) == 43  # a SHA-256, never the verifier itself
        back = await sign_in(authorization, "alice", redirect_prefix=base + "/callback")
        done = await http.get(back)
        assert done.status_code == 200, done.text
        assert "Signed in as alice" in done.text
        assert 'content="0; url=/console/timeline?outcome=error"' in done.text
        person = Person(http, base)
        assert "alice" in await person.page("/")
        result: list[Any] = []
        token = await provider.client_credentials(AGENT, AGENT_SECRET, resource=url)
        async with anyio.create_task_group() as group:
            group.start_soon(_authorized_call, url, token, result)
            [waiting] = await person.waiting()
            assert (await person.answer(waiting, "once")).status_code in (200, 303)
        assert not result[0].is_error
    last = json.loads((tmp_path / "audit.ndjson").read_text(encoding="utf-8").splitlines()[-1])
    assert last["answeredBy"] == "console:alice" and last["outcome"] == "ok"


async def test_a_person_without_the_admin_role_is_refused(
    tmp_path: Path, provider: Provider
) -> None:
    async with (
        console_with_login(tmp_path, provider) as (_, _console, base),
        httpx2.AsyncClient(timeout=30) as http,
    ):
        refused = await _signed_in(http, base, "bob", "/console/")
        assert refused.status_code == 403
        assert "as bob, but the console needs the role &#39;admin&#39;" in refused.text
        assert (await http.get(base + "/")).status_code == 401  # no session was opened


async def test_a_forged_state_is_refused_and_the_real_sign_in_still_completes(
    tmp_path: Path, provider: Provider
) -> None:
    async with (
        console_with_login(tmp_path, provider) as (_, _console, base),
        httpx2.AsyncClient(timeout=30) as http,
    ):
        authorization = await _start(http, base)
        back = await sign_in(authorization, "alice", redirect_prefix=base + "/callback")
        code = _params(back)["code"]
        name = _login_cookie(http)
        cookie = http.cookies.get(name)
        forged = await http.get(base + "/callback", params={"code": code, "state": "forged"})
        assert forged.status_code == 400 and "not the one this browser started" in forged.text
        assert "Max-Age=0" in forged.headers["set-cookie"]  # the attempt's cookie is dropped
        # the attempt itself is untouched: with the browser's cookie back, it completes
        done = await http.get(back, headers={"cookie": f"{name}={cookie}"})
        assert done.status_code == 200 and "Signed in as alice" in done.text


async def test_a_replayed_callback_is_refused(tmp_path: Path, provider: Provider) -> None:
    async with (
        console_with_login(tmp_path, provider) as (_, _console, base),
        httpx2.AsyncClient(timeout=30) as http,
    ):
        authorization = await _start(http, base)
        name = _login_cookie(http)
        state = http.cookies.get(name)
        back = await sign_in(authorization, "alice", redirect_prefix=base + "/callback")
        assert (await http.get(back)).status_code == 200
        async with httpx2.AsyncClient() as thief:  # the callback URL and the cookie, replayed
            again = await thief.get(back, headers={"cookie": f"{name}={state}"})
        assert again.status_code == 400 and "already used" in again.text
        assert (await http.get(back)).status_code == 400  # the browser's cookie is gone too


async def test_a_callback_without_the_browsers_attempt_has_no_verifier_and_is_refused(
    tmp_path: Path, provider: Provider
) -> None:
    async with (
        console_with_login(tmp_path, provider) as (_, _console, base),
        httpx2.AsyncClient(timeout=30) as http,
    ):
        authorization = await _start(http, base)
        back = await sign_in(authorization, "alice", redirect_prefix=base + "/callback")
        async with httpx2.AsyncClient() as elsewhere:  # another browser: no attempt of its own
            refused = await elsewhere.get(back)
        assert refused.status_code == 400 and "no PKCE verifier" in refused.text
        name = _login_cookie(http)
        sealed = http.cookies.get(name)
        assert sealed is not None and _params(back)["state"] not in sealed  # sealed, not shown
        for altered in (sealed[:-4] + "AAAA", sealed.replace("g", "h", 1), "plain-state"):
            refused = await http.get(back, headers={"cookie": f"{name}={altered}"})
            assert refused.status_code == 400 and "no PKCE verifier" in refused.text


async def test_an_expired_attempt_and_the_issuers_refusals_are_refused(
    tmp_path: Path, provider: Provider
) -> None:
    async with (
        console_with_login(tmp_path, provider) as (_, console, base),
        httpx2.AsyncClient(timeout=30) as http,
    ):
        login = console.browser_login
        assert login is not None
        state = _params(await _start(http, base))["state"]
        denied = await http.get(
            base + "/callback",
            params={
                "error": "access_denied",
                "error_description": "End-User aborted",
                "state": state,
            },
        )
        assert denied.status_code == 403
        assert "did not sign you in (access_denied: End-User aborted)" in denied.text
        state = _params(await _start(http, base))["state"]
        bogus = await http.get(base + "/callback", params={"code": "made-up", "state": state})
        assert bogus.status_code == 502  # the issuer's own words on a code it never issued
        assert "the issuer refused to redeem the sign-in: invalid_grant" in bogus.text
        state = _params(await _start(http, base))["state"]
        login.clock = lambda: time.time() + LOGIN_S + 1  # the person took too long
        late = await http.get(base + "/callback", params={"code": "any", "state": state})
        assert late.status_code == 400 and "took longer than 10 minutes" in late.text


async def test_the_issuers_words_on_a_refusal_show_hidden_characters_as_escapes(
    tmp_path: Path, provider: Provider
) -> None:
    """The sign-in page quotes the issuer's ``error_description``: a bidi override or a tag
    character there is shown as its escape (console/rendering.py), as on every page."""
    async with (
        console_with_login(tmp_path, provider) as (_, _console, base),
        httpx2.AsyncClient(timeout=30) as http,
    ):
        state = _params(await _start(http, base))["state"]
        words = "call \u202e0000-555 \U000e0041now"
        denied = await http.get(
            base + "/callback",
            params={"error": "access_denied", "error_description": words, "state": state},
        )
        assert denied.status_code == 403
        assert "access_denied: call \\u202e0000-555 \\U000e0041now" in denied.text
        assert "\u202e" not in denied.text and "\U000e0041" not in denied.text


async def test_a_public_client_signs_in_with_pkce_alone_and_never_leaves_the_console(
    tmp_path: Path, provider: Provider
) -> None:
    async with (
        console_with_login(tmp_path, provider, public=True) as (_, _console, base),
        httpx2.AsyncClient(timeout=30) as http,
    ):
        done = await _signed_in(http, base, "alice", "https://elsewhere.example/")
        assert done.status_code == 200 and 'content="0; url=/console/"' in done.text


async def test_without_a_console_client_the_page_says_how_to_sign_in_from_a_script(
    tmp_path: Path, provider: Provider
) -> None:
    auth = AuthOptions(issuer=provider.issuer, scopes=("tools",))
    async with mounted_serving(tmp_path, auth=auth) as (url, _), httpx2.AsyncClient() as http:
        base = url.rsplit("/", 1)[0] + "/console"
        page = await http.get(base + "/")
        assert page.status_code == 401 and "/console/sign-in" in page.text
        assert "Sign in with" not in page.text
        assert (await http.get(base + "/login")).status_code == 404


def test_the_challenge_is_rfc_7636s_s256() -> None:
    # RFC 7636, appendix B
    verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    assert s256(verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


def _login_cookie(http: httpx2.AsyncClient) -> str:
    [name] = [c.name for c in http.cookies.jar if c.name.endswith("_login")]
    return name


async def _authorized_call(url: str, token: str, out: list[Any]) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        out.append(await client.call_tool("note", {"text": "signed in"}))


def test_the_console_client_needs_the_console_http_and_an_issuer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from mcp_toolbridge.cli.main import main

    assert main(["serve", "--no-audit", "--console-client-id", "console"]) == 2
    assert "--console-client-id applies to --console only" in capsys.readouterr().err
    argv = ["serve", "--no-audit", "--console", ":0", "--console-client-id", "console"]
    assert main(argv) == 2
    assert "needs --http and an authorization server" in capsys.readouterr().err
    assert main([*argv, "--http", ":0"]) == 2
    assert "needs --http and an authorization server" in capsys.readouterr().err


def test_the_policy_file_names_the_console_client_and_its_secret_by_id(tmp_path: Path) -> None:
    from mcp_toolbridge.cli.http import console_for
    from mcp_toolbridge.cli.main import parse_args, settings_of
    from mcp_toolbridge.runtime import BUILTIN_SPECS, load_catalog

    policy = tmp_path / "policy.toml"
    policy.write_text(
        '[auth]\nissuer = "https://login.example.com"\nconsole_client_id = "console"\n'
        'console_client_secret = "console-secret"\nconsole_admin_role = "ops"\n',
        encoding="utf-8",
    )
    args = parse_args(["serve", "--http", ":0", "--console", ":0", "--policy", str(policy)])
    settings = settings_of(args)
    environ = {"TOOLBRIDGE_SECRET_CONSOLE_SECRET": "s3cret-from-the-store"}
    settings = replace(settings, environ={**settings.environ, **environ})
    console = console_for(args, settings, load_catalog(settings, BUILTIN_SPECS))
    assert console is not None and console.options.admin_role == "ops"
    assert console.options.login == LoginClient("console", "s3cret-from-the-store")
    assert "s3cret" not in repr(console.options)
