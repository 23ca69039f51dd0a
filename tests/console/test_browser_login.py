"""The console's sign-in in a real browser (Debian's Chromium, driven by Playwright) through a
real OpenID provider's own login and consent pages: a person with the admin group signs in
and approves a headless agent's waiting call (audited as them); a person without it gets the
403 page; a forged state and a replayed callback are refused; cancelling at the issuer comes
back as its access_denied."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from tests.console.test_login import _authorized_call, console_with_login
from tests.support.browser import chromium, need_chromium
from tests.support.oauth import AGENT, AGENT_SECRET, needs_oidc
from tests.support.oidc import Provider

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Page

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, needs_oidc]


@pytest.fixture(autouse=True)
def _chromium_here() -> None:
    need_chromium()


async def _offline(context: BrowserContext) -> None:
    """The provider's development pages import a web font: nothing leaves this machine."""
    await context.route(re.compile(r"^https?://(?!127\.0\.0\.1[:/])"), lambda route: route.abort())


async def _through_the_issuer(page: Page, login: str) -> None:
    """On the provider's pages: type the login (any password), then consent."""
    await page.locator("input[name=login]").fill(login)
    await page.locator("input[name=password]").fill("any")
    await page.get_by_role("button", name="Sign-in").click()
    await page.get_by_role("button", name="Continue").click()


async def test_an_admin_signs_in_through_the_issuer_and_approves_a_waiting_call(
    tmp_path: Path, provider: Provider
) -> None:
    async with (
        console_with_login(tmp_path, provider) as (url, _console, base),
        chromium() as browser,
    ):
        context = await browser.new_context()
        await _offline(context)
        page = await context.new_page()
        shown = await page.goto(base + "/")
        assert shown is not None and shown.status == 401
        callbacks: list[str] = []
        page.on(
            "request",
            lambda request: callbacks.append(request.url) if "/callback?" in request.url else None,
        )
        await page.get_by_role("link", name=f"Sign in with {provider.issuer}").click()
        await _through_the_issuer(page, "alice")
        await page.get_by_text("Calls waiting for your answer").wait_for()
        assert page.url == base + "/"
        assert "alice" in await page.locator(".who").inner_text()
        token = await provider.client_credentials(AGENT, AGENT_SECRET, resource=url)
        result: list[Any] = []
        async with anyio.create_task_group() as group:
            group.start_soon(_authorized_call, url, token, result)
            card = page.locator(".card", has_text="note")
            await card.wait_for(timeout=60_000)  # arrives by the page's event stream
            await card.get_by_role("button", name="Allow once").click()
        assert not result[0].is_error
        [callback] = callbacks
        replayed = await page.goto(callback)  # the same callback again: refused
        assert replayed is not None and replayed.status == 400
        await page.get_by_text("Not signed in").wait_for()
    last = json.loads((tmp_path / "audit.ndjson").read_text(encoding="utf-8").splitlines()[-1])
    assert last["answeredBy"] == "console:alice" and last["outcome"] == "ok"


async def test_a_person_without_the_role_a_forged_state_and_a_cancel_are_refused(
    tmp_path: Path, provider: Provider
) -> None:
    async with (
        console_with_login(tmp_path, provider) as (_, _console, base),
        chromium() as browser,
    ):
        context = await browser.new_context()
        await _offline(context)
        page = await context.new_page()
        await page.goto(base + "/")
        async with page.expect_response(re.compile(r"/console/callback\?")) as answered:
            await page.get_by_role("link", name=re.compile("^Sign in with")).click()
            await _through_the_issuer(page, "bob")
        assert (await answered.value).status == 403
        await page.get_by_text("the console needs the role 'admin'").wait_for()
        again = await page.goto(base + "/")
        assert again is not None and again.status == 401  # bob has no session

        stranger = await (await browser.new_context()).new_page()
        await _offline(stranger.context)
        await stranger.goto(base + "/")
        await stranger.get_by_role("link", name=re.compile("^Sign in with")).click()
        await stranger.locator("input[name=login]").wait_for()  # at the issuer, attempt begun
        forged = await stranger.goto(base + "/callback?code=stolen&state=forged")
        assert forged is not None and forged.status == 400
        await stranger.get_by_text("not the one this browser started").wait_for()

        await stranger.goto(base + "/")
        await stranger.get_by_role("link", name=re.compile("^Sign in with")).click()
        async with stranger.expect_response(re.compile(r"/console/callback\?")) as answered:
            await stranger.get_by_role("link", name="[ Cancel ]").click()
        assert (await answered.value).status == 403
        await stranger.get_by_text("access_denied").wait_for()
