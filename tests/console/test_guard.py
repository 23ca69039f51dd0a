"""The console is a page only its person can use: without the token or its session cookie
nothing is served, the printed URL opens once (then a page says how to get the next, which
is printed), a foreign Host (DNS rebinding) or Origin (a cross-site form) is refused
before anything runs, every page carries a strict Content-Security-Policy, and its assets
come from the package itself."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from mcp_toolbridge.console.guard import MAX_SESSIONS
from tests.console.conftest import Person, serving

pytestmark = pytest.mark.anyio


async def test_without_the_token_or_with_a_wrong_one_nothing_is_served(tmp_path: Path) -> None:
    async with serving(tmp_path) as stack, httpx2.AsyncClient() as http:
        base = stack.console.url.split("/?", 1)[0]
        for path in ("/", "/timeline", "/catalog", "/events", "/static/console.css"):
            assert (await http.get(base + path)).status_code == 401
        assert (await http.get(base + "/?token=wrong")).status_code == 401
        posted = await http.post(base + "/answer/x", data={"choice": "once"})
        assert posted.status_code == 401


async def test_the_token_is_traded_for_a_cookie_and_leaves_the_url(tmp_path: Path) -> None:
    async with serving(tmp_path) as stack, httpx2.AsyncClient() as http:
        first = await http.get(stack.console.url)
        assert first.status_code == 303
        assert "token" not in first.headers["location"]
        cookie = first.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        page = await http.get(stack.console.url.split("?", 1)[0])
        assert page.status_code == 200


async def test_a_foreign_host_or_origin_is_refused(tmp_path: Path) -> None:
    async with serving(tmp_path) as stack, Person.at(stack.console) as me:
        rebound = await me.http.get(me.base + "/", headers={"Host": "evil.example:80"})
        assert rebound.status_code == 421
        port = me.base.rsplit(":", 1)[1]
        foreign = await me.http.post(
            me.base + "/answer/x",
            data={"choice": "once", "csrf": "0"},
            headers={"Origin": "http://evil.example"},
        )
        assert foreign.status_code == 403
        same = await me.http.get(me.base + "/", headers={"Origin": f"http://127.0.0.1:{port}"})
        assert same.status_code == 200


async def test_pages_carry_a_strict_content_security_policy_and_packaged_assets(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path) as stack, Person.at(stack.console) as me:
        response = await me.http.get(me.base + "/")
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp
        assert "unsafe-inline" not in csp and "http" not in csp
        assert response.headers["x-frame-options"] == "DENY"
        assert "<script>" not in response.text and "http://" not in response.text.replace(
            me.base, ""
        )
        for asset in ("/static/console.css", "/static/console.js"):
            assert (await me.http.get(me.base + asset)).status_code == 200


async def test_the_printed_url_opens_once_and_the_next_one_is_told(tmp_path: Path) -> None:
    """The URL's token opens one session; opened again (by this browser or anyone who read its
    history) it gets a page that says how to get a new URL, the session it opened goes on, and
    the next URL is told (serve prints it) and opens once too."""
    async with serving(tmp_path) as stack:
        told: list[tuple[str, str]] = []

        async def tell(where: str, url: str) -> None:
            told.append((where, url))

        stack.console.on_url(tell)
        first = stack.console.url
        base = first.split("/?", 1)[0]
        async with httpx2.AsyncClient() as mine, httpx2.AsyncClient() as theirs:
            assert (await mine.get(first)).status_code == 303
            assert told == [("console", stack.console.url)] and stack.console.url != first
            again = await mine.get(first)
            assert again.status_code == 401 and "text/html" in again.headers["content-type"]
            assert "used already" in again.text and "mcp-toolbridge console-url" in again.text
            assert 'href="/"' in again.text  # this browser's session goes on
            assert (await mine.get(base + "/")).status_code == 200
            stolen = await theirs.get(first)  # the history entry, in another browser
            assert stolen.status_code == 401 and "used already" in stolen.text
            assert 'href="/"' not in stolen.text and "set-cookie" not in stolen.headers
            assert (await theirs.get(base + "/")).status_code == 401
            nxt = stack.console.url
            assert (await theirs.get(nxt)).status_code == 303
            assert (await theirs.get(base + "/")).status_code == 200
            assert (await mine.get(nxt)).status_code == 401
            assert [w for w, _ in told] == ["console", "console"]


async def test_sessions_stay_capped_when_each_url_opens_one(tmp_path: Path) -> None:
    """Each one-time URL opens one session; past :data:`MAX_SESSIONS` the oldest is forgotten
    (its person opens a new URL), the newest go on."""
    async with serving(tmp_path) as stack:
        clients = [httpx2.AsyncClient() for _ in range(MAX_SESSIONS + 1)]
        try:
            for client in clients:
                assert (await client.get(stack.console.url)).status_code == 303
            base = stack.console.url.split("/?", 1)[0]
            assert (await clients[0].get(base + "/")).status_code == 401
            assert (await clients[-1].get(base + "/")).status_code == 200
        finally:
            for client in clients:
                await client.aclose()
