"""The console attacked from where outsiders stand (the red-team pass of 2026-11-29;
docs/security.md, "The HTTP edge and the console"): markup a manifest or a model puts in
front of the person, and the sign-in URL made to send the browser elsewhere. Real servers,
real HTTP."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

from mcp_toolbridge.server.auth_options import AuthOptions
from tests.console.conftest import Person, catalog, mounted_serving, serving
from tests.support.oauth import needs_oidc
from tests.support.oidc import Provider, oidc_provider

pytestmark = pytest.mark.anyio

MARKUP = "\"'><img src=x onerror=alert(1)><script>alert(2)</script><svg onload=alert(3)>"
"""What a hostile manifest or model writes where the console shows text."""


def _marked(tmp_path: Path) -> Path:
    """The console's test catalog, ``note``'s description carrying :data:`MARKUP`."""
    folder = catalog(tmp_path)
    manifest = folder / "tools.json"
    tools = json.loads(manifest.read_text(encoding="utf-8"))
    for tool in tools["tools"]:
        if tool["name"] == "note":
            tool["description"] = f"Write a note {MARKUP}"
    manifest.write_text(json.dumps(tools), encoding="utf-8")
    return folder


def _inert(page: str, *, shown: bool = True) -> None:
    """None of the markup is live in ``page`` (``shown``: it is there, as escaped text)."""
    for live in ("<img", "<script>alert", "<svg onload", "onerror=alert(1)>"):
        assert live not in page, live
    assert not shown or "&lt;img src=x onerror=alert(1)&gt;" in page


async def _call(url: str, args: dict[str, Any], out: list[Any]) -> None:
    async with httpx2.AsyncClient(timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="auto") as client:
            out.append(await client.call_tool("note", args))


async def test_markup_in_a_description_or_a_calls_arguments_is_shown_as_text(
    tmp_path: Path,
) -> None:
    async with (
        serving(tmp_path, stateless=True, catalog_of=_marked) as stack,
        Person.at(stack.console) as me,
    ):
        result: list[Any] = []
        async with anyio.create_task_group() as group:
            group.start_soon(_call, stack.url, {"text": MARKUP}, result)
            [waiting] = await me.waiting()
            _inert(await me.page())
            _inert(await me.page("/part/approvals"))
            await me.answer(waiting, "deny")
        _inert(await me.page("/catalog"))
        _inert(await me.page("/search", q=f"note {MARKUP}"))
        _inert(await me.page("/timeline", tool=MARKUP, caller=MARKUP), shown=False)
        _inert(await me.page("/part/timeline", outcome=MARKUP), shown=False)


async def _form_token(me: Person) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', await me.page())
    assert found is not None
    return found.group(1)


async def test_two_people_answer_one_call_at_once_and_one_answer_is_taken(
    tmp_path: Path,
) -> None:
    """Two console sessions answer the same waiting call at the same moment (one allows, one
    denies): one answer is taken, the other gets 409, and the call does what the taken one
    said. Neither can post with the other's form token."""
    async with (
        serving(tmp_path, stateless=True) as stack,
        Person.at(stack.console) as one,
        Person.at(stack.console) as two,
    ):
        result: list[Any] = []
        answers: dict[str, int] = {}
        async with anyio.create_task_group() as group:
            group.start_soon(_call, stack.url, {"text": "twice"}, result)
            [waiting] = await one.waiting()
            tokens = {"once": await _form_token(one), "deny": await _form_token(two)}
            borrowed = await two.http.post(
                f"{two.base}/answer/{waiting}", data={"csrf": tokens["once"], "choice": "once"}
            )
            assert borrowed.status_code == 403  # a form token is its own session's only

            async def answer(me: Person, choice: str) -> None:
                posted = await me.http.post(
                    f"{me.base}/answer/{waiting}", data={"csrf": tokens[choice], "choice": choice}
                )
                answers[choice] = posted.status_code

            async with anyio.create_task_group() as both:
                both.start_soon(answer, one, "once")
                both.start_soon(answer, two, "deny")
        assert sorted(answers.values()) == [303, 409], answers
        [taken] = [choice for choice, status in answers.items() if status == 303]
        assert result[0].is_error == (taken == "deny"), result
        assert len(stack.console.desk) == 0


async def test_the_packaged_assets_give_nothing_beside_them(tmp_path: Path) -> None:
    """``/static/`` serves the package's stylesheet and script, nothing above them however
    the path climbs (dot segments encoded, so no client folds them away first)."""
    async with serving(tmp_path) as stack, Person.at(stack.console) as me:
        for climb in (
            "/static/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
            "/static/..%2f..%2f..%2f..%2f..%2fetc%2fpasswd",
            "/static/%2e%2e/templates/base.html",
            "/static/%2e%2e/__init__.py",
        ):
            response = await me.http.get(me.base + climb)
            assert response.status_code == 404, (climb, response.text[:200])
        assert (await me.http.get(me.base + "/static/console.js")).status_code == 200


@pytest.mark.parametrize(
    "trick",
    ["//evil.example/x", "/%2F%2Fevil.example/x", "/%5Cevil.example/x", "/%09/evil.example/x"],
)
async def test_the_token_url_goes_on_to_a_page_of_the_console_only(
    tmp_path: Path, trick: str
) -> None:
    """The first visit trades the URL's token for a cookie and goes on to the page asked for:
    a path made to read as another host (``//host``, a backslash, a tab the browser drops)
    stays a path of the console, on its own port and at the MCP server's ``/console``."""
    async with mounted_serving(tmp_path) as (_, console), httpx2.AsyncClient() as http:
        for printed in (console.url, console.mounted_url):
            assert printed is not None
            base, token = printed.split("/?token=", 1)
            opened = await http.get(f"{base}{trick}?token={token}")
            assert opened.status_code == 303, opened.text
            location = opened.headers["location"]
            # what a browser makes of it (it drops tabs and reads \\ as / in http URLs)
            seen = urljoin(base + "/", location.replace("\t", "").replace("\\", "/"))
            assert urlsplit(seen).netloc == urlsplit(base).netloc, location
            assert "evil.example" not in urlsplit(seen).netloc


ADMIN, ADMIN_SECRET = "ops-admin", "ops-admin-secret-0123456789abcdef"
CANONICAL = "https://tools.example.com/mcp"
"""Where clients reach the server: TLS ends at a proxy in front of it (not run here)."""


@pytest.fixture(scope="module")
async def admins(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Provider]:
    clients = [
        {"client_id": ADMIN, "client_secret": ADMIN_SECRET, "grant_types": ["client_credentials"],
         "response_types": [], "redirect_uris": [], "groups": ["admin"]},
    ]  # fmt: skip
    async with oidc_provider(tmp_path_factory.mktemp("oidc"), clients=clients) as running:
        yield running


@needs_oidc
async def test_behind_https_a_sign_in_pass_opens_a_secure_session_cookie(
    tmp_path: Path, admins: Provider
) -> None:
    """Served at an https canonical address, the session a one-time pass opens is Secure (as
    a browser sign-in's is): the browser never sends it over plain HTTP, where anyone on the
    way could read it and answer in the console as the admin."""
    auth = AuthOptions(issuer=admins.issuer, scopes=("tools",), resource=CANONICAL)
    async with mounted_serving(tmp_path, auth=auth) as (url, _), httpx2.AsyncClient() as http:
        token = await admins.client_credentials(ADMIN, ADMIN_SECRET, resource=CANONICAL)
        given = await http.get(
            url.removesuffix("/mcp") + "/console/sign-in",
            headers={"Authorization": f"Bearer {token}"},
        )
        assert given.status_code == 200, given.text
        opened = await http.get(url.removesuffix("/mcp") + given.json()["url"])
        assert opened.status_code == 303, opened.text
        cookie = opened.headers["set-cookie"]
        attributes = [a.strip() for a in cookie.split(";")]
        assert "Secure" in attributes and "HttpOnly" in attributes, cookie
        assert "SameSite=Strict" in attributes and "Path=/console" in attributes, cookie


SPOOF = "alice\u202egnp.exe\U000e0041\x1b]0;owned\x07\x9b2J"
"""A caller name as an identity provider may send it: U+202E shows what follows reversed
(``alice`` then ``exe.png``), a tag character hides text, ESC ] and the one-byte CSI
``\\x9b`` rewrite a terminal's title and screen."""
SPOOF_SHOWN = "alice\\u202egnp.exe\\U000e0041\\x1b]0;owned\\x07\\x9b2J"


async def test_a_callers_name_with_bidi_or_control_characters_is_shown_escaped(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path) as stack:
        async with (
            httpx2.AsyncClient() as http,
            Client(streamable_http_client(stack.url, http_client=http)) as client,
        ):
            await client.call_tool("echo", {"text": "hello"})
    [line] = stack.audit.read_text(encoding="utf-8").splitlines()
    record = json.loads(line)
    record.update(subject=SPOOF, clientId=f"bob{SPOOF}")
    stack.audit.write_text(json.dumps(record) + "\n", encoding="utf-8")
    async with serving(tmp_path) as again, Person.at(again.console) as me:
        await again.console.history(again.audit)
        for page in (await me.page("/timeline"), await me.page("/part/timeline")):
            assert f"{SPOOF_SHOWN} (bob{SPOOF_SHOWN})" in page
            for hidden in ("\u202e", "\U000e0041", "\x1b", "\x9b", "\x07"):
                assert hidden not in page, repr(hidden)
        # the filter's choice is the name as shown, and it still picks the call
        picked = await me.page("/timeline", caller=f"{SPOOF_SHOWN} (bob{SPOOF_SHOWN})")
        assert "No calls yet" not in picked and "<code>echo</code>" in picked


async def test_a_clients_own_name_is_shown_escaped_on_the_sessions_page(tmp_path: Path) -> None:
    """A client names itself at ``initialize`` (``clientInfo``): U+202E or a tag character
    there shows as its escape, not as another client's name."""
    named = Implementation(name=SPOOF, version="1")
    async with (
        serving(tmp_path) as stack,
        Person.at(stack.console) as me,
        httpx2.AsyncClient() as http,
        Client(
            streamable_http_client(stack.url, http_client=http), mode="legacy", client_info=named
        ) as client,
    ):
        await client.list_tools()
        page = await me.page("/sessions")
        assert SPOOF_SHOWN in page
        for hidden in ("\u202e", "\U000e0041", "\x1b", "\x9b", "\x07"):
            assert hidden not in page, repr(hidden)
