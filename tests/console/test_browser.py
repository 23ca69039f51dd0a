"""The console in a real browser (Debian's Chromium, driven by Playwright): a person approves
and denies a headless SDK client's waiting call with the page's own buttons, by mouse and by
keyboard (both protocol eras), sees a call that began waiting before its page's event stream
opened and one an older refresh answered late does not hide, filters the live timeline
without a reload, and a cross-origin form post and a visit without the token are refused; the
printed URL opens once, and its token in the browser's history opens nothing."""

from __future__ import annotations

import re
import socket
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from tests.console.conftest import serving
from tests.console.test_approvals import _audit, _call
from tests.support.browser import chromium, chromium_profile, need_chromium

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


@pytest.fixture(autouse=True)
def _chromium_here() -> None:
    need_chromium()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_person_approves_then_denies_waiting_calls_in_the_browser(
    tmp_path: Path, mode: str
) -> None:
    async with serving(tmp_path, stateless=True) as stack, chromium() as browser:
        page = await browser.new_page()
        await page.goto(stack.console.url)
        assert "token" not in page.url
        await page.get_by_text("Nothing is waiting").wait_for()
        for choice, expected in (("Allow once", "ok"), ("Deny", "denied")):
            result: list[Any] = []
            async with anyio.create_task_group() as group:
                group.start_soon(_call, stack.url, mode, "note", {"text": choice}, result)
                card = page.locator(".card", has_text=choice)
                await card.wait_for(timeout=60_000)  # arrives by the page's event stream
                assert "destructive" in await card.inner_text()
                button = card.get_by_role("button", name=choice)
                if choice == "Deny":  # by keyboard alone: focus the button, press Enter
                    await button.focus()
                    await page.keyboard.press("Enter")
                else:
                    await button.click()
            assert _audit(stack.audit)[-1]["outcome"] == expected
            assert result[0].is_error is (expected == "denied")
            await page.get_by_text("Nothing is waiting").wait_for()


async def test_a_call_that_waits_before_the_page_hears_of_it_is_shown(tmp_path: Path) -> None:
    """The page is made, a call starts waiting, and only then does the page's event stream
    open (held back here; on a busy machine it just comes late): the card still shows."""
    async with serving(tmp_path, stateless=True) as stack, chromium() as browser:
        page = await browser.new_page()
        may_open = anyio.Event()

        async def hold(route: Any) -> None:
            await may_open.wait()
            await route.continue_()

        await page.route(re.compile(r"/events(\?|$)"), hold)
        await page.goto(stack.console.url)
        await page.get_by_text("Nothing is waiting").wait_for()
        desk = stack.console.desk
        result: list[Any] = []
        async with anyio.create_task_group() as group:
            seen = desk.version
            group.start_soon(_call, stack.url, "auto", "note", {"text": "late"}, result)
            await desk.changed(seen)  # the call waits for an answer; the page has not heard
            may_open.set()
            card = page.locator(".card", has_text="late")
            await card.wait_for(timeout=60_000)
            await card.get_by_role("button", name="Allow once").click()
        assert not result[0].is_error
        assert _audit(stack.audit)[-1]["outcome"] == "ok"


async def test_an_older_refresh_answered_late_does_not_hide_a_waiting_call(
    tmp_path: Path,
) -> None:
    """The page's first refresh (its stream opened, nothing waiting yet) is answered only
    after the refresh a waiting call brought: its older list is not shown over the card."""
    async with serving(tmp_path, stateless=True) as stack, chromium() as browser:
        page = await browser.new_page()
        first_fetched, release = anyio.Event(), anyio.Event()
        held: list[Any] = []

        async def hold_the_first(route: Any) -> None:
            if held:
                await route.continue_()
                return
            held.append(route)
            answer = await route.fetch()  # made now: nothing is waiting
            first_fetched.set()
            await release.wait()
            await route.fulfill(response=answer)

        await page.route(re.compile(r"/part/approvals(\?|$)"), hold_the_first)
        await page.goto(stack.console.url)
        await first_fetched.wait()
        result: list[Any] = []
        async with anyio.create_task_group() as group:
            group.start_soon(_call, stack.url, "auto", "note", {"text": "newer"}, result)
            card = page.locator(".card", has_text="newer")
            await card.wait_for(timeout=60_000)
            release.set()  # the older answer arrives now
            await page.locator("#approvals:not([aria-busy])").wait_for(timeout=60_000)
            assert await card.is_visible()
            await card.get_by_role("button", name="Allow once").click()
        assert not result[0].is_error


async def test_the_timeline_filters_live_without_a_reload(tmp_path: Path) -> None:
    from playwright.async_api import expect

    async with serving(tmp_path) as stack, chromium() as browser:
        page = await browser.new_page()
        await page.goto(stack.console.url.replace("/?", "/timeline?"))
        rows = page.locator("table.calls tbody tr")
        async with (
            httpx2.AsyncClient() as http,
            Client(streamable_http_client(stack.url, http_client=http)) as client,
        ):
            await client.call_tool("echo", {"text": "fine"})
            await client.call_tool("echo", {"text": 7})  # invalid: an error
        await page.locator("table.calls tbody tr.o-error").wait_for()  # live, no reload
        await expect(rows).to_have_count(2)
        marker = await page.evaluate("window.performance.getEntriesByType('navigation').length")
        await page.get_by_label("Outcome").select_option("error")
        await expect(rows).to_have_count(1)
        assert "outcome=error" in page.url
        assert await rows.first.get_attribute("class") == "o-error"
        assert (
            await page.evaluate("window.performance.getEntriesByType('navigation').length")
            == marker
        )


@asynccontextmanager
async def _other_site(target: str) -> AsyncIterator[str]:
    """A page on another origin whose form posts to ``target``."""

    async def form(request: Request) -> HTMLResponse:
        return HTMLResponse(
            f'<form method="post" action="{target}"><input name="choice" value="once">'
            '<input name="csrf" value="guess"><button>Win a prize</button></form>'
        )

    server = uvicorn.Server(uvicorn.Config(Starlette(routes=[Route("/", form)]), log_config=None))
    listening = socket.create_server(("127.0.0.1", 0))  # accepts (queues) before serve runs
    async with anyio.create_task_group() as group:
        group.start_soon(partial(server.serve, sockets=[listening]))
        yield f"http://127.0.0.1:{listening.getsockname()[1]}/"
        server.should_exit = True


async def test_a_cross_origin_form_post_and_a_visit_without_the_token_are_refused(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path) as stack, chromium() as browser:
        base = stack.console.url.split("/?", 1)[0]
        context = await browser.new_context()
        page = await context.new_page()
        await page.goto(stack.console.url)  # the person is signed in: the cookie is set
        result: list[Any] = []
        async with anyio.create_task_group() as group:
            group.start_soon(_call, stack.url, "auto", "note", {"text": "attack"}, result)
            await page.locator(".card").wait_for(timeout=60_000)
            action = await page.locator(".card form").get_attribute("action")
            assert action is not None
            async with _other_site(base + action) as evil:
                await page.goto(evil)
                async with page.expect_response(re.compile(r"/answer/")) as posted:
                    await page.get_by_role("button", name="Win a prize").click()
                assert (await posted.value).status == 403
            assert len(stack.console.desk) == 1  # still waiting: nothing was answered
            stranger = await (await browser.new_context()).new_page()
            refused = await stranger.goto(base + "/")
            assert refused is not None and refused.status == 401
            await page.goto(base + "/")
            await page.get_by_role("button", name="Deny").click()
        assert result[0].is_error


def _history(profile: Path) -> list[str]:
    """The URLs in the profile's history (Chromium's ``urls`` table), the browser closed."""
    with sqlite3.connect(profile / "Default" / "History") as db:
        return [url for (url,) in db.execute("SELECT url FROM urls")]


async def test_the_printed_url_opens_once_and_its_token_in_the_history_opens_nothing(
    tmp_path: Path,
) -> None:
    """A person opens the URL printed on stderr in their own browser (a profile on disk):
    the console shows; opened again, the same URL gets the page that says it was used and how
    to get a new one (with the way on to the session this browser holds); and the URL the
    history keeps, token and all, opens nothing in another browser (who read the profile or
    a synced history)."""
    profile = tmp_path / "profile"
    async with serving(tmp_path, stateless=True) as stack:
        printed = stack.console.url
        async with chromium_profile(str(profile)) as mine:
            page = await mine.new_page()
            await page.goto(printed)
            assert "token" not in page.url
            await page.get_by_text("Nothing is waiting").wait_for()
            again = await page.goto(printed)
            assert again is not None and again.status == 401
            await page.get_by_text("This console URL was used already").wait_for()
            assert "mcp-toolbridge console-url" in await page.content()
            await page.get_by_role("link", name="open the console").click()
            await page.get_by_text("Nothing is waiting").wait_for()  # the session goes on
        kept = [url for url in _history(profile) if "token=" in url]
        assert kept, _history(profile)  # the browser keeps it: it must open nothing
        async with chromium() as browser:
            theirs = await browser.new_page()
            for url in kept:
                seen = await theirs.goto(url)
                assert seen is not None and seen.status == 401
                await theirs.get_by_text("This console URL was used already").wait_for()
                assert "Nothing is waiting" not in await theirs.content()
            base = printed.split("/?", 1)[0]
            refused = await theirs.goto(base + "/")
            assert refused is not None and refused.status == 401
