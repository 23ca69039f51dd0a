"""``serve --http --console``: the console also at ``/console`` of the MCP server, behind
the same authentication. With the static bearer token, the browser opens it with that token
in its URL; with an authorization server (a real OpenID provider on 127.0.0.1), a caller
whose access token carries the admin role gets a one-time URL from ``/console/sign-in`` and
answers as themselves, anyone else is refused."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from mcp_toolbridge.server.auth_options import AuthOptions
from tests.console.conftest import Person, mounted_serving
from tests.support.oauth import AGENT, AGENT_SECRET, needs_oidc
from tests.support.oidc import Provider, oidc_provider

pytestmark = pytest.mark.anyio
TOKEN = "static-token-0123456789abcdef"
ADMIN, ADMIN_SECRET = "ops-admin", "admin-secret-0123456789abcdef"


class _At:
    def __init__(self, url: str) -> None:
        self.url = url


async def test_with_the_static_token_the_console_opens_with_a_one_time_url_not_the_token(
    tmp_path: Path,
) -> None:
    """The server's bearer token never opens the console (a proxy that logs request lines
    would log it): the URL printed at start carries a one-time token, and a client holding
    the bearer token gets another from ``/console/sign-in``."""
    async with (
        mounted_serving(tmp_path, token=TOKEN) as (url, console),
        httpx2.AsyncClient() as http,
    ):
        base = url.rsplit("/", 1)[0] + "/console"
        assert (await http.get(base + "/")).status_code == 401
        assert (await http.get(base + "/?token=wrong")).status_code == 401
        assert (await http.post(url, json={})).status_code == 401  # the MCP endpoint: as ever
        with_token = await http.get(f"{base}/?token={TOKEN}")
        assert with_token.status_code == 401 and "set-cookie" not in with_token.headers
        printed = console.mounted_url
        assert printed is not None and TOKEN not in printed
        assert printed.startswith(f"{base}/?token=")
        welcome = await http.get(printed.replace("/?", "/timeline?") + "&outcome=ok")
        assert welcome.status_code == 303  # on to the same page under /console, token left out
        assert welcome.headers["location"] == "/console/timeline?outcome=ok"
        assert (await http.get(printed)).status_code == 401  # spent
        assert (await http.get(base + "/sign-in")).status_code == 401  # the bearer token first
        given = await http.get(base + "/sign-in", headers={"Authorization": f"Bearer {TOKEN}"})
        assert given.status_code == 200 and TOKEN not in given.text
        one_time = url.rsplit("/", 1)[0] + given.json()["url"]
        async with Person.at(_At(one_time)) as me:  # type: ignore[arg-type]
            assert "Calls waiting for your answer" in await me.page("/")
            assert (await http.get(one_time)).status_code == 401  # once only


@pytest.fixture(scope="module")
async def admins(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Provider]:
    clients = [
        {"client_id": ADMIN, "client_secret": ADMIN_SECRET, "grant_types": ["client_credentials"],
         "response_types": [], "redirect_uris": [], "groups": ["admin"]},
        {"client_id": AGENT, "client_secret": AGENT_SECRET, "grant_types": ["client_credentials"],
         "response_types": [], "redirect_uris": [], "groups": ["bots"]},
    ]  # fmt: skip
    async with oidc_provider(tmp_path_factory.mktemp("oidc"), clients=clients) as running:
        yield running


@needs_oidc
async def test_with_oauth_only_an_admins_token_signs_in_and_answers_as_them(
    tmp_path: Path, admins: Provider
) -> None:
    auth = AuthOptions(issuer=admins.issuer, scopes=("tools",))
    async with mounted_serving(tmp_path, auth=auth) as (url, console), httpx2.AsyncClient() as http:
        base = url.rsplit("/", 1)[0] + "/console"
        assert (await http.get(base + "/sign-in")).status_code == 401
        bot = await admins.client_credentials(AGENT, AGENT_SECRET, resource=url)
        refused = await http.get(base + "/sign-in", headers={"Authorization": f"Bearer {bot}"})
        assert refused.status_code == 403 and "admin" in refused.json()["error"]
        own = await http.get(f"{base}/?token={console.url.split('?token=', 1)[1]}")
        assert own.status_code == 401  # the console's own token does not open this path
        admin = await admins.client_credentials(ADMIN, ADMIN_SECRET, resource=url)
        given = await http.get(base + "/sign-in", headers={"Authorization": f"Bearer {admin}"})
        assert given.status_code == 200
        one_time = url.rsplit("/", 1)[0] + given.json()["url"]
        async with Person.at(_At(one_time)) as me:  # type: ignore[arg-type]
            assert (await http.get(one_time)).status_code == 401  # used: once only
            result: list[Any] = []
            async with anyio.create_task_group() as group:
                group.start_soon(_authorized_call, url, admin, result)
                [waiting] = await me.waiting()
                await me.answer(waiting, "once")
        assert not result[0].is_error
    lines = (tmp_path / "audit.ndjson").read_text(encoding="utf-8").splitlines()
    last = json.loads(lines[-1])
    assert last["answeredBy"] == f"console:{ADMIN}" and last["outcome"] == "ok"


async def _authorized_call(url: str, token: str, out: list[Any]) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        out.append(await client.call_tool("note", {"text": "oauth"}))
